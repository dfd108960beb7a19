"""Which way a metric points: whether a larger value means a better judge, or a value nearest a
target (a position-blind pairwise judge prefers the first answer half the time). Read from the
metric's name, dotted parts included (``harness.label_flip.pass_rate``)."""

from __future__ import annotations

# Metrics where a lower value is the better judge (sorting and the Pareto front follow this).
_LOWER_IS_BETTER = ("mae", "error_rate", "false_positive_rate", "false_negative_rate", "flip_rate")
# ... and the bias probes' rates of being moved (also their per-variant / per-position parts)
_LOWER_IS_BETTER += (
    "injection_success",
    "injection_success_by_variant",
    "injection_success_by_position",
    "toward_cue",
    "away_from_cue",
    "changed",
    "contradiction_rate",
)
# Metrics best at a point rather than at an end: a position-blind pairwise judge prefers the
# answer shown first half the time, so 0.3 and 0.7 are equally biased and both worse than 0.5.
_BEST_AT = {"first_position_rate": 0.5}


def higher_is_better(metric: str) -> bool:
    """Whether a larger value of ``metric`` means a better judge (errors and costs: no)."""
    parts = metric.split(".")
    base = parts[-1]
    return not (
        any(p in _LOWER_IS_BETTER for p in parts)
        or base.startswith(("usage_", "cost"))
        or base == "unscored"
    )


def best_at(metric: str) -> float | None:
    """The value a perfect judge has on ``metric`` when that is neither end of its range."""
    return next((_BEST_AT[p] for p in metric.split(".") if p in _BEST_AT), None)


def direction(metric: str) -> str:
    """How to read ``metric`` in a leaderboard: ``higher is better``, ``lower is better`` or
    ``closest to 0.5 is better``."""
    target = best_at(metric)
    if target is not None:
        return f"closest to {target:g} is better"
    return "higher is better" if higher_is_better(metric) else "lower is better"


def goodness(metric: str, value: float) -> float:
    """``value`` oriented so that larger is better: the leaderboard's and the front's order."""
    target = best_at(metric)
    if target is not None:
        return -abs(value - target)
    return value if higher_is_better(metric) else -value
