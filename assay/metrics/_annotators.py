"""Agreement among several annotators: Fleiss' κ and Krippendorff's α, with bootstrap CIs over
items (the unit), on an items × annotators table where any annotator may skip any item.

Labels are numbers: 0-based category indices for Fleiss' κ and nominal α, ordered
numbers for ordinal and interval α. A long table (item, annotator, label) becomes an
:class:`AnnotationMatrix` with nan where an annotator did not label an item.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from assay.metrics._intervals import (
    _check_confidence,
    _check_resamples,
    _percentile_ci,
    _replicates,
    _resample_indices,
    canonical_order,
)
from assay.metrics._validate import as_labels, as_scores, check_k
from assay.metrics._value import MetricValue, with_ci

AlphaLevel = Literal["nominal", "ordinal", "interval"]


@dataclass(frozen=True)
class AnnotationMatrix:
    """Labels of ``n_items`` items by ``n_annotators`` annotators, nan where one is missing.

    Rows follow ``item_ids`` and columns ``annotator_ids``, both in order of first appearance.
    """

    values: NDArray[np.float64]
    item_ids: tuple[Hashable, ...]
    annotator_ids: tuple[Hashable, ...]
    counts: NDArray[np.int64] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        values = np.asarray(self.values, dtype=np.float64)
        if values.ndim != 2 or values.shape != (len(self.item_ids), len(self.annotator_ids)):
            raise ValueError(
                f"values must have shape (items, annotators) = "
                f"({len(self.item_ids)}, {len(self.annotator_ids)}), got {values.shape}"
            )
        if np.isinf(values).any():
            raise ValueError("labels must be finite numbers (nan marks a missing label)")
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "counts", (~np.isnan(values)).sum(axis=1))

    @classmethod
    def from_long(
        cls, items: Sequence[Hashable], annotators: Sequence[Hashable], labels: ArrayLike
    ) -> AnnotationMatrix:
        """From one row per label: ``items[r]`` was given ``labels[r]`` by ``annotators[r]``.
        A second label for the same (item, annotator) raises a ValueError naming both rows."""
        y = as_scores(labels, "labels")
        if not len(items) == len(annotators) == y.size:
            raise ValueError(
                "items, annotators and labels must have one entry per row, got lengths "
                f"{len(items)}, {len(annotators)} and {y.size}"
            )
        item_index = {i: n for n, i in enumerate(dict.fromkeys(items))}
        annotator_index = {a: n for n, a in enumerate(dict.fromkeys(annotators))}
        values = np.full((len(item_index), len(annotator_index)), np.nan)
        seen: dict[tuple[int, int], int] = {}
        for row, (item, annotator) in enumerate(zip(items, annotators, strict=True)):
            cell = (item_index[item], annotator_index[annotator])
            if cell in seen:
                raise ValueError(
                    f"rows {seen[cell]} and {row} both give a label for item {item!r} "
                    f"by annotator {annotator!r}"
                )
            seen[cell] = row
            values[cell] = y[row]
        return cls(values, tuple(item_index), tuple(annotator_index))

    @classmethod
    def from_mapping(
        cls, annotations: Mapping[Hashable, Mapping[Hashable, float]]
    ) -> AnnotationMatrix:
        """From ``{annotator: {item: label}}`` (the Alt-Test reference implementation's form)."""
        rows = [(i, a, v) for a, labels in annotations.items() for i, v in labels.items()]
        if not rows:
            raise ValueError("annotations are empty")
        items, annotators, labels = zip(*rows, strict=True)
        return cls.from_long(items, annotators, list(labels))


def _as_matrix(annotations: AnnotationMatrix | ArrayLike) -> AnnotationMatrix:
    if isinstance(annotations, AnnotationMatrix):
        return annotations
    values = np.asarray(annotations, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"annotations must be items × annotators, got shape {values.shape}")
    return AnnotationMatrix(values, tuple(range(values.shape[0])), tuple(range(values.shape[1])))


def count_table(annotations: AnnotationMatrix | ArrayLike, k: int | None = None) -> NDArray:
    """Items × categories counts (how many annotators put item i in category c) from an
    annotation matrix of 0-based category indices (nan = missing); ``k`` defaults to max + 1."""
    m = _as_matrix(annotations)
    present = m.values[~np.isnan(m.values)]
    if present.size == 0:
        raise ValueError("annotations hold no label")
    labels = as_labels(present, "labels")
    k = int(labels.max()) + 1 if k is None else check_k(k)
    if labels.max() >= k:
        raise ValueError(f"labels must lie in 0..{k - 1} (k={k}), got {labels.max()}")
    rows = np.nonzero(~np.isnan(m.values))[0]
    return np.bincount(rows * k + labels, minlength=m.values.shape[0] * k).reshape(-1, k)


def _fleiss_parts(table: NDArray) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per item: observed pairwise agreement (nan with fewer than 2 ratings) and category shares."""
    r = table.sum(axis=1).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        agree = (table * (table - 1)).sum(axis=1) / (r * (r - 1))
        shares = table / r[:, None]
    return np.where(r >= 2, agree, np.nan), shares


def _fleiss_batched(agree: NDArray, shares: NDArray) -> NDArray[np.float64]:
    """κ for each row of resampled per-item parts: agree (B, n), shares (B, n, k)."""
    has_pair = ~np.isnan(agree)
    with np.errstate(divide="ignore", invalid="ignore"):
        pa = np.where(has_pair, agree, 0.0).sum(axis=1) / has_pair.sum(axis=1)
        pe = (shares.mean(axis=1) ** 2).sum(axis=1)
        kappa = (pa - pe) / (1.0 - pe)
    return np.where(pe < 1.0, kappa, np.nan)


def _check_table(table: ArrayLike) -> NDArray[np.int64]:
    t = np.asarray(table)
    if t.ndim != 2 or t.shape[1] < 1:
        raise ValueError(f"table must be items × categories counts, got shape {t.shape}")
    if not np.issubdtype(t.dtype, np.number) or (t < 0).any() or (t != np.round(t)).any():
        raise ValueError("table must hold non-negative integer counts")
    t = t.astype(np.int64)
    t = t[t.sum(axis=1) > 0]  # items nobody labelled carry no information
    if not (t.sum(axis=1) >= 2).any():
        raise ValueError("Fleiss' κ needs at least one item with two or more ratings")
    return t


def fleiss_kappa(table: ArrayLike) -> float:
    """Fleiss' κ from an items × categories count table (see :func:`count_table`).

    With the same number of ratings per item this is Fleiss (1971), equal to
    ``statsmodels.stats.inter_rater.fleiss_kappa``. Unequal numbers of ratings use Gwet's
    generalisation (Handbook of Inter-Rater Reliability, 2014; irrCAC's ``fleiss``): observed
    agreement ``P_a`` is the mean, over items with ≥ 2 ratings, of ``Σ_c n_ic(n_ic − 1) /
    (r_i(r_i − 1))``; chance agreement ``P_e = Σ_c π_c²`` with ``π_c`` the mean over items of
    ``n_ic / r_i``. Items with no rating are ignored. ``nan`` when ``P_e = 1`` (one category only).
    """
    agree, shares = _fleiss_parts(_check_table(table))
    return float(_fleiss_batched(agree[None, :], shares[None, :, :])[0])


def _reliability(values: NDArray[np.float64], level: str, value_domain) -> float:
    """α of an items × annotators matrix; nan when fewer than 2 distinct values are pairable."""
    import krippendorff

    pairable = values[(~np.isnan(values)).sum(axis=1) >= 2]
    if np.unique(pairable[~np.isnan(pairable)]).size < 2:
        return math.nan
    return float(
        krippendorff.alpha(
            reliability_data=values.T, level_of_measurement=level, value_domain=value_domain
        )
    )


def _check_alpha_input(
    annotations: AnnotationMatrix | ArrayLike, level: str, value_domain: Sequence[float] | None
) -> tuple[AnnotationMatrix, list[float] | None]:
    if level not in ("nominal", "ordinal", "interval"):
        raise ValueError(f"level must be 'nominal', 'ordinal' or 'interval', got {level!r}")
    m = _as_matrix(annotations)
    if m.values.shape[1] < 2:
        raise ValueError("Krippendorff's α needs at least two annotators")
    if not (m.counts >= 2).any():
        raise ValueError("Krippendorff's α needs at least one item labelled by two annotators")
    domain = None
    if value_domain is not None:
        domain = [float(v) for v in value_domain]
        if level != "nominal" and any(b <= a for a, b in zip(domain, domain[1:], strict=False)):
            raise ValueError("value_domain must be strictly increasing for ordinal/interval α")
        outside = ~np.isnan(m.values) & ~np.isin(m.values, domain)
        if outside.any():
            i, j = (int(x[0]) for x in np.nonzero(outside))
            raise ValueError(
                f"label {m.values[i, j]} of item {m.item_ids[i]!r} by annotator "
                f"{m.annotator_ids[j]!r} is not in value_domain {domain}"
            )
    return m, domain


def krippendorff_alpha(
    annotations: AnnotationMatrix | ArrayLike,
    *,
    level: AlphaLevel = "nominal",
    value_domain: Sequence[float] | None = None,
) -> float:
    """Krippendorff's α (nominal, ordinal or interval) by the ``krippendorff`` package, on an
    items × annotators matrix with nan for missing labels. Items with fewer than two labels are
    unpairable and do not count. ``value_domain`` lists the possible values in order (default:
    those observed). ``nan`` when all pairable labels are the same value (no disagreement is
    expected, so α is undefined)."""
    m, domain = _check_alpha_input(annotations, level, value_domain)
    return _reliability(m.values, level, domain)


def annotator_agreement(
    annotations: AnnotationMatrix | ArrayLike,
    *,
    level: AlphaLevel = "nominal",
    value_domain: Sequence[float] | None = None,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, MetricValue]:
    """Krippendorff's α (at ``level``) and, when the labels are category indices, Fleiss' κ,
    each with a seeded percentile bootstrap CI that resamples items (all of an item's labels
    come along); both statistics see the same resamples. ``n`` counts the items with two or
    more labels, the ones that make pairs; an item with one label counts in Fleiss' κ's chance
    agreement only (Gwet's generalisation), and not at all in α, and a note says how many."""
    m, domain = _check_alpha_input(annotations, level, value_domain)
    n_resamples = _check_resamples(n_resamples)
    confidence = _check_confidence(confidence)
    keep = m.counts > 0  # an item nobody labelled is not part of the annotation sample
    kept = np.flatnonzero(keep)
    # each item by its labels sorted (NaN last): α and Fleiss' κ read an item's labels as a
    # multiset, so the intervals depend neither on the rows' order nor on the annotators'
    kept = kept[canonical_order(np.sort(m.values[kept], axis=1))]
    m = AnnotationMatrix(
        m.values[kept], tuple(np.asarray(m.item_ids, dtype=object)[kept]), m.annotator_ids
    )
    indices = _resample_indices(m.values.shape[0], n_resamples, seed)
    n = int((m.counts >= 2).sum())
    lone = m.values.shape[0] - n  # labelled once: no pair
    out: dict[str, MetricValue] = {}

    present = m.values[~np.isnan(m.values)]
    if (present >= 0).all() and (present == np.round(present)).all():
        agree, shares = _fleiss_parts(count_table(m))
        ci = _percentile_ci(_replicates(_fleiss_batched, [agree, shares], indices), confidence)
        why = "a single category, or no item with two ratings, in the (re)sample"
        point = float(_fleiss_batched(agree[None, :], shares[None, :, :])[0])
        notes = _one_label(lone, "in the chance agreement only (Gwet's generalisation)")
        out["fleiss_kappa"] = with_ci(point, ci, n, why_undefined=why, notes=notes)

    replicates = np.array([_reliability(m.values[rows], level, domain) for rows in indices])
    why = "fewer than two distinct pairable labels in the (re)sample"
    point = _reliability(m.values, level, domain)
    ci = _percentile_ci(replicates, confidence)
    notes = _one_label(lone, "no pair, left out")
    out[f"krippendorff_alpha_{level}"] = with_ci(point, ci, n, why_undefined=why, notes=notes)
    return out


def _one_label(lone: int, counted: str) -> list[str]:
    """The note of a figure whose ``n`` leaves out ``lone`` items of one label, saying how
    they are ``counted`` (none when there are none)."""
    if not lone:
        return []
    which = "the item" if lone == 1 else f"the {lone} items"
    return [f"n: the items with two or more labels; {which} with one label: {counted}"]
