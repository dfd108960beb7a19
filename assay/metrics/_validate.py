"""Input checks shared by every metric: one place that turns user arrays into clean numpy arrays
or raises a ValueError naming the argument and the problem (scikit-learn style)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray


def _as_1d(values: ArrayLike, name: str) -> NDArray[Any]:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence, got an array of shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty: a metric needs at least one item")
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
    ):
        raise ValueError(
            f"{name} must hold numbers, got dtype {arr.dtype} "
            "(remove unscored items, e.g. None, before computing metrics)"
        )
    return arr


def _same_length(a: NDArray[Any], b: NDArray[Any], names: tuple[str, str]) -> None:
    if a.shape[0] != b.shape[0]:
        raise ValueError(
            f"{names[0]} and {names[1]} must have the same length, "
            f"got {a.shape[0]} and {b.shape[0]}"
        )


def as_labels(values: ArrayLike, name: str) -> NDArray[np.int64]:
    """A 1-D array of non-negative integer category indices (integral floats are accepted)."""
    arr = _as_1d(values, name)
    if np.issubdtype(arr.dtype, np.bool_):
        return arr.astype(np.int64)
    if not np.issubdtype(arr.dtype, np.integer):
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{name} must hold integer category indices, got {arr[first].item()!r} at position {first}"
            )
    labels = arr.astype(np.int64)
    if (labels < 0).any():
        first = int(np.flatnonzero(labels < 0)[0])
        raise ValueError(
            f"{name} must hold 0-based category indices, got {labels[first]} at position {first}"
        )
    return labels


def label_pair(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    k: int | None = None,
    names: tuple[str, str] = ("y_true", "y_pred"),
) -> tuple[NDArray[np.int64], NDArray[np.int64], int]:
    """Two equally long index arrays and the number of categories ``k`` (default: max label + 1).

    Every label must lie in ``0..k-1``.
    """
    t = as_labels(y_true, names[0])
    p = as_labels(y_pred, names[1])
    _same_length(t, p, names)
    if k is None:
        k = int(max(t.max(), p.max())) + 1
    else:
        k = check_k(k)
        for arr, name in ((t, names[0]), (p, names[1])):
            if arr.max() >= k:
                first = int(np.flatnonzero(arr >= k)[0])
                raise ValueError(
                    f"{name} has label {arr[first]} at position {first}, "
                    f"outside the categories 0..{k - 1} (k={k})"
                )
    return t, p, k


def category_ranks(labels: Sequence[str], *arrays: NDArray[np.int64]) -> NDArray[np.int64]:
    """Each category's place (by index) in an order of unordered categories that neither the
    order a scale lists them in nor their names decide: by how often each array holds it (the
    first array first), then on how many items every array holds it, then — only between
    categories the data cannot tell apart — by name."""
    k = len(labels)
    keys = [np.bincount(np.asarray(a, dtype=np.int64), minlength=k) for a in arrays]
    if len(arrays) > 1:
        first = np.asarray(arrays[0], dtype=np.int64)
        same = np.all([np.asarray(a) == first for a in arrays[1:]], axis=0)
        keys.append(np.bincount(first[same], minlength=k))
    order = np.lexsort((np.asarray(labels, dtype=str), *reversed(keys)))
    rank = np.empty(k, dtype=np.int64)
    rank[order] = np.arange(k)
    return rank


def in_category_order(
    labels: Sequence[str], *arrays: NDArray[np.int64], threshold: int | None = None
) -> tuple[list[str], list[NDArray[np.int64]]]:
    """Unordered categories recoded in :func:`category_ranks`' order: the labels in that order
    and each array's indices into them. A statistic of unordered categories reads indices only
    as equal or not, so its value is the same; computed on these codes it is the same to the
    last digit, and so is its interval, however the scale lists or names its labels.

    ``threshold`` (an index: failure = a category listed before it) splits the categories by
    how the scale lists them, and that split must survive the recoding: the categories before
    it stay before it and it keeps its place, so ``code < threshold`` is a failure exactly when
    ``index < threshold`` was, and ``labels[threshold]`` still names it. Only the order within
    each side is the data's."""
    rank = category_ranks(labels, *arrays)
    if threshold is not None:
        index = np.arange(len(labels))
        side = np.where(index < threshold, 0, np.where(index == threshold, 1, 2))
        order = np.lexsort((rank, side))
        rank = np.empty(len(labels), dtype=np.int64)
        rank[order] = index
    placed = [""] * len(labels)
    for i, r in enumerate(rank):
        placed[r] = str(labels[i])
    return placed, [rank[a] for a in arrays]


def check_k(k: Any) -> int:
    """The number of categories: an integer >= 1."""
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k (the number of categories) must be a positive integer, got {k!r}")
    return int(k)


def binary_pair(
    y_true: ArrayLike, y_pred: ArrayLike, names: tuple[str, str] = ("y_true", "y_pred")
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Two equally long arrays of 0/1 labels (1 is the positive class)."""
    t, p, _ = label_pair(y_true, y_pred, None, names)
    for arr, name in ((t, names[0]), (p, names[1])):
        if arr.max() > 1:
            first = int(np.flatnonzero(arr > 1)[0])
            raise ValueError(
                f"{name} must hold binary labels 0/1, got {arr[first]} at position {first}"
            )
    return t, p


def bool_pair(
    a: ArrayLike, b: ArrayLike, names: tuple[str, str]
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """Two equally long boolean arrays (0/1 integers are accepted)."""
    t, p = binary_pair(a, b, names)
    return t.astype(bool), p.astype(bool)


def as_scores(values: ArrayLike, name: str) -> NDArray[np.float64]:
    """A 1-D array of finite real-valued scores."""
    arr = _as_1d(values, name).astype(np.float64)
    if not np.isfinite(arr).all():
        first = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(f"{name} must hold finite numbers, got {arr[first]} at position {first}")
    return arr


def score_pair(
    y_true: ArrayLike, y_pred: ArrayLike, names: tuple[str, str] = ("y_true", "y_pred")
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Two equally long arrays of finite real-valued scores."""
    x = as_scores(y_true, names[0])
    y = as_scores(y_pred, names[1])
    _same_length(x, y, names)
    return x, y


def _first_non_number(values: Any) -> tuple[int, Any] | None:
    """The position and value of the first entry that is not a real number (e.g. None)."""
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating):
            return i, v
    return None


def as_probabilities(values: ArrayLike, name: str) -> NDArray[np.float64]:
    """A 1-D array of probabilities in [0, 1]; nan, None or a value outside [0, 1] raises a
    ValueError naming the first bad index. Missing probabilities are never imputed: drop those
    items (and report them) before calling."""
    arr = np.asarray(values)
    if arr.dtype == object and arr.ndim == 1:
        bad = _first_non_number(arr)
        if bad is not None:
            raise ValueError(
                f"{name} must hold probabilities in [0, 1], got {bad[1]!r} at index {bad[0]} "
                "(items without a probability are the caller's to drop and report; never imputed)"
            )
        arr = arr.astype(np.float64)
    arr = _as_1d(arr, name).astype(np.float64)
    bad_mask = ~((arr >= 0.0) & (arr <= 1.0))  # also true for nan
    if bad_mask.any():
        first = int(np.flatnonzero(bad_mask)[0])
        raise ValueError(
            f"{name} must hold probabilities in [0, 1], got {arr[first]} at index {first}"
            + (" (missing probabilities are never imputed)" if np.isnan(arr[first]) else "")
        )
    return arr
