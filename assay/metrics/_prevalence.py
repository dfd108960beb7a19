"""Prevalence-corrected rates (Rogan–Gladen): the share of positives (e.g. failures) in an
unlabelled run, corrected for the judge's own errors as measured on a labelled validation run.

A judge that flags a share ``p_obs`` of the unlabelled items, with sensitivity ``TPR`` and
specificity ``TNR`` on the validation items, implies a prevalence
``π = (p_obs + TNR − 1) / (TPR + TNR − 1)``, clipped to [0, 1]. When ``TPR + TNR ≤ 1`` the judge
is no better than chance and the correction is undefined: the result says so instead of raising.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from assay.metrics._cluster import shared_clusters
from assay.metrics._intervals import _check_confidence, _check_resamples, _percentile_ci
from assay.metrics._validate import as_labels, binary_pair
from assay.metrics._value import MetricValue, with_ci

RESAMPLED = "unlabelled items and validation items, independently"
RESAMPLED_CLUSTERS = "whole clusters of items, each with its unlabelled and validation items"


@dataclass(frozen=True)
class PrevalenceEstimate:
    """A corrected prevalence next to the raw flagged rate.

    ``corrected.value`` is nan when the correction is undefined (``defined`` False; the note says
    why); ``clipped`` is True when the unclipped estimate fell outside [0, 1] (the note gives it).
    Both CIs come from the same seeded bootstrap, which resamples the unlabelled items and the
    validation items independently.
    """

    corrected: MetricValue
    raw: MetricValue
    sensitivity: float  # TPR on the validation items (nan without positives there)
    specificity: float  # TNR on the validation items (nan without negatives there)
    n_validation: int
    defined: bool
    clipped: bool
    resampled: str = RESAMPLED


def rogan_gladen(
    p_observed: ArrayLike, sensitivity: ArrayLike, specificity: ArrayLike
) -> NDArray[np.float64]:
    """The unclipped Rogan–Gladen estimate ``(p_obs + TNR − 1) / (TPR + TNR − 1)``, elementwise;
    nan wherever ``TPR + TNR ≤ 1`` or an input is nan (the correction is undefined there)."""
    p, se, sp = (np.asarray(a, dtype=np.float64) for a in (p_observed, sensitivity, specificity))
    youden = se + sp - 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (p + sp - 1.0) / youden
    return np.where(youden > 0, out, np.nan)


def _rates(tp, fn, fp, tn) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    with np.errstate(divide="ignore", invalid="ignore"):
        return tp / (tp + fn), tn / (tn + fp)


def _cluster_counts(
    flags: np.ndarray,
    y_true: np.ndarray,
    y_pred: np.ndarray,
    clusters: tuple[ArrayLike, ArrayLike],
) -> np.ndarray | None:
    """Per cluster, in the order of their contents (so that a seeded draw does not depend on
    the clusters' names or the items' order): the flagged and all unlabelled items, and the
    validation items' four cells (tp, fn, fp, tn) — shape (clusters, 6); None when no two
    items share a cluster."""
    on_flags = np.asarray(clusters[0]).astype(str)
    on_validation = np.asarray(clusters[1]).astype(str)
    if on_flags.shape != flags.shape or on_validation.shape != y_true.shape:
        raise ValueError(
            f"clusters must give one cluster per flagged item ({flags.size}) and per validation "
            f"item ({y_true.size}), got {on_flags.size} and {on_validation.size}"
        )
    both = np.concatenate([on_flags, on_validation])
    ids = shared_clusters(both, np.arange(both.size))
    if ids is None:
        return None
    names, inverse = np.unique(ids, return_inverse=True)
    k = names.size
    side_u, side_v = inverse[: flags.size], inverse[flags.size :]
    counts = np.zeros((k, 6), dtype=np.float64)
    np.add.at(counts[:, 0], side_u, flags.astype(np.float64))
    np.add.at(counts[:, 1], side_u, 1.0)
    for column, cell in enumerate(((1, 1), (1, 0), (0, 1), (0, 0)), start=2):
        np.add.at(counts[:, column], side_v, ((y_true == cell[0]) & (y_pred == cell[1])) * 1.0)
    order = np.lexsort(counts.T[::-1])  # by content: the first column first
    return counts[order]


def corrected_prevalence(
    flags: ArrayLike,
    y_true: ArrayLike,
    y_pred: ArrayLike,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    clusters: tuple[ArrayLike, ArrayLike] | None = None,
) -> PrevalenceEstimate:
    """Rogan–Gladen prevalence of positives in an unlabelled run, with a bootstrap CI.

    ``flags`` are the judge's 0/1 verdicts on the unlabelled run (1 = positive, e.g. failure);
    ``y_true``/``y_pred`` the reference and the same judge's verdicts on a labelled validation
    run. The percentile bootstrap resamples both sets of items independently in each replicate.
    Because every item is a 0/1 flag or one of four (y_true, y_pred) cells, drawing n items with
    replacement is exactly a binomial draw of the flagged count and a multinomial draw of the
    four cell counts, which is how it is done here: the same distribution as index resampling,
    at O(1) cost per replicate. Replicates where TPR + TNR ≤ 1 (or the resample has no positive
    or no negative validation item) are undefined, dropped and counted in the note.

    ``clusters``: the cluster of each flagged item and of each validation item (an Inspect
    sample, whose epochs share its input and reference — the unlabelled epochs of a sample and
    its labelled ones alike). Where two items share one, each replicate draws as many clusters
    as there are, with replacement, and takes every item of each drawn cluster on both sides
    (:func:`_cluster_counts`): the two sides' sizes then vary with the draw, as the samples
    behind them do; where none does, the stratified draw above.
    """
    u = as_labels(flags, "flags")
    if u.max() > 1:
        first = int(np.flatnonzero(u > 1)[0])
        raise ValueError(f"flags must be 0/1 verdicts, got {u[first]} at index {first}")
    t, p = binary_pair(y_true, y_pred)
    n_resamples = _check_resamples(n_resamples)
    confidence = _check_confidence(confidence)

    n_u, n_v = int(u.size), int(t.size)
    k_obs = int(u.sum())
    cells = np.array(
        [np.sum((t == 1) & (p == 1)), np.sum((t == 1) & (p == 0))]
        + [np.sum((t == 0) & (p == 1)), np.sum((t == 0) & (p == 0))]
    )
    se, sp = _rates(*cells.astype(np.float64))
    p_obs = k_obs / n_u
    estimate = float(rogan_gladen(p_obs, se, sp))

    grouped = _cluster_counts(u, t, p, clusters) if clusters is not None else None
    rng = np.random.default_rng(seed)
    if grouped is None:
        p_b = rng.binomial(n_u, p_obs, size=n_resamples) / n_u
        tp, fn, fp, tn = rng.multinomial(n_v, cells / n_v, size=n_resamples).T.astype(np.float64)
    else:  # whole clusters: the counts of every drawn cluster, as often as it was drawn
        k = grouped.shape[0]
        drawn = rng.multinomial(k, np.full(k, 1.0 / k), size=n_resamples).astype(np.float64)
        flagged, units, tp, fn, fp, tn = (drawn @ grouped).T
        with np.errstate(invalid="ignore", divide="ignore"):
            p_b = np.where(units > 0, flagged / units, np.nan)
    se_b, sp_b = _rates(tp, fn, fp, tn)
    corrected_b = np.clip(rogan_gladen(p_b, se_b, sp_b), 0.0, 1.0)  # clip keeps nan

    raw = with_ci(p_obs, _percentile_ci(p_b, confidence), n_u, why_undefined="no items")
    notes = []
    if math.isnan(se) or math.isnan(sp):
        missing = "positive" if math.isnan(se) else "negative"
        why = f"the validation run has no {missing} item, so TPR/TNR is unknown"
    else:
        why = f"TPR + TNR = {se + sp:.4g} ≤ 1: the judge is no better than chance"
    if grouped is not None:
        notes.append(
            f"the bootstrap resampled {grouped.shape[0]} clusters (a sample's epochs, or one "
            "item's copies, together), "
            f"not the {n_u} unlabelled and {n_v} validation items"
        )
    defined = not math.isnan(estimate)
    clipped = defined and not 0.0 <= estimate <= 1.0
    if clipped:
        notes.append(
            f"clipped to [0, 1] from {estimate:.4g} (the flagged rate lies outside the range "
            "the judge's error rates allow)"
        )
    if defined:
        ci = _percentile_ci(corrected_b, confidence)
        corrected = with_ci(
            min(max(estimate, 0.0), 1.0),
            ci,
            n_u,
            why_undefined="TPR + TNR ≤ 1 or no positive/negative item in the resampled validation",
            notes=notes,
        )
    else:
        corrected = MetricValue(math.nan, None, None, n_u, f"undefined: {why}")
    return PrevalenceEstimate(
        corrected=corrected,
        raw=raw,
        sensitivity=float(se),
        specificity=float(sp),
        n_validation=n_v,
        defined=defined,
        clipped=clipped,
        resampled=RESAMPLED if grouped is None else RESAMPLED_CLUSTERS,
    )
