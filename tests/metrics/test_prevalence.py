import math

import numpy as np
import pytest

from assay.metrics import corrected_prevalence, rogan_gladen, wilson_interval


def validation(tp, fn, fp, tn):
    y_true = [1] * (tp + fn) + [0] * (fp + tn)
    y_pred = [1] * tp + [0] * fn + [1] * fp + [0] * tn
    return y_true, y_pred


def flags(k, n):
    return [1] * k + [0] * (n - k)


def test_rogan_gladen_by_hand():
    # 30 of 100 flagged; TPR = 40/50 = .8, TNR = 45/50 = .9  ->  (.3 + .9 − 1) / (.8 + .9 − 1) = 2/7
    est = corrected_prevalence(flags(30, 100), *validation(40, 10, 5, 45))
    assert est.corrected.value == pytest.approx(2 / 7)
    assert (est.sensitivity, est.specificity) == pytest.approx((0.8, 0.9))
    assert est.raw.value == 0.3 and est.raw.n == 100 and est.n_validation == 100
    assert est.defined and not est.clipped and est.corrected.note is None
    assert est.corrected.ci_low < 2 / 7 < est.corrected.ci_high
    assert est.raw.ci_low < 0.3 < est.raw.ci_high
    assert "validation items" in est.resampled
    assert float(rogan_gladen(0.3, 0.8, 0.9)) == pytest.approx(2 / 7)


def test_a_rate_below_the_false_positive_rate_is_clipped_and_says_so():
    # 5% flagged but the judge's FPR is 10%: (.05 − .1) / .7 = −0.0714 -> 0
    est = corrected_prevalence(flags(5, 100), *validation(40, 10, 5, 45))
    assert est.corrected.value == 0.0 and est.clipped
    assert "clipped to [0, 1] from -0.07143" in est.corrected.note
    assert 0.0 <= est.corrected.ci_low <= est.corrected.ci_high <= 1.0


def test_no_better_than_chance_is_undefined_not_an_exception():
    est = corrected_prevalence(flags(30, 100), *validation(25, 25, 25, 25))  # TPR = TNR = .5
    assert not est.defined and math.isnan(est.corrected.value)
    assert est.corrected.ci_low is None and est.corrected.ci_high is None
    assert est.corrected.note == "undefined: TPR + TNR = 1 ≤ 1: the judge is no better than chance"
    assert est.raw.value == 0.3  # the raw rate is still reported
    est = corrected_prevalence(flags(30, 100), *validation(0, 0, 5, 45))
    assert not est.defined and "no positive item" in est.corrected.note
    assert math.isnan(float(rogan_gladen(0.3, 0.4, 0.5)))


def test_replicates_where_the_correction_is_undefined_are_dropped_and_counted():
    # a weak judge on a small validation set: some resamples have TPR + TNR ≤ 1
    est = corrected_prevalence(flags(40, 100), *validation(7, 3, 4, 6))
    assert est.defined
    assert "bootstrap replicates were dropped as undefined" in est.corrected.note


def judged(rng, n, prevalence, tpr, tnr):
    """n items of a population with the given prevalence, judged with the given TPR/TNR."""
    truth = rng.random(n) < prevalence
    verdict = np.where(truth, rng.random(n) < tpr, rng.random(n) > tnr)
    return truth.astype(int), verdict.astype(int)


def test_covers_the_true_prevalence_in_at_least_93_percent_of_500_populations():
    rng = np.random.default_rng(2024)
    covered = 0
    for s in range(500):
        prevalence = rng.uniform(0.1, 0.5)
        tpr, tnr = rng.uniform(0.75, 0.95), rng.uniform(0.8, 0.95)
        _, unlabelled_flags = judged(rng, 1000, prevalence, tpr, tnr)
        labelled = judged(rng, 400, prevalence, tpr, tnr)
        est = corrected_prevalence(unlabelled_flags, *labelled, seed=s)
        covered += est.corrected.ci_low <= prevalence <= est.corrected.ci_high
    assert covered / 500 >= 0.93  # seeded: 0.946


def test_count_draws_match_resampling_the_items():
    # The binomial/multinomial draws are the item bootstrap's distribution: an explicit index
    # bootstrap of both sets gives the same interval up to Monte Carlo error.
    rng = np.random.default_rng(3)
    u = (rng.random(500) < 0.3).astype(int)
    t = (rng.random(200) < 0.4).astype(int)
    p = np.where(rng.random(200) < 0.85, t, 1 - t)
    b = 20000
    iu = rng.integers(0, 500, size=(b, 500))
    iv = rng.integers(0, 200, size=(b, 200))
    tb, pb = t[iv], p[iv]
    tpr = (tb & pb).sum(1) / tb.sum(1)
    tnr = ((1 - tb) & (1 - pb)).sum(1) / (1 - tb).sum(1)
    loop = np.clip((u[iu].mean(1) + tnr - 1) / (tpr + tnr - 1), 0, 1)
    low, high = np.percentile(loop, [2.5, 97.5])
    est = corrected_prevalence(u, t, p, n_resamples=b)
    assert est.corrected.ci_low == pytest.approx(low, abs=0.006)
    assert est.corrected.ci_high == pytest.approx(high, abs=0.006)
    # and the raw rate's percentile interval is close to Wilson's
    w_low, w_high = wilson_interval(int(u.sum()), 500)
    assert (est.raw.ci_low, est.raw.ci_high) == pytest.approx((w_low, w_high), abs=0.01)


def test_seeded():
    args = (flags(30, 100), *validation(40, 10, 5, 45))
    assert corrected_prevalence(*args, seed=1) == corrected_prevalence(*args, seed=1)
    assert corrected_prevalence(*args, seed=1) != corrected_prevalence(*args, seed=2)


def test_bad_input():
    with pytest.raises(ValueError, match="flags must be 0/1 verdicts, got 2 at index 1"):
        corrected_prevalence([0, 2], [0, 1], [0, 1])
    with pytest.raises(ValueError, match="same length"):
        corrected_prevalence([0, 1], [0, 1], [0])
    with pytest.raises(ValueError, match="binary labels"):
        corrected_prevalence([0, 1], [0, 3], [0, 1])
    with pytest.raises(ValueError, match="at least 1000"):
        corrected_prevalence([0, 1], [0, 1], [0, 1], n_resamples=500)
    with pytest.raises(ValueError, match="empty"):
        corrected_prevalence([], [0, 1], [0, 1])
