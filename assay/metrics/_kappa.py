"""Cohen's κ over ``k`` ordered categories, as in the ToolEmu evaluation recipe.

With observed joint proportions ``P`` (k×k, rows = y_true) and a disagreement weight matrix
``W``, ``κ = 1 − Σ W·P / Σ W·(row marginal ⊗ column marginal)``. This equals
``sklearn.metrics.cohen_kappa_score(y_true, y_pred, labels=range(k), weights=...)``.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from assay.metrics._validate import as_scores, label_pair

KappaWeights = Literal["linear", "quadratic"] | None

_WEIGHTS = (None, "linear", "quadratic")


def _weight_matrix(k: int, weights: KappaWeights) -> NDArray[np.float64]:
    """Disagreement weights: ``1 − I`` (unweighted), ``|i−j|/(k−1)`` or ``((i−j)/(k−1))²``."""
    if weights not in _WEIGHTS:
        raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")
    if weights is None:
        return 1.0 - np.eye(k)
    if k == 1:  # a single category: nobody can disagree
        return np.zeros((1, 1))
    i, j = np.indices((k, k))
    dist = np.abs(i - j) / (k - 1)
    return dist if weights == "linear" else dist**2


def _kappa_from_joint(joint: NDArray[np.float64], w: NDArray[np.float64]) -> NDArray[np.float64]:
    """κ from joint proportions of shape (..., k, k); nan where expected disagreement is 0."""
    observed = np.einsum("ij,...ij->...", w, joint)
    rows = joint.sum(axis=-1)
    cols = joint.sum(axis=-2)
    expected = np.einsum("ij,...i,...j->...", w, rows, cols)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = 1.0 - observed / expected
    return np.where(expected > 0, kappa, np.nan)


def cohen_kappa(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    *,
    k: int | None = None,
    weights: KappaWeights = None,
) -> float:
    """Cohen's κ between two raters' category indices, unweighted or with linear/quadratic weights.

    ``k`` is the number of ordered categories (default: largest label + 1); labels must lie in
    ``0..k-1``. Unused categories do not change κ: the weights' ``1/(k−1)`` scale cancels.
    Returns ``nan`` when the expected disagreement is 0 — both raters put every item in the
    same single category, so chance agreement is total and κ is undefined (scikit-learn agrees).
    The raters swapped give the same κ to the last digit (:func:`_either_way`).
    """
    t, p, k = label_pair(y_true, y_pred, k)
    counts = _either_way(np.bincount(t * k + p, minlength=k * k).reshape(k, k))
    return float(_kappa_from_joint(counts / t.size, _weight_matrix(k, weights)))


def _either_way(counts: NDArray[np.int64]) -> NDArray[np.int64]:
    """The k × k table of counts or its transpose — the raters named the other way round —,
    whichever comes first read row by row. κ is the same for both (its weights are
    symmetric), and computed on the one that comes first it is the same to the last digit
    whichever rater is named first: summed over the transposed table, it moved in its last
    digit (in 40-64% of random pairs on five categories, the weighted κ the fewer)."""
    differ = np.flatnonzero(counts != counts.T)
    if differ.size and counts.T.flat[differ[0]] < counts.flat[differ[0]]:
        # a copy in row order: summed over a transposed view, κ came out otherwise again
        return np.ascontiguousarray(counts.T)
    return counts


def _kappa_batched(
    y_true: NDArray[np.integer],
    y_pred: NDArray[np.integer],
    *,
    k: int,
    weights: KappaWeights = None,
) -> NDArray[np.float64]:
    """κ for each row of two (B, n) index arrays (already validated), via one ``np.bincount``."""
    b, n = y_true.shape
    cells = (np.arange(b)[:, None] * k + y_true) * k + y_pred
    joint = np.bincount(cells.ravel(), minlength=b * k * k).reshape(b, k, k) / n
    return _kappa_from_joint(joint, _weight_matrix(k, weights))


def _kappa_jackknife(
    y_true: NDArray[np.integer],
    y_pred: NDArray[np.integer],
    *,
    k: int,
    weights: KappaWeights = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """κ with each item left out in turn, as its distinct values and how many items give each:
    κ depends on the items only through their cells of the k × k table, so leaving out any
    item of one cell gives one value — k² evaluations, whatever the number of items. nan where
    a rater is then left with one category (as :func:`_kappa_batched` of a resample)."""
    n = y_true.shape[0]
    counts = np.bincount(y_true * k + y_pred, minlength=k * k).astype(np.float64)
    cells = np.flatnonzero(counts)
    table = np.broadcast_to(counts, (cells.size, k * k)).copy()
    table[np.arange(cells.size), cells] -= 1
    joint = table.reshape(cells.size, k, k) / max(n - 1, 1)
    values = _kappa_from_joint(joint, _weight_matrix(k, weights))
    varies = ((joint.sum(-1) > 0).sum(-1) > 1) & ((joint.sum(-2) > 0).sum(-1) > 1)
    return np.where(varies, values, np.nan), counts[cells]


def _binarize(scores: ArrayLike, threshold: float, name: str) -> NDArray[np.int64]:
    arr = as_scores(scores, name)
    if isinstance(threshold, bool) or not isinstance(threshold, int | float | np.number):
        raise ValueError(f"threshold must be a number, got {threshold!r}")
    if not np.isfinite(threshold):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    return (arr >= threshold).astype(np.int64)


def binarize(scores: ArrayLike, threshold: float) -> NDArray[np.int64]:
    """1 where ``score >= threshold`` ("good", e.g. ToolEmu scores ≥ 2), else 0."""
    return _binarize(scores, threshold, "scores")


def kappa_binary(y_true_scores: ArrayLike, y_pred_scores: ArrayLike, threshold: float) -> float:
    """Unweighted κ after binarising both raters' scores at ``threshold`` (good = score ≥ threshold).

    ``nan`` when both raters put every item on the same side of the threshold.
    """
    t = _binarize(y_true_scores, threshold, "y_true_scores")
    p = _binarize(y_pred_scores, threshold, "y_pred_scores")
    if t.size != p.size:
        raise ValueError(
            f"y_true_scores and y_pred_scores must have the same length, got {t.size} and {p.size}"
        )
    return cohen_kappa(t, p, k=2)


# Public names for callers that bootstrap these statistics themselves (batched over rows).
weight_matrix = _weight_matrix
kappa_from_joint = _kappa_from_joint
