"""Certification bounds: the exact Clopper–Pearson bound equals scipy's binomtest,
the bounds are conservative by seeded simulation (not asserted), Bonferroni keeps the joint
statement at its level, and an unscored item counts against the judge."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError
from scipy.stats import binomtest

from assay.metrics import (
    Policy,
    bootstrap_bound,
    certify,
    clopper_pearson_lower,
    clopper_pearson_upper,
    cohen_kappa,
)
from assay.metrics._kappa import _kappa_batched

DRAWS = 2000


def slack(delta: float, draws: int) -> float:
    """Three Monte-Carlo standard errors of a frequency whose true value is ``delta``."""
    return 3 * math.sqrt(delta * (1 - delta) / draws)


@pytest.mark.parametrize("n", [1, 7, 30, 120])
@pytest.mark.parametrize("delta", [0.05, 0.0125])
def test_clopper_pearson_is_scipys_exact_one_sided_interval(n, delta):
    for x in range(n + 1):
        greater = binomtest(x, n, alternative="greater").proportion_ci(1 - delta, "exact")
        less = binomtest(x, n, alternative="less").proportion_ci(1 - delta, "exact")
        assert clopper_pearson_lower(x, n, delta) == pytest.approx(greater.low, abs=1e-9)
        assert clopper_pearson_upper(x, n, delta) == pytest.approx(less.high, abs=1e-9)


@pytest.mark.parametrize(("n", "p"), [(20, 0.8), (60, 0.9), (150, 0.5), (40, 0.97)])
def test_the_lower_bound_exceeds_the_true_rate_at_most_delta_of_the_time(n, p):
    delta = 0.05
    draws = np.random.default_rng(n).binomial(n, p, size=DRAWS)
    bounds = {x: clopper_pearson_lower(int(x), n, delta) for x in np.unique(draws)}
    above = np.mean([bounds[x] > p for x in draws])
    assert above <= delta + slack(delta, DRAWS)


def test_the_upper_bound_falls_below_the_true_rate_at_most_delta_of_the_time():
    n, p, delta = 80, 0.1, 0.05
    draws = np.random.default_rng(1).binomial(n, p, size=DRAWS)
    bounds = {x: clopper_pearson_upper(int(x), n, delta) for x in np.unique(draws)}
    assert np.mean([bounds[x] < p for x in draws]) <= delta + slack(delta, DRAWS)


def test_two_bars_hold_jointly_at_the_policy_level():
    """TPR and TNR both exactly at their true values: with Bonferroni the chance that either
    bound overshoots is at most δ; without it (each at δ) it would be about 2δ."""
    delta, n_pos, n_neg, tpr, tnr = 0.1, 50, 70, 0.85, 0.8
    policy = Policy(confidence=1 - delta, bars={"tpr": tpr, "tnr": tnr})
    rng = np.random.default_rng(7)
    tp, tn = rng.binomial(n_pos, tpr, DRAWS), rng.binomial(n_neg, tnr, DRAWS)
    d = policy.delta_per_bar
    assert d == pytest.approx(delta / 2)
    joint = np.mean(
        [
            clopper_pearson_lower(int(a), n_pos, d) > tpr
            or clopper_pearson_lower(int(b), n_neg, d) > tnr
            for a, b in zip(tp, tn, strict=True)
        ]
    )
    assert joint <= delta + slack(delta, DRAWS)


def test_the_bootstrap_lower_bound_of_kappa_is_conservative_within_slack():
    """A judge that copies the reference with probability 0.8 (else guesses at random) has
    κ = 0.8 on balanced binary labels; the one-sided bootstrap bound at 95% overshoots it in
    about 5% of 300 seeded data sets (percentile bootstrap: approximate, so a wider slack)."""
    n, delta, draws, true_kappa = 100, 0.05, 300, 0.8
    rng = np.random.default_rng(3)
    above = 0
    for s in range(draws):
        ref = rng.integers(0, 2, n)
        cand = np.where(rng.random(n) < 0.8, ref, rng.integers(0, 2, n))
        bound, _ = bootstrap_bound(
            lambda a, b: _kappa_batched(a, b, k=2),
            ref,
            cand,
            delta=delta,
            side="at_least",
            n_resamples=1000,
            seed=s,
        )
        above += bound > true_kappa
    print(f"bootstrap κ bound above the true κ in {above} of {draws}")
    assert above / draws <= delta + slack(delta, draws) + 0.02


def test_a_bootstrap_that_cannot_see_the_uncertainty_bounds_nothing():
    """Two items in perfect agreement: κ is undefined on the resamples that draw one class
    (about half) and 1 on the rest. Dropping the undefined ones gave a lower bound of 1.000 and
    a certificate "κ ≥ 0.99 at 95 %"; counted as failing they leave no bound, and neither do
    replicates that never vary (forty items, all agreeing)."""
    kappa = lambda a, b: _kappa_batched(a, b, k=2)  # noqa: E731
    for ref in (np.array([0, 1]), np.array([0, 1] * 20)):
        bound, dropped = bootstrap_bound(kappa, ref, ref, delta=0.05, side="at_least")
        assert math.isnan(bound), (ref.size, bound, dropped)
        out = certify(ref, list(ref), Policy(bars={"kappa_categorical": 0.5}), k=2, event=[1])
        assert not out.admitted and "undefined" in out.results[0].note
    assert dropped == 0  # forty items: every replicate defined, each 1.0


def test_undefined_replicates_count_as_failing_where_few_enough_to_bound():
    """The bound is numpy's percentile of every replicate with the undefined ones at the
    failing end (−∞ for a lower bound, +∞ for an upper one) — never beyond the one that drops
    them —, and none where more than δ of them are undefined; with all defined it is the end
    of bootstrap_ci's two-sided interval at 1 − 2δ."""
    from assay.metrics import bootstrap_ci
    from assay.metrics._certify import percentile_bound

    rng = np.random.default_rng(5)
    for undefined in (0, 1, 40, 99, 100, 101, 400):
        reps = rng.normal(0.5, 0.1, 2000)
        reps[rng.choice(2000, undefined, replace=False)] = np.nan
        for side, worst, q in (("at_least", -np.inf, 5.0), ("at_most", np.inf, 95.0)):
            bound, dropped, why = percentile_bound(reps, 0.05, side)
            assert dropped == undefined
            with np.errstate(invalid="ignore"):  # ∞ − ∞ where an undefined one is at q
                exact = float(np.percentile(np.where(np.isnan(reps), worst, reps), q))
            if not np.isfinite(exact) or np.isnan(exact):  # an undefined one at the percentile
                assert math.isnan(bound) and "counted as failing" in why
                continue
            assert why is None and bound == pytest.approx(exact, abs=1e-12)
            dropping = float(np.percentile(reps[~np.isnan(reps)], q))
            assert (bound <= dropping) if side == "at_least" else (bound >= dropping)
    ref = np.array([0, 1] * 30)
    cand = np.where(rng.random(60) < 0.8, ref, 1 - ref)
    kappa = lambda a, b: _kappa_batched(a, b, k=2)  # noqa: E731
    ci = bootstrap_ci(kappa, ref, cand, n_resamples=1000, confidence=0.9, seed=2)
    low, _ = bootstrap_bound(
        kappa, ref, cand, delta=0.05, side="at_least", n_resamples=1000, seed=2
    )
    high, _ = bootstrap_bound(
        kappa, ref, cand, delta=0.05, side="at_most", n_resamples=1000, seed=2
    )
    assert (low, high) == (ci.low, ci.high)


def test_a_perfect_judge_is_admitted_and_a_noisy_one_refused():
    """On its rates, whose exact bounds see the uncertainty of 40 of 40 (its κ's bootstrap
    does not vary: no bound, the test above)."""
    ref = np.array([0, 1] * 40)
    lax = Policy(bars={"tpr": 0.8, "tnr": 0.8, "accuracy": 0.7})
    out = certify(ref, list(ref), lax, k=2, event=[1])
    assert out.admitted
    tpr = out.results[0]
    assert (tpr.successes, tpr.n, tpr.point) == (40, 40, 1.0)
    # 40 of 40 at level 1 - 0.05/3: the bound is (δ/3)^(1/40)
    assert tpr.bound == pytest.approx((0.05 / 3) ** (1 / 40))
    noisy = np.where(np.arange(80) % 5 == 0, 1 - ref, ref)  # 80% accurate
    assert not certify(ref, list(noisy), lax, k=2, event=[1]).admitted


def test_an_unscored_item_counts_as_the_worst_verdict():
    ref = [1, 1, 1, 0, 0, 0]
    verdicts = [1, 1, None, 0, 0, None]
    policy = Policy(bars={"tpr": 0.1, "tnr": 0.1, "precision": 0.1, "accuracy": 0.1})
    got = {r.metric: r for r in certify(ref, verdicts, policy, k=2, event=[1]).results}
    assert (got["tpr"].successes, got["tpr"].n) == (2, 3)  # the unscored positive: a miss
    assert (got["tnr"].successes, got["tnr"].n) == (2, 3)  # the unscored negative: a false alarm
    assert (got["precision"].successes, got["precision"].n) == (2, 3)
    assert (got["accuracy"].successes, got["accuracy"].n) == (4, 6)


def test_kappa_point_is_cohens_and_the_worst_verdict_is_the_far_end_of_the_scale():
    ref = [0, 1, 2, 3, 3, 2, 1, 0]
    verdicts = [0, 1, 2, 3, None, 2, None, 0]
    policy = Policy(bars={"kappa_quadratic": 0.0, "mae": 3.0})
    got = {r.metric: r for r in certify(ref, verdicts, policy, k=4).results}
    imputed = [0, 1, 2, 3, 0, 2, 3, 0]
    assert got["kappa_quadratic"].point == pytest.approx(
        cohen_kappa(ref, imputed, k=4, weights="quadratic")
    )
    assert got["mae"].point == pytest.approx(np.mean(np.abs(np.array(ref) - imputed)))
    assert got["mae"].side == "at_most"


def test_the_report_names_of_the_rates_are_the_same_rates():
    ref, verdicts = [0, 1, 1, 0, 1, 0, 0], [0, 1, 0, 1, 1, 0, 0]
    names = {
        "fpr": "false_positive_rate",
        "fnr": "false_negative_rate",
        "precision": "failure_precision",
        "tpr": "failure_incidence",
    }
    policy = Policy(bars=dict.fromkeys([*names, *names.values()], 0.5))
    got = {r.metric: r for r in certify(ref, verdicts, policy, k=2, event=[1]).results}
    for short, long in names.items():
        assert (got[short].successes, got[short].n, got[short].bound) == (
            got[long].successes,
            got[long].n,
            got[long].bound,
        )


def test_an_undefined_metric_fails_its_bar():
    out = certify([0, 0, 0], [0, 0, 0], Policy(bars={"tpr": 0.0, "tnr": 0.5}), k=2, event=[1])
    tpr = out.results[0]
    assert math.isnan(tpr.bound) and not tpr.passed and "no trial" in tpr.note
    assert not out.admitted


def test_bars_read_as_the_metrics_better_direction_or_as_stated():
    p = Policy(bars={"tpr": 0.8, "fpr": 0.1, "accuracy": {"at_most": 0.99}})
    assert [(b.side, b.value) for b in p.bars.values()] == [
        ("at_least", 0.8),
        ("at_most", 0.1),
        ("at_most", 0.99),
    ]
    with pytest.raises(ValidationError, match="unknown metric 'recall'"):
        Policy(bars={"recall": 0.8})
    with pytest.raises(ValidationError, match="confidence"):
        Policy(confidence=1.0, bars={"tpr": 0.8})
    with pytest.raises(ValueError, match="tpr needs a positive class"):
        certify([0, 1, 2], [0, 1, 2], Policy(bars={"tpr": 0.5}), k=3)
