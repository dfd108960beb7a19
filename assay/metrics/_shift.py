"""A change in a system's score split into the judge's shift and the system's change, and an
EWMA control chart over a series of scores.

**Anchor decomposition.** An old run (the old system judged by the old judge) and a new run
(the new system judged by the new judge) share a set of anchor items, byte-identical in both,
so that both judges scored the same inputs. On the anchors, the judge's shift is the mean of
``new judge − old judge`` (paired by item). On the rest (each run's own items), the score
change is ``mean(new) − mean(old)``, and the system's change is that change less the judge's
shift. Intervals: a seeded percentile bootstrap that, in each replicate, resamples the anchors
in pairs and each run's other items independently, and combines the three resampled means —
so the system change's interval carries the uncertainty of the shift it subtracts. On a binary
scale the scores are 0/1 and every mean is a rate.

**EWMA chart** (Montgomery, *Introduction to Statistical Quality Control*, §9.2):
``z_i = λ x_i + (1 − λ) z_{i−1}``, ``z_0 = μ0``; limits
``μ0 ± L σ sqrt(λ / (2 − λ) · (1 − (1 − λ)^{2i}))``; a point is out of control when ``z_i``
falls outside them. ``μ0`` and ``σ`` are given, or estimated from a baseline window of the
first values: their mean and sample standard deviation (``ddof = 1``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import ConfigDict
from pydantic.dataclasses import dataclass

from assay.metrics._intervals import (
    _check_confidence,
    _check_resamples,
    _percentile_ci,
    _replicates,
    _resample_indices,
    canonical_order,
)
from assay.metrics._value import MIN_RESAMPLES, Undefinable

_CONFIG = ConfigDict(ser_json_inf_nan="constants")


@dataclass(frozen=True, config=_CONFIG)
class ShiftDecomposition:
    """A score change split into the judge's shift (on the anchors) and the system's change
    (on the rest), each with a percentile bootstrap interval at ``confidence``."""

    anchors: int  # anchor items both judges scored
    old_items: int  # the old run's other items (scored)
    new_items: int  # the new run's other items (scored)
    old_score: float  # mean of the old run's other items
    new_score: Undefinable
    score_change: float  # new_score − old_score: what the dashboard showed
    score_change_low: Undefinable
    score_change_high: Undefinable
    old_anchor_score: float  # the old judge's mean on the anchors
    new_anchor_score: Undefinable
    judge_shift: float  # mean(new judge − old judge) on the anchors
    judge_shift_low: Undefinable
    judge_shift_high: Undefinable
    system_change: float  # score_change − judge_shift
    system_change_low: Undefinable
    system_change_high: Undefinable
    confidence: Undefinable
    n_resamples: int
    seed: int
    # where items are epochs of one Inspect sample: what the bootstrap resampled instead
    clusters: str | None = None


@dataclass(frozen=True, config=_CONFIG)
class EwmaChart:
    """An EWMA control chart over ``values`` (one per run, in time order): the smoothed
    statistic, its limits at each point, and which points fall outside them."""

    values: list[float]
    ewma: list[float]
    lower: list[float]
    upper: list[float]
    out_of_control: list[bool]
    first_out: int | None  # 1-based index of the first point out of control; None: none
    center: float  # μ0
    sigma: float  # σ of one value
    smoothing: float  # λ
    width: float  # L, in σ of the EWMA statistic
    baseline: int | None  # the first values μ0 and σ were estimated from; None: both given


def _scores(values: Sequence[float], name: str, least: int) -> np.ndarray:
    out = np.asarray(values, dtype=np.float64)
    if out.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one score per item), got shape {out.shape}")
    if out.shape[0] < least:
        raise ValueError(f"{name} needs at least {least} scores, got {out.shape[0]}")
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{name} holds a score that is not a finite number")
    return out


def _means(
    values: np.ndarray, n_resamples: int, seed: int, clusters: Sequence[str] | None = None
) -> np.ndarray:
    """The mean of every bootstrap resample of ``values`` (in their canonical order, so that
    the replicates do not depend on the items' order); where ``clusters`` (one per value)
    repeat, of every resample of whole clusters (:func:`~assay.metrics.cluster_replicates`)."""
    if clusters is not None and len(set(clusters)) < len(clusters):
        from assay.metrics._cluster import cluster_replicates

        return cluster_replicates(
            lambda x: x.mean(axis=1), [values], clusters, n_resamples=n_resamples, seed=seed
        )
    ordered = values[canonical_order(values)]
    indices = _resample_indices(ordered.shape[0], n_resamples, seed)
    return _replicates(lambda x: x.mean(axis=1), [ordered], indices)


def shift_decomposition(
    old_anchors: Sequence[float],
    new_anchors: Sequence[float],
    old: Sequence[float],
    new: Sequence[float],
    *,
    confidence: float = 0.95,
    n_resamples: int = 2 * MIN_RESAMPLES,
    seed: int = 0,
    clusters: tuple[Sequence[str], Sequence[str], Sequence[str]] | None = None,
) -> ShiftDecomposition:
    """The judge's shift and the system's change behind ``mean(new) − mean(old)``.

    ``old_anchors[i]`` and ``new_anchors[i]``: the old and the new judge's scores of anchor
    ``i`` (the same inputs); ``old`` and ``new``: each run's scores of its other items. The
    anchors are resampled in pairs, ``old`` and ``new`` each on their own (three seeded streams
    from ``seed``); every replicate's system change is its score change less its shift.
    ``clusters``: the sample each anchor, old item and new item repeats (an Inspect log's
    epochs: the same input and reference); a set of them where two share one is resampled a
    whole sample at a time."""
    confidence = _check_confidence(confidence)
    n_resamples = _check_resamples(n_resamples)
    a_old = _scores(old_anchors, "old_anchors", 2)
    a_new = _scores(new_anchors, "new_anchors", 2)
    if a_old.shape != a_new.shape:
        raise ValueError(
            f"old_anchors and new_anchors must pair the same anchors, got {a_old.shape[0]} and "
            f"{a_new.shape[0]} scores"
        )
    r_old, r_new = _scores(old, "old", 2), _scores(new, "new", 2)
    diff = a_new - a_old
    c_anchor, c_old, c_new = clusters if clusters is not None else (None, None, None)
    for name, values, ids in (
        ("anchors", diff, c_anchor),
        ("old", r_old, c_old),
        ("new", r_new, c_new),
    ):
        if ids is not None and len(ids) != values.shape[0]:
            raise ValueError(f"clusters: {len(ids)} for {values.shape[0]} {name} scores")
    shift_b = _means(diff, n_resamples, seed, c_anchor)
    change_b = _means(r_new, n_resamples, seed + 1, c_new) - _means(
        r_old, n_resamples, seed + 2, c_old
    )
    shift, change = float(diff.mean()), float(r_new.mean() - r_old.mean())
    s = _percentile_ci(shift_b, confidence)
    c = _percentile_ci(change_b, confidence)
    d = _percentile_ci(change_b - shift_b, confidence)
    return ShiftDecomposition(
        anchors=int(diff.shape[0]),
        old_items=int(r_old.shape[0]),
        new_items=int(r_new.shape[0]),
        old_score=float(r_old.mean()),
        new_score=float(r_new.mean()),
        score_change=change,
        score_change_low=c.low,
        score_change_high=c.high,
        old_anchor_score=float(a_old.mean()),
        new_anchor_score=float(a_new.mean()),
        judge_shift=shift,
        judge_shift_low=s.low,
        judge_shift_high=s.high,
        system_change=change - shift,
        system_change_low=d.low,
        system_change_high=d.high,
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
        clusters=_clusters_said((c_anchor, c_old, c_new)),
    )


def _clusters_said(clusters: tuple[Sequence[str] | None, ...]) -> str | None:
    """What the bootstrap resampled where some scores are epochs of one sample, else None."""
    said = [
        f"the {len(ids)} {name} in {len(set(ids))} samples"
        for name, ids in zip(("anchors", "old items", "new items"), clusters, strict=True)
        if ids is not None and len(set(ids)) < len(ids)
    ]
    if not said:
        return None
    return "resampled by Inspect sample, a sample's epochs together: " + ", ".join(said)


def ewma_chart(
    values: Sequence[float],
    *,
    smoothing: float = 0.2,
    width: float = 3.0,
    center: float | None = None,
    sigma: float | None = None,
    baseline: int | None = None,
) -> EwmaChart:
    """The EWMA control chart of ``values`` with smoothing ``λ`` and limits ``L = width``
    standard deviations of the statistic. ``center`` (μ0) and ``sigma`` (σ of one value), when
    not given, are the mean and the sample standard deviation of the first ``baseline`` values
    (the baseline is charted too: its points are monitored like the others)."""
    x = _scores(values, "values", 1)
    if not 0 < smoothing <= 1:
        raise ValueError(f"smoothing (λ) must be in (0, 1], got {smoothing}")
    if not (math.isfinite(width) and width > 0):
        raise ValueError(f"width (L) must be a positive number, got {width}")
    if center is None or sigma is None:
        if baseline is None:
            raise ValueError(
                "give center and sigma, or a baseline of first values to estimate them"
            )
        if not 2 <= baseline <= x.shape[0]:
            raise ValueError(
                f"baseline must be between 2 and the {x.shape[0]} values, got {baseline}"
            )
        window = x[:baseline]
        center = float(window.mean()) if center is None else center
        if sigma is None and np.all(window == window[0]):  # (computed: 0 up to rounding)
            raise ValueError(
                f"the first {baseline} values are all {window[0]:g}: their standard deviation is "
                "0, so no limits can be set from them (give sigma)"
            )
        sigma = float(window.std(ddof=1)) if sigma is None else sigma
    else:
        baseline = None
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be a positive number, got {sigma}")
    if not math.isfinite(center):
        raise ValueError(f"center must be a finite number, got {center}")
    z, ewma, lower, upper, out = center, [], [], [], []
    for i, xi in enumerate(x, start=1):
        z = smoothing * xi + (1 - smoothing) * z
        half = (
            width
            * sigma
            * math.sqrt(smoothing / (2 - smoothing) * (1 - (1 - smoothing) ** (2 * i)))
        )
        ewma.append(float(z))
        lower.append(center - half)
        upper.append(center + half)
        out.append(bool(abs(z - center) > half))
    first = next((i for i, o in enumerate(out, start=1) if o), None)
    return EwmaChart(
        values=[float(v) for v in x],
        ewma=ewma,
        lower=lower,
        upper=upper,
        out_of_control=out,
        first_out=first,
        center=float(center),
        sigma=float(sigma),
        smoothing=float(smoothing),
        width=float(width),
        baseline=baseline,
    )
