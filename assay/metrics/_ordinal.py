"""Agreement on ordered, real-valued scores: Lin's CCC, Pearson r, Spearman ρ and MAE.

Each metric has a private batched form that works along the last axis, so a bootstrap can
evaluate all replicates of a (B, n) array at once; the public functions validate and call it.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from assay.metrics._validate import score_pair


def _centred(x: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Mean and deviations along the last axis; exactly 0 deviations for constant rows, so that
    rounding in the mean never makes a constant side look variable."""
    constant = np.ptp(x, axis=-1) == 0
    mean = np.where(constant, x[..., 0], x.mean(axis=-1))
    dev = np.where(constant[..., None], 0.0, x - mean[..., None])
    return mean, dev


def _ccc_batched(x: NDArray, y: NDArray) -> NDArray[np.float64]:
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    mx, dx = _centred(x)
    my, dy = _centred(y)
    cov = (dx * dy).mean(axis=-1)
    denom = (dx**2).mean(axis=-1) + (dy**2).mean(axis=-1) + (mx - my) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denom > 0, 2.0 * cov / denom, np.nan)


def _pearson_batched(x: NDArray, y: NDArray) -> NDArray[np.float64]:
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    _, dx = _centred(x)
    _, dy = _centred(y)
    sx = np.sqrt((dx**2).sum(axis=-1))
    sy = np.sqrt((dy**2).sum(axis=-1))
    defined = (sx > 0) & (sy > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (dx * dy).sum(axis=-1) / (sx * sy)
    return np.where(defined, np.clip(r, -1.0, 1.0), np.nan)


def _spearman_batched(x: NDArray, y: NDArray) -> NDArray[np.float64]:
    return _pearson_batched(average_ranks(x), average_ranks(y))


def average_ranks(values: ArrayLike) -> NDArray[np.float64]:
    """Ranks 1..n along the last axis, ties given the mean of the ranks they span — what
    ``scipy.stats.rankdata(values, axis=-1)`` returns (half-integers: exact), without
    scipy.stats's second of import at the end of a run."""
    a = np.asarray(values, np.float64)
    n = a.shape[-1]
    order = np.argsort(a, axis=-1, kind="stable")
    ordered = np.take_along_axis(a, order, axis=-1)
    position = np.broadcast_to(np.arange(n), a.shape)
    starts_run = np.ones(a.shape, bool)
    starts_run[..., 1:] = ordered[..., 1:] != ordered[..., :-1]
    ends_run = np.ones(a.shape, bool)
    ends_run[..., :-1] = starts_run[..., 1:]
    first = np.maximum.accumulate(np.where(starts_run, position, 0), axis=-1)
    last = np.flip(np.minimum.accumulate(np.flip(np.where(ends_run, position, n), -1), -1), -1)
    ranks = np.empty(a.shape, np.float64)
    np.put_along_axis(ranks, order, (first + last) / 2.0 + 1.0, axis=-1)
    return ranks


def _mae_batched(x: NDArray, y: NDArray) -> NDArray[np.float64]:
    return np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64)).mean(axis=-1)


def ccc(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Lin's concordance correlation coefficient: agreement with the identity line, not just a trend.

    ``2·cov / (var_true + var_pred + (mean_true − mean_pred)²)`` with population (1/n) moments.
    ``nan`` when both sides are the same constant (0/0); 0 when one side is constant and the
    other is not, or both are different constants.
    """
    x, y = score_pair(y_true, y_pred)
    return float(_ccc_batched(x, y))


def pearson(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Pearson's r (linear correlation); ``nan`` when either side is constant (as scipy)."""
    x, y = score_pair(y_true, y_pred)
    return float(_pearson_batched(x, y))


def spearman(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Spearman's ρ (rank correlation, average ranks for ties); ``nan`` when a side is constant."""
    x, y = score_pair(y_true, y_pred)
    return float(_spearman_batched(x, y))


def mae(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Mean absolute error, in the units of the scores (category steps for indices)."""
    x, y = score_pair(y_true, y_pred)
    return float(_mae_batched(x, y))
