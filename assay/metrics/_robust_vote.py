"""Panel aggregations one adversarial member cannot drag arbitrarily.

- :func:`trimmed_mean`: an item's scores without the ``trim`` highest and ``trim`` lowest, then
  their mean. One member answering the scale's extreme moves a plain mean by (extreme −
  verdict) / members; with ``trim ≥ 1`` the trimmed mean stays within the range of the other
  members' scores, whatever the one answers.
- :func:`weighted_vote` with :func:`capped_weights`: a vote where each member counts by a
  reliability weight, no member's share of the total above ``cap``. With ``cap < 1/2`` one
  member never outvotes the others when they agree, however reliable it was estimated to be —
  an uncapped weighted vote hands the verdict to a member whose weight exceeds the others'
  sum. :func:`reliability_weights` makes the weights from Dawid–Skene accuracies.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from assay.metrics._validate import check_k

DEFAULT_CAP = 0.4
"""The largest share of the panel's total weight one member may hold by default (below 1/2:
one member never outvotes the others united)."""
MAX_ACCURACY = 0.999
"""Accuracies are capped here before their log-odds (a perfect judge would weigh infinitely)."""


def _scores_matrix(scores: ArrayLike, name: str) -> NDArray[np.float64]:
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim == 1:
        s = s[None, :]
    if s.ndim != 2 or s.shape[1] == 0:
        raise ValueError(f"{name} must be items × members, got shape {s.shape}")
    if np.isinf(s).any():
        i, j = (int(x[0]) for x in np.nonzero(np.isinf(s)))
        raise ValueError(
            f"{name} must be finite (nan: no score), got {s[i, j]} at item {i}, member {j}"
        )
    return s


def trimmed_mean(scores: ArrayLike, *, trim: int = 1) -> NDArray[np.float64]:
    """Per item (a row of ``scores``; nan: that member gave no score): the mean of its scores
    without the ``trim`` highest and ``trim`` lowest. An item needs more than ``2 · trim``
    scores; with fewer its value is nan."""
    if isinstance(trim, bool) or not isinstance(trim, int | np.integer) or trim < 0:
        raise ValueError(f"trim must be a non-negative integer, got {trim!r}")
    s = _scores_matrix(scores, "scores")
    ordered = np.sort(s, axis=1)  # nan sorts last
    count = (~np.isnan(s)).sum(axis=1)
    position = np.arange(s.shape[1])[None, :]
    kept = (position >= trim) & (position < (count - trim)[:, None])
    total = np.where(kept, np.nan_to_num(ordered), 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 2 * trim, total / kept.sum(axis=1), np.nan)


def capped_weights(weights: ArrayLike, *, cap: float = DEFAULT_CAP) -> NDArray[np.float64]:
    """Non-negative ``weights`` as shares of their total, none above ``cap``: a member over
    it is set to ``cap`` and the rest is shared among the others in proportion to their
    weights, until none is over (at most one pass per member). A member of weight 0 keeps a
    share of 0; when fewer members have a weight than ``1 / cap`` they share equally (two
    members left: a half each, so neither outvotes the other). All weights zero give equal
    shares; a ``cap`` below one over the number of members is an error."""
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or w.size == 0:
        raise ValueError(f"weights must be a non-empty 1-D sequence, got shape {w.shape}")
    if not np.isfinite(w).all() or (w < 0).any():
        bad = int(np.flatnonzero(~np.isfinite(w) | (w < 0))[0])
        raise ValueError(f"weights must be finite and non-negative, got {w[bad]} at position {bad}")
    if not 0 < cap <= 1:
        raise ValueError(f"cap must be in (0, 1], got {cap!r}")
    if cap * w.size < 1 - 1e-12:
        raise ValueError(
            f"cap {cap} is below 1/{w.size}: {w.size} members' shares cannot sum to 1 under it"
        )
    if w.sum() == 0:
        return np.full(w.size, 1.0 / w.size)
    weighted = w > 0
    if cap * weighted.sum() < 1 - 1e-12:
        return np.where(weighted, 1.0 / weighted.sum(), 0.0)
    shares = w / w.sum()
    fixed = np.zeros(w.size, dtype=bool)
    for _ in range(w.size):
        over = ~fixed & (shares > cap + 1e-12)
        if not over.any():
            break
        fixed |= over
        free = ~fixed
        rest = 1.0 - cap * fixed.sum()
        shares = np.where(fixed, cap, 0.0)
        shares[free] = rest * w[free] / w[free].sum()
    return shares


def reliability_weights(accuracies: Sequence[float], k: int) -> NDArray[np.float64]:
    """A vote weight per member from its accuracy on ``k`` classes: the log-odds of it being
    right against one given wrong class, ``log(a (k − 1) / (1 − a))`` (the weight under which a
    vote of independent members is the most probable label, when each errs uniformly across the
    wrong classes), 0 for a member no better than chance (``a ≤ 1/k``), accuracies capped at
    :data:`MAX_ACCURACY`."""
    k = check_k(k)
    if k < 2:
        raise ValueError(f"k must be at least 2 classes, got {k}")
    a = np.asarray(accuracies, dtype=np.float64)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"accuracies must be a non-empty 1-D sequence, got shape {a.shape}")
    bad = ~np.isfinite(a) | (a < 0) | (a > 1)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise ValueError(f"accuracies must lie in [0, 1], got {a[first]} at position {first}")
    a = np.clip(a, 1.0 / k, MAX_ACCURACY)
    return np.maximum(np.log(a * (k - 1) / (1.0 - a)), 0.0)


def weighted_vote(
    verdicts: ArrayLike, weights: ArrayLike, *, k: int
) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """Per item (a row of ``verdicts``: 0-based classes, nan where a member gave none): the
    class with the most weight, and whether that was a tie (then the lowest tied class; the
    caller applies its own tie rule). An item without a verdict is class −1."""
    k = check_k(k)
    v = _scores_matrix(verdicts, "verdicts")
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (v.shape[1],):
        raise ValueError(f"weights must have one entry per member ({v.shape[1]}), got {w.shape}")
    present = ~np.isnan(v)
    codes = np.where(present, np.nan_to_num(v, nan=-1.0), -1.0)
    bad = present & ((codes < 0) | (codes >= k) | (codes != np.round(codes)))
    if bad.any():
        i, j = (int(x[0]) for x in np.nonzero(bad))
        raise ValueError(
            f"verdicts must be classes 0..{k - 1}, got {v[i, j]:g} at item {i}, member {j}"
        )
    onehot = codes.astype(np.int64)[..., None] == np.arange(k)
    totals = (onehot * w[None, :, None]).sum(axis=1)
    best = totals.max(axis=1, keepdims=True)
    top = np.isclose(totals, best, rtol=0, atol=1e-12) & onehot.any(axis=1)  # voted classes
    labels = np.where(present.any(axis=1), top.argmax(axis=1), -1).astype(np.int64)
    return labels, top.sum(axis=1) > 1
