"""Agreement between several annotators, pair by pair: the four κ of an ordinal field per pair
of annotators on the items both labelled, and their mean with an item-level bootstrap CI."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import partial
from itertools import combinations

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field

from assay.metrics._intervals import bootstrap_ci, canonical_order
from assay.metrics._judge_order import arranged_judges
from assay.metrics._kappa import KappaWeights, kappa_from_joint, weight_matrix
from assay.metrics._report import agreement_metrics
from assay.metrics._value import MetricValue, with_ci

KAPPAS: tuple[str, ...] = ("kappa_categorical", "kappa_linear", "kappa_quadratic", "kappa_binary")
"""The κ reported for every comparison of two raters on an ordinal field, in report order."""

_WEIGHTS: dict[str, KappaWeights] = {
    "kappa_categorical": None,
    "kappa_linear": "linear",
    "kappa_quadratic": "quadratic",
    "kappa_binary": None,
}


class PairKappas(BaseModel):
    """Two annotators' :data:`KAPPAS` on the ``n`` items both labelled (none, with a note, when
    they share no item)."""

    model_config = ConfigDict(frozen=True)

    annotators: tuple[str, str]
    n: int
    metrics: dict[str, MetricValue]
    note: str | None = Field(default=None, exclude_if=lambda v: v is None)


class InterAnnotatorKappa(BaseModel):
    """Pairwise κ between annotators on one ordinal field: every pair (sorted), and per κ the
    mean of the pairs' defined values (empty, with a note, when no item has two labels)."""

    model_config = ConfigDict(frozen=True)

    annotators: list[str]
    pairs: list[PairKappas]
    mean: dict[str, MetricValue]
    note: str | None = Field(default=None, exclude_if=lambda v: v is None)


def ordinal_kappas(
    reference: Sequence[int],
    candidate: Sequence[int],
    *,
    k: int,
    threshold: int | None,
    n_resamples: int,
    confidence: float,
    seed: int,
) -> dict[str, MetricValue]:
    """The four κ of :data:`KAPPAS` on 0-based ordinal labels below ``k`` (binary: labels
    ``>= threshold`` are good), with bootstrap CIs (via :func:`agreement_metrics`)."""
    metrics = agreement_metrics(
        reference,
        candidate,
        kind="ordinal",
        k=k,
        threshold=threshold,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
    )
    return {name: metrics[name] for name in KAPPAS}


def _masked_kappa_batched(
    x: NDArray[np.int64],
    y: NDArray[np.int64],
    mask: NDArray[np.bool_],
    *,
    k: int,
    weights: KappaWeights,
) -> NDArray[np.float64]:
    """Row-wise κ of (B, n) label arrays over the positions where ``mask`` is set: nan where
    there is none, or where either annotator put every masked item in one category — κ is 0
    by construction there, and a pair's own κ (:func:`ordinal_kappas`) is undefined then, so a
    replicate leaves the pair out of its mean as the point value does.

    A thin wrapper over assay's κ (:func:`kappa_from_joint`): only the joint proportions are
    built here, from the masked cells, because each pair of annotators overlaps on different
    trajectories of a resample.
    """
    b = x.shape[0]
    cells = (np.arange(b)[:, None] * k + x) * k + y
    counts = np.bincount(
        cells.ravel(), weights=mask.ravel().astype(np.float64), minlength=b * k * k
    ).reshape(b, k, k)
    total = counts.sum(axis=(1, 2))
    joint = counts / np.maximum(total, 1.0)[:, None, None]
    varies = ((joint.sum(axis=2) > 0).sum(axis=1) > 1) & ((joint.sum(axis=1) > 0).sum(axis=1) > 1)
    kappa = kappa_from_joint(joint, weight_matrix(k, weights))
    return np.where((total > 0) & varies, kappa, np.nan)


def _mean_pairwise_batched(
    indices: NDArray[np.intp],
    *,
    matrix: NDArray[np.int64],
    pairs: list[tuple[int, int]],
    k: int,
    weights: KappaWeights,
    threshold: int | None,
) -> NDArray[np.float64]:
    """Mean over annotator pairs of the masked κ, for (B, n) resampled trajectory indices."""
    rows = matrix[indices]  # (B, n, annotators); -1 = not annotated
    values = []
    for a, b in pairs:
        x, y = rows[..., a], rows[..., b]
        mask = (x >= 0) & (y >= 0)
        if threshold is not None:
            x, y = (x >= threshold).astype(np.int64), (y >= threshold).astype(np.int64)
        values.append(
            _masked_kappa_batched(
                np.where(mask, x, 0), np.where(mask, y, 0), mask, k=k, weights=weights
            )
        )
    stacked = np.stack(values)
    defined = ~np.isnan(stacked)
    total = np.where(defined, stacked, 0.0).sum(axis=0)
    count = defined.sum(axis=0)
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def inter_annotator_kappa(
    table: Mapping[str, Mapping[str, int]],
    *,
    k: int,
    threshold: int | None,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    unit: str = "item",
) -> InterAnnotatorKappa:
    """Pairwise κ between annotators on one ordinal field (0-based labels below ``k``), each
    pair over the items both annotated; ``threshold`` binarises for ``kappa_binary``.

    ``table`` is ``{item: {annotator: label}}``. Returns the ``annotators``, the ``pairs`` (one
    per pair of annotators, sorted: its ``n`` and :data:`KAPPAS`) and the ``mean``: for each
    κ, the mean of the pairs' defined values, with a bootstrap CI that resamples the items
    annotated at least twice (``n``) and recomputes every pair on its overlap within the
    resample (the item is the resampling unit). The mean and its interval are the same to the
    last digit whatever the annotators are called or the order they come in: the pairs'
    values are summed smallest first, and the items resampled (each replicate's pairs summed)
    with the annotators in an order their labels decide (:func:`arranged_judges`).
    """
    annotators = sorted({a for by in table.values() for a in by})
    boot = {"n_resamples": n_resamples, "confidence": confidence, "seed": seed}
    pairs, pair_values = _pairs(table, annotators, k=k, threshold=threshold, unit=unit, **boot)
    if len(annotators) < 2:
        note = "inter-annotator κ needs at least two annotators"
        return InterAnnotatorKappa(annotators=annotators, pairs=pairs, mean={}, note=note)

    ids = [t for t, by in table.items() if len(by) >= 2]  # the others are in no pair
    if not ids:
        note = f"no {unit} was annotated by two annotators"
        return InterAnnotatorKappa(annotators=annotators, pairs=pairs, mean={}, note=note)
    index = {a: i for i, a in enumerate(annotators)}
    matrix = np.full((len(ids), len(annotators)), -1, dtype=np.int64)
    for row, t in enumerate(ids):
        for a, v in table[t].items():
            matrix[row, index[a]] = int(v)
    # the annotators' columns in an order their labels decide, not their names' (the order the
    # items are resampled in, and each replicate's sum over the pairs, with them), and the
    # items in an order of their labels (their multiset first, then who gave which), not the
    # table's: the interval is the same whatever the annotators are called or the items' order
    # (where several arrangements sort to the same rows, they are the same matrix)
    arranged = arranged_judges(matrix)[0].codes
    matrix = arranged[canonical_order(np.sort(arranged, axis=1), arranged)]
    index_pairs = list(combinations(range(len(annotators)), 2))
    mean = {
        name: _mean_kappa(
            name, pair_values[name], matrix, index_pairs, k=k, threshold=threshold, **boot
        )
        for name in KAPPAS
    }
    return InterAnnotatorKappa(annotators=annotators, pairs=pairs, mean=mean)


def _pairs(
    table: Mapping[str, Mapping[str, int]],
    annotators: list[str],
    *,
    k: int,
    threshold: int | None,
    unit: str,
    n_resamples: int,
    confidence: float,
    seed: int,
) -> tuple[list[PairKappas], dict[str, list[float]]]:
    """One entry per pair of annotators (its κ on the items both labelled, or a note when there
    are none), and per κ the pairs' defined values."""
    entries = []
    pair_values: dict[str, list[float]] = {name: [] for name in KAPPAS}
    for a, b in combinations(annotators, 2):
        shared = [t for t, by in table.items() if a in by and b in by]
        if shared:
            metrics = ordinal_kappas(
                [table[t][a] for t in shared],
                [table[t][b] for t in shared],
                k=k,
                threshold=threshold,
                n_resamples=n_resamples,
                confidence=confidence,
                seed=seed,
            )
            entries.append(PairKappas(annotators=(a, b), n=len(shared), metrics=metrics))
            for name, m in metrics.items():
                if not math.isnan(m.value):
                    pair_values[name].append(m.value)
        else:
            note = f"no {unit} annotated by both"
            entries.append(PairKappas(annotators=(a, b), n=0, metrics={}, note=note))
    return entries, pair_values


def _mean_kappa(
    name: str,
    values: list[float],
    matrix: NDArray[np.int64],
    pairs: list[tuple[int, int]],
    *,
    k: int,
    threshold: int | None,
    n_resamples: int,
    confidence: float,
    seed: int,
) -> MetricValue:
    """The mean of the pairs' defined ``name`` κ, with a bootstrap CI over the rows of
    ``matrix`` (items × annotators, -1 where not annotated), every pair recomputed on its
    overlap within each resample."""
    binary = name == "kappa_binary"
    statistic = partial(
        _mean_pairwise_batched,
        matrix=matrix,
        pairs=pairs,
        k=2 if binary else k,
        weights=_WEIGHTS[name],
        threshold=threshold if binary else None,
    )
    n = matrix.shape[0]
    ci = bootstrap_ci(
        statistic, np.arange(n), n_resamples=n_resamples, confidence=confidence, seed=seed
    )
    notes = []
    if len(values) < len(pairs):
        notes.append(f"mean of {len(values)} of {len(pairs)} pairs (κ undefined for the others)")
    return with_ci(
        float(np.mean(sorted(values))) if values else math.nan,  # in no annotators' order
        ci,
        n,
        why_undefined="every pair of annotators put every item they share in one category, "
        "or shares none, in the (re)sample",
        notes=notes,
    )
