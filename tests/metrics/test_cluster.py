import numpy as np
import pytest

from assay.metrics import bootstrap_ci, cluster_bootstrap_ci, cluster_mean, weighted_mean


def clustered(rng, n_clusters=40, icc_sd=1.0, noise_sd=0.5, sizes=(5, 16)):
    """Units whose values share a strong per-cluster effect; the population mean is 0."""
    size = rng.integers(*sizes, n_clusters)
    ids = np.repeat(np.arange(n_clusters), size)
    effect = rng.normal(0, icc_sd, n_clusters)
    return effect[ids] + rng.normal(0, noise_sd, ids.size), ids


def test_equals_an_explicit_loop_over_the_drawn_clusters():
    rng = np.random.default_rng(0)
    values, ids = clustered(rng, n_clusters=12)
    ci = cluster_bootstrap_ci(weighted_mean, values, clusters=ids, seed=4, confidence=0.9)
    drawn = np.random.default_rng(4).integers(0, 12, size=(1000, 12))
    # the clusters in the order of their contents (their sorted values), not of their ids
    canonical = sorted(range(12), key=lambda c: sorted(values[ids == c].tolist()))
    loop = [np.concatenate([values[ids == canonical[c]] for c in row]).mean() for row in drawn]
    assert (ci.low, ci.high) == pytest.approx(tuple(np.percentile(loop, [5, 95])))
    assert ci.unit == "cluster" and ci.n_resamples == 1000 and ci.n_dropped == 0


def test_the_draw_in_slices_is_the_whole_draw(monkeypatch):
    """One replicate per slice gives the interval of the matrix drawn at once (to the last
    bits: the weighted sums of a slice of other rows may add in another order)."""
    from assay.metrics import _cluster

    values, ids = clustered(np.random.default_rng(3), n_clusters=30)
    whole = cluster_bootstrap_ci(weighted_mean, values, clusters=ids, seed=11)
    monkeypatch.setattr(_cluster, "_CHUNK_ELEMENTS", 1)
    sliced = cluster_bootstrap_ci(weighted_mean, values, clusters=ids, seed=11)
    assert (sliced.low, sliced.high) == pytest.approx((whole.low, whole.high), abs=1e-12)


def test_the_drawn_clusters_are_never_held_whole(monkeypatch):
    """20,000 clusters × 1,000 replicates: the whole draw would be 160 MB (a harness run's
    source items, each interval of every test and judge); in slices of one row the peak
    allocation stays at a few rows."""
    import tracemalloc

    from assay.metrics import _cluster

    values, ids = clustered(np.random.default_rng(4), n_clusters=20_000, sizes=(1, 2))
    monkeypatch.setattr(_cluster, "_CHUNK_ELEMENTS", 20_000)
    tracemalloc.start()
    try:
        cluster_bootstrap_ci(weighted_mean, values, clusters=ids)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20e6, f"{peak / 1e6:.0f} MB"


def test_singleton_clusters_are_the_item_bootstrap():
    values = np.random.default_rng(1).normal(size=50)

    def mean(x):
        return x.mean(axis=1)

    item = bootstrap_ci(mean, values, seed=9)
    cluster = cluster_bootstrap_ci(weighted_mean, values, clusters=np.arange(50), seed=9)
    assert (cluster.low, cluster.high) == pytest.approx((item.low, item.high))
    assert item.unit == "item"


def test_cluster_ids_of_any_kind_and_order():
    rng = np.random.default_rng(2)
    values, ids = clustered(rng, n_clusters=10)
    names = np.array([f"src-{i}" for i in ids], dtype=object)
    a = cluster_bootstrap_ci(weighted_mean, values, clusters=ids)
    b = cluster_bootstrap_ci(weighted_mean, values, clusters=names)
    assert a == b  # ids sort the same way ("src-0" < "src-1" < ... for one-digit ids)


def test_coverage_cluster_nominal_naive_under():
    # 300 seeded populations of 40 correlated clusters (ICC 0.8): the cluster bootstrap covers
    # the true mean at about the nominal rate; the item bootstrap, blind to clusters, does not.
    rng = np.random.default_rng(2025)

    def mean(x):
        return x.mean(axis=1)

    cluster_hits = naive_hits = 0
    sims = 300
    for s in range(sims):
        values, ids = clustered(rng)
        c = cluster_bootstrap_ci(weighted_mean, values, clusters=ids, seed=s)
        i = bootstrap_ci(mean, values, seed=s)
        cluster_hits += c.low <= 0.0 <= c.high
        naive_hits += i.low <= 0.0 <= i.high
    cluster_cov, naive_cov = cluster_hits / sims, naive_hits / sims
    assert cluster_cov >= 0.9
    assert naive_cov < cluster_cov - 0.3  # seeded: cluster 0.927, naive 0.463


def test_cluster_mean_reports_the_unit():
    values = np.array([1, 1, 1, 0, 0, 0, 1, 0], dtype=float)
    m = cluster_mean(values, ["a", "a", "a", "b", "b", "b", "c", "c"])
    assert m.value == 0.5 and m.n == 8
    assert m.note == "bootstrap resampled 3 clusters (source items), not the 8 units"
    assert 0.0 <= m.ci_low <= m.ci_high <= 1.0


def test_bad_input():
    with pytest.raises(ValueError, match="one cluster id per unit"):
        cluster_bootstrap_ci(weighted_mean, [1.0, 2.0], clusters=[0])
    with pytest.raises(ValueError, match="at least 1000"):
        cluster_bootstrap_ci(weighted_mean, [1.0, 2.0], clusters=[0, 1], n_resamples=10)

    def scalar(w, x):
        return float((w @ x).sum())

    with pytest.raises(ValueError, match=r"return shape \(B,\)"):
        cluster_bootstrap_ci(scalar, [1.0, 2.0], clusters=[0, 1])


def test_the_interval_does_not_depend_on_cluster_names_or_row_order():
    rng = np.random.default_rng(5)
    values, ids = clustered(rng, n_clusters=15)
    ci = cluster_bootstrap_ci(weighted_mean, values, clusters=ids, seed=2)
    perm = rng.permutation(values.size)
    renamed = np.array([f"source-{(7 * i) % 15}" for i in ids], dtype=object)
    again = cluster_bootstrap_ci(weighted_mean, values[perm], clusters=renamed[perm], seed=2)
    assert (again.low, again.high) == pytest.approx((ci.low, ci.high), rel=1e-12)  # sum order


def test_a_mean_over_values_that_are_no_numbers_says_so_not_no_units():
    """Three units whose values are nan: the mean is undefined because of them, which the
    note said was "no units"."""
    m = cluster_mean([np.nan, np.nan, 1.0], ["a", "b", "c"])
    assert np.isnan(m.value) and m.n == 3 and m.ci_low is None and m.ci_high is None
    assert m.note == "undefined: 2 of the 3 units' values are nan, not finite numbers"
    m = cluster_mean([np.inf, 0.0], ["a", "b"])
    assert m.note == "undefined: 1 of the 2 units' values are infinite, not finite numbers"
