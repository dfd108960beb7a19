"""Paired comparison of two judges on the same items: McNemar against statsmodels and scipy, Holm
against statsmodels, the bootstrap's deltas against the metrics computed directly, and the
guarantees by seeded simulation (size under the null, interval coverage, the items needed
reaching their power)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom, binomtest
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from assay.metrics import (
    agreement_metrics,
    bootstrap_p_value,
    items_needed_mcnemar,
    items_needed_se,
    mcnemar_exact,
    paired_comparison,
)


def judges(rng, n: int, acc_a: float, acc_b: float, k: int = 2):
    """A reference and two judges right with the given probabilities, independently; a wrong
    verdict is another category at random."""
    ref = rng.integers(0, k, n)

    def judge(acc):
        wrong = (ref + rng.integers(1, k, n)) % k
        return np.where(rng.random(n) < acc, ref, wrong)

    return ref, judge(acc_a), judge(acc_b)


@pytest.mark.parametrize("seed", range(6))
def test_mcnemar_equals_statsmodels_and_the_exact_binomial(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.random(40) < 0.6, rng.random(40) < 0.75
    a_only, b_only, p = mcnemar_exact(a, b)
    assert (a_only, b_only) == (int(np.sum(a & ~b)), int(np.sum(~a & b)))
    table = [[np.sum(a & b), a_only], [b_only, np.sum(~a & ~b)]]
    assert p == pytest.approx(mcnemar(table, exact=True).pvalue)
    # independent: the two-sided exact binomial test of the discordant pairs at 1/2
    assert p == pytest.approx(binomtest(a_only, a_only + b_only, 0.5).pvalue)


def test_mcnemar_without_discordant_items_is_one():
    same = np.array([True, False, True])
    assert mcnemar_exact(same, same) == (0, 0, 1.0)


def test_values_and_deltas_are_the_metrics_of_each_judge():
    rng = np.random.default_rng(3)
    ref = rng.integers(0, 6, 70)
    a = np.clip(ref + rng.integers(-1, 2, 70), 0, 5)
    b = np.clip(ref + rng.integers(-2, 3, 70), 0, 5)
    res = paired_comparison(ref, a, b, kind="ordinal", k=6, threshold=3)
    ma = agreement_metrics(ref, a, kind="ordinal", k=6, threshold=3)
    mb = agreement_metrics(ref, b, kind="ordinal", k=6, threshold=3)
    assert [d.metric for d in res.differences] == list(ma)
    for d in res.differences:
        assert d.a == pytest.approx(ma[d.metric].value)
        assert d.b == pytest.approx(mb[d.metric].value)
        assert d.delta == pytest.approx(d.b - d.a)
        assert d.ci_low <= d.delta <= d.ci_high or d.better is None
    m = len(res.differences)
    assert res.tests == m and res.ci_level == pytest.approx(1 - 0.05 / m)


def test_holm_equals_statsmodels_and_decides_the_verdict():
    rng = np.random.default_rng(1)
    ref, a, b = judges(rng, 120, 0.65, 0.85)
    res = paired_comparison(ref, a, b, kind="binary", k=2, threshold=1)
    raw = [d.p_value for d in res.differences]
    want = multipletests(raw, alpha=0.05, method="holm")[1]
    assert [d.p_adjusted for d in res.differences] == pytest.approx(list(want))
    # by hand: sorted p-values times (m - rank), running maximum, capped at 1
    order = np.argsort(raw)
    m, running, hand = len(raw), 0.0, np.empty(len(raw))
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * raw[i]))
        hand[i] = running
    assert [d.p_adjusted for d in res.differences] == pytest.approx(list(hand))
    acc = next(d for d in res.differences if d.metric == "accuracy")
    assert acc.test == "McNemar exact" and acc.better == "B" and acc.items_needed is None
    assert "error_rate" not in [d.metric for d in res.differences]  # 1 - accuracy: once


def test_a_metric_defined_for_both_judges_keeps_its_test_when_some_replicates_are_not():
    """3 positives of 40: a few resamples hold none, so κ and the positive rates are undefined
    there. Both judges' values are defined, so each metric keeps its bootstrap p-value (over the
    defined replicates, as its interval) and its place in Holm's family: once one undefined
    replicate took the test away and Holm adjusted over 2 metrics where statsmodels, given every
    p-value, adjusts over all."""
    ref = np.array([1] * 3 + [0] * 37)
    a = ref.copy()
    a[[0, 10, 11, 12, 13, 14, 15, 16]] ^= 1
    b = ref.copy()
    b[20] = 1
    res = paired_comparison(ref, a, b, kind="binary", k=2, threshold=1, n_resamples=1000, seed=0)
    assert res.tests == len(res.differences)  # every metric tested
    for d in res.differences:
        assert not np.isnan(d.p_value), d
    kappa = next(d for d in res.differences if d.metric == "kappa_categorical")
    assert "replicates undefined for A or B: the p-value and interval from the other" in kappa.note
    raw = [d.p_value for d in res.differences]
    want = multipletests(raw, alpha=0.05, method="holm")[1]
    assert [d.p_adjusted for d in res.differences] == pytest.approx(list(want))


def test_lower_is_better_turns_the_verdict():
    rng = np.random.default_rng(2)
    ref, a, b = judges(rng, 150, 0.6, 0.9)
    res = paired_comparison(
        ref,
        a,
        b,
        kind="binary",
        k=2,
        metrics=["accuracy", "error_rate"],
        higher_is_better=lambda name: name != "error_rate",
    )
    by = {d.metric: d for d in res.differences}
    assert by["error_rate"].delta < 0 and by["error_rate"].better == "B"
    assert by["accuracy"].better == "B"
    with pytest.raises(ValueError, match="unknown metrics ccc"):
        paired_comparison(ref, a, b, kind="binary", k=2, metrics=["ccc"])


def test_bootstrap_p_value_counts_both_tails():
    assert bootstrap_p_value([0.1] * 999) == pytest.approx(2 / 1000)
    assert bootstrap_p_value([0.0] * 10) == 1.0
    assert bootstrap_p_value(np.r_[-np.ones(300), np.ones(700)]) == pytest.approx(2 * 301 / 1001)


def test_mcnemar_size_under_the_null_is_at_most_its_level():
    """2,000 seeded pairs of judges of equal accuracy: McNemar's exact test rejects at most
    5% of the time (plus Monte-Carlo slack)."""
    rng = np.random.default_rng(20261203)
    runs, n = 2000, 80
    right = rng.random((runs, 2, n)) < 0.7
    rejected = [mcnemar_exact(r[0], r[1])[2] < 0.05 for r in right]
    slack = 3 * np.sqrt(0.05 * 0.95 / runs)
    assert np.mean(rejected) <= 0.05 + slack


def test_family_wise_error_under_the_null_with_holm():
    """300 seeded pairs of exchangeable judges: some metric is called different in at most
    5% of them (Holm over the metrics; bootstrap tests are approximate, hence the slack)."""
    rng = np.random.default_rng(7)
    runs, any_rejected = 300, 0
    for _ in range(runs):
        ref, a, b = judges(rng, 60, 0.75, 0.75)
        res = paired_comparison(
            ref, a, b, kind="binary", k=2, seed=int(rng.integers(1 << 30)), n_resamples=1000
        )
        any_rejected += any(d.better is not None for d in res.differences)
    assert any_rejected / runs <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / runs)


def test_paired_bootstrap_interval_covers_the_true_difference():
    """300 seeded replications, true accuracy difference 0.15: the 95% interval of Δ covers it
    about 95% of the time (percentile bootstrap at n = 100: a little under, within slack)."""
    rng = np.random.default_rng(11)
    runs, covered = 300, 0
    for _ in range(runs):
        ref, a, b = judges(rng, 100, 0.7, 0.85)
        d = paired_comparison(
            ref, a, b, kind="binary", k=2, metrics=["accuracy"], seed=int(rng.integers(1 << 30))
        ).differences[0]
        covered += d.ci_low <= 0.15 <= d.ci_high
    assert covered / runs >= 0.95 - 3 * np.sqrt(0.05 * 0.95 / runs) - 0.01


def test_items_needed_for_mcnemar_reach_their_power_by_simulation():
    """Connor's n for Δ = 0.1 with discordance 0.3: simulated exact McNemar tests at that n
    reject in about 80% of 4,000 runs."""
    delta, psi = 0.1, 0.3
    n = items_needed_mcnemar(psi, delta, 0.05, 0.8)
    rng = np.random.default_rng(5)
    # per item: B only right w.p. (ψ+Δ)/2, A only right w.p. (ψ−Δ)/2, else concordant
    counts = rng.multinomial(n, [(psi + delta) / 2, (psi - delta) / 2, 1 - psi], size=4000)
    b_only, a_only = counts[:, 0], counts[:, 1]
    m = a_only + b_only
    p = np.minimum(1.0, 2 * binom.cdf(np.minimum(a_only, b_only), m, 0.5))
    power = np.mean(p < 0.05)
    assert 0.75 <= power <= 0.86
    assert items_needed_mcnemar(0.0, delta, 0.05, 0.8) < n  # ψ at its least (= Δ): fewer


def test_items_needed_from_the_standard_error_scale_as_one_over_root_n():
    base = items_needed_se(100, 0.05, 0.05, 0.05, 0.8)
    assert base == pytest.approx(100 * (1.959964 + 0.841621) ** 2, abs=1)
    assert items_needed_se(100, 0.1, 0.05, 0.05, 0.8) == pytest.approx(4 * base, abs=4)


def test_no_difference_gives_items_needed():
    rng = np.random.default_rng(4)
    ref, a, b = judges(rng, 50, 0.8, 0.8)
    res = paired_comparison(
        ref, a, b, kind="binary", k=2, metrics=["accuracy", "kappa_categorical"]
    )
    for d in res.differences:
        assert d.better is None and d.items_needed is not None and d.items_needed > 50


def test_a_threshold_on_named_unordered_categories_fails_the_categories_listed_before_it():
    """Categories listed ``zeta, mid, alpha, beta`` (recoded by their counts, which put them in
    another order) with ``threshold=2``: each judge's failure figures are its flags below
    ``alpha`` (zeta, mid) against the reference's, by hand, as in agreement_metrics."""
    rng = np.random.default_rng(3)
    ref = rng.choice(4, size=90, p=[0.4, 0.3, 0.2, 0.1])
    a = np.where(rng.random(90) < 0.8, ref, rng.integers(0, 4, 90))
    b = np.where(rng.random(90) < 0.6, ref, rng.integers(0, 4, 90))
    labels = ["zeta", "mid", "alpha", "beta"]
    res = paired_comparison(ref, a, b, kind="categorical", k=4, threshold=2, labels=labels)
    by_metric = {d.metric: d for d in res.differences}
    for judge, side in ((a, "a"), (b, "b")):
        true_failure, flagged = ref < 2, judge < 2
        hits = (true_failure & flagged).sum()
        precision = getattr(by_metric["failure_precision"], side)
        incidence = getattr(by_metric["failure_incidence"], side)
        assert precision == pytest.approx(hits / flagged.sum())
        assert incidence == pytest.approx(hits / true_failure.sum())
