"""Self-preference: Welch's interval and two-sided test against scipy and statsmodels, and by
seeded simulation a judge that adds +δ to its own family's outputs flagged, a fair judge
covered at 0 — also when its family's outputs are really better, which the raw difference
would take for a preference."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import ttest_ind
from statsmodels.stats.weightstats import CompareMeans, DescrStatsW

from assay.metrics import self_preference

ALPHA = 0.05


def panel(rng, n: int, delta: float, quality_gap: float = 0.0):
    """Items from three families; the human score is the output's quality (the judge's
    family, ``gpt``, writes ``quality_gap`` better outputs), the judge scores it with noise and
    adds ``delta`` to its own family's."""
    generators = rng.choice(["gpt", "llama", "claude"], n)
    own = generators == "gpt"
    human = rng.normal(3.0, 1.0, n) + quality_gap * own
    judge = human + rng.normal(0.0, 0.8, n) + delta * own
    return judge, generators, human


def test_welch_interval_and_two_sided_p_value_equal_scipy_and_statsmodels():
    rng = np.random.default_rng(1)
    judge, generators, human = panel(rng, 90, 0.4)
    res = self_preference(judge, generators, "gpt", reference=human, confidence=0.9)
    own = generators == "gpt"
    errors = judge - human
    assert res.adjusted and res.interval == "Welch t"
    assert res.difference == pytest.approx(errors[own].mean() - errors[~own].mean())
    two_sided = ttest_ind(errors[own], errors[~own], equal_var=False)
    ci = two_sided.confidence_interval(0.9)
    assert (res.ci_low, res.ci_high) == pytest.approx((ci.low, ci.high), abs=1e-12)
    assert res.df == pytest.approx(two_sided.df)
    assert res.p_value == pytest.approx(two_sided.pvalue, abs=1e-12)
    assert res.test == "Welch t-test, two-sided"
    compare = CompareMeans(DescrStatsW(errors[own]), DescrStatsW(errors[~own]))
    low, high = compare.tconfint_diff(alpha=0.1, usevar="unequal")
    assert (res.ci_low, res.ci_high) == pytest.approx((low, high), abs=1e-12)
    assert (res.n_own, res.n_other) == (int(own.sum()), int((~own).sum()))
    assert res.judge_own == pytest.approx(judge[own].mean())
    assert res.reference_other == pytest.approx(human[~own].mean())


def test_without_references_the_raw_difference_says_it_confounds_quality():
    rng = np.random.default_rng(2)
    judge, generators, _ = panel(rng, 60, 0.0)
    res = self_preference(judge, generators, "gpt")
    own = generators == "gpt"
    assert not res.adjusted and res.reference_own is None
    assert res.difference == pytest.approx(judge[own].mean() - judge[~own].mean())
    assert "confounds a preference for its own family with any real difference" in res.note


def test_items_without_a_reference_are_left_out_and_counted():
    rng = np.random.default_rng(3)
    judge, generators, human = panel(rng, 50, 0.0)
    human[[0, 5, 9]] = np.nan
    res = self_preference(judge, generators, "gpt", reference=human)
    keep = ~np.isnan(human)
    full = self_preference(judge[keep], generators[keep], "gpt", reference=human[keep])
    assert res.n_without_reference == 3
    assert (res.n_own + res.n_other) == 47
    assert res.difference == pytest.approx(full.difference)


def test_a_judge_adding_delta_to_its_own_family_is_flagged_in_most_draws():
    rng = np.random.default_rng(10)
    draws = 1000
    above = 0
    for _ in range(draws):
        judge, generators, human = panel(rng, 120, 0.5)
        above += self_preference(judge, generators, "gpt", reference=human).ci_low > 0
    power = above / draws
    assert power >= 0.8, f"power {power:.3f}"


def test_a_fair_judge_is_covered_at_zero_even_when_its_family_writes_better_outputs():
    rng = np.random.default_rng(11)
    draws = 1000
    covered_adjusted = 0
    raw_flagged = 0
    for _ in range(draws):
        judge, generators, human = panel(rng, 120, 0.0, quality_gap=0.8)
        adjusted = self_preference(judge, generators, "gpt", reference=human)
        covered_adjusted += adjusted.ci_low <= 0 <= adjusted.ci_high
        raw_flagged += self_preference(judge, generators, "gpt").ci_low > 0
    se = math.sqrt(ALPHA * (1 - ALPHA) / draws)
    assert covered_adjusted / draws >= 1 - ALPHA - 3 * se
    # the raw difference takes the better outputs for a preference
    assert raw_flagged / draws >= 0.8  # 0.88 with this seed


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            dict(scores=[1, 2, np.nan, 4], generators=list("aabb")),
            "scores must hold finite numbers, got nan at position 2",
        ),
        (
            dict(scores=[1, 2, 3, 4], generators=["a", None, "b", "b"]),
            "generators has no model family at position 1",
        ),
        (
            dict(scores=[1, 2, 3, 4], generators=["a", "a", "b"]),
            "scores and generators must have the same length, got 4 and 3",
        ),
        (
            dict(scores=[1, 2, 3, 4], generators=["a", "b", "b", "b"]),
            "at least 2 items of family 'a', got 1",
        ),
        (
            dict(scores=[1, 2, 3, 4], generators=list("aabb"), reference=[1, np.nan, 2, 2]),
            "at least 2 items of family 'a' with a reference score, got 1",
        ),
        (
            dict(scores=[1, 2, 3, 4], generators=list("aabb"), reference=[1, 2, 3]),
            "scores and reference must have the same length",
        ),
        (
            dict(scores=[1, 2, 3, 4], generators=list("aabb"), reference=[1, np.inf, 3, 4]),
            "reference must hold finite numbers .nan for none., got inf at position 1",
        ),
        (
            dict(scores=[1, 2, 3, 4], generators=list("aabb"), confidence=0),
            "confidence must be strictly between 0 and 1",
        ),
    ],
)
def test_bad_input_is_one_line_naming_the_argument(kwargs, message):
    with pytest.raises(ValueError, match=message) as info:
        self_preference(judge_family="a", **kwargs)
    assert "\n" not in str(info.value)


def test_no_variation_in_either_group_has_no_interval():
    res = self_preference([3, 3, 2, 2], list("aabb"), "a")
    assert res.difference == 1.0
    assert math.isnan(res.ci_low) and math.isnan(res.p_value)
    assert "no variation" in res.note


def test_the_p_value_is_below_one_minus_confidence_exactly_when_the_interval_excludes_0():
    """One test: the printed p-value and the flag (an interval above 0) never disagree. The
    audited case — errors whose one-sided p was 0.042 while the 95% interval held 0, printed
    beside "not flagged" — now has scipy's two-sided p, 0.083."""
    rng = np.random.default_rng(17)
    n = 40
    ref = rng.integers(1, 6, n).astype(float)
    noise = rng.integers(-1, 2, n)
    judge = np.clip(ref + noise + (np.arange(n) < 20) * (rng.random(n) < 0.25), 1, 5)
    generators = np.array(["gpt"] * 20 + ["claude"] * 20)
    res = self_preference(judge, generators, "gpt", reference=ref, confidence=0.95)
    own = generators == "gpt"
    errors = judge - ref
    scipy_p = ttest_ind(errors[own], errors[~own], equal_var=False).pvalue
    assert res.p_value == pytest.approx(scipy_p, abs=1e-12)
    assert res.p_value == pytest.approx(0.0835, abs=1e-4) and res.ci_low < 0
    for seed in range(200):
        r = np.random.default_rng(seed)
        judge, generators, human = panel(r, 30, float(r.choice([0.0, 0.3, 0.6, -0.4])))
        for confidence in (0.9, 0.95):
            res = self_preference(judge, generators, "gpt", reference=human, confidence=confidence)
            excludes = res.ci_low > 0 or res.ci_high < 0
            assert (res.p_value < 1 - confidence) is excludes, (seed, confidence)
