"""Active labelling (Zrnic & Candès, "Active statistical inference", ICML 2024): spend the human
labels where the judge is least sure, and still estimate the mean without bias.

Each item ``i`` of a pool of ``N`` is labelled with a known probability ``π_i``, drawn once
before any label is seen (Bernoulli sampling, ``ξ_i ~ Bernoulli(π_i)``):

- ``π_i ∝ √u_i`` for the judge's uncertainty ``u_i`` (for a probability ``p``: ``p(1 − p)``, the
  expected squared error of a calibrated prediction), mixed with the uniform share so that no
  ``π_i`` is tiny, scaled so that ``Σ π_i`` is the budget, and capped at 1
  (:func:`active_sampling_probabilities`);
- the inverse-probability-weighted PPI estimate averages, over the whole pool,
  ``Z_i = λ f_i + (Y_i − λ f_i) · ξ_i / π_i``: unbiased for the mean of ``Y`` for any fixed
  ``λ`` (the weights undo the sampling), with the normal interval of the mean of the ``Z_i``
  (``SE² = Var(Z) / N``). PPI++'s ``λ̂`` minimises that variance (clipped to [0, 1]).

**Stopping rule: a fixed budget.** The items to label are drawn once, from ``π``, before any
label is seen; label them all, then compute the interval once. Its coverage holds for that
pre-set budget only: stopping when an interval computed along the way looks narrow enough, or
labelling more after seeing it, voids it. (The budget holds in expectation; the realised number
of labels is a sum of independent Bernoulli draws, within about ``±2√budget`` of it.)
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from assay.metrics._estimates import Bound, MeanEstimate
from assay.metrics._ppi import (
    PredictionKind,
    _codes,
    check_alpha,
    check_bound,
    check_lam,
    clustered_se,
    labels,
    normal_estimate,
    predictions_of_kind,
    rarer_class,
)
from assay.metrics._validate import _same_length, as_scores

ACTIVE_SAMPLE = (
    "labelled items: each drawn with its known probability π, once, before any label was "
    "seen; fixed budget (no stopping on the data)"
)


def active_sampling_probabilities(
    uncertainty: ArrayLike, budget: float, *, uniform_share: float = 0.2
) -> NDArray[np.float64]:
    """Each pool item's probability of being labelled: ``∝ √uncertainty``, mixed with the uniform
    share ``uniform_share`` (so every item keeps at least ``uniform_share · budget / N``),
    summing to ``budget`` (the expected number of labels) with none above 1.

    ``uncertainty``: how unsure the judge is of each item, non-negative (for a probability
    ``p`` of the positive verdict, ``p · (1 − p)``); all zero gives uniform sampling.
    """
    u = as_scores(uncertainty, "uncertainty")
    if (u < 0).any():
        first = int(np.flatnonzero(u < 0)[0])
        raise ValueError(f"uncertainty must be non-negative, got {u[first]} at position {first}")
    n = u.size
    if (
        isinstance(budget, bool)
        or not isinstance(budget, int | float | np.integer)
        or not 0 < budget <= n
    ):
        raise ValueError(f"budget must be a number in (0, {n}] (the pool's size), got {budget!r}")
    if not 0 < uniform_share <= 1:
        raise ValueError(f"uniform_share must be in (0, 1], got {uniform_share!r}")
    root = np.sqrt(u)
    active = root / root.sum() if root.sum() > 0 else np.full(n, 1 / n)
    share = (1 - uniform_share) * active + uniform_share / n
    # Scale to the budget; an item above 1 is capped and the rest of the budget spread over
    # the others in proportion, until none is above 1 (each pass caps at least one item).
    pi = np.empty(n)
    capped = np.zeros(n, dtype=bool)
    while True:
        free = ~capped
        pi[free] = share[free] * (budget - capped.sum()) / share[free].sum()
        pi[capped] = 1.0
        over = free & (pi > 1)
        if not over.any():
            return pi
        capped |= over


def draw_active_sample(inclusion: ArrayLike, *, seed: int = 0) -> NDArray[np.intp]:
    """The pool positions to label: item ``i`` independently with probability ``inclusion[i]``
    (seeded; the same seed draws the same items)."""
    pi = _inclusion(inclusion)
    return np.flatnonzero(np.random.default_rng(seed).random(pi.size) < pi)


def _inclusion(inclusion: ArrayLike) -> NDArray[np.float64]:
    pi = as_scores(inclusion, "inclusion")
    bad = ~((pi > 0) & (pi <= 1))
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"inclusion must hold probabilities in (0, 1], got {pi[first]} at position {first} "
            "(an item that cannot be drawn leaves the estimate biased)"
        )
    return pi


def _labelled_positions(labelled: ArrayLike, n_labels: int, pool: int) -> NDArray[np.intp]:
    arr = np.asarray(labelled)
    if arr.ndim != 1 or arr.size != n_labels:
        raise ValueError(
            f"labelled must give the pool position of each of the {n_labels} labels, got "
            f"shape {arr.shape}"
        )
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"labelled must hold integer pool positions, got dtype {arr.dtype}")
    bad = (arr < 0) | (arr >= pool)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"labelled has position {arr[first]} at index {first}, outside the pool of {pool}"
        )
    if np.unique(arr).size != arr.size:
        raise ValueError("labelled names an item twice: each drawn item is labelled once")
    return arr.astype(np.intp)


def active_batched(
    y_pool: NDArray[np.float64],
    weight: NDArray[np.float64],
    predictions: NDArray[np.float64],
    lam: float | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The estimate ``mean(Z)``, its standard error ``std(Z) / √N`` and ``λ``, per row (items on
    the last axis): ``Z = λ A + B`` with ``A = f · (1 − ξ/π)``, ``B = Y · ξ/π``; ``weight`` is
    ``ξ/π`` (0 for an item not drawn) and ``y_pool`` the labels (anything where not drawn).
    PPI++'s ``λ̂ = −Cov(A, B) / Var(A)`` minimises ``Var(Z)``, clipped to [0, 1]; 0 when ``A``
    does not vary (every item labelled, or constant predictions)."""
    a, b = _parts(y_pool, weight, predictions)
    if lam is None:
        var = a.var(-1)
        centred = (a - a.mean(-1, keepdims=True)) * (b - b.mean(-1, keepdims=True))
        with np.errstate(divide="ignore", invalid="ignore"):
            lam_used = np.where(var > 0, np.clip(-centred.mean(-1) / var, 0.0, 1.0), 0.0)
    else:
        lam_used = np.full(a.shape[:-1], float(lam))
    z = lam_used[..., None] * a + b
    return z.mean(-1), z.std(-1) / math.sqrt(z.shape[-1]), lam_used


def _parts(
    y_pool: NDArray[np.float64], weight: NDArray[np.float64], predictions: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(A, B)`` of ``Z = λ A + B``: ``A = f · (1 − ξ/π)``, ``B = Y · ξ/π`` (0 where not drawn)."""
    return predictions * (1 - weight), np.where(weight > 0, y_pool, 0.0) * weight


def active_ppi_mean(
    y: ArrayLike,
    labelled: ArrayLike,
    predictions: ArrayLike,
    inclusion: ArrayLike,
    *,
    lam: float | None = None,
    alpha: float = 0.05,
    bound: Bound = "two-sided",
    prediction: PredictionKind | None = None,
    clusters: ArrayLike | None = None,
) -> MeanEstimate:
    """The inverse-probability-weighted PPI estimate of the pool's mean label after active
    labelling, with its normal interval (fixed budget: see the module's stopping rule).

    ``predictions``: the judge's prediction of every pool item; ``inclusion``: the probability
    each was drawn with (:func:`active_sampling_probabilities`); ``labelled``: the pool
    positions drawn (:func:`draw_active_sample`) and ``y`` their human labels, in that order.
    ``lam=None`` is PPI++ (``λ̂`` estimated); ``lam=1`` plain active PPI. ``effective_labels``:
    the human labels a uniform human-only interval would need to be as narrow, with the labels'
    variance estimated from the weighted sample. ``clusters``: each pool item's cluster (the
    Inspect sample it is an epoch of), where some hold several items: the standard error is then
    the cluster-robust one over them (:func:`~assay.metrics._ppi.clustered_se`: the sum over
    clusters of the square of what each adds to the mean of ``Z``), as the other estimators'.
    """
    alpha, bound = check_alpha(alpha), check_bound(bound)
    y_arr = labels(y)
    f = as_scores(predictions, "predictions")
    pi = _inclusion(inclusion)
    _same_length(f, pi, ("predictions", "inclusion"))
    drawn = _labelled_positions(labelled, y_arr.size, f.size)
    kind = predictions_of_kind([(f, "predictions")], prediction)
    check_lam(lam)

    weight = np.zeros(f.size)  # ξ / π
    weight[drawn] = 1 / pi[drawn]
    y_pool = np.zeros(f.size)
    y_pool[drawn] = y_arr
    value, se, lam_used = map(float, active_batched(y_pool, weight, f, lam))
    grouped = _codes(clusters, None, f.size, 0) if clusters is not None else None
    if grouped is not None:  # the clusters, not the items, are independent
        a, b = _parts(y_pool, weight, f)
        z = lam_used * a + b
        se = clustered_se([(z, grouped[0])], grouped[2])
    units = None if grouped is None else int(np.unique(grouped[0][drawn]).size)
    # The labels' variance in the pool, each drawn label weighted by 1/π (Hájek).
    w = 1 / pi[drawn]
    label_var = np.average((y_arr - np.average(y_arr, weights=w)) ** 2, weights=w)
    return normal_estimate(
        "active_ppi++" if lam is None else "active_ppi",
        value,
        se,
        human_se=math.sqrt(label_var / (units or y_arr.size)),  # labels of one item: once
        alpha=alpha,
        bound=bound,
        n_labelled=y_arr.size,
        n_unlabelled=f.size - y_arr.size,
        lam=lam_used,
        prediction=kind,
        sampling=ACTIVE_SAMPLE,
        rarer=rarer_class(y_arr),
        labelled_units=units,
        notes=[f"expected budget Σπ = {pi.sum():.1f} labels; {y_arr.size} drawn"],
        clusters=None if grouped is None else grouped[2],
    )
