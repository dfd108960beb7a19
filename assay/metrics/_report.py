"""Aggregate agreement between a reference and a candidate rater, every metric with its interval.

This is what a run report and MLflow log: a fixed, ordered set of named :class:`MetricValue`
chosen by the scale kind. A rate over independent items (accuracy, error rate, FPR, FNR,
failure precision and incidence) is a count of its denominator with an exact (Clopper–Pearson)
interval, and balanced accuracy, the mean of two such rates, has their MOVER–Wilson interval
(a bootstrap's loses its width, and its coverage, when a class has few items); every other
metric has a percentile bootstrap interval, all drawn from one seeded index matrix so that
they are resampled over the same items, in an order of the items that neither the rows' order
nor which rater is the reference decides.

A rater that puts every item in one category makes κ zero by construction (chance agreement is
all the agreement there is), and Lin's CCC too (it has no covariance), so both are reported as
undefined then; a judge that gives one verdict
everywhere is said so in each metric's note, and the rates it wins by construction (a judge
that calls everything unsafe misses no unsafe item) are named in :data:`TRADE_OFFS`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from assay.metrics._classification import (
    _accuracy_batched,
    _balanced_accuracy_batched,
    _error_rate_batched,
    _false_negative_rate_batched,
    _false_positive_rate_batched,
    confusion_matrix,
)
from assay.metrics._cluster import cluster_replicates, shared_clusters
from assay.metrics._failure import (
    FailureRates,
    _failure_incidence_batched,
    _failure_precision_batched,
    failure_rates,
)
from assay.metrics._intervals import (
    _bca_ci,
    _check_confidence,
    _check_resamples,
    _percentile_ci,
    _replicates,
    _resample_indices,
    canonical_order,
    clopper_pearson_interval,
)
from assay.metrics._kappa import KappaWeights, _kappa_batched, _kappa_jackknife
from assay.metrics._ordinal import _ccc_batched, _mae_batched, _pearson_batched, _spearman_batched
from assay.metrics._rates import balanced_rate, binomial_rate
from assay.metrics._validate import category_ranks, check_k, in_category_order, label_pair
from assay.metrics._value import CLOPPER_PEARSON_CLUSTERS, MetricValue, with_ci

MetricKind = Literal["binary", "ordinal", "categorical"]

_KINDS = ("binary", "ordinal", "categorical")
_NAMES = ("reference", "candidate")
_RATERS = ("the reference", "the candidate")  # in the notes

# The one-sided rates: each can be won by giving up its counterpart (a judge that flags every
# item misses no failure and raises every false alarm), so a judge's win on one says nothing
# without the other; a judge that gives one verdict everywhere wins one of each pair outright.
TRADE_OFFS = {
    "false_positive_rate": "false_negative_rate",
    "false_negative_rate": "false_positive_rate",
    "failure_precision": "failure_incidence",
    "failure_incidence": "failure_precision",
}


@dataclass(frozen=True)
class _Spec:
    """How to compute one reported metric from the paired arrays."""

    name: str
    # batched, nan where undefined (so the bootstrap drops the replicates where it is)
    statistic: Callable[..., NDArray[np.float64]]
    arrays: tuple[NDArray, ...]
    undefined: str  # why the statistic can be nan
    # A proportion over independent items, reported exactly (a count of its denominator with a
    # Clopper–Pearson interval at the given confidence), or the mean of two (balanced accuracy,
    # with its MOVER–Wilson interval), not with a bootstrap interval; the statistics above
    # serve the paired comparison's bootstrap of differences.
    rate: Callable[[float], MetricValue] | None = None
    # The statistic with each item left out (its distinct values, and how many items give
    # each): its interval is then BCa, not the plain percentile one (κ: a 95% percentile
    # interval covered 90.8-94.1% at 20 and 40 items in simulation, BCa 92.1-97.1%, nearer
    # its level in three settings of four: benchmarks/bench_coverage.py)
    jackknife: Callable[[], tuple[NDArray[np.float64], NDArray[np.float64]]] | None = None
    # The arrays are (candidate, reference): a symmetric metric computed with the raters in
    # the order that makes its figures the same whichever of them is the reference
    # (:func:`_arranged`)
    flipped: bool = False

    def candidate(self) -> NDArray:
        """The candidate's values as the metric reads them."""
        return self.arrays[0] if self.flipped else self.arrays[1]


def _varies(x: NDArray) -> NDArray[np.bool_]:
    """Row-wise: does the rater use more than one category?"""
    return (x != x[..., :1]).any(axis=-1)


def _kappa_defined(
    y_true: NDArray, y_pred: NDArray, *, k: int, weights: KappaWeights = None
) -> NDArray[np.float64]:
    """κ, nan where either rater put every item in one category: it is 0 there whatever the
    two agree on (or undefined, when both chose the same one)."""
    kappa = _kappa_batched(y_true, y_pred, k=k, weights=weights)
    return np.where(_varies(y_true) & _varies(y_pred), kappa, np.nan)


def _ccc_defined(y_true: NDArray, y_pred: NDArray) -> NDArray[np.float64]:
    """Lin's CCC, nan where either rater put every item in one category: it is 0 there
    whatever the constant (no covariance), or undefined (0/0) when both are the same one — as
    κ, it measures nothing then, and 0.000 read as no concordance."""
    return np.where(_varies(y_true) & _varies(y_pred), _ccc_batched(y_true, y_pred), np.nan)


def _specs(
    kind: str,
    k: int,
    threshold: int | None,
    ref: NDArray[np.int64],
    cand: NDArray[np.int64],
    names: tuple[str, str] = _RATERS,
    labels: Sequence[str] | None = None,
    flipped: bool = False,
) -> list[_Spec]:
    """The metrics of ``kind``; ``flipped``: the symmetric ones (every κ, accuracy and error
    rate, CCC, Pearson, Spearman, MAE) are computed on ``(cand, ref)``, the others on ``(ref,
    cand)`` as always."""
    r, c = names
    pair = (ref, cand)
    both = (cand, ref) if flipped else pair  # the symmetric metrics' arrays

    def shown(index: int) -> str:
        """A category as a note names it: its label (the scale's own name or score), else its
        index."""
        return labels[index] if labels is not None else f"index {index}"

    def one_category(what: str, metric: str = "κ") -> str:
        return f"{r} or {c} put every item {what} ({metric} is 0 by construction then)"

    same = one_category("in one category")
    agree = ref == cand
    everything = np.ones_like(agree)

    def kappa(
        name: str, arrays: tuple[NDArray, NDArray], kk: int, why: str, weights: KappaWeights = None
    ) -> _Spec:
        """A κ: its statistic, nan where a rater has one category, and its jackknife (BCa)."""
        return _Spec(
            name,
            partial(_kappa_defined, k=kk, weights=weights),
            arrays,
            why,
            jackknife=partial(_kappa_jackknife, *arrays, k=kk, weights=weights),
            flipped=flipped,
        )

    def symmetric(
        name: str, statistic: Callable[..., NDArray[np.float64]], why: str, **more: Any
    ) -> _Spec:
        """A metric that reads both raters alike: computed on ``both``."""
        return _Spec(name, statistic, both, why, flipped=flipped, **more)

    specs = [
        kappa("kappa_categorical", both, k, same),
        symmetric("accuracy", _accuracy_batched, "", rate=_counted(agree, everything, "")),
    ]
    if kind == "ordinal":
        specs += [
            kappa("kappa_linear", both, k, same, "linear"),
            kappa("kappa_quadratic", both, k, same, "quadratic"),
            symmetric("ccc", _ccc_defined, one_category("in one category", "CCC")),
            symmetric("pearson", _pearson_batched, f"{r} or {c} is constant"),
            symmetric("spearman", _spearman_batched, f"{r} or {c} is constant"),
            symmetric("mae", _mae_batched, ""),
        ]
    if kind == "binary":
        negatives, positives = ref == 0, ref == 1
        lacks = f"{r} lacks a negative ({shown(0)}) or a positive ({shown(1)})"
        specs += [
            _Spec(
                "balanced_accuracy",
                _balanced_accuracy_batched,
                pair,
                lacks,
                rate=lambda confidence: balanced_rate(
                    int((positives & (cand == 1)).sum()),
                    int(positives.sum()),
                    int((negatives & (cand == 0)).sum()),
                    int(negatives.sum()),
                    confidence=confidence,
                    why_undefined=lacks,
                ),
            ),
            symmetric("error_rate", _error_rate_batched, "", rate=_counted(~agree, everything, "")),
            _Spec(
                "false_positive_rate",
                _false_positive_rate_batched,
                pair,
                no_negative := f"{r} has no negative ({shown(0)})",
                rate=_counted(negatives & (cand == 1), negatives, no_negative),
            ),
            _Spec(
                "false_negative_rate",
                _false_negative_rate_batched,
                pair,
                no_positive := f"{r} has no positive ({shown(1)})",
                rate=_counted(positives & (cand == 0), positives, no_positive),
            ),
        ]
    if threshold is not None:
        good = ((both[0] >= threshold).astype(np.int64), (both[1] >= threshold).astype(np.int64))
        true_failure, flagged = ref < threshold, cand < threshold
        fail = (true_failure, flagged)
        below = f"below {shown(threshold)}" if labels is not None else f"index < {threshold}"
        why = {
            "no_flag": f"{c} flagged no failure ({below})",
            "no_failure": f"{r} has no failure ({below})",
        }

        def failures(confidence: float) -> FailureRates:
            return failure_rates(true_failure, flagged, confidence=confidence, **why)

        specs += [
            kappa(
                "kappa_binary",
                good,
                2,
                one_category(f"on the same side of {_threshold(threshold, labels)}"),
            ),
            _Spec(
                "failure_precision",
                partial(_failure_precision_batched, zero_division=np.nan),
                fail,
                why["no_flag"],
                rate=lambda confidence: failures(confidence).precision,
            ),
            _Spec(
                "failure_incidence",
                partial(_failure_incidence_batched, zero_division=np.nan),
                fail,
                why["no_failure"],
                rate=lambda confidence: failures(confidence).incidence,
            ),
        ]
    return specs


def _check_threshold(threshold: int | None, k: int) -> int | None:
    if threshold is None:
        return None
    if isinstance(threshold, bool) or not isinstance(threshold, int | np.integer):
        raise ValueError(f"threshold must be a category index (int), got {threshold!r}")
    if not 1 <= threshold <= k - 1:
        raise ValueError(
            f"threshold must be an index in 1..{k - 1} (good = index >= threshold), got {threshold}"
        )
    return int(threshold)


def agreement_metrics(
    reference: ArrayLike,
    candidate: ArrayLike,
    *,
    kind: MetricKind,
    k: int,
    threshold: int | None = None,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    names: tuple[str, str] = _RATERS,
    labels: Sequence[str] | None = None,
    clusters: ArrayLike | None = None,
) -> dict[str, MetricValue]:
    """Every agreement metric for ``kind``, in report order, each with its interval.

    ``reference``/``candidate`` are paired 0-based indices in ``0..k-1`` (unscored pairs already
    removed). Order: ``kappa_categorical``, ``accuracy``; for ordinal ``kappa_linear``,
    ``kappa_quadratic``, ``ccc``, ``pearson``, ``spearman``, ``mae``; for binary
    ``balanced_accuracy``, ``error_rate``, ``false_positive_rate``, ``false_negative_rate``
    (positive = index 1); with ``threshold`` ("good" = index >= threshold) ``kappa_binary``,
    ``failure_precision``, ``failure_incidence`` (failure = index < threshold: the reference's
    are the true ones, the candidate's the flagged).

    The rates (accuracy, error rate, FPR, FNR, failure precision and incidence) are counts:
    ``count`` of ``n`` (FPR's ``n`` is the reference's negatives) with a Clopper–Pearson
    interval at ``confidence``; balanced accuracy has the MOVER–Wilson interval of the mean of
    its two rates (:func:`~assay.metrics.balanced_rate`). The other metrics have a seeded
    percentile bootstrap CI;
    replicates where one is undefined are dropped (and the note counts them), and a CI of no
    width is said to be one. An undefined value is nan with a note — κ and CCC when either
    rater puts every item in one category (Pearson and Spearman too), failure precision when
    nothing was flagged and incidence when there is no true failure (a zero denominator). A
    candidate that gives one verdict on every item is named in every note.
    ``names`` are the two raters as the notes name them (``("the reference", "the judge")``),
    ``labels`` the categories' names (default: their indices). How a scale lists or names
    categories whose order means nothing moves no figure: unordered categories are computed
    in :func:`category_ranks`' order, and a binary scale's items resampled in it. Nor does
    which rater is the reference move a symmetric metric (every κ, accuracy and error rate,
    CCC, Pearson, Spearman, MAE): swapped, its value and interval are the same to the last
    digit (:func:`_arranged`). The one-sided rates (balanced accuracy, FPR, FNR, failure
    precision and incidence) say which side is the reference, and are not symmetric.

    ``clusters`` (one id per pair) groups pairs that are not independent — the epochs of one
    Inspect sample share its input and reference. Where a cluster holds more than one pair,
    every interval, the rates' too, resamples the clusters with all their pairs (a cluster
    bootstrap: pairs resampled one by one would count an epoch as a new sample and draw the
    interval too narrow); a rate every resample leaves at 0 or 1 has the exact interval over
    the clusters its denominator holds, each counted once. The values are unchanged.
    """
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {', '.join(_KINDS)}; got {kind!r}")
    ref, cand, k = label_pair(reference, candidate, check_k(k), _NAMES)
    if kind == "binary" and k != 2:
        raise ValueError(f"a binary scale has k=2 categories, got k={k}")
    # the figures depend neither on the rows' order nor on how the scale lists or names
    # categories whose order means nothing
    if k < 2:
        raise ValueError(f"agreement needs at least 2 categories, got k={k}")
    threshold = _check_threshold(threshold, k)
    flipped, labels, order, ref, cand = _arranged(kind, k, threshold, ref, cand, labels, clusters)
    n_resamples = _check_resamples(n_resamples)
    confidence = _check_confidence(confidence)

    n = int(ref.shape[0])
    grouped = _Clustered.of(clusters, order, n_resamples, seed)
    indices = _resample_indices(n, n_resamples, seed)
    results: dict[str, MetricValue] = {}
    for spec in _specs(kind, k, threshold, ref, cand, names, labels, flipped):
        notes = []
        single = _one_verdict(spec.candidate(), cand, threshold, names[1], labels)
        if single:
            trade = (
                ", so this rate is won or lost by construction" if spec.name in TRADE_OFFS else ""
            )
            notes.append(single + trade)
        if grouped is not None:
            results[spec.name] = grouped.metric(spec, confidence, notes)
            continue
        if spec.rate is not None:
            results[spec.name] = spec.rate(confidence).with_notes(notes)
            continue
        value = float(spec.statistic(*(a[None, :] for a in spec.arrays))[0])
        replicates = _replicates(spec.statistic, list(spec.arrays), indices)
        if spec.jackknife is not None:
            ci = _bca_ci(replicates, value, spec.jackknife(), confidence)
        else:
            ci = _percentile_ci(replicates, confidence)
        results[spec.name] = with_ci(value, ci, n, why_undefined=spec.undefined, notes=notes)
    return results


def _arranged(
    kind: str,
    k: int,
    threshold: int | None,
    ref: NDArray[np.int64],
    cand: NDArray[np.int64],
    labels: Sequence[str] | None,
    clusters: ArrayLike | None,
) -> tuple[bool, Sequence[str] | None, NDArray[np.intp], NDArray[np.int64], NDArray[np.int64]]:
    """The pairs as :func:`agreement_metrics` computes on them: ``(flipped, labels, order,
    ref, cand)`` — ``ref`` and ``cand`` in ``order``, coded (unordered categories with
    ``labels``) in :func:`in_category_order`'s order, ``labels`` in it.

    Items are resampled in :func:`canonical_order` (sorted by their values), so that neither
    the rows' order nor the items' names move an interval. Sorted by (reference, candidate),
    the items land in another order than sorted by (candidate, reference), so a seeded
    resample draws other pairs when the raters are swapped, and a symmetric metric's interval
    moved (a κ's end by 0.0025 at 300 items; its value, summed in another order, in the last
    digit).
    Both orders are made here, each with its own coding of unordered categories, and the one
    whose sorted pairs — with clusters, whose clusters' sorted pairs — come first is kept
    (``flipped``: it is (candidate, reference)'s); swapping the raters swaps the two
    candidates and keeps the same one. The symmetric metrics are computed with the raters in
    that order (:func:`_specs`), so their figures are the same to the last digit whichever
    rater is the reference; the others read the pairs as ever, the reference's first, in the
    same order of items. Where both orders give the same pairs, either is kept: the figures
    are the same."""
    kept, labels, order, (a, b), _ = _first_arrangement(
        kind, k, threshold, ((ref, cand), (cand, ref)), labels, clusters
    )
    flipped = kept == 1
    ref, cand = (b, a) if flipped else (a, b)
    return flipped, labels, order, ref, cand


def _first_arrangement(
    kind: str,
    k: int,
    threshold: int | None,
    arrangements: Sequence[tuple[NDArray[np.int64], ...]],
    labels: Sequence[str] | None,
    clusters: ArrayLike | None,
) -> tuple[int, Sequence[str] | None, NDArray[np.intp], tuple[NDArray[np.int64], ...], bool]:
    """Of ``arrangements`` — the same raters' arrays, the raters in different orders — the
    one whose rows, sorted, come first: ``(kept, labels, order, arrays, tied)``, ``kept`` its
    place in ``arrangements`` (the first of those that tie), ``arrays`` its arrays in
    ``order`` (:func:`canonical_order` of the arrangement), coded (unordered categories with
    ``labels``) in :func:`in_category_order`'s order of that arrangement, ``labels`` in it;
    ``tied``: another arrangement sorts to the same rows (the same values, not only the same
    ranks), so that its figures are the kept one's. Each arrangement is sorted with its own
    coding; its rows are compared as the items are sorted (by :func:`category_ranks` on a
    binary scale, then, where those tie, by the indices) and, with clusters, as each
    cluster's sorted rows, the clusters sorted (:func:`_sorted_pairs`). Swapping the raters
    permutes the arrangements, so the same one is kept: :func:`_arranged` (a reference and a
    candidate) and the paired comparison (a reference and two judges) compute on the same
    arrays whichever rater is named first."""
    coded = []
    for arrays in arrangements:
        names, ranks = labels, None
        if kind == "categorical" and labels is not None:
            names, arrays = in_category_order(labels, *arrays, threshold=threshold)
        elif kind == "binary":
            ranks = category_ranks(labels or [str(i) for i in range(k)], *arrays)
        coded.append((names, tuple(arrays), ranks))
    kept, order, arrays, ties = first_sorted([(a, r) for _, a, r in coded], clusters)
    return kept, coded[kept][0], order, arrays, bool(ties)


def first_sorted(
    arrangements: Sequence[tuple[tuple[NDArray[np.int64], ...], NDArray[np.int64] | None]],
    clusters: ArrayLike | None,
) -> tuple[int, NDArray[np.intp], tuple[NDArray[np.int64], ...], list[int]]:
    """Of ``arrangements`` — the same data's arrays, each ``(arrays, ranks)``: coded and
    ordered one way, ``ranks`` each category's place where the codes are of categories whose
    order means nothing (:func:`canonical_order`), else None — the one whose rows, sorted,
    come first: ``(kept, order, arrays, ties)``, ``kept`` its place in ``arrangements`` (the
    first of those that tie), ``arrays`` its arrays in ``order`` (its
    :func:`canonical_order`); ``ties``: the places of the others that sort to the same rows,
    so that their figures are the kept one's. The rows are compared as the items are sorted
    (by the ranks, then, where those tie, by the codes) and, with clusters, as each cluster's
    sorted rows, the clusters sorted (:func:`_sorted_pairs`). Whichever order the
    arrangements come in, the same rows are kept: a figure computed on them does not depend
    on that order."""
    best = None
    ties: list[int] = []
    for place, (arrays, ranks) in enumerate(arrangements):
        order = canonical_order(*arrays, ranks=ranks)
        arrays = tuple(x[order] for x in arrays)
        ids = shared_clusters(clusters, order)
        rows = [_sorted_pairs(arrays, ids)]
        if ranks is not None:  # the ranks first
            rows.insert(0, _sorted_pairs(tuple(ranks[x] for x in arrays), ids))
        if best is None or _before(rows, best[0]):
            best, ties = (rows, place, order, arrays), []
        elif not _before(best[0], rows):
            ties.append(place)
    assert best is not None
    _, kept, order, arrays = best
    return kept, order, arrays, ties


def _before(x: list, y: list) -> bool:
    """Whether the keys ``x`` come strictly before ``y`` (lists of :func:`_sorted_pairs`, the
    first deciding, the next where it ties)."""
    for a, b in zip(x, y, strict=True):
        if _precedes(a, b):
            return True
        if _precedes(b, a):
            return False
    return False


def _sorted_pairs(
    keys: tuple[NDArray, ...], ids: NDArray | None
) -> NDArray[np.int64] | list[tuple[tuple[int, ...], ...]]:
    """The pairs of ``keys`` (in sorted order already; rows of three with two judges), one
    after the other in one array; where clusters hold several pairs (``ids``: each pair's
    cluster), each cluster's sorted pairs, the clusters sorted."""
    if ids is None:
        return np.column_stack(keys).ravel()
    members: dict[str, list[tuple[int, ...]]] = {}
    for pair, cluster in zip(
        zip(*(x.tolist() for x in keys), strict=True), ids.tolist(), strict=True
    ):
        members.setdefault(cluster, []).append(pair)
    return sorted(tuple(sorted(m)) for m in members.values())


def _precedes(x: NDArray[np.int64] | list, y: NDArray[np.int64] | list) -> bool:
    """Whether ``x`` comes strictly before ``y`` (two :func:`_sorted_pairs` of one kind, of
    the same length) in lexicographic order."""
    if isinstance(x, list):
        return x < y
    differ = np.flatnonzero(x != y)
    return bool(differ.size) and bool(x[differ[0]] < y[differ[0]])


@dataclass(frozen=True)
class _Clustered:
    """The pairs' clusters, where one holds more than one pair: every interval of
    :func:`agreement_metrics` is then a cluster bootstrap."""

    ids: NDArray
    n_clusters: int
    n_resamples: int
    seed: int

    @classmethod
    def of(
        cls, clusters: ArrayLike | None, order: NDArray[np.intp], n_resamples: int, seed: int
    ) -> _Clustered | None:
        ids = shared_clusters(clusters, order)
        if ids is None:
            return None
        return cls(ids, int(np.unique(ids).size), n_resamples, seed)

    def metric(self, spec: _Spec, confidence: float, notes: list[str]) -> MetricValue:
        """``spec``'s value (a rate's count too) with its cluster-bootstrap interval."""
        arrays = list(spec.arrays)
        n = int(arrays[0].shape[0])
        value = float(spec.statistic(*(a[None, :] for a in arrays))[0])
        replicates = cluster_replicates(
            spec.statistic, arrays, self.ids, n_resamples=self.n_resamples, seed=self.seed
        )
        ci = _percentile_ci(replicates, confidence, unit="cluster")
        resampled = (
            f"bootstrap resampled {self.n_clusters} clusters (the pairs of one sample, as an "
            f"Inspect log's epochs, together), not the {n} pairs"
        )
        out = with_ci(value, ci, n, why_undefined=spec.undefined, notes=[*notes, resampled])
        if spec.rate is None:
            return out
        rate = spec.rate(confidence)  # its count and its denominator
        defined = replicates[~np.isnan(replicates)]
        if value in (0.0, 1.0) and defined.size and (defined == value).all():
            # no resample can move it: the exact interval over the clusters, each counted once
            alone = spec.statistic(*(a[:, None] for a in arrays))
            over = int(np.unique(self.ids[~np.isnan(alone)]).size) or self.n_clusters
            low, high = clopper_pearson_interval(int(value) * over, over, confidence)
            every = (
                f"every resample gives {value:.0f}, so the interval is the exact one over the "
                f"{over} clusters, each counted once"
            )
            return MetricValue(
                value,
                low,
                high,
                rate.n,
                note="; ".join([*notes, every]),
                count=rate.count,
                ci_method=CLOPPER_PEARSON_CLUSTERS,
            )
        return MetricValue(**{**out.to_dict(), "n": rate.n, "count": rate.count})


def _one_verdict(
    spec_candidate: NDArray,
    candidate: NDArray[np.int64],
    threshold: int | None,
    name: str,
    labels: Sequence[str] | None,
) -> str | None:
    """What the note says when the candidate gave one verdict on every item the metric reads
    (None when it did not)."""
    if _varies(spec_candidate):
        return None
    if _varies(candidate):  # one side of the threshold only
        return f"{name} put every item on one side of {_threshold(threshold, labels)}"
    v = int(candidate[0])
    shown = labels[v] if labels is not None else f"index {v}"
    return f"{name} gave one verdict ({shown}) on every item"


def _threshold(threshold: int | None, labels: Sequence[str] | None) -> str:
    """The failure threshold as a note names it: the scale's own label (``the threshold 3``:
    failure is a verdict below it), else its index."""
    assert threshold is not None
    return f"the threshold {labels[threshold]}" if labels is not None else f"index {threshold}"


def _counted(
    counted: NDArray[np.bool_], over: NDArray[np.bool_], undefined: str
) -> Callable[[float], MetricValue]:
    """The rate of ``counted`` among ``over`` with its exact interval (undefined, saying
    ``undefined``, when ``over`` holds no item)."""

    def rate(confidence: float) -> MetricValue:
        count, n = int(counted.sum()), int(over.sum())
        return binomial_rate(count, n, confidence=confidence, why_undefined=undefined)

    return rate


def agreement_confusion(reference: ArrayLike, candidate: ArrayLike, k: int) -> list[list[int]]:
    """The k×k confusion matrix as nested lists (rows = reference index, columns = candidate)."""
    ref, cand, k = label_pair(reference, candidate, check_k(k), _NAMES)
    return confusion_matrix(ref, cand, k).tolist()
