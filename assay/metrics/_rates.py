"""A proportion (pass rate, consistency rate) with its seeded bootstrap interval."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from assay.metrics._intervals import bootstrap_ci
from assay.metrics._value import MetricValue


def _batched_mean(x: np.ndarray) -> np.ndarray:
    return x.mean(axis=1)


def rate(
    outcomes: ArrayLike, *, n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0
) -> MetricValue | None:
    """Share of true ``outcomes`` (booleans) with a percentile bootstrap CI over items;
    ``None`` when there is no outcome to count."""
    arr = np.asarray(outcomes, dtype=float)
    if arr.size == 0:
        return None
    ci = bootstrap_ci(_batched_mean, arr, n_resamples=n_resamples, confidence=confidence, seed=seed)
    return MetricValue(
        value=float(arr.mean()), ci_low=float(ci.low), ci_high=float(ci.high), n=int(arr.size)
    )
