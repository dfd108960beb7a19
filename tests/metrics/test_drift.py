"""The drift test: the predicted change rate against a hand computation, the p-value and the
Clopper–Pearson interval against scipy, and its false alarms when nothing drifted, by
simulation (the predicted rate estimated from samples, as in a run)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom, binomtest

from assay.metrics import drift_test, item_change_rates, stability


def test_item_change_rate_is_the_share_of_disagreeing_sample_pairs():
    # (1 1 0): 2 of 3 pairs differ; (1 1 1): none; (0 2 2 1): 5 of 6; a single sample: unused
    assert item_change_rates([[1, 1, 0], [1, 1, 1], [0, 2, 2, 1], [1]]) == pytest.approx(
        [2 / 3, 0, 5 / 6]
    )
    s = stability([[1, 1, 0], [1, 1, 1], [0, 2, 2, 1], [1]])
    assert s.rate == pytest.approx((2 / 3 + 5 / 6) / 3) and s.items == 3 and s.samples == 4
    assert s.rate <= s.upper <= 1
    with pytest.raises(ValueError):
        stability([[1]])


def test_p_value_and_interval_against_scipy():
    measured = stability([[0, 0, 0, 1]] * 2 + [[1, 1, 1, 1]] * 40)
    assert measured.rate < measured.upper < 0.2
    assert stability([[0, 1]] * 3).upper == 1.0  # every item alike: no spread, the rate itself
    t = drift_test(7, 120, measured, level=0.05, confidence=0.95)
    assert t.tested_against == measured.upper and t.test_level == 0.025
    want = sum(binom.pmf(x, 120, measured.upper) for x in range(7, 121))
    assert t.p_value == pytest.approx(want)
    ci = binomtest(7, 120).proportion_ci(confidence_level=0.95, method="exact")
    assert (t.ci_low, t.ci_high) == pytest.approx((ci.low, ci.high))
    assert t.drifted == (want < 0.025) and t.rate == pytest.approx(7 / 120)
    edge = drift_test(0, 30, None)
    ci = binomtest(0, 30).proportion_ci(method="exact")
    assert (edge.ci_low, edge.ci_high) == pytest.approx((ci.low, ci.high))


def test_without_stability_any_change_is_flagged_and_none_is_not():
    assert drift_test(1, 50, None).drifted
    unchanged = drift_test(0, 50, None)
    assert not unchanged.drifted and unchanged.p_value == 1.0 and unchanged.test_level == 0.05


def test_no_drift_is_flagged_at_most_at_the_level():
    """1,000 seeded anchor sets of 100 items, each item's verdict a coin with its own bias; the
    stability measured from k = 5 samples on 100 other items of the same judge; OLD and NEW
    drawn from the same judge: drift is flagged in at most 5% of them (plus slack)."""
    rng = np.random.default_rng(2026)
    runs, n, k = 1000, 100, 5
    p_item = rng.beta(0.3, 3.0, size=(runs, n))  # most items stable, a few noisy
    changed = np.sum((rng.random((runs, n)) < p_item) != (rng.random((runs, n)) < p_item), 1)
    p_stab = rng.beta(0.3, 3.0, size=(runs, n))
    samples = (rng.random((runs, n, k)) < p_stab[..., None]).astype(int)
    flagged = [
        drift_test(int(changed[r]), n, stability(samples[r], seed=r)).drifted for r in range(runs)
    ]
    assert np.mean(flagged) <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / runs)


def test_a_real_drift_is_flagged():
    measured = stability([[0, 0, 0, 0, 1]] * 10 + [[1] * 5] * 90)  # predicts 0.04
    assert drift_test(30, 200, measured).drifted  # 15% of the verdicts changed
    assert not drift_test(6, 200, measured).drifted  # 3%
