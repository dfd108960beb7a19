"""Exact-match classification metrics: accuracy, error rate, FPR, FNR, balanced accuracy,
confusion matrix.

For FPR/FNR and balanced accuracy the labels are binary and 1 is the positive class.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from assay.metrics._validate import binary_pair, check_k, label_pair


def _accuracy_batched(y_true: NDArray, y_pred: NDArray) -> NDArray[np.float64]:
    return (y_true == y_pred).mean(axis=-1)


def _error_rate_batched(y_true: NDArray, y_pred: NDArray) -> NDArray[np.float64]:
    return (y_true != y_pred).mean(axis=-1)


def _rate(hits: NDArray, total: NDArray) -> NDArray[np.float64]:
    return np.where(total > 0, hits / np.maximum(total, 1), np.nan)


def _false_positive_rate_batched(y_true: NDArray, y_pred: NDArray) -> NDArray[np.float64]:
    negatives = y_true == 0
    return _rate((negatives & (y_pred == 1)).sum(axis=-1), negatives.sum(axis=-1))


def _false_negative_rate_batched(y_true: NDArray, y_pred: NDArray) -> NDArray[np.float64]:
    positives = y_true == 1
    return _rate((positives & (y_pred == 0)).sum(axis=-1), positives.sum(axis=-1))


def _balanced_accuracy_batched(y_true: NDArray, y_pred: NDArray) -> NDArray[np.float64]:
    """The mean of the true positive and true negative rates; nan when a class is missing."""
    return (
        1.0
        - (
            _false_positive_rate_batched(y_true, y_pred)
            + _false_negative_rate_batched(y_true, y_pred)
        )
        / 2.0
    )


def accuracy(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Share of items where the two category indices are equal."""
    t, p, _ = label_pair(y_true, y_pred)
    return float(_accuracy_batched(t, p))


def error_rate(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Share of items where the two category indices differ (1 − accuracy)."""
    t, p, _ = label_pair(y_true, y_pred)
    return float(_error_rate_batched(t, p))


def false_positive_rate(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """FP / (FP + TN) for binary labels (1 = positive); ``nan`` when y_true has no 0."""
    t, p = binary_pair(y_true, y_pred)
    return float(_false_positive_rate_batched(t, p))


def false_negative_rate(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """FN / (FN + TP) for binary labels (1 = positive); ``nan`` when y_true has no 1."""
    t, p = binary_pair(y_true, y_pred)
    return float(_false_negative_rate_batched(t, p))


def balanced_accuracy(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """(TPR + TNR) / 2 for binary labels (1 = positive), as
    ``sklearn.metrics.balanced_accuracy_score`` computes it: a judge that gives one verdict on
    every item scores 0.5 whatever the prevalence; ``nan`` when y_true lacks a class."""
    t, p = binary_pair(y_true, y_pred)
    return float(_balanced_accuracy_batched(t, p))


def confusion_matrix(y_true: ArrayLike, y_pred: ArrayLike, k: int) -> NDArray[np.int64]:
    """k×k counts; rows are the y_true category, columns the y_pred category."""
    t, p, k = label_pair(y_true, y_pred, check_k(k))
    return np.bincount(t * k + p, minlength=k * k).reshape(k, k)
