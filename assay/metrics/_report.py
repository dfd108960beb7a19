"""Aggregate agreement between a reference and a candidate rater, every metric with a bootstrap CI.

This is what a run report and MLflow log: a fixed, ordered set of named :class:`MetricValue`
chosen by the scale kind, all intervals drawn from one seeded index matrix so that every metric
is resampled over the same items.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from assay.metrics._classification import (
    _accuracy_batched,
    _error_rate_batched,
    _false_negative_rate_batched,
    _false_positive_rate_batched,
    confusion_matrix,
)
from assay.metrics._failure import _failure_incidence_batched, _failure_precision_batched
from assay.metrics._intervals import (
    _check_confidence,
    _check_resamples,
    _percentile_ci,
    _replicates,
    _resample_indices,
)
from assay.metrics._kappa import _kappa_batched
from assay.metrics._ordinal import _ccc_batched, _mae_batched, _pearson_batched, _spearman_batched
from assay.metrics._validate import check_k, label_pair
from assay.metrics._value import MetricValue

MetricKind = Literal["binary", "ordinal", "categorical"]

_KINDS = ("binary", "ordinal", "categorical")
_NAMES = ("reference", "candidate")

_SINGLE_CATEGORY = "reference and candidate put every item in the same single category"


@dataclass(frozen=True)
class _Spec:
    """How to compute one reported metric from the paired arrays."""

    name: str
    statistic: Callable[..., NDArray[np.float64]]  # batched; the value reported
    arrays: tuple[NDArray, ...]
    undefined: str  # why the strict statistic can be nan
    # Batched and nan where undefined: used for the replicates (so undefined ones are dropped)
    # and to tell when ``statistic`` returned a conventional value instead of nan.
    strict: Callable[..., NDArray[np.float64]] | None = None


def _specs(
    kind: str, k: int, threshold: int | None, ref: NDArray[np.int64], cand: NDArray[np.int64]
) -> list[_Spec]:
    pair = (ref, cand)
    specs = [
        _Spec("kappa_categorical", partial(_kappa_batched, k=k), pair, _SINGLE_CATEGORY),
        _Spec("accuracy", _accuracy_batched, pair, ""),
    ]
    if kind == "ordinal":
        specs += [
            _Spec(
                "kappa_linear",
                partial(_kappa_batched, k=k, weights="linear"),
                pair,
                _SINGLE_CATEGORY,
            ),
            _Spec(
                "kappa_quadratic",
                partial(_kappa_batched, k=k, weights="quadratic"),
                pair,
                _SINGLE_CATEGORY,
            ),
            _Spec("ccc", _ccc_batched, pair, "reference and candidate are the same constant"),
            _Spec("pearson", _pearson_batched, pair, "reference or candidate is constant"),
            _Spec("spearman", _spearman_batched, pair, "reference or candidate is constant"),
            _Spec("mae", _mae_batched, pair, ""),
        ]
    if kind == "binary":
        specs += [
            _Spec("error_rate", _error_rate_batched, pair, ""),
            _Spec(
                "false_positive_rate",
                _false_positive_rate_batched,
                pair,
                "the reference has no negative (index 0)",
            ),
            _Spec(
                "false_negative_rate",
                _false_negative_rate_batched,
                pair,
                "the reference has no positive (index 1)",
            ),
        ]
    if threshold is not None:
        good = ((ref >= threshold).astype(np.int64), (cand >= threshold).astype(np.int64))
        fail = (ref < threshold, cand < threshold)
        specs += [
            _Spec(
                "kappa_binary",
                partial(_kappa_batched, k=2),
                good,
                f"reference and candidate put every item on the same side of index {threshold}",
            ),
            _Spec(
                "failure_precision",
                partial(_failure_precision_batched, zero_division=0.0),
                fail,
                f"the candidate flagged no failure (index < {threshold})",
                strict=partial(_failure_precision_batched, zero_division=np.nan),
            ),
            _Spec(
                "failure_incidence",
                partial(_failure_incidence_batched, zero_division=0.0),
                fail,
                f"the reference has no failure (index < {threshold})",
                strict=partial(_failure_incidence_batched, zero_division=np.nan),
            ),
        ]
    return specs


def _check_threshold(threshold: int | None, k: int) -> int | None:
    if threshold is None:
        return None
    if isinstance(threshold, bool) or not isinstance(threshold, int | np.integer):
        raise ValueError(f"threshold must be a category index (int), got {threshold!r}")
    if not 1 <= threshold <= k - 1:
        raise ValueError(
            f"threshold must be an index in 1..{k - 1} (good = index >= threshold), got {threshold}"
        )
    return int(threshold)


def agreement_metrics(
    reference: ArrayLike,
    candidate: ArrayLike,
    *,
    kind: MetricKind,
    k: int,
    threshold: int | None = None,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, MetricValue]:
    """Every agreement metric for ``kind``, in report order, each with a seeded bootstrap CI.

    ``reference``/``candidate`` are paired 0-based indices in ``0..k-1`` (unscored pairs already
    removed). Order: ``kappa_categorical``, ``accuracy``; for ordinal ``kappa_linear``,
    ``kappa_quadratic``, ``ccc``, ``pearson``, ``spearman``, ``mae``; for binary ``error_rate``,
    ``false_positive_rate``, ``false_negative_rate`` (positive = index 1); with ``threshold``
    ("good" = index >= threshold) ``kappa_binary``, ``failure_precision``, ``failure_incidence``
    (failure = index < threshold: the reference's are the true ones, the candidate's the flagged).
    An undefined value is nan with a note; failure precision/incidence with a zero denominator
    are 0.0 with a note. Bootstrap replicates where a metric is undefined are dropped (and the
    note counts them); if none is defined the CI is None.
    """
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {', '.join(_KINDS)}; got {kind!r}")
    ref, cand, k = label_pair(reference, candidate, check_k(k), _NAMES)
    if kind == "binary" and k != 2:
        raise ValueError(f"a binary scale has k=2 categories, got k={k}")
    if k < 2:
        raise ValueError(f"agreement needs at least 2 categories, got k={k}")
    threshold = _check_threshold(threshold, k)
    n_resamples = _check_resamples(n_resamples)
    confidence = _check_confidence(confidence)

    n = int(ref.shape[0])
    indices = _resample_indices(n, n_resamples, seed)
    results: dict[str, MetricValue] = {}
    for spec in _specs(kind, k, threshold, ref, cand):
        strict = spec.strict or spec.statistic
        value = float(spec.statistic(*(a[None, :] for a in spec.arrays))[0])
        notes = []
        if np.isnan(value):
            notes.append(f"undefined (nan): {spec.undefined}")
        elif spec.strict is not None and np.isnan(strict(*(a[None, :] for a in spec.arrays))[0]):
            notes.append(f"{value} by convention: {spec.undefined}")
        ci = _percentile_ci(_replicates(strict, list(spec.arrays), indices), confidence)
        if ci.n_dropped == ci.n_resamples:
            notes.append("no bootstrap replicate was defined, so there is no CI")
        elif ci.n_dropped:
            notes.append(
                f"{ci.n_dropped} of {ci.n_resamples} bootstrap replicates were dropped as "
                f"undefined: {spec.undefined}"
            )
        defined = ci.n_dropped < ci.n_resamples
        results[spec.name] = MetricValue(
            value=value,
            ci_low=ci.low if defined else None,
            ci_high=ci.high if defined else None,
            n=n,
            note="; ".join(notes) or None,
        )
    return results


def agreement_confusion(reference: ArrayLike, candidate: ArrayLike, k: int) -> list[list[int]]:
    """The k×k confusion matrix as nested lists (rows = reference index, columns = candidate)."""
    ref, cand, k = label_pair(reference, candidate, check_k(k), _NAMES)
    return confusion_matrix(ref, cand, k).tolist()
