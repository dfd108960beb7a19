"""Label planning: the labels each estimator needs for a target half-width, checked against
simulation from a known model (the planned number of labels gives that width)."""

import math

import numpy as np
import pytest
from scipy.stats import norm

from assay.metrics import (
    PilotMoments,
    half_width_for_labels,
    labels_needed,
    pilot_moments,
    rogan_gladen,
    rogan_gladen_mean,
)
from assay.metrics._ppi import _Sample, human_batched, ppi_batched

# The model: 30% of the items are positive; the judge's verdict is right on 90% of them.
PREVALENCE, ACCURACY, N_UNLABELLED = 0.3, 0.9, 5000
FLAGGED = PREVALENCE * ACCURACY + (1 - PREVALENCE) * (1 - ACCURACY)
TRUE = PilotMoments(
    n_labelled=10**6,
    n_unlabelled=N_UNLABELLED,
    var_y=PREVALENCE * (1 - PREVALENCE),
    var_f=FLAGGED * (1 - FLAGGED),
    cov_yf=PREVALENCE * ACCURACY - PREVALENCE * FLAGGED,
    sensitivity=ACCURACY,
    specificity=ACCURACY,
    prevalence=PREVALENCE,
    flagged=FLAGGED,
)
HALF_WIDTH, ALPHA, DRAWS = 0.03, 0.05, 400


def draw(rng, shape):
    y = (rng.random(shape) < PREVALENCE).astype(float)
    return y, np.where(rng.random(shape) < ACCURACY, y, 1 - y)


def test_pilot_moments_are_the_sample_moments():
    rng = np.random.default_rng(0)
    y, f = draw(rng, 300)
    _, f_u = draw(rng, 3000)
    m = pilot_moments(y, f, f_u)
    assert m.var_y == pytest.approx(np.var(y, ddof=1))
    assert m.var_f == pytest.approx(np.var(np.r_[f, f_u], ddof=1))
    assert m.cov_yf == pytest.approx(np.cov(y, f)[0, 1])
    assert m.sensitivity == pytest.approx(f[y == 1].mean())
    assert m.specificity == pytest.approx(1 - f[y == 0].mean())
    assert (m.prevalence, m.flagged) == pytest.approx((y.mean(), f_u.mean()))
    assert m.binary and not pilot_moments(y, f * 0.8, f_u).binary  # probabilities: no RG


def test_the_plans_by_hand():
    plans = {p.method: p for p in labels_needed(TRUE, HALF_WIDTH, alpha=ALPHA)}
    target = (HALF_WIDTH / norm.ppf(1 - ALPHA / 2)) ** 2
    assert plans["human_only"].n_labels == math.ceil(TRUE.var_y / target)
    # Rogan–Gladen by the delta method: A + B / n
    youden = 2 * ACCURACY - 1
    a = FLAGGED * (1 - FLAGGED) / N_UNLABELLED / youden**2
    b = (
        PREVALENCE**2 * ACCURACY * (1 - ACCURACY) / PREVALENCE
        + (1 - PREVALENCE) ** 2 * ACCURACY * (1 - ACCURACY) / (1 - PREVALENCE)
    ) / youden**2
    assert float(rogan_gladen(FLAGGED, ACCURACY, ACCURACY)) == pytest.approx(PREVALENCE)
    assert plans["rogan_gladen"].n_labels == math.ceil(b / (target - a))
    # PPI++: the smallest n whose variance at its best λ reaches the target
    n = plans["ppi++"].n_labels
    for m, reached in ((n, True), (n - 1, False)):
        lam = np.clip(TRUE.cov_yf / ((1 + m / N_UNLABELLED) * TRUE.var_f), 0, 1)
        v = lam**2 * TRUE.var_f / N_UNLABELLED
        v += (TRUE.var_y - 2 * lam * TRUE.cov_yf + lam**2 * TRUE.var_f) / m
        assert bool(v <= target) is reached
    assert n < plans["rogan_gladen"].n_labels < plans["human_only"].n_labels
    # and the reverse: the half-width those labels buy
    for plan in plans.values():
        back = {p.method: p for p in half_width_for_labels(TRUE, plan.n_labels, alpha=ALPHA)}
        assert back[plan.method].half_width <= HALF_WIDTH
        fewer = half_width_for_labels(TRUE, plan.n_labels - 1, alpha=ALPHA)
        assert {p.method: p for p in fewer}[plan.method].half_width > HALF_WIDTH


def test_planned_labels_reach_the_target_in_simulation():
    rng = np.random.default_rng(11)
    plans = {p.method: p.n_labels for p in labels_needed(TRUE, HALF_WIDTH, alpha=ALPHA)}
    z = norm.ppf(1 - ALPHA / 2)

    def ppi_widths(n):
        y, f = draw(rng, (DRAWS, n))
        _, f_u = draw(rng, (DRAWS, N_UNLABELLED))
        value, se, _ = ppi_batched(_Sample(y, f, f_u, np.ones(n), np.ones(N_UNLABELLED)))
        return z * se, value, z * human_batched(y)[1]

    width, value, _ = ppi_widths(plans["ppi++"])
    assert width.mean() == pytest.approx(HALF_WIDTH, rel=0.02)
    assert z * value.std() == pytest.approx(HALF_WIDTH, rel=0.1)  # the estimate's real spread
    assert ppi_widths(round(0.9 * plans["ppi++"]))[0].mean() > HALF_WIDTH  # no fewer would do
    _, _, human = ppi_widths(plans["human_only"])
    assert human.mean() == pytest.approx(HALF_WIDTH, rel=0.02)

    # Rogan–Gladen: its bootstrap interval on the planned labels, 200 draws
    n = plans["rogan_gladen"]
    widths, values = [], []
    for seed in range(200):
        y, f = draw(rng, n)
        _, f_u = draw(rng, N_UNLABELLED)
        est = rogan_gladen_mean(y, f, f_u, alpha=ALPHA, seed=seed)
        widths.append(est.half_width)
        values.append(est.value)
    assert np.mean(widths) == pytest.approx(HALF_WIDTH, rel=0.05)
    assert z * np.std(values) == pytest.approx(HALF_WIDTH, rel=0.15)


def test_a_target_rogan_gladen_cannot_reach_says_so():
    few_unlabelled = labels_needed(TRUE, 0.01, n_unlabelled=500)
    rg = next(p for p in few_unlabelled if p.method == "rogan_gladen")
    assert rg.n_labels is None and "out of reach: the 500 unlabelled verdicts alone" in rg.note
    assert next(p for p in few_unlabelled if p.method == "ppi++").n_labels is not None
    chance = PilotMoments(100, 1000, 0.21, 0.25, 0.0, 0.5, 0.5, 0.3, 0.5)
    rg = next(p for p in labels_needed(chance, 0.05) if p.method == "rogan_gladen")
    assert rg.n_labels is None and "no better than chance" in rg.note


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: labels_needed(TRUE, 0), "half_width must be a positive number, got 0"),
        (lambda: labels_needed(TRUE, 0.05, alpha=1), "alpha must be strictly between 0 and 1"),
        (lambda: labels_needed(TRUE, 0.05, n_unlabelled=0), "n_unlabelled must be a positive integer"),
        (lambda: labels_needed({"var_y": 1}, 0.05), "pilot must be the PilotMoments of a pilot"),
        (lambda: half_width_for_labels(TRUE, 0), "n_labels must be a positive integer, got 0"),
        (lambda: pilot_moments([1], [1], [0, 1]), "y has 1 labelled item"),
        (lambda: pilot_moments([1, 0], [1], [0, 1]), "y and predictions must have the same length"),
        (lambda: pilot_moments([1, 0], [1, np.nan], [0, 1]), "predictions must hold finite numbers, got nan at position 1"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line(call, message):
    with pytest.raises(ValueError, match=message) as info:
        call()
    assert "\n" not in str(info.value)
