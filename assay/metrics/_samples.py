"""How many samples a majority vote needs, estimated out of sample: from k sampled verdicts of
one item, the probability that the majority of m of them (drawn without replacement) agrees with
the majority of the *other* k − m.

Against the majority of all k (the m drawn among them) the estimate cannot fail: m = k agrees
with itself. Against the held-out rest the two majorities are independent votes of the same
judge on the same item, and their agreement is a conservative estimate: for two independent
votes, P(they agree) ≤ the larger of P(the m-vote gives each verdict), so an agreement of 95%
means the majority of m gives one verdict at least 95% of the time — while a judge that answers
at random agrees with itself about half the time at every m. The rest is small when m is close
to k, so the curve can fall again there (m and k − m are exchangeable: the split is symmetric).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterator, Sequence
from math import comb


def _draws(counts: list[int], m: int) -> Iterator[tuple[int, ...]]:
    """Every way to draw ``m`` samples from categories holding ``counts`` (how many of each)."""
    if not counts:
        if m == 0:
            yield ()
        return
    head, rest = counts[0], counts[1:]
    for x in range(min(head, m), -1, -1):
        if m - x <= sum(rest):
            for tail in _draws(rest, m - x):
                yield (x, *tail)


def _modes(counts: Sequence[int]) -> list[int]:
    """The categories holding the most (several when tied)."""
    top = max(counts)
    return [i for i, c in enumerate(counts) if c == top]


def held_out_majority_agreement(samples: Sequence[Hashable], m: int) -> float:
    """P(the most frequent verdict among ``m`` of ``samples`` drawn without replacement equals
    the most frequent verdict among the other ``len(samples) - m``) — exact, over every split
    (multivariate hypergeometric on the verdict counts).

    A tie on either side is broken fairly: each tied verdict counts with probability
    1 / (number tied), so a split whose two sides tie over the same two verdicts counts 1/2.
    ``1 <= m < len(samples)`` (the held-out rest must hold a sample).
    """
    k = len(samples)
    if not 1 <= m < k:
        raise ValueError(
            f"m must be at least 1 and below the number of samples ({k}) so that a held-out "
            f"sample remains, got {m}"
        )
    counts = list(Counter(samples).values())
    agree = 0
    for draw in _draws(counts, m):
        ways = 1
        for c, x in zip(counts, draw, strict=True):
            ways *= comb(c, x)
        drawn = _modes(draw)
        rest = _modes([c - x for c, x in zip(counts, draw, strict=True)])
        shared = len(set(drawn) & set(rest))
        agree += ways * shared / (len(drawn) * len(rest))
    return agree / comb(k, m)
