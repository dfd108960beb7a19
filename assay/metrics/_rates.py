"""A proportion over independent items (a pass rate, a false positive rate) with its exact
interval, a balanced accuracy (the mean of two such proportions) with its MOVER–Wilson
interval, and the mean of per-item values with a seeded bootstrap interval."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from assay.metrics._intervals import (
    bootstrap_ci,
    clopper_pearson_interval,
    mean_of_two_rates_interval,
)
from assay.metrics._value import CLOPPER_PEARSON, MOVER_WILSON, MetricValue, with_ci


def binomial_rate(
    count: int, n: int, *, confidence: float = 0.95, why_undefined: str = "no item to count"
) -> MetricValue:
    """``count / n`` with its exact (Clopper–Pearson) interval, ``count`` and ``n`` kept with
    it. Unlike a bootstrap over the items, the interval keeps its width when every item has
    the same outcome (0 or n of n): 75 of 75 is [0.952, 1] at 95%, not [1, 1]. With ``n`` 0
    the rate is undefined (nan, no interval; the note says ``why_undefined``)."""
    count, n = int(count), int(n)
    if n == 0:
        return MetricValue(math.nan, None, None, 0, note=f"undefined: {why_undefined}", count=0)
    low, high = clopper_pearson_interval(count, n, confidence)
    return MetricValue(count / n, low, high, n, count=count, ci_method=CLOPPER_PEARSON)


def balanced_rate(
    positives_found: int,
    positives: int,
    negatives_found: int,
    negatives: int,
    *,
    confidence: float = 0.95,
    why_undefined: str = "a group has no item",
) -> MetricValue:
    """A balanced accuracy, ``(positives_found / positives + negatives_found / negatives) / 2``
    (the mean of the true positive and true negative rates), with its MOVER–Wilson interval
    (:func:`mean_of_two_rates_interval`); ``n`` is the items of both groups. Undefined (nan,
    no interval; the note says ``why_undefined``) when either group is empty."""
    for value, name in ((positives_found, "positives_found"), (negatives_found, "negatives_found")):
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise ValueError(f"{name} must be an integer, got {value!r}")
    tp, pos, tn, neg = (int(x) for x in (positives_found, positives, negatives_found, negatives))
    if pos == 0 or neg == 0:
        return MetricValue(math.nan, None, None, pos + neg, note=f"undefined: {why_undefined}")
    low, high = mean_of_two_rates_interval(tp, pos, tn, neg, confidence)
    return MetricValue((tp / pos + tn / neg) / 2, low, high, pos + neg, ci_method=MOVER_WILSON)


def rate(outcomes: ArrayLike, *, confidence: float = 0.95) -> MetricValue | None:
    """The share of true ``outcomes`` (one boolean per independent item) with its exact
    interval (:func:`binomial_rate`); ``None`` when there is no outcome to count."""
    arr = np.asarray(outcomes)
    if arr.size == 0:
        return None
    if arr.ndim != 1 or not np.isin(arr, (0, 1)).all():
        raise ValueError("outcomes must be one boolean (or 0/1) per item")
    return binomial_rate(int(arr.astype(bool).sum()), int(arr.size), confidence=confidence)


def _batched_mean(x: np.ndarray) -> np.ndarray:
    return x.mean(axis=1)


def mean_ci(
    values: ArrayLike, *, n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0
) -> MetricValue | None:
    """The mean of per-item ``values`` (any numbers; for 0/1 outcomes use :func:`rate`) with a
    percentile bootstrap CI over items; ``None`` when there is no value."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return None
    ci = bootstrap_ci(_batched_mean, arr, n_resamples=n_resamples, confidence=confidence, seed=seed)
    return with_ci(float(arr.mean()), ci, arr.size, why_undefined="no items")
