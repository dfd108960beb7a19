"""Per-example metrics in DSPy's form ``metric(example, pred, trace=None)``.

They read ``example.expected`` (the reference score, an int) and ``pred.score`` (the judge's
int score, or None when the judgment is unscored) by attribute access, so DSPy itself is not
imported: ``example``, ``pred`` and ``trace`` are whatever DSPy hands over, checked here. An unscored prediction is worth 0.0: it is a miss, never a neutral value. When
``trace`` is not None (DSPy is bootstrapping demonstrations) every metric returns a bool —
exact match — because DSPy keeps a trace only when the metric says it passed.
:func:`log_loss_score` also reads ``pred.expected_score``, a binary judge's P(verdict 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

DSPyMetric = Callable[..., float | bool]


def _as_int(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    try:  # numpy integers and other integer-like scalars
        as_int = int(value)
    except (TypeError, ValueError):
        as_int = None
    if as_int is not None and as_int == value:
        return as_int
    raise ValueError(f"{what} must be an integer score, got {value!r}")


def _expected(example: Any) -> int:
    try:
        value = example.expected
    except (AttributeError, KeyError):
        value = None
    expected = _as_int(value, "example.expected")
    if expected is None:
        raise ValueError(
            "example.expected is missing: DSPy metrics need examples with a reference score"
        )
    return expected


def _predicted(pred: Any) -> int | None:
    return _as_int(getattr(pred, "score", None), "pred.score")


def exact_match(example: object, pred: object, trace: object = None) -> float | bool:
    """1.0 when the judge's score equals the expected score, else 0.0 (unscored: 0.0)."""
    expected, predicted = _expected(example), _predicted(pred)
    hit = predicted is not None and predicted == expected
    return hit if trace is not None else float(hit)


def _check_scale(scale_min: int, scale_max: int) -> int:
    for value, name in ((scale_min, "scale_min"), (scale_max, "scale_max")):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name} must be an integer, got {value!r}")
    if scale_max <= scale_min:
        raise ValueError(f"scale_max must be greater than scale_min, got {scale_min}..{scale_max}")
    return scale_max - scale_min


def _scaled_metric(
    scale_min: int, scale_max: int, name: str, closeness: Callable[[float], float]
) -> DSPyMetric:
    """A metric scoring ``closeness(|expected − predicted| / (max − min))`` in [0, 1]."""
    width = _check_scale(scale_min, scale_max)

    def metric(example: object, pred: object, trace: object = None) -> float | bool:
        expected, predicted = _expected(example), _predicted(pred)
        if not scale_min <= expected <= scale_max:
            raise ValueError(
                f"example.expected={expected} is outside the scale {scale_min}..{scale_max}"
            )
        if trace is not None:
            return predicted == expected
        if predicted is None or not scale_min <= predicted <= scale_max:
            return 0.0  # unscored (or off the scale, which a judge should mark unscored)
        return closeness(abs(expected - predicted) / width)

    metric.__name__ = metric.__qualname__ = name
    metric.__doc__ = closeness.__doc__
    return metric


def absolute_error_score(scale_min: int, scale_max: int) -> DSPyMetric:
    """A DSPy metric ``1 − |expected − score| / (max − min)``: partial credit for near misses.

    Unscored or off-scale predictions score 0.0.
    """

    def closeness(distance: float) -> float:
        """1 − |expected − score| / (scale_max − scale_min); unscored → 0.0."""
        return 1.0 - distance

    return _scaled_metric(scale_min, scale_max, "absolute_error_score", closeness)


def quadratic_agreement(scale_min: int, scale_max: int) -> DSPyMetric:
    """A DSPy metric ``1 − ((expected − score) / (max − min))²``, a per-example surrogate of
    quadratic-weighted κ (it penalises distant disagreements most). Unscored scores 0.0."""

    def closeness(distance: float) -> float:
        """1 − ((expected − score) / (scale_max − scale_min))²; unscored → 0.0."""
        return 1.0 - distance**2

    return _scaled_metric(scale_min, scale_max, "quadratic_agreement", closeness)


def within_one(example: object, pred: object, trace: object = None) -> float | bool:
    """1.0 when the judge's score is within one point of the expected score (``|y − ŷ| ≤ 1``),
    the usual lenient agreement on ordinal scales; unscored: 0.0."""
    expected, predicted = _expected(example), _predicted(pred)
    if trace is not None:
        return predicted == expected
    return float(predicted is not None and abs(predicted - expected) <= 1)


def _probability(pred: Any) -> float | None:
    value = getattr(pred, "expected_score", None)
    if value is None:
        return None
    try:
        p = float(value) if not isinstance(value, bool | str | bytes) else math.nan
    except (TypeError, ValueError):
        p = math.nan
    if not 0.0 <= p <= 1.0:  # also nan, and anything that is not a number
        raise ValueError(f"pred.expected_score must be a probability in [0, 1], got {value!r}")
    return p


def log_loss_score(eps: float = 0.01) -> DSPyMetric:
    """A DSPy metric for binary judges that give ``pred.expected_score`` = P(verdict 1):
    ``1 − min(−log p_correct, log(1/eps)) / log(1/eps)``, where ``p_correct`` is the probability
    the judge gave the expected verdict (``example.expected`` is 0 or 1).

    It lies in [0, 1]: 1 for full confidence in the right verdict, 0 at or below ``eps`` on it.
    Its mean is an affine function of the log loss with the correct-verdict probability clipped
    below at ``eps``, so maximising it minimises that (bounded) log loss: a calibrated-confidence
    target for ``assay optimize``. The cap keeps one confident miss from dominating the mean.
    No probability (unscored, or a backend without token probabilities) scores 0.0; under a
    trace it is exact match on ``pred.score`` like the other metrics.
    """
    if isinstance(eps, bool) or not isinstance(eps, int | float) or not 0.0 < eps < 0.5:
        raise ValueError(f"eps must be a number in (0, 0.5), got {eps!r}")
    cap = -math.log(eps)

    def metric(example: object, pred: object, trace: object = None) -> float | bool:
        expected = _expected(example)
        if expected not in (0, 1):
            raise ValueError(f"log_loss_score needs binary references 0/1, got {expected}")
        if trace is not None:
            return _predicted(pred) == expected
        p = _probability(pred)
        if p is None:
            return 0.0
        p_correct = p if expected == 1 else 1.0 - p
        return 1.0 - min(-math.log(max(p_correct, eps)), cap) / cap

    metric.__name__ = metric.__qualname__ = "log_loss_score"
    return metric
