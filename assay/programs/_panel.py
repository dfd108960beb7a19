"""How a panel turns its members' scores into one verdict (pure; the tie rule is explicit).

``majority``, ``mean``, ``median``, ``min`` and ``trimmed_mean`` decide each item from its
members' scores alone. ``dawid_skene`` and ``weighted`` weigh the members by how reliable they
are over the whole run, which only the run's end knows: per item they give the members'
majority, which the run replaces (``assay.evaluation``'s panel over the run)."""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Literal

Aggregate = Literal["majority", "mean", "median", "min", "trimmed_mean", "dawid_skene", "weighted"]
RUN_LEVEL_AGGREGATES = ("dawid_skene", "weighted")
"""Aggregates fitted over all the run's items; an item alone gets its members' majority."""
RUN_LEVEL_MAX_CLASSES = 10
"""Dawid–Skene estimates K × K entries per member: beyond ten classes (an ordinal scale of
0–100) the confusion matrices outnumber what a run's items can tell."""
TieBreak = Literal["lower", "higher", "unscored"]


def aggregate_scores(
    scores: list[int], method: Aggregate, tie_break: TieBreak, values: list[int]
) -> int | None:
    """One score from the scored members' ``scores`` (unscored members already removed).

    A tie — two most frequent scores for ``majority``, a mean exactly between two scale values
    for ``mean`` (or ``trimmed_mean``: the mean without the highest and the lowest score, so
    one member answering an extreme cannot move it out of the others' range), an even-sized
    median between two values — is broken by ``tie_break``: the ``lower`` or ``higher``
    candidate, or ``None`` (unscored). Never by member order.
    """
    if not scores:
        return None
    if method == "min":
        return min(scores)
    if method in ("majority", *RUN_LEVEL_AGGREGATES):
        counts = Counter(scores)
        top = max(counts.values())
        candidates = sorted(s for s, c in counts.items() if c == top)
    elif method == "median":
        lo, hi = statistics.median_low(scores), statistics.median_high(scores)
        candidates = sorted({lo, hi})
    else:  # mean or trimmed mean → nearest scale value
        if method == "trimmed_mean" and len(scores) < 3:
            raise ValueError(f"trimmed_mean needs at least 3 scores, got {len(scores)}")
        kept = sorted(scores)[1:-1] if method == "trimmed_mean" else scores
        mean = statistics.fmean(kept)
        best = min(abs(v - mean) for v in values)
        candidates = sorted(v for v in values if abs(abs(v - mean) - best) < 1e-9)
    if len(candidates) == 1:
        return candidates[0]
    if tie_break == "unscored":
        return None
    return candidates[0] if tie_break == "lower" else candidates[-1]
