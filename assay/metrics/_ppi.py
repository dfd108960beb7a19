"""Prediction-powered inference of a mean (Angelopoulos et al., "Prediction-powered inference",
Science 2023; PPI++: Angelopoulos, Duchi & Zrnic 2024; stratified PPI: Fisch et al. 2024):
the mean of a human label ``Y`` from ``n`` items a human labelled and a judge's prediction
``f`` on those and on ``N`` unlabelled items, with an interval that holds however bad the judge is.

The estimate is the judge's mean on the unlabelled items, corrected by its mean error on the
labelled ones, with the judge's part weighted by ``λ``::

    θ̂_λ = λ · mean(f(X̃)) + mean(Y − λ · f(X))
    SE²  = Var(λ · f(X̃)) / N + Var(Y − λ · f(X)) / n

``λ = 1`` is classical PPI, ``λ = 0`` the human labels alone, and PPI++ estimates the ``λ`` that
minimises the variance (clipped to [0, 1]), so it is never much worse than the human labels
alone: a useless judge gets ``λ ≈ 0``. The interval is the normal (CLT) one at level
``1 − alpha``. It assumes the labelled items are a uniform random sample of the same items the
unlabelled ones come from; it assumes nothing about the judge. Every function here equals the
reference implementation ``ppi_py`` (``ppi_mean_pointestimate``, ``ppi_mean_ci``,
``classical_mean_ci``; with observation weights normalised as it does).

Stratified PPI++ runs PPI++ in each stratum (a task category, say) with its own ``λ`` and
combines the strata with weights equal to their shares of all items: a judge good on one kind
of item and poor on another is used where it helps.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from assay.metrics._cluster import shared_clusters
from assay.metrics._estimates import (
    Bound,
    EstimateMethod,
    MeanEstimate,
    StratumEstimate,
    effective_labels,
)
from assay.metrics._paired import _z
from assay.metrics._prevalence import corrected_prevalence
from assay.metrics._validate import _same_length, as_scores

PredictionKind = Literal["verdict", "probability", "score"]
MIN_LABELLED = 2  # a variance needs two labels
FEW_LABELLED = 30
"""Below this many labels the normal interval covers less than its level: a 95% PPI++ interval
covered 76–89% of the time on 10 labels and 88–93% on 20, 92–93% on 30, in the simulation of
``benchmarks/bench_ppi_few_labels.py`` (docs/estimate.md)."""

FEW_OF_A_CLASS = 10
"""Below this many labels of either class (0/1 labels) the normal interval covers less than
its level however many labels there are: a 95% PPI++ interval covered 0.90–0.92 with about 5
of the rarer class among 50–100 labels, 0.94–0.97 from 10 on, in the simulation of
``benchmarks/bench_ppi_few_labels.py`` (the rule of thumb ``np ≥ 10`` for a proportion's normal
approximation)."""

UNIFORM_SAMPLE = "labelled items: a uniform random sample of the same items as the unlabelled"
STRATIFIED_SAMPLE = (
    "labelled items: a uniform random sample within each stratum; strata weighted by their "
    "shares of all items"
)
STRATIFIED_SHARES = (
    "labelled items: a uniform random sample within each stratum; strata weighted by their "
    "shares of the population estimated"
)
CLT = "normal (CLT)"
CLUSTERED_CLT = "normal (CLT), cluster-robust"
"""The normal interval whose standard error takes clusters of items (an Inspect log's epochs of
one sample) as the unit: :func:`clustered_se`."""


@dataclasses.dataclass(frozen=True)
class _Sample:
    """Validated inputs: labels and predictions of the labelled items, predictions of the
    unlabelled ones, and their weights (normalised to sum to n and N, as ppi_py does). Items lie
    on the last axis; leading axes, when there are any, are independent samples (simulations)."""

    y: NDArray[np.float64]
    f: NDArray[np.float64]
    f_unlabelled: NDArray[np.float64]
    w: NDArray[np.float64]
    w_unlabelled: NDArray[np.float64]

    @property
    def n(self) -> int:
        return self.y.shape[-1]

    @property
    def n_unlabelled(self) -> int:
        return self.f_unlabelled.shape[-1]


# -- checks ---------------------------------------------------------------------------------


def check_alpha(alpha: float) -> float:
    """The error level: strictly between 0 and 1."""
    if isinstance(alpha, bool) or not isinstance(alpha, int | float | np.floating):
        raise ValueError(f"alpha must be a number strictly between 0 and 1, got {alpha!r}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be strictly between 0 and 1, got {alpha!r}")
    return float(alpha)


def check_bound(bound: str) -> Bound:
    """Which interval: ``two-sided``, or one bound (``lower``: ``[low, ∞)``; ``upper``)."""
    if bound not in ("two-sided", "lower", "upper"):
        raise ValueError(f"bound must be 'two-sided', 'lower' or 'upper', got {bound!r}")
    return bound  # type: ignore[return-value]


def check_lam(lam: float | None) -> None:
    """PPI's weight on the predictions: a number in [0, 1], or None for PPI++'s estimate."""
    if lam is not None and (
        isinstance(lam, bool) or not isinstance(lam, int | float) or not 0 <= lam <= 1
    ):
        raise ValueError(f"lam must be a number in [0, 1] or None (PPI++), got {lam!r}")


def labels(y: ArrayLike, name: str = "y") -> NDArray[np.float64]:
    """The human labels: finite numbers, at least two of them."""
    arr = as_scores(y, name)
    if arr.size < MIN_LABELLED:
        raise ValueError(
            f"{name} has {arr.size} labelled item: an interval needs at least {MIN_LABELLED}"
        )
    return arr


def predictions_of_kind(
    arrays: Sequence[tuple[NDArray[np.float64], str]], kind: PredictionKind | None
) -> str:
    """Check the predictions against their declared kind (``verdict``: 0/1, ``probability``:
    in [0, 1], ``score``: any finite number) or, when None, name the narrowest kind they fit."""
    if kind not in (None, "verdict", "probability", "score"):
        raise ValueError(f"prediction must be 'verdict', 'probability' or 'score', got {kind!r}")
    fits = {
        "verdict": lambda a: (a == 0) | (a == 1),
        "probability": lambda a: (a >= 0) & (a <= 1),
    }
    if kind is None:
        for candidate in ("verdict", "probability"):
            if all(fits[candidate](a).all() for a, _ in arrays):
                return candidate
        return "score"
    if kind in fits:
        what = "0/1 verdicts" if kind == "verdict" else "probabilities in [0, 1]"
        for a, name in arrays:
            bad = ~fits[kind](a)
            if bad.any():
                first = int(np.flatnonzero(bad)[0])
                raise ValueError(f"{name} must hold {what}, got {a[first]} at position {first}")
    return kind


def _weights(w: ArrayLike | None, n: int, name: str) -> NDArray[np.float64]:
    """Observation weights, positive and finite, normalised to sum to ``n`` (ones when None)."""
    if w is None:
        return np.ones(n)
    arr = as_scores(w, name)
    if arr.size != n:
        raise ValueError(f"{name} must have one weight per item ({n}), got {arr.size}")
    if (arr <= 0).any():
        first = int(np.flatnonzero(arr <= 0)[0])
        raise ValueError(f"{name} must be positive, got {arr[first]} at position {first}")
    return arr / arr.sum() * n


def _sample(
    y: ArrayLike,
    predictions: ArrayLike,
    predictions_unlabelled: ArrayLike,
    weights: ArrayLike | None,
    weights_unlabelled: ArrayLike | None,
    prediction: PredictionKind | None,
) -> tuple[_Sample, str]:
    y_arr = labels(y)
    f = as_scores(predictions, "predictions")
    _same_length(y_arr, f, ("y", "predictions"))
    f_u = as_scores(predictions_unlabelled, "predictions_unlabelled")
    kind = predictions_of_kind([(f, "predictions"), (f_u, "predictions_unlabelled")], prediction)
    w = _weights(weights, y_arr.size, "weights")
    w_u = _weights(weights_unlabelled, f_u.size, "weights_unlabelled")
    return _Sample(y_arr, f, f_u, w, w_u), kind


# -- the estimators -------------------------------------------------------------------------


def interval(value: float, se: float, alpha: float, bound: Bound) -> tuple[float, float]:
    """The normal interval ``value ± z · se`` at level ``1 − alpha`` (one end at ±∞ when
    one-sided), as statsmodels' ``_zconfint_generic`` builds it."""
    if bound == "two-sided":
        half = _z(1 - alpha / 2) * se
        return value - half, value + half
    half = _z(1 - alpha) * se
    return (value - half, math.inf) if bound == "lower" else (-math.inf, value + half)


def power_tuned_lambda(s: _Sample) -> NDArray[np.float64]:
    """PPI++'s variance-minimising ``λ̂`` for a mean, clipped to [0, 1]: ``Cov(Y, f) / ((1 +
    n/N) · Var(f))`` computed on the weighted gradients at the λ = 1 estimate, as ppi_py's
    ``_calc_lam_glm`` does; 0 when the predictions do not vary (λ then changes nothing).
    Batched: one ``λ̂`` per row of the sample's arrays (items on the last axis)."""
    theta = ((s.w_unlabelled * s.f_unlabelled).mean(-1) + (s.w * (s.y - s.f)).mean(-1))[..., None]
    grads = s.w * (s.y - theta)
    grads_hat = s.w * (s.f - theta)
    centred = (grads - grads.mean(-1, keepdims=True)) * (
        grads_hat - grads_hat.mean(-1, keepdims=True)
    )
    cov = 2 * centred.mean(-1)
    var = np.var(
        np.concatenate([grads_hat, s.w_unlabelled * (s.f_unlabelled - theta)], axis=-1),
        ddof=1,
        axis=-1,
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.clip(cov / (2 * (1 + s.n / s.n_unlabelled) * var), 0.0, 1.0)
    return np.where(var > 0, lam, 0.0)


def ppi_batched(
    s: _Sample, lam: float | None = None
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """``θ̂_λ``, its standard error (population variances, as ppi_py computes them) and ``λ``
    (PPI++'s ``λ̂`` when ``lam`` is None), one of each per row of the sample's arrays."""
    lam_used = power_tuned_lambda(s) if lam is None else np.full(s.y.shape[:-1], float(lam))
    imputed = s.w_unlabelled * lam_used[..., None] * s.f_unlabelled
    rectifier = s.w * (s.y - lam_used[..., None] * s.f)
    value = imputed.mean(-1) + rectifier.mean(-1)
    se = np.sqrt(imputed.var(-1) / s.n_unlabelled + rectifier.var(-1) / s.n)
    return value, se, lam_used


def _codes(
    clusters: ArrayLike | None, clusters_unlabelled: ArrayLike | None, n: int, n_unlabelled: int
) -> tuple[NDArray[np.intp], NDArray[np.intp], int] | None:
    """The labelled and unlabelled items' clusters as codes of one numbering, and how many
    clusters; None when no cluster holds two items (or none were given): independent items."""
    if clusters is None and clusters_unlabelled is None:
        return None
    lab = [] if clusters is None else list(clusters)
    unl = [] if clusters_unlabelled is None else list(clusters_unlabelled)
    if len(lab) != n or len(unl) != n_unlabelled:
        raise ValueError(
            f"clusters must give one cluster per labelled item ({n}) and clusters_unlabelled "
            f"one per unlabelled item ({n_unlabelled}); got {len(lab)} and {len(unl)}"
        )
    ids = shared_clusters(lab + unl, np.arange(n + n_unlabelled))
    if ids is None:
        return None
    names, codes = np.unique(ids, return_inverse=True)
    return codes[:n], codes[n:], int(names.size)


def clustered_se(
    parts: Sequence[tuple[NDArray[np.float64], NDArray[np.intp]]], n_clusters: int
) -> float:
    """The standard error of a sum of means, ``Σ mean(z_k)``, over items in clusters: each part
    ``(z_k, codes_k)`` the values averaged and each value's cluster. The clusters, not the items,
    are independent, so the variance is the sum over clusters of the square of what each adds
    to the estimate — ``Σ_c (Σ_k Σ_{i ∈ c} (z_ki − mean z_k) / n_k)²``, the sandwich (Liang and
    Zeger) estimator without a small-sample factor, which is the population-variance standard
    error of ppi_py when every cluster holds one item, and takes a cluster's items in both parts
    (one epoch labelled, another not) with their covariance."""
    total = np.zeros(n_clusters)
    for z, codes in parts:
        if z.size:
            total += np.bincount(codes, weights=(z - z.mean()) / z.size, minlength=n_clusters)
    return float(np.sqrt((total**2).sum()))


def _human_se(
    y: NDArray[np.float64],
    w: NDArray[np.float64] | None,
    grouped: tuple[NDArray[np.intp], NDArray[np.intp], int] | None,
) -> float:
    """The human labels' standard error: :func:`human_batched`'s, or over clusters
    (``grouped``, from :func:`_codes`: the labels' codes first) :func:`clustered_se`'s."""
    if grouped is None:
        return float(human_batched(y, w)[1])
    return clustered_se([(y if w is None else w * y, grouped[0])], grouped[2])


def human_batched(
    y: NDArray[np.float64], w: NDArray[np.float64] | None = None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The weighted mean of the labels and its standard error, per row (``classical_mean_ci``)."""
    wy = y if w is None else w * y
    return wy.mean(-1), wy.std(-1) / math.sqrt(y.shape[-1])


def stratified_batched(
    s: _Sample,
    labelled: Sequence[NDArray[np.intp]],
    unlabelled: Sequence[NDArray[np.intp]],
    shares: Sequence[float] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], list[tuple[float, NDArray, NDArray, NDArray]]]:
    """Stratified PPI++ per row: each stratum's items are the positions ``labelled[k]`` and
    ``unlabelled[k]``, its weight ``shares[k]`` (None: its share of all items); returns the
    combined estimate, its standard error and, per stratum, ``(weight, value, se, λ)`` (labels
    only, ``λ = 0``, in a stratum with no unlabelled item)."""
    total = s.n + s.n_unlabelled
    if shares is None:
        shares = [
            (lab.size + unl.size) / total for lab, unl in zip(labelled, unlabelled, strict=True)
        ]
    parts = []
    for lab, unl, share in zip(labelled, unlabelled, shares, strict=True):
        y_k = s.y[..., lab]
        if unl.size:
            part = _Sample(
                y_k, s.f[..., lab], s.f_unlabelled[..., unl], s.w[lab], s.w_unlabelled[unl]
            )
            value, se, lam = ppi_batched(part)
        else:
            value, se = human_batched(y_k)
            lam = np.zeros_like(value)
        parts.append((share, value, se, lam))
    value = sum(w * v for w, v, _, _ in parts)
    se = np.sqrt(sum((w * e) ** 2 for w, _, e, _ in parts))
    return value, se, parts


FLOAT_ROUNDING = 1e-12
"""A standard error this small, relative to the estimate (or 1), is a 0 computed in floating
point — labels all alike with a λ of 1e-34 left by the arithmetic — and is said as 0."""


def _units(grouped: tuple[NDArray[np.intp], NDArray[np.intp], int] | None) -> int | None:
    """How many clusters the labelled items of :func:`_codes`' numbering are in (None: the
    items are independent)."""
    return None if grouped is None else int(np.unique(grouped[0]).size)


def few_labels(n_labelled: int) -> str:
    """What a normal interval on fewer than :data:`FEW_LABELLED` labels is: rough."""
    return (
        f"only {n_labelled} human labels: with fewer than {FEW_LABELLED} the normal interval "
        "covers less than its level (a 95% one covered 76–89% of the time on 10 labels in "
        "simulation): read it as rough, and label more"
    )


def strata_labels_worth(strata: Sequence[StratumEstimate]) -> float | None:
    """How many labels a stratified standard error rests on: the Welch–Satterthwaite effective
    degrees of freedom of ``SE² = Σ_k (w_k SE_k)²``, ``(Σ v_k)² / Σ v_k² / (n_k − 1)`` with
    ``v_k = (w_k SE_k)²``, plus one (a plain sample of ``n`` labels has ``n − 1``). A stratum
    with few labels and much of the variance leaves it near its own count however many labels
    the others have. None without a variance."""
    v = [(p.weight * p.std_error) ** 2 for p in strata]
    total = sum(v)
    if not strata or not total > 0:
        return None
    return 1 + total**2 / sum(vk**2 / (p.n_labelled - 1) for vk, p in zip(v, strata, strict=True))


def rarer_class(y: NDArray[np.float64]) -> int | None:
    """How many of the 0/1 labels ``y`` are of the rarer class; None for other labels."""
    if not np.isin(y, (0.0, 1.0)).all():
        return None
    ones = int(np.count_nonzero(y))
    return min(ones, y.size - ones)


def rough_note(
    n_labelled: int,
    strata: Sequence[StratumEstimate] = (),
    rarer: int | None = None,
    units: int | None = None,
) -> str | None:
    """The note a normal interval on too few labels carries, None when it has enough: fewer
    than :data:`FEW_LABELLED` labels in all (:func:`few_labels`), fewer than
    :data:`FEW_OF_A_CLASS` of the rarer class of 0/1 labels (``rarer``), or, stratified, a standard
    error resting on fewer than that many labels' worth (:func:`strata_labels_worth`): a
    stratified 95% interval on 45 labels, 5 of them in a stratum of half the items where the
    judge is worse, covered 0.89 of the time in simulation, against 0.92 with 25 labels in each
    (``tests/metrics/test_ppi.py``). ``units``: how many independent units the labels are
    where some are one item (the clusters among them): fewer than :data:`FEW_LABELLED` of them
    is as rough, however many labels they hold."""
    if n_labelled < FEW_LABELLED:
        return few_labels(n_labelled)
    if units is not None and units < FEW_LABELLED:
        return (
            f"the {n_labelled} human labels are {units} items' worth (labels of one item — an "
            f"Inspect sample's epochs, one text under several ids — count once): with fewer "
            f"than {FEW_LABELLED} the normal interval covers less than its level: read it as "
            "rough, and label more items"
        )
    if rarer is not None and rarer < FEW_OF_A_CLASS:
        return (
            f"only {rarer} of the {n_labelled} human labels are of the rarer class: with fewer "
            f"than {FEW_OF_A_CLASS} of either class the normal interval covers less than its "
            "level (a 95% PPI++ one covered 0.90–0.92 with about 5 among 50–100 labels in "
            "simulation): read it as rough, and label more"
        )
    worth = strata_labels_worth(strata)
    if worth is None or worth >= FEW_LABELLED:
        return None
    most = max(strata, key=lambda p: (p.weight * p.std_error) ** 2)
    return (
        f"{n_labelled} human labels, but the strata's standard error rests on about "
        f"{worth:.0f} labels' worth (Welch–Satterthwaite), most of it from stratum "
        f"{most.stratum!r} with {most.n_labelled}: with fewer than {FEW_LABELLED} the normal "
        "interval covers less than its level (a stratified 95% one with 5 of 45 labels in a "
        "stratum of half the items covered 0.89 of the time in simulation, with 25 in each "
        f"0.92): read it as rough, and label more in {most.stratum!r}"
    )


def normal_estimate(
    method: EstimateMethod,
    value: float,
    se: float,
    *,
    human_se: float,
    alpha: float,
    bound: Bound,
    n_labelled: int,
    n_unlabelled: int,
    lam: float | None,
    prediction: str,
    sampling: str,
    strata: tuple[StratumEstimate, ...] = (),
    notes: Sequence[str] = (),
    rarer: int | None = None,
    clusters: int | None = None,
    labelled_units: int | None = None,
) -> MeanEstimate:
    """A :class:`MeanEstimate` with the normal interval ``value ± z · se`` (``clusters``: the
    number of clusters a cluster-robust ``se`` takes as the unit, said in the interval's name); its effective labels
    against a human-only standard error ``human_se`` on the same ``n_labelled`` labels. A zero
    ``se`` (no spread in the labels or predictions) is said in the note: such an interval is
    not a confidence interval; so are too few labels, on which it covers less than its level
    (:func:`rough_note`: fewer than :data:`FEW_LABELLED` in all, fewer than
    :data:`FEW_OF_A_CLASS` of the rarer class, or a stratified standard error resting on fewer
    labels' worth)."""
    if not se > FLOAT_ROUNDING * max(1.0, abs(value)):  # 4.5e-36: a 0 computed the long way round
        se = 0.0
    low, high = interval(value, se, alpha, bound)
    notes = list(notes)
    if rough := rough_note(n_labelled, strata, rarer, labelled_units):
        notes.append(rough)
    if not se > 0:
        notes.append(
            "its standard error is 0 — the labels, and the judge's errors on them as this "
            "estimator weighs them, do not vary (every label the same) — so the interval has "
            "zero width and is not a confidence interval: label more items"
        )
    return MeanEstimate(
        method=method,
        value=value,
        ci_low=low,
        ci_high=high,
        alpha=alpha,
        bound=bound,
        std_error=se,
        n_labelled=n_labelled,
        n_unlabelled=n_unlabelled,
        # labels of one item count once: the items' worth, not the copies'
        effective_labels=effective_labels(labelled_units or n_labelled, human_se, se),
        lam=lam,
        prediction=prediction,
        interval=CLT if clusters is None else f"{CLUSTERED_CLT} over {clusters} clusters",
        sampling=sampling,
        strata=strata,
        rarer_class_labels=rarer,
        note="; ".join(notes) or None,
        labelled_units=labelled_units,
    )


def human_only_mean(
    y: ArrayLike,
    *,
    alpha: float = 0.05,
    bound: Bound = "two-sided",
    weights: ArrayLike | None = None,
    clusters: ArrayLike | None = None,
) -> MeanEstimate:
    """The mean of the human labels alone, with the classical normal interval (``ppi_py``'s
    ``classical_mean_ci``): the baseline every prediction-powered estimate is compared with.
    ``clusters`` (one per label): where one holds two labels, the standard error is
    :func:`clustered_se`'s."""
    alpha, bound = check_alpha(alpha), check_bound(bound)
    y_arr = labels(y)
    w = _weights(weights, y_arr.size, "weights")
    value = float(human_batched(y_arr, w)[0])
    grouped = _codes(clusters, None, y_arr.size, 0)
    se = _human_se(y_arr, w, grouped)
    return normal_estimate(
        "human_only",
        value,
        se,
        human_se=se,
        alpha=alpha,
        bound=bound,
        n_labelled=y_arr.size,
        n_unlabelled=0,
        lam=0.0,
        prediction="none",
        sampling="labelled items: a uniform random sample of the items",
        rarer=rarer_class(y_arr),
        clusters=None if grouped is None else grouped[2],
        labelled_units=_units(grouped),
    )


def ppi_mean(
    y: ArrayLike,
    predictions: ArrayLike,
    predictions_unlabelled: ArrayLike,
    *,
    lam: float | None = None,
    alpha: float = 0.05,
    bound: Bound = "two-sided",
    weights: ArrayLike | None = None,
    weights_unlabelled: ArrayLike | None = None,
    prediction: PredictionKind | None = None,
    clusters: ArrayLike | None = None,
    clusters_unlabelled: ArrayLike | None = None,
) -> MeanEstimate:
    """The prediction-powered mean of ``y``: PPI++ (``lam=None``: ``λ̂`` estimated, clipped to
    [0, 1]) or PPI with a fixed ``lam`` (1: classical PPI), with its normal interval.

    ``y`` and ``predictions``: the human label and the judge's prediction of each labelled item;
    ``predictions_unlabelled``: the judge's prediction of each unlabelled item. A prediction
    may be a 0/1 verdict, a probability (a token probability, a sample share, a panel's share)
    or any score: the interval holds for any; ``prediction`` names it (checked: a probability
    outside [0, 1] is refused; default: the narrowest kind that fits). ``weights`` and
    ``weights_unlabelled`` are positive observation weights (normalised to sum to n and N, as
    ``ppi_py`` does). ``effective_labels`` compares the interval with the human-only one on the
    same labels (with the same weights).

    ``clusters`` and ``clusters_unlabelled`` (one per labelled and unlabelled item): where a
    cluster holds two items — an Inspect log's epochs of one sample, labelled or not — the
    standard errors, this one's and the human-only one it is compared with, are
    :func:`clustered_se`'s: the clusters as the unit, ``λ̂`` as without them.
    """
    alpha, bound = check_alpha(alpha), check_bound(bound)
    s, kind = _sample(
        y, predictions, predictions_unlabelled, weights, weights_unlabelled, prediction
    )
    check_lam(lam)
    value, se, lam_used = map(float, ppi_batched(s, lam))
    grouped = _codes(clusters, clusters_unlabelled, s.n, s.n_unlabelled)
    human_se = _human_se(s.y, s.w, grouped)
    if grouped is not None:
        lab, unl, n_clusters = grouped
        imputed = s.w_unlabelled * lam_used * s.f_unlabelled
        rectifier = s.w * (s.y - lam_used * s.f)
        se = clustered_se([(imputed, unl), (rectifier, lab)], n_clusters)
    return normal_estimate(
        "ppi++" if lam is None else "ppi",
        value,
        se,
        human_se=human_se,
        alpha=alpha,
        bound=bound,
        n_labelled=s.n,
        n_unlabelled=s.n_unlabelled,
        lam=lam_used,
        prediction=kind,
        sampling=UNIFORM_SAMPLE,
        rarer=rarer_class(s.y),
        clusters=None if grouped is None else grouped[2],
        labelled_units=_units(grouped),
    )


def _strata_codes(
    strata: ArrayLike, strata_unlabelled: ArrayLike, n: int, n_unlabelled: int
) -> tuple[list[Hashable], NDArray[np.intp], NDArray[np.intp]]:
    """The strata in order of first appearance and each item's stratum index."""
    codes: dict[Hashable, int] = {}
    out = []
    for values, name, size in (
        (strata, "strata", n),
        (strata_unlabelled, "strata_unlabelled", n_unlabelled),
    ):
        values = list(np.asarray(values, dtype=object).ravel()) if values is not None else None
        if values is None or len(values) != size:
            got = "none" if values is None else len(values)
            raise ValueError(f"{name} must name one stratum per item ({size}), got {got}")
        index = np.empty(size, dtype=np.intp)
        for i, v in enumerate(values):
            if v is None or (isinstance(v, float) and math.isnan(v)):
                raise ValueError(f"{name} has no stratum at position {i} (got {v!r})")
            index[i] = codes.setdefault(v, len(codes))
        out.append(index)
    return list(codes), out[0], out[1]


def _shares(
    shares: Mapping[Hashable, float], names: Sequence[Hashable], k_unl: NDArray[np.intp]
) -> list[float]:
    """The strata's weights in the order of ``names``: ``shares`` checked (finite, not
    negative, one for every stratum of the unlabelled items) and normalised to sum to 1."""
    for name, share in shares.items():
        if isinstance(share, bool) or not isinstance(share, int | float) or not share >= 0:
            raise ValueError(f"shares must be numbers ≥ 0, got {share!r} for stratum {name!r}")
    for k in np.unique(k_unl):
        if names[k] not in shares:
            raise ValueError(f"shares has no share for stratum {names[k]!r} of the unlabelled")
    raw = [float(shares.get(name, 0.0)) for name in names]
    if not math.isfinite(sum(raw)) or not sum(raw) > 0:
        raise ValueError(f"shares must be finite and not all 0, got {dict(shares)!r}")
    return [r / sum(raw) for r in raw]


def stratified_ppi_mean(
    y: ArrayLike,
    predictions: ArrayLike,
    predictions_unlabelled: ArrayLike,
    strata: ArrayLike,
    strata_unlabelled: ArrayLike,
    *,
    alpha: float = 0.05,
    bound: Bound = "two-sided",
    prediction: PredictionKind | None = None,
    shares: Mapping[Hashable, float] | None = None,
    clusters: ArrayLike | None = None,
    clusters_unlabelled: ArrayLike | None = None,
) -> MeanEstimate:
    """Stratified PPI++: PPI++ within each stratum (its own ``λ̂``), the strata combined with
    weights equal to their shares of all items (labelled and unlabelled),
    ``θ̂ = Σ_k w_k θ̂_k``, ``SE² = Σ_k w_k² SE_k²`` (the weights treated as known).

    ``clusters`` / ``clusters_unlabelled`` (one per labelled and unlabelled item): where one
    holds two items (an Inspect log's epochs of one sample), the standard error is
    :func:`clustered_se`'s over every stratum's imputed and rectifying means at once — the
    clusters as the unit, a sample's epochs in two strata with their covariance — and each
    stratum's ``λ̂`` is as without them.

    ``shares``: each stratum's share of the population the mean is of, when that is not all
    the items given — labelled items from another sample (a validation run) are not part of
    it, and their allocation must not weigh the strata. A stratum it leaves out weighs 0; the
    shares are normalised to sum to 1; every stratum of the unlabelled items needs one.

    ``strata``/``strata_unlabelled`` name each labelled/unlabelled item's stratum (any hashable
    value: a task category, a source). Every stratum needs at least two labelled items, not all
    equal (labels all alike estimate the stratum's variance as 0: at 2 labels a stratum so
    estimated left a 95% interval covering half the time); a stratum with no unlabelled item
    is estimated from its labels alone (``λ = 0``). The labelled items may be allocated to
    strata in any proportion, but within a stratum they must be a uniform random sample of its
    items.
    """
    alpha, bound = check_alpha(alpha), check_bound(bound)
    s, kind = _sample(y, predictions, predictions_unlabelled, None, None, prediction)
    names, k_lab, k_unl = _strata_codes(strata, strata_unlabelled, s.n, s.n_unlabelled)
    labelled = [np.flatnonzero(k_lab == k) for k in range(len(names))]
    unlabelled = [np.flatnonzero(k_unl == k) for k in range(len(names))]
    for name, lab in zip(names, labelled, strict=True):
        if lab.size < MIN_LABELLED:
            raise ValueError(
                f"stratum {name!r} has {lab.size} labelled item{'s' * (lab.size != 1)}: "
                f"stratified PPI needs at least {MIN_LABELLED} in every stratum (label more, "
                "or merge it with another)"
            )
        if np.unique(s.y[lab]).size == 1:
            raise ValueError(
                f"stratum {name!r}: its {lab.size} labels are all {s.y[lab][0]:g}, so its "
                "variance cannot be estimated (a standard error of 0 would narrow the interval "
                "without cause): label more in it, or merge it with another"
            )
    weights = None if shares is None else _shares(shares, names, k_unl)
    value, se, by_stratum = stratified_batched(s, labelled, unlabelled, weights)
    value, se = float(value), float(se)
    grouped = _codes(clusters, clusters_unlabelled, s.n, s.n_unlabelled)
    human_se = _human_se(s.y, None, grouped)
    if grouped is not None:
        c_lab, c_unl, n_clusters = grouped
        sums = []
        for lab, unl, (w, _, _, lam) in zip(labelled, unlabelled, by_stratum, strict=True):
            lam = float(lam)
            sums.append((w * lam * s.f_unlabelled[unl], c_unl[unl]))
            sums.append((w * (s.y[lab] - lam * s.f[lab]), c_lab[lab]))
        se = clustered_se(sums, n_clusters)
    parts = [
        StratumEstimate(str(name), w, lab.size, unl.size, float(v), float(e), float(lam))
        for name, lab, unl, (w, v, e, lam) in zip(
            names, labelled, unlabelled, by_stratum, strict=True
        )
    ]
    return normal_estimate(
        "stratified_ppi++",
        value,
        se,
        human_se=human_se,
        alpha=alpha,
        bound=bound,
        n_labelled=s.n,
        n_unlabelled=s.n_unlabelled,
        lam=None,
        prediction=kind,
        sampling=STRATIFIED_SAMPLE if shares is None else STRATIFIED_SHARES,
        strata=tuple(parts),
        rarer=rarer_class(s.y),
        clusters=None if grouped is None else grouped[2],
        labelled_units=_units(grouped),
        notes=[
            f"stratum {p.stratum!r}: labels only (no unlabelled item)"
            for p in parts
            if not p.n_unlabelled
        ],
    )


def rogan_gladen_mean(
    y: ArrayLike,
    verdicts: ArrayLike,
    verdicts_unlabelled: ArrayLike,
    *,
    alpha: float = 0.05,
    bound: Bound = "two-sided",
    n_resamples: int = 1000,
    seed: int = 0,
    clusters: ArrayLike | None = None,
    clusters_unlabelled: ArrayLike | None = None,
) -> MeanEstimate:
    """The Rogan–Gladen prevalence (:func:`corrected_prevalence`: the judge's flagged rate on the
    unlabelled items corrected by its sensitivity and specificity on the labelled ones) in the
    shape of the other estimates, so that one table holds them all. Its interval is the
    percentile bootstrap (a one-sided bound: one end of the two-sided interval at ``1 − 2α``);
    ``y`` and the verdicts are 0/1. ``clusters`` / ``clusters_unlabelled``: each labelled and
    unlabelled item's cluster (an Inspect sample); where one holds two items the bootstrap draws
    whole clusters, and the human labels it is compared with have :func:`clustered_se`."""
    alpha, bound = check_alpha(alpha), check_bound(bound)
    y_arr = labels(y)
    named = [
        (y_arr, "y"),
        (as_scores(verdicts, "verdicts"), "verdicts"),
        (as_scores(verdicts_unlabelled, "verdicts_unlabelled"), "verdicts_unlabelled"),
    ]
    predictions_of_kind(named, "verdict")
    confidence = 1 - alpha if bound == "two-sided" else 1 - 2 * alpha
    if not 0 < confidence < 1:
        raise ValueError(f"a one-sided bound needs alpha below 0.5, got {alpha!r}")
    both = clusters is not None and clusters_unlabelled is not None
    est = corrected_prevalence(
        verdicts_unlabelled,
        y_arr,
        verdicts,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
        clusters=(clusters_unlabelled, clusters) if both else None,
    )
    c = est.corrected
    low = math.nan if c.ci_low is None else c.ci_low
    high = math.nan if c.ci_high is None else c.ci_high
    if bound == "lower":
        high = math.inf
    elif bound == "upper":
        low = -math.inf
    result = MeanEstimate(
        method="rogan_gladen",
        value=c.value,
        ci_low=low,
        ci_high=high,
        alpha=alpha,
        bound=bound,
        std_error=None,
        n_labelled=est.n_validation,
        n_unlabelled=c.n,
        effective_labels=None,
        lam=None,
        prediction="verdict",
        interval=f"percentile bootstrap ({est.resampled})",
        sampling=UNIFORM_SAMPLE,
        note=c.note,
    )
    human_se = _human_se(y_arr, None, _codes(clusters, None, y_arr.size, 0) if both else None)
    human = human_se * (_z(1 - alpha / 2) if bound == "two-sided" else _z(1 - alpha))
    touches = c.ci_low is not None and c.ci_high is not None and (c.ci_low <= 0 or c.ci_high >= 1)
    if est.clipped or touches:
        # Clipping at 0 or 1 narrows the interval without any information behind it: a width
        # compared with the human labels' would credit the judge with labels it is not worth.
        why = "effective labels not given: the estimate or its interval is clipped to [0, 1]"
        note = "; ".join(x for x in (result.note, why) if x)
        return dataclasses.replace(result, note=note)
    n_eff = effective_labels(y_arr.size, human, result.half_width)
    return dataclasses.replace(result, effective_labels=n_eff)


def mean_estimates(
    y: ArrayLike,
    predictions: ArrayLike,
    predictions_unlabelled: ArrayLike,
    *,
    strata: ArrayLike | None = None,
    strata_unlabelled: ArrayLike | None = None,
    alpha: float = 0.05,
    bound: Bound = "two-sided",
    prediction: PredictionKind | None = None,
    seed: int = 0,
) -> tuple[MeanEstimate, ...]:
    """Every estimate of the mean of ``y`` these data allow, in the order a report lists them:
    the human labels alone, Rogan–Gladen (when labels and predictions are 0/1), PPI, PPI++ and,
    given ``strata``, stratified PPI++."""
    rows = [human_only_mean(y, alpha=alpha, bound=bound)]
    options = {"alpha": alpha, "bound": bound, "prediction": prediction}
    ppi = ppi_mean(y, predictions, predictions_unlabelled, lam=1.0, **options)
    binary_labels = predictions_of_kind([(labels(y), "y")], None) == "verdict"
    if binary_labels and ppi.prediction == "verdict":
        rows.append(
            rogan_gladen_mean(
                y, predictions, predictions_unlabelled, alpha=alpha, bound=bound, seed=seed
            )
        )
    rows += [ppi, ppi_mean(y, predictions, predictions_unlabelled, **options)]
    if strata is not None or strata_unlabelled is not None:
        rows.append(
            stratified_ppi_mean(
                y, predictions, predictions_unlabelled, strata, strata_unlabelled, **options
            )
        )
    return tuple(rows)
