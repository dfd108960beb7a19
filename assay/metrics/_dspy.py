"""Per-example metrics in DSPy's form ``metric(example, pred, trace=None)`` (SPEC §5).

They read ``example.expected`` (the reference score, an int) and ``pred.score`` (the judge's
int score, or None when the judgment is unscored) by attribute access, so DSPy itself is not
imported. An unscored prediction is worth 0.0: it is a miss, never a neutral value. When
``trace`` is not None (DSPy is bootstrapping demonstrations) every metric returns a bool —
exact match — because DSPy keeps a trace only when the metric says it passed.
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


def exact_match(example: Any, pred: Any, trace: Any = None) -> float | bool:
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

    def metric(example: Any, pred: Any, trace: Any = None) -> float | bool:
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
