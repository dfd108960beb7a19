"""How many samples a majority vote needs: from k sampled verdicts of one item, the probability
that the majority of m of them (drawn without replacement) agrees with the majority of all k."""

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


def majority_agreement(samples: Sequence[Hashable], m: int) -> float | None:
    """P(the most frequent verdict among ``m`` of ``samples`` drawn without replacement equals
    the most frequent verdict among all of them) — exact (multivariate hypergeometric).

    A tie among the ``m`` drawn counts as agreement with probability 1 / (number tied) when the
    overall majority is among the tied (a fair tie-break). ``None`` when the majority of all
    samples is itself tied (the item has no reference majority). ``1 <= m <= len(samples)``.
    """
    k = len(samples)
    if not 1 <= m <= k:
        raise ValueError(f"m must be between 1 and the number of samples ({k}), got {m}")
    ranked = Counter(samples).most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return None
    counts = [c for _, c in ranked]  # the overall majority is category 0
    agree = 0.0
    for draw in _draws(counts, m):
        top = max(draw)
        if draw[0] == top:
            ways = 1
            for c, x in zip(counts, draw, strict=True):
                ways *= comb(c, x)
            agree += ways / sum(x == top for x in draw)
    return agree / comb(k, m)
