"""Cluster bootstrap: when several probes or samples come from the same source item (harness
pass rates, stochastic stability, pairwise swaps), they are not independent, and resampling
them one by one understates the uncertainty. Resampling whole clusters (source items, with all
their units) keeps the within-item correlation, so the interval has its nominal coverage.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np
from numpy.typing import ArrayLike, NDArray

from assay.metrics._intervals import (
    _CHUNK_ELEMENTS,
    BatchedStatistic,
    BootstrapCI,
    _as_item_arrays,
    _check_confidence,
    _check_resamples,
    _percentile_ci,
    clopper_pearson_interval,
)
from assay.metrics._value import CLOPPER_PEARSON_CLUSTERS, MetricValue, with_ci

# statistic(weights, *arrays): weights (B, n) = how often each unit occurs in each replicate,
# arrays the per-unit values (n,) unchanged; returns (B,).
WeightedStatistic = Callable[..., NDArray[np.float64]]


def weighted_mean(weights: NDArray[np.float64], values: NDArray) -> NDArray[np.float64]:
    """The mean of ``values`` in each replicate of (B, n) unit multiplicities (a rate for 0/1)."""
    total = weights.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, weights @ values.astype(np.float64) / total, np.nan)


def _cluster_index(clusters: ArrayLike, n: int) -> tuple[NDArray[np.intp], int]:
    ids = np.asarray(clusters)
    if ids.ndim != 1 or ids.shape[0] != n:
        raise ValueError(f"clusters must give one cluster id per unit ({n}), got shape {ids.shape}")
    if ids.dtype == object:  # mixed id types are told apart by their text (so 1 == "1")
        ids = ids.astype(str)
    _, inverse = np.unique(ids, return_inverse=True)
    return inverse.astype(np.intp), int(inverse.max()) + 1


def _canonical_clusters(
    inverse: NDArray[np.intp], n_clusters: int, units: list[NDArray]
) -> NDArray[np.intp]:
    """``inverse`` with the clusters numbered in the order of their contents (each cluster's
    units' values, sorted), not of their ids: which clusters a seeded resample draws then does
    not depend on what the clusters are called or on the rows' order."""
    members: list[list[tuple]] = [[] for _ in range(n_clusters)]
    rows = zip(*(u.tolist() for u in units), strict=True)
    for unit, cluster in zip(rows, inverse.tolist(), strict=True):
        members[cluster].append(unit)
    keys = [sorted(m) for m in members]
    order = sorted(range(n_clusters), key=keys.__getitem__)
    position = np.empty(n_clusters, dtype=np.intp)
    position[order] = np.arange(n_clusters, dtype=np.intp)
    return position[inverse]


def _cluster_draws(
    n_clusters: int, n: int, n_resamples: int, seed: int
) -> Iterator[tuple[int, NDArray[np.int64]]]:
    """The (n_resamples, n_clusters) draw of clusters with replacement, ``(first row, rows)``
    a slice at a time from one ``default_rng(seed)``: the same matrix as one draw (a
    generator's stream does not depend on how it is sliced), never held whole — a slice is
    about ``_CHUNK_ELEMENTS`` over the units and clusters."""
    rng = np.random.default_rng(seed)
    step = max(1, _CHUNK_ELEMENTS // max(n, n_clusters))
    for start in range(0, n_resamples, step):
        yield start, rng.integers(0, n_clusters, size=(min(step, n_resamples - start), n_clusters))


def _drawn_times(rows: NDArray[np.int64], n_clusters: int) -> NDArray[np.int64]:
    """How often each cluster was drawn in each replicate of ``rows`` ((B, n_clusters) draws of
    :func:`_cluster_draws`), (B, n_clusters)."""
    b = rows.shape[0]
    offsets = (np.arange(b)[:, None] * n_clusters + rows).ravel()
    return np.bincount(offsets, minlength=b * n_clusters).reshape(b, n_clusters)


def cluster_bootstrap_ci(
    statistic: WeightedStatistic,
    *arrays: ArrayLike,
    clusters: ArrayLike,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> BootstrapCI:
    """Seeded percentile bootstrap CI that resamples clusters, not units.

    ``arrays`` hold one value per unit (probe, sample) and ``clusters`` its cluster id (the
    source item). Each replicate draws as many clusters as there are, with replacement, from
    ``numpy.random.default_rng(seed)``, and every unit of a drawn cluster comes along; a unit's
    weight is how often its cluster was drawn. ``statistic(weights, *arrays)`` gets (B, n)
    weights and the unchanged arrays and returns (B,), so clusters of any sizes are handled in
    one vectorised pass (e.g. :func:`weighted_mean`). The interval's ``unit`` is ``"cluster"``.
    The clusters are drawn in the order of their contents, so the interval is the same whatever
    the clusters' ids or the rows' order.
    """
    n_resamples = _check_resamples(n_resamples)
    confidence = _check_confidence(confidence)
    units = _as_item_arrays(arrays)
    n = units[0].shape[0]
    inverse, n_clusters = _cluster_index(clusters, n)
    inverse = _canonical_clusters(inverse, n_clusters, units)
    out = np.empty(n_resamples, dtype=np.float64)
    for start, rows in _cluster_draws(n_clusters, n, n_resamples, seed):
        b = rows.shape[0]
        times = _drawn_times(rows, n_clusters)
        values = np.asarray(statistic(times[:, inverse].astype(np.float64), *units))
        if values.shape != (b,):
            raise ValueError(
                "statistic must take (B, n) weights and the per-unit arrays and return shape "
                f"(B,); got shape {values.shape} for B={b}"
            )
        out[start : start + b] = values
    return _percentile_ci(out, confidence, unit="cluster")


def shared_clusters(clusters: ArrayLike | None, order: NDArray[np.intp]) -> NDArray | None:
    """The cluster ids of the pairs (``clusters``, one per pair) in ``order``, as text, when a
    cluster holds more than one pair; None when none does, or none was given: the pairs are
    independent and their own intervals and tests hold."""
    if clusters is None:
        return None
    ids = np.asarray(clusters)
    if ids.ndim != 1 or ids.shape[0] != order.shape[0]:
        raise ValueError(
            f"clusters must give one cluster id per pair ({order.shape[0]}), got shape {ids.shape}"
        )
    ids = ids.astype(str)[order]
    return None if np.unique(ids).size == ids.size else ids


def effective_trials(clusters: ArrayLike) -> float:
    """Kish's effective number of independent units among units in clusters (one cluster id
    per unit), ``(Σ m)² / Σ m²`` over the clusters' sizes ``m``: what the units count for if
    those of a cluster are wholly correlated — the number of clusters when all are of one size,
    fewer when their sizes differ, the units' number when each is alone."""
    sizes = np.unique(np.asarray(clusters), return_counts=True)[1].astype(np.float64)
    return float(sizes.sum() ** 2 / (sizes**2).sum())


def paired_design_effect(differences: ArrayLike, clusters: ArrayLike) -> float:
    """How many times fewer independent pairs a paired comparison has than it has pairs, when
    pairs come in clusters (the epochs of one Inspect sample, each judged under the cue and on
    the placebo); at least 1.

    ``differences``: per pair, +1 where only the first outcome holds, −1 where only the second,
    0 where both or neither do; ``clusters``: each pair's cluster id. With ``D_k`` the sum of
    cluster ``k``'s differences, the design effect is ``Σ D_k² ÷ Σ d²`` — the clustered
    variance of the discordant difference over its variance with pairs independent (``Σ d²``
    counts the discordant pairs). McNemar's statistic ``(b − c)² ÷ (b + c)`` divided by it is
    Durkalski et al.'s clustered McNemar statistic (2003, "Analysis of clustered matched-pair
    data", ``(b − c)² ÷ Σ D_k²``); dividing the paired table's counts by it (Rao and Scott's
    effective counts) gives that statistic and a paired interval that count each cluster for
    what it holds. With no discordant pair the variance ratio is undefined: Kish's design
    effect of the clusters' sizes (:func:`effective_trials`), as if a cluster's pairs were
    wholly alike. Never below 1: pairs of a cluster that cancel do not make the comparison
    surer than independent pairs would."""
    d = np.asarray(differences, dtype=np.float64)
    if d.ndim != 1:
        raise ValueError(f"differences must be one value per pair, got shape {d.shape}")
    if d.size == 0:
        return 1.0
    inverse, n_clusters = _cluster_index(clusters, d.size)
    discordant = float(np.sum(d * d))
    if discordant == 0.0:
        return max(1.0, d.size / effective_trials(inverse))
    by_cluster = np.bincount(inverse, weights=d, minlength=n_clusters)
    return max(1.0, float(np.sum(by_cluster**2)) / discordant)


def cluster_replicates(
    statistic: BatchedStatistic,
    arrays: list[NDArray],
    clusters: ArrayLike,
    *,
    n_resamples: int,
    seed: int,
) -> NDArray[np.float64]:
    """A batched ``statistic`` (arrays of shape (B, m) in, shape (B,) out, as the agreement
    metrics are) on every cluster resample: each replicate draws as many clusters as there are,
    with replacement — the draw of :func:`cluster_bootstrap_ci`, from the same generator — and
    takes every unit of each cluster drawn, as often as it was drawn. A replicate's units are
    as many as its clusters hold, so replicates are computed in batches of equal size. For a
    statistic that weights cannot express (κ, correlations); the clusters are numbered in the
    order of their contents, so the replicates do not depend on the ids or the rows' order."""
    n_resamples = _check_resamples(n_resamples)
    out = np.empty(n_resamples, dtype=np.float64)
    for at, resampled, _ in _cluster_resamples(
        arrays, clusters, n_resamples=n_resamples, seed=seed
    ):
        values = np.asarray(statistic(*resampled), dtype=np.float64)
        if values.shape != (at.size,):
            raise ValueError(
                "statistic must be batched: take arrays of shape (B, n) and return shape "
                f"(B,); got shape {values.shape} for B={at.size}"
            )
        out[at] = values
    return out


def _cluster_resamples(
    arrays: list[NDArray], clusters: ArrayLike, *, n_resamples: int, seed: int
) -> Iterator[tuple[NDArray[np.intp], list[NDArray], NDArray[np.intp]]]:
    """The cluster resamples of :func:`cluster_replicates`, a batch of replicates of one size
    at a time: which replicates they are (positions in ``n_resamples``), each array's values of
    their units ((B, m): every unit of each cluster drawn, as often as it was drawn) and each
    unit's draw ((B, m): the k-th cluster drawn in its replicate, so that a cluster drawn twice
    is two clusters there) — for a statistic that needs the clusters as well as the units."""
    n = arrays[0].shape[0]
    inverse, n_clusters = _cluster_index(clusters, n)
    inverse = _canonical_clusters(inverse, n_clusters, arrays)
    by_cluster = np.argsort(inverse, kind="stable")  # each cluster's units side by side
    grouped = [a[by_cluster] for a in arrays]
    sizes = np.bincount(inverse, minlength=n_clusters)
    starts = np.cumsum(sizes) - sizes
    for start, drawn in _cluster_draws(n_clusters, n, n_resamples, seed):
        totals = sizes[drawn].sum(axis=1)
        for total in np.unique(totals):
            rows = np.flatnonzero(totals == total)
            picked = drawn[rows].ravel()
            lengths = sizes[picked]
            first = np.repeat(starts[picked], lengths)
            within = np.arange(int(lengths.sum())) - np.repeat(
                np.cumsum(lengths) - lengths, lengths
            )
            units = (first + within).reshape(rows.size, int(total))
            draws = np.repeat(np.arange(picked.size) % n_clusters, lengths)
            yield start + rows, [g[units] for g in grouped], draws.reshape(rows.size, int(total))


def cluster_mean(
    values: ArrayLike,
    clusters: ArrayLike,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    what: str = "source items",
) -> MetricValue:
    """The mean of per-unit ``values`` (a pass rate for 0/1 outcomes) with a cluster-bootstrap
    CI; ``n`` counts the units (a 0/1 outcome's ``count`` the ones) and the note says how many
    clusters were resampled (``what`` they are).

    When every unit has the same 0/1 outcome, every replicate is that outcome and the bootstrap
    interval has no width, which would read as certainty: the interval is then the exact
    (Clopper–Pearson) one over the clusters, each cluster one trial (all 12 source items passed:
    [0.735, 1] at 95%), as conservative as the clusters are few.

    A value that is no finite number (nan, infinite) leaves the mean undefined, its note
    counting those units (``undefined: 3 of the 3 units' values are nan``), never "no units"."""
    arr = np.asarray(values, dtype=np.float64)
    n_clusters = _cluster_index(clusters, arr.shape[0])[1]
    bad = ~np.isfinite(arr)
    if bad.any():
        what = "/".join(sorted({"nan" if np.isnan(v) else "infinite" for v in arr[bad]}))
        return MetricValue(
            math.nan,
            None,
            None,
            int(arr.size),
            note=f"undefined: {int(bad.sum())} of the {arr.size} units' values are {what}, "
            "not finite numbers",
        )
    binary = bool(arr.size) and bool(np.isin(arr, (0.0, 1.0)).all())
    count = int(arr.sum()) if binary else None
    if binary and arr.size and (arr == arr[0]).all():
        low, high = clopper_pearson_interval(int(arr[0]) * n_clusters, n_clusters, confidence)
        return MetricValue(
            float(arr[0]),
            low,
            high,
            int(arr.size),
            note=f"every one of the {arr.size} units has the same outcome, so the interval is "
            f"the exact one over the {n_clusters} clusters ({what}), each counted once",
            count=count,
            ci_method=CLOPPER_PEARSON_CLUSTERS,
        )
    ci = cluster_bootstrap_ci(
        weighted_mean,
        arr,
        clusters=clusters,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
    )
    note = f"bootstrap resampled {n_clusters} clusters ({what}), not the {arr.size} units"
    out = with_ci(float(arr.mean()), ci, arr.size, why_undefined="no units", notes=[note])
    return MetricValue(**{**out.to_dict(), "count": count})
