"""How a panel turns its members' scores into one verdict (pure; the tie rule is explicit)."""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Literal

Aggregate = Literal["majority", "mean", "median", "min"]
TieBreak = Literal["lower", "higher", "unscored"]


def aggregate_scores(
    scores: list[int], method: Aggregate, tie_break: TieBreak, values: list[int]
) -> int | None:
    """One score from the scored members' ``scores`` (unscored members already removed).

    A tie — two most frequent scores for ``majority``, a mean exactly between two scale values
    for ``mean``, an even-sized median between two values — is broken by ``tie_break``: the
    ``lower`` or ``higher`` candidate, or ``None`` (unscored). Never by member order.
    """
    if not scores:
        return None
    if method == "min":
        return min(scores)
    if method == "majority":
        counts = Counter(scores)
        top = max(counts.values())
        candidates = sorted(s for s, c in counts.items() if c == top)
    elif method == "median":
        lo, hi = statistics.median_low(scores), statistics.median_high(scores)
        candidates = sorted({lo, hi})
    else:  # mean → nearest scale value
        mean = statistics.fmean(scores)
        best = min(abs(v - mean) for v in values)
        candidates = sorted(v for v in values if abs(abs(v - mean) - best) < 1e-9)
    if len(candidates) == 1:
        return candidates[0]
    if tie_break == "unscored":
        return None
    return candidates[0] if tie_break == "lower" else candidates[-1]
