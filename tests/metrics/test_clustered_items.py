"""Agreement metrics, paired comparisons and certificates over items that come in clusters (an
Inspect log's epochs of one sample): the cluster bootstrap against a loop over the same draws
with scikit-learn's metrics, the effective-size bound against scipy's Beta quantiles, and the
relations they must hold — epochs that repeat a sample add no information, an item of its own
is an independent item, and neither the clusters' names nor the rows' order moves a figure."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, cohen_kappa_score, mean_absolute_error

from assay.metrics import clopper_pearson_interval
from assay.metrics._cluster import cluster_replicates
from assay.metrics._kappa import _kappa_batched
from assay.metrics._report import agreement_metrics

B = 1000


def clustered(seed: int, n_clusters: int, k: int = 3):
    """Pairs in clusters of 1 to 4 (an unequal number of scored epochs), numbered in the
    order of their contents (each cluster's pairs, sorted), as the bootstrap numbers them."""
    rng = np.random.default_rng(seed)
    members = []
    for _ in range(n_clusters):
        truth = int(rng.integers(0, k))
        size = int(rng.integers(1, 5))
        pairs = [
            (truth, int(truth if rng.random() < 0.7 else rng.integers(0, k))) for _ in range(size)
        ]
        members.append(sorted(pairs))
    members.sort()
    ref = np.array([r for m in members for r, _ in m])
    cand = np.array([c for m in members for _, c in m])
    ids = np.array([c for c, m in enumerate(members) for _ in m])
    return ref, cand, ids, members


def test_the_replicates_are_the_metric_on_each_draw_of_whole_clusters():
    """Each replicate is scikit-learn's metric on the pairs of the clusters drawn (with
    replacement, as many as there are, from ``default_rng(seed)``), a cluster's pairs as often
    as it was drawn."""
    ref, cand, ids, members = clustered(seed=3, n_clusters=25)
    n_clusters = len(members)
    draws = np.random.default_rng(11).integers(0, n_clusters, size=(B, n_clusters))
    want_acc, want_kappa, want_mae = [], [], []
    for row in draws:
        r = [p[0] for c in row for p in members[c]]
        c_ = [p[1] for c in row for p in members[c]]
        want_acc.append(accuracy_score(r, c_))
        want_mae.append(mean_absolute_error(r, c_))
        varies = len(set(r)) > 1 and len(set(c_)) > 1
        want_kappa.append(cohen_kappa_score(r, c_, labels=[0, 1, 2]) if varies else math.nan)

    def accuracy(a, b):
        return (a == b).mean(axis=1)

    def mae(a, b):
        return np.abs(a - b).mean(axis=1)

    def kappa(a, b):
        varies = (a != a[:, :1]).any(axis=1) & (b != b[:, :1]).any(axis=1)
        return np.where(varies, _kappa_batched(a, b, k=3), np.nan)

    got = {
        name: cluster_replicates(fn, [ref, cand], ids, n_resamples=B, seed=11)
        for name, fn in (("accuracy", accuracy), ("mae", mae), ("kappa", kappa))
    }
    np.testing.assert_allclose(got["accuracy"], want_acc, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got["mae"], want_mae, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got["kappa"], want_kappa, rtol=0, atol=1e-12, equal_nan=True)


def metrics(ref, cand, **kw):
    return agreement_metrics(ref, cand, n_resamples=B, seed=5, **kw)


@pytest.mark.parametrize("kind,k", [("ordinal", 4), ("binary", 2)])
def test_epochs_that_repeat_each_sample_add_no_information(kind, k):
    """Each sample judged three times with the same verdict: every bootstrap interval is that
    of the samples alone, where pairs resampled one by one would count each epoch as a new
    sample and draw κ's interval narrower."""
    rng = np.random.default_rng(7)
    n = 40
    ref = rng.integers(0, k, n)
    cand = np.where(rng.random(n) < 0.7, ref, rng.integers(0, k, n))
    samples = np.repeat([f"sample {i}" for i in range(n)], 3)
    alone = metrics(ref, cand, kind=kind, k=k)
    epochs = metrics(np.repeat(ref, 3), np.repeat(cand, 3), kind=kind, k=k, clusters=samples)
    as_if_independent = metrics(np.repeat(ref, 3), np.repeat(cand, 3), kind=kind, k=k)
    assert epochs.keys() == alone.keys()
    for name, m in epochs.items():
        assert m.value == pytest.approx(alone[name].value, abs=1e-12), name
        assert m.ci_method == "cluster bootstrap", name
        assert f"resampled {n} clusters" in (m.note or ""), name
        if alone[name].ci_method == "bootstrap":
            assert (m.ci_low, m.ci_high) == pytest.approx(
                (alone[name].ci_low, alone[name].ci_high), abs=1e-12
            ), name
    kappa = "kappa_categorical"
    width = epochs[kappa].ci_high - epochs[kappa].ci_low
    assert as_if_independent[kappa].ci_high - as_if_independent[kappa].ci_low < 0.75 * width
    assert epochs["accuracy"].n == 3 * n and epochs["accuracy"].count == 3 * alone["accuracy"].count


def test_pairs_each_of_its_own_cluster_are_independent_pairs():
    ref, cand, _, _ = clustered(seed=4, n_clusters=30)
    own = metrics(ref, cand, kind="ordinal", k=3, clusters=[f"p{i}" for i in range(len(ref))])
    assert own == metrics(ref, cand, kind="ordinal", k=3)


def test_neither_the_clusters_names_nor_the_rows_order_moves_a_figure():
    ref, cand, ids, _ = clustered(seed=9, n_clusters=30)
    first = metrics(ref, cand, kind="ordinal", k=3, clusters=ids)
    order = np.random.default_rng(2).permutation(len(ref))
    renamed = np.array([f"zz-{(i * 7919) % 1000}" for i in ids])
    again = metrics(ref[order], cand[order], kind="ordinal", k=3, clusters=renamed[order])
    assert again == first


def test_a_rate_no_resample_can_move_has_the_exact_interval_over_the_clusters():
    """Five samples, three epochs each, every verdict right: accuracy 1 with the exact interval
    over five samples, not over fifteen pairs."""
    ref = np.repeat([0, 1, 1, 0, 1], 3)
    samples = np.repeat(list("abcde"), 3)
    got = metrics(ref, ref.copy(), kind="binary", k=2, clusters=samples)["accuracy"]
    assert (got.value, got.n, got.count) == (1.0, 15, 15)
    assert (got.ci_low, got.ci_high) == pytest.approx(clopper_pearson_interval(5, 5))
    assert got.ci_low < clopper_pearson_interval(15, 15)[0]
    assert got.ci_method == "Clopper–Pearson over clusters"
    fpr = metrics(ref, ref.copy(), kind="binary", k=2, clusters=samples)["false_positive_rate"]
    # its denominator is the reference's negatives: two samples
    assert (fpr.value, fpr.n) == (0.0, 6)
    assert (fpr.ci_low, fpr.ci_high) == pytest.approx(clopper_pearson_interval(0, 2))


def test_a_paired_comparison_over_epochs_is_that_of_the_samples_alone():
    """Two judges on samples judged three times each with the same verdicts: every difference's
    interval and p-value is the paired bootstrap's over the samples alone (accuracy's too, where
    McNemar's test would count each epoch as a new discordant sample), and the items needed are
    whole samples of three."""
    from assay.metrics import paired_comparison

    rng = np.random.default_rng(8)
    n = 60
    ref = rng.integers(0, 3, n)
    a = np.where(rng.random(n) < 0.6, ref, rng.integers(0, 3, n))
    b = np.where(rng.random(n) < 0.7, ref, rng.integers(0, 3, n))
    kw = {"kind": "ordinal", "k": 3, "n_resamples": B, "seed": 4}
    alone = paired_comparison(ref, a, b, **kw)
    samples = np.repeat([f"s{i}" for i in range(n)], 3)
    epochs = paired_comparison(np.repeat(ref, 3), np.repeat(a, 3), np.repeat(b, 3),
                               clusters=samples, **kw)  # fmt: skip
    as_if_independent = paired_comparison(np.repeat(ref, 3), np.repeat(a, 3), np.repeat(b, 3), **kw)
    assert epochs.n == 3 * n and f"The {n} clusters" in epochs.note
    for got, want, naive in zip(
        epochs.differences, alone.differences, as_if_independent.differences, strict=True
    ):
        assert got.metric == want.metric and got.test == "paired cluster bootstrap"
        assert got.delta == pytest.approx(want.delta, abs=1e-12)
        if want.test == "paired bootstrap":
            assert (got.ci_low, got.ci_high, got.p_value) == pytest.approx(
                (want.ci_low, want.ci_high, want.p_value), abs=1e-12
            ), got.metric
            # the epochs counted as samples make a difference look surer, up to the noise of
            # 1000 replicates: κ's difference of 0.008 has p = 1.000 counted so and 0.995 over
            # the samples (a few replicates apart: the items are resampled in the order whose
            # sorted rows come first, here B's, and the two draws are other draws)
            assert naive.p_value <= got.p_value + 0.01, got.metric
            if want.items_needed is not None:
                assert got.items_needed == 3 * want.items_needed, got.metric


def test_a_certificate_over_epochs_is_that_of_the_samples_alone():
    """Each sample judged three times alike: every bound is the samples' own — where the items
    counted as independent would admit the judge, its true positive rate bounded as if it had
    been measured on three times the samples."""
    from assay.metrics import Policy, certify

    ref = np.array([1] * 10 + [0] * 10)
    cand = ref.copy()
    cand[[0, 12]] = 1 - cand[[0, 12]]  # one miss, one false alarm
    policy = Policy.model_validate(
        {"name": "p", "confidence": 0.9, "bars": {"tpr": 0.6, "tnr": 0.6, "kappa_categorical": 0.5}}
    )
    samples = np.repeat([f"s{i}" for i in range(ref.size)], 3)
    alone = certify(ref, cand, policy, k=2, event=[1])
    epochs = certify(np.repeat(ref, 3), np.repeat(cand, 3), policy, k=2, event=[1],
                     clusters=samples)  # fmt: skip
    naive = certify(np.repeat(ref, 3), np.repeat(cand, 3), policy, k=2, event=[1])
    assert not alone.admitted and naive.admitted and not epochs.admitted
    for got, want in zip(epochs.results, alone.results, strict=True):
        assert got.bound == pytest.approx(want.bound, abs=1e-9), got.metric
        assert got.passed == want.passed
        assert got.method == {"clopper-pearson": "clopper-pearson-clusters",
                              "bootstrap": "cluster-bootstrap"}[want.method]  # fmt: skip
    tpr = epochs.results[0]
    assert (tpr.metric, tpr.n, tpr.successes) == ("tpr", 30, 27)
    assert "10.0 effective trials" in tpr.note


def test_unequal_samples_are_bounded_at_kish_effective_trials():
    """Samples with 1 to 4 scored epochs: the bound is scipy's Beta quantile at Kish's effective
    number of trials, (Σ m)² / Σ m², the successes in proportion — fewer than the samples when
    their sizes differ, never more."""
    from scipy.stats import beta

    from assay.metrics import Policy, certify

    sizes = [1, 4, 2, 3, 1, 4, 4, 2, 1, 3, 2, 4]
    outcomes = [1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1]  # each sample's epochs judged alike
    ref = np.ones(sum(sizes), dtype=int)
    cand = np.repeat(outcomes, sizes)
    ids = np.repeat([f"s{i}" for i in range(len(sizes))], sizes)
    policy = Policy.model_validate({"name": "p", "confidence": 0.95, "bars": {"tpr": 0.5}})
    got = certify(ref, cand, policy, k=2, event=[1], clusters=ids).results[0]
    m = np.array(sizes, dtype=float)
    n_eff = m.sum() ** 2 / (m**2).sum()
    p = cand.mean()
    assert n_eff < len(sizes)
    assert got.point == pytest.approx(p)
    assert got.bound == pytest.approx(beta.ppf(0.05, p * n_eff, n_eff - p * n_eff + 1))


def test_prediction_powered_means_over_epochs_are_ppi_py_over_the_samples():
    """Each sample, labelled or not, judged three times alike: PPI's interval and the human-only
    one over the epochs equal ppi_py's over the samples alone, where over the items as if
    independent they would be √3 narrower."""
    import ppi_py

    from assay.metrics import human_only_mean, ppi_mean

    rng = np.random.default_rng(12)
    n, big = 40, 160
    y = (rng.random(n) < 0.3).astype(float)
    f = np.clip(y * 0.7 + rng.random(n) * 0.4, 0, 1)
    f_u = np.clip((rng.random(big) < 0.3) * 0.7 + rng.random(big) * 0.4, 0, 1)
    lab = np.repeat([f"l{i}" for i in range(n)], 3)
    unl = np.repeat([f"u{i}" for i in range(big)], 3)
    got = ppi_mean(np.repeat(y, 3), np.repeat(f, 3), np.repeat(f_u, 3), lam=1.0,
                   clusters=lab, clusters_unlabelled=unl)  # fmt: skip
    low, high = ppi_py.ppi_mean_ci(y, f, f_u, alpha=0.05, lam=1.0)
    assert (got.ci_low, got.ci_high) == pytest.approx((float(low[0]), float(high[0])), abs=1e-12)
    assert got.interval == f"normal (CLT), cluster-robust over {n + big} clusters"
    naive = ppi_mean(np.repeat(y, 3), np.repeat(f, 3), np.repeat(f_u, 3), lam=1.0)
    assert naive.std_error == pytest.approx(got.std_error / math.sqrt(3), rel=1e-9)
    human = human_only_mean(np.repeat(y, 3), clusters=lab)
    low, high = ppi_py.classical_mean_ci(y, alpha=0.05)
    assert (human.ci_low, human.ci_high) == pytest.approx((float(low), float(high)), abs=1e-12)


def test_the_clustered_standard_error_is_statsmodels_cluster_robust_one():
    """Epochs that differ, some samples labelled in one epoch and not in another: the human-only
    standard error is statsmodels' cluster-robust one of a mean (no small-sample factor), and
    PPI's is the sum over samples of what each adds to the estimate, its labelled and unlabelled
    epochs together."""
    import statsmodels.api as sm

    from assay.metrics import human_only_mean, ppi_mean

    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 5, 50)
    ids = np.repeat(np.arange(50), sizes)
    y = (rng.random(ids.size) < 0.4).astype(float)
    fit = sm.OLS(y, np.ones(y.size)).fit(
        cov_type="cluster", cov_kwds={"groups": ids, "use_correction": False}
    )
    assert human_only_mean(y, clusters=ids).std_error == pytest.approx(fit.bse[0], rel=1e-10)

    labelled = rng.random(ids.size) < 0.3
    f = np.clip(y * 0.6 + rng.random(ids.size) * 0.5, 0, 1)
    got = ppi_mean(y[labelled], f[labelled], f[~labelled], lam=1.0,
                   clusters=ids[labelled], clusters_unlabelled=ids[~labelled])  # fmt: skip
    rect, imp = y[labelled] - f[labelled], f[~labelled]
    per_sample = np.zeros(50)
    np.add.at(per_sample, ids[labelled], (rect - rect.mean()) / rect.size)
    np.add.at(per_sample, ids[~labelled], (imp - imp.mean()) / imp.size)
    assert got.std_error == pytest.approx(math.sqrt((per_sample**2).sum()), rel=1e-10)
    assert got.value == pytest.approx(imp.mean() + rect.mean())


def test_a_drift_test_over_epochs_is_that_of_the_samples_alone():
    """Anchors that are three epochs each of 20 samples, whose verdicts change together: at
    the anchors' effective number (Kish's, 20 here) the binomial test and the change rate's
    interval are those of the 20 samples alone, where the 60 anchors taken as independent
    flag a drift the samples do not show."""
    from assay.metrics import drift_test
    from assay.metrics._drift import Stability

    measured = Stability(rate=0.1, upper=0.15, items=30, samples=5, level=0.05)
    alone = drift_test(6, 20, measured)
    epochs = drift_test(18, 60, measured, clusters=np.repeat([f"s{i}" for i in range(20)], 3))
    naive = drift_test(18, 60, measured)
    assert epochs.p_value == pytest.approx(alone.p_value, rel=1e-9)
    assert (epochs.ci_low, epochs.ci_high) == pytest.approx((alone.ci_low, alone.ci_high))
    assert (epochs.rate, epochs.n, epochs.effective_n) == (0.3, 60, 20.0)
    assert not alone.drifted and not epochs.drifted and naive.drifted


def test_rogan_gladen_over_epochs_draws_whole_samples_as_a_plain_cluster_bootstrap_does():
    """Rogan–Gladen's bootstrap over items that are epochs of samples (some epochs labelled,
    others not, within one sample too): its percentile interval agrees, within Monte Carlo
    error, with a plain loop that draws sample ids with replacement, takes every epoch of each
    on both sides and corrects the flagged rate by the drawn sensitivity and specificity."""
    from assay.metrics import corrected_prevalence

    rng = np.random.default_rng(7)
    n_samples, epochs = 40, 3
    truth = rng.random(n_samples) < 0.3
    sample = np.repeat(np.arange(n_samples), epochs)
    label = truth[sample].astype(int)
    # the judge: right with a per-sample chance, so a sample's epochs agree more than chance
    sure = rng.uniform(0.6, 0.98, n_samples)[sample]
    verdict = np.where(rng.random(sample.size) < sure, label, 1 - label)
    labelled = rng.random(sample.size) < 0.5
    got = corrected_prevalence(
        verdict[~labelled],
        label[labelled],
        verdict[labelled],
        n_resamples=20_000,
        seed=1,
        clusters=(sample[~labelled], sample[labelled]),
    ).corrected

    draws = np.random.default_rng(2).integers(0, n_samples, size=(20_000, n_samples))
    ends = []
    for drawn in draws:
        take = np.concatenate([np.flatnonzero(sample == s) for s in drawn])
        lab, unl = take[labelled[take]], take[~labelled[take]]
        y, v = label[lab], verdict[lab]
        tpr, tnr = v[y == 1].mean(), 1 - v[y == 0].mean()
        ends.append(np.clip((verdict[unl].mean() + tnr - 1) / (tpr + tnr - 1), 0, 1))
    low, high = np.nanpercentile(ends, [2.5, 97.5])
    assert got.ci_low == pytest.approx(low, abs=0.01)
    assert got.ci_high == pytest.approx(high, abs=0.01)
    assert "resampled 40 clusters" in got.note
    # the same items taken as independent: a narrower interval than the samples allow
    naive = corrected_prevalence(
        verdict[~labelled], label[labelled], verdict[labelled], n_resamples=20_000, seed=1
    ).corrected
    assert naive.ci_high - naive.ci_low < got.ci_high - got.ci_low


def test_stratified_ppi_over_identical_epochs_is_that_of_the_samples_alone():
    """Two strata, each sample labelled or not judged three times alike: stratified PPI++ over
    the epochs, clustered by sample, is the estimate over the samples alone — the same λ̂ in
    each stratum, the same interval — where over the items as if independent it would be √3
    narrower."""
    from assay.metrics import stratified_ppi_mean

    rng = np.random.default_rng(5)
    n, big = 30, 90
    y = (rng.random(n) < 0.4).astype(float)
    f = np.clip(y * 0.6 + rng.random(n) * 0.5, 0, 1)
    f_u = np.clip((rng.random(big) < 0.4) * 0.6 + rng.random(big) * 0.5, 0, 1)
    s_lab, s_unl = np.arange(n) % 2, np.arange(big) % 2
    alone = stratified_ppi_mean(y, f, f_u, s_lab, s_unl)
    three = {"y": np.repeat(y, 3), "f": np.repeat(f, 3), "f_u": np.repeat(f_u, 3)}
    lab = np.repeat([f"l{i}" for i in range(n)], 3)
    unl = np.repeat([f"u{i}" for i in range(big)], 3)
    args = (three["y"], three["f"], three["f_u"], np.repeat(s_lab, 3), np.repeat(s_unl, 3))
    got = stratified_ppi_mean(*args, clusters=lab, clusters_unlabelled=unl)
    # λ̂ moves a hair with the items' number (sample covariances); at the λ̂ each stratum used,
    # the standard error is ppi_py's population-variance one over the samples alone
    assert [p.lam for p in got.strata] == pytest.approx([p.lam for p in alone.strata], rel=0.02)
    variance = 0.0
    for k, part in enumerate(got.strata):
        imputed = part.lam * f_u[s_unl == k]
        rectifier = y[s_lab == k] - part.lam * f[s_lab == k]
        assert part.weight == pytest.approx(((s_lab == k).sum() + (s_unl == k).sum()) / (n + big))
        variance += part.weight**2 * (
            imputed.var() / imputed.size + rectifier.var() / rectifier.size
        )
    assert got.std_error == pytest.approx(math.sqrt(variance), rel=1e-12)
    assert got.interval == f"normal (CLT), cluster-robust over {n + big} clusters"
    naive = stratified_ppi_mean(*args)
    assert naive.std_error == pytest.approx(got.std_error / math.sqrt(3), rel=1e-9)
