"""How well a judge finds real failures (ToolEmu's identified-failure precision and true-failure
incidence): the reference marks the true failures, the judge the flagged ones."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from assay.metrics._rates import binomial_rate
from assay.metrics._validate import bool_pair
from assay.metrics._value import MetricValue

_NAMES = ("true_failure", "flagged")


def _ratio(hits: NDArray[np.int64], total: NDArray[np.int64], zero_division: float) -> NDArray:
    return np.where(total > 0, hits / np.maximum(total, 1), zero_division)


def failure_precision(
    true_failure: ArrayLike, flagged: ArrayLike, *, zero_division: float = 0.0
) -> float:
    """Share of flagged items that are true failures: |true ∩ flagged| / |flagged|.

    Returns ``zero_division`` (0.0 by default: the ToolEmu convention) when nothing was flagged.
    """
    t, f = bool_pair(true_failure, flagged, _NAMES)
    return float(_failure_precision_batched(t, f, zero_division=zero_division))


def failure_incidence(
    true_failure: ArrayLike, flagged: ArrayLike, *, zero_division: float = 0.0
) -> float:
    """Share of true failures that were flagged: |true ∩ flagged| / |true| (failure recall).

    Returns ``zero_division`` (0.0 by default: the ToolEmu convention) when there is no true failure.
    """
    t, f = bool_pair(true_failure, flagged, _NAMES)
    return float(_failure_incidence_batched(t, f, zero_division=zero_division))


@dataclass(frozen=True)
class FailureRates:
    """Failure precision and incidence of one judge, each a count of its denominator."""

    precision: MetricValue
    incidence: MetricValue


def failure_rates(
    true_failure: ArrayLike,
    flagged: ArrayLike,
    *,
    confidence: float = 0.95,
    no_flag: str = "nothing was flagged",
    no_failure: str = "there is no true failure",
) -> FailureRates:
    """Failure precision (true failures among the flagged) and incidence (flagged among the
    true failures), each ``count`` of ``n`` with its exact (Clopper–Pearson) interval.

    A zero denominator makes the rate undefined (nan, no interval), with a note saying why
    (``no_flag`` when nothing was flagged, ``no_failure`` when there is no true failure): a
    judge that flags nothing has no failure precision, and the 0.0 of ToolEmu's convention
    (:func:`failure_precision`'s ``zero_division``) read as a judge whose every flag was wrong
    — in a table without its note, in MLflow, beside another judge's 0.0 of 0 of 12 flags.
    """
    t, f = bool_pair(true_failure, flagged, _NAMES)
    hits = int((t & f).sum())

    def rate(over: int, why: str) -> MetricValue:
        return binomial_rate(
            hits, over, confidence=confidence, why_undefined=f"{why} (ToolEmu's convention: 0.0)"
        )

    return FailureRates(rate(int(f.sum()), no_flag), rate(int(t.sum()), no_failure))


def _failure_precision_batched(
    true_failure: NDArray[np.bool_], flagged: NDArray[np.bool_], *, zero_division: float = 0.0
) -> NDArray[np.float64]:
    """Row-wise failure precision of (B, n) boolean arrays (or one value for 1-D arrays)."""
    hits = (true_failure & flagged).sum(axis=-1)
    return _ratio(hits, flagged.sum(axis=-1), zero_division)


def _failure_incidence_batched(
    true_failure: NDArray[np.bool_], flagged: NDArray[np.bool_], *, zero_division: float = 0.0
) -> NDArray[np.float64]:
    """Row-wise failure incidence of (B, n) boolean arrays (or one value for 1-D arrays)."""
    hits = (true_failure & flagged).sum(axis=-1)
    return _ratio(hits, true_failure.sum(axis=-1), zero_division)


# Public names for callers that bootstrap these statistics themselves (batched over rows).
failure_precision_batched = _failure_precision_batched
failure_incidence_batched = _failure_incidence_batched
