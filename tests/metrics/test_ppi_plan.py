"""Label planning: the labels each estimator needs for a target half-width, checked against
simulation from a known model (the planned number of labels gives that width)."""

import dataclasses
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
    plans = {
        p.method: p for p in labels_needed(TRUE, HALF_WIDTH, alpha=ALPHA, n_unlabelled=N_UNLABELLED)
    }
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
        fixed = {"alpha": ALPHA, "n_unlabelled": N_UNLABELLED}
        back = {p.method: p for p in half_width_for_labels(TRUE, plan.n_labels, **fixed)}
        assert back[plan.method].half_width <= HALF_WIDTH
        fewer = half_width_for_labels(TRUE, plan.n_labels - 1, **fixed)
        assert {p.method: p for p in fewer}[plan.method].half_width > HALF_WIDTH


def test_planned_labels_reach_the_target_in_simulation():
    rng = np.random.default_rng(11)
    # fresh unlabelled items in each draw: a fixed number of them, whatever the labels
    needed = labels_needed(TRUE, HALF_WIDTH, alpha=ALPHA, n_unlabelled=N_UNLABELLED)
    plans = {p.method: p.n_labels for p in needed}
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
        (lambda: labels_needed(TRUE, 0.05, n_unlabelled=0), "n_unlabelled must be an integer of at least 1"),
        (lambda: labels_needed(TRUE, 0.05, n_items=1), "n_items must be an integer of at least 2"),
        (lambda: labels_needed(TRUE, 0.05, n_items=9, n_unlabelled=9), "n_unlabelled and n_items: give one"),
        (lambda: labels_needed(PilotMoments(9, 9, 0.1, 0.2, 0.3), 0.05), "the pilot's moments are inconsistent"),
        (lambda: pilot_moments([2, 2, 2], [1, 2, 3], [0, 1]), "the pilot's 3 labels are all 2: a variance of 0"),
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


# -- the pool the labels are drawn from ----------------------------------------------------------

# A pool of 400 items, 30% positive, the judge's probability tracking the label: labelling n of
# them leaves 400 − n predictions, as `assay estimate` plans for its run.
POOL = 400


def pool(seed: int = 42):
    rng = np.random.default_rng(seed)
    y = (rng.random(POOL) < 0.3).astype(float)
    return y, np.clip(0.15 + 0.65 * y + rng.normal(0, 0.2, POOL), 0.02, 0.98)


def test_the_planned_half_width_is_ppi_pys_on_n_of_the_pools_items():
    """The plan's half-width at n labels is the mean half-width of ``ppi_py.ppi_mean_ci``
    (PPI++, its own λ) over uniform draws of n of the N items, the other N − n unlabelled — with
    the pool's own moments as the pilot. Planned with the 320 unlabelled of an 80-label pilot
    for every n, as before, it promised ± 0.042 at 320 labels where 0.047 is what they give."""
    import ppi_py

    y, f = pool()
    rng = np.random.default_rng(3)
    pilot = PilotMoments(
        n_labelled=80,
        n_unlabelled=POOL - 80,
        var_y=float(np.var(y, ddof=1)),
        var_f=float(np.var(f, ddof=1)),
        cov_yf=float(np.cov(y, f)[0, 1]),
    )
    for n in (80, 200, 320):
        planned = {p.method: p for p in half_width_for_labels(pilot, n)}["ppi++"]
        assert planned.n_unlabelled == POOL - n
        widths = []
        for _ in range(150):
            order = rng.permutation(POOL)
            low, high = ppi_py.ppi_mean_ci(y[order[:n]], f[order[:n]], f[order[n:]], alpha=0.05)
            widths.append((high[0] - low[0]) / 2)
        assert planned.half_width == pytest.approx(np.mean(widths), rel=0.03)


def test_a_target_only_labelling_every_item_would_reach_is_out_of_reach():
    y, f = pool()
    pilot = pilot_moments(y[:80], f[:80], f[80:])
    floor = {p.method: p for p in half_width_for_labels(pilot, POOL - 1)}["ppi++"].half_width
    plans = {p.method: p for p in labels_needed(pilot, floor * 0.99)}
    assert plans["ppi++"].n_labels is None
    assert plans["ppi++"].note == (
        f"out of reach short of labelling every item: 399 of the 400 labelled leave ± {floor:.4f}"
    )
    reachable = {p.method: p for p in labels_needed(pilot, floor * 1.05)}["ppi++"]
    assert reachable.n_labels is not None and reachable.n_labels < POOL - 1
    every = {p.method: p for p in half_width_for_labels(pilot, POOL)}
    assert (
        math.isnan(every["ppi++"].half_width)
        and "every one of the 400 items" in every["ppi++"].note
    )


def test_rogan_gladen_in_a_pool_is_out_of_reach_past_its_best_labels():
    """Each label takes a verdict from the flagged rate: Rogan–Gladen's variance a/(N − n) + b/n
    is least at some n < N, and a target below it is out of reach however many are labelled."""
    pilot = dataclasses.replace(TRUE, n_labelled=50, n_unlabelled=250)
    near = labels_needed(pilot, 0.15)
    rg = next(p for p in near if p.method == "rogan_gladen")
    hw = {p.method: p for p in half_width_for_labels(pilot, rg.n_labels)}["rogan_gladen"]
    assert (
        hw.half_width
        <= 0.15
        < next(
            p for p in half_width_for_labels(pilot, rg.n_labels - 1) if p.method == "rogan_gladen"
        ).half_width
    )
    far = next(p for p in labels_needed(pilot, 0.1) if p.method == "rogan_gladen")
    assert far.n_labels is None and far.note.startswith("out of reach: at best, ")


def test_rogan_gladens_plan_weighs_each_error_rate_by_the_share_of_its_class():
    """Of n uniform labels about nθ are positive, θ the population's prevalence: TPR's variance
    is TPR(1 − TPR)/(nθ), weighed by (θ/J)². A pilot whose share of positive labels happens to be
    0.1 while the verdicts say θ = 0.3 plans with θ, and the plan is the spread of Rogan–Gladen's
    estimate over simulated labels (dividing by the pilot's 0.1 planned it 15% too wide)."""
    skewed = dataclasses.replace(TRUE, prevalence=0.1)
    n = 400
    planned = next(
        p
        for p in half_width_for_labels(skewed, n, n_unlabelled=N_UNLABELLED)
        if p.method == "rogan_gladen"
    )
    rng = np.random.default_rng(5)
    y, f = draw(rng, (4000, n))
    flagged = rng.binomial(N_UNLABELLED, FLAGGED, 4000) / N_UNLABELLED  # the unlabelled verdicts
    tpr = (f * y).sum(1) / y.sum(1)
    tnr = ((1 - f) * (1 - y)).sum(1) / (1 - y).sum(1)
    values = (flagged + tnr - 1) / (tpr + tnr - 1)
    assert planned.half_width == pytest.approx(norm.ppf(0.975) * values.std(), rel=0.04)


@pytest.mark.parametrize(("n", "positive"), [(12, 0), (30, 0), (20, 1)])
def test_a_pilot_whose_labels_are_all_alike_plans_with_a_stand_in(n, positive):
    """A sample variance of 0 is no evidence of none: the pilot plans with the variance at the
    rule-of-three bound on the class it never saw (at most ½), says so, and never plans a
    half-width of 0 from one label."""
    rng = np.random.default_rng(n)
    y = np.full(n, positive, dtype=float)
    pilot = pilot_moments(y, rng.random(n), rng.random(300))
    bound = min(0.5, 1 - 0.05 ** (1 / n))
    assert pilot.var_y == pytest.approx(bound * (1 - bound))
    assert pilot.note.startswith(f"the pilot's {n} labels are all {positive}: planned with")
    for plan in labels_needed(pilot, 0.05):
        assert plan.n_labels > 1 and pilot.note in plan.note
    for plan in half_width_for_labels(pilot, 100):
        assert plan.half_width > 0.05 and pilot.note in plan.note


def test_a_two_label_pilot_never_plans_a_negative_variance():
    """Var(f) over every item with the pilot's Cov(Y, f) made Var(Y − λf) negative: a math
    domain error for a budget, '1 label' for a target. The residual is the pilot's own."""
    pilot = pilot_moments([0, 1], [0.1, 0.9], np.full(200, 0.5))
    assert pilot.cov_yf**2 > pilot.var_y * pilot.var_f  # inconsistent across the two
    for plan in half_width_for_labels(pilot, 50):
        assert plan.half_width > 0
    ppi = next(p for p in labels_needed(pilot, 0.01) if p.method == "ppi++")
    assert ppi.n_labels is None or ppi.n_labels > 1


# -- a pilot whose items are in clusters (an Inspect log's epochs of one sample) ----------------


def epochs(rng, samples, m, accuracy=0.85):
    """``samples`` samples of ``m`` epochs each: one label a sample (its reference), a verdict
    per epoch (judged again), and each epoch's sample."""
    y = np.repeat((rng.random(samples) < PREVALENCE).astype(float), m)
    f = np.where(rng.random(samples * m) < accuracy, y, 1 - y)
    return y, f, np.repeat(np.arange(samples), m)


def test_clusters_of_one_item_each_keep_every_plan():
    rng = np.random.default_rng(5)
    y, f = draw(rng, 120)
    _, f_u = draw(rng, 600)
    plain = pilot_moments(y, f, f_u)
    alone = pilot_moments(y, f, f_u, clusters=range(120), clusters_unlabelled=range(120, 720))
    assert alone == plain and alone.clustered is None
    assert labels_needed(alone, 0.04) == labels_needed(plain, 0.04)
    assert half_width_for_labels(alone, 200) == half_width_for_labels(plain, 200)


@pytest.mark.parametrize("m", [2, 3, 5])
def test_identical_epochs_plan_the_samples_own_labels(m):
    """Each item written as m identical epochs: the plan in epochs is m times the samples' —
    the same samples labelled — and m × n epochs buy the half-width n samples do."""
    rng = np.random.default_rng(m)
    y, f = draw(rng, 80)
    _, f_u = draw(rng, 400)
    once = pilot_moments(y, f, f_u)
    copies = pilot_moments(
        np.repeat(y, m),
        np.repeat(f, m),
        np.repeat(f_u, m),
        clusters=np.repeat(np.arange(80), m),
        clusters_unlabelled=np.repeat(np.arange(80, 480), m),
    )
    # the clustered variance is m times the samples' sample variance; the plain one over m·80
    # epochs has m·80 − 1 degrees of freedom
    assert copies.clustered.design_effect_labelled == pytest.approx((m * 80 - 1) / 79)
    for alone, epoch in zip(labels_needed(once, 0.05), labels_needed(copies, 0.05), strict=True):
        assert epoch.method == alone.method and "in clusters (80 labelled, 400" in epoch.note
        if alone.n_labels is not None:
            assert abs(epoch.n_labels - m * alone.n_labels) <= m  # within one sample
    for alone, epoch in zip(
        half_width_for_labels(once, 150), half_width_for_labels(copies, 150 * m), strict=True
    ):
        assert epoch.half_width == pytest.approx(alone.half_width, rel=0.01)
    human = {p.method: p for p in half_width_for_labels(copies, 150 * m)}["human_only"]
    assert human.half_width == pytest.approx(
        half_width_for_labels(once, 150)[0].half_width, rel=1e-12
    )


def test_the_planned_half_width_at_the_pilots_labels_is_the_clustered_standard_errors():
    """At the pilot's own labels, the human-only plan is the estimate's cluster-robust interval
    (statsmodels' OLS on a constant, ``cov_type="cluster"`` without its correction) with the
    sample variance's small-sample factor ``G/(G − 1)``; PPI++'s is ppi_mean's over the same
    clusters, whole samples labelled."""
    import statsmodels.api as sm

    from assay.metrics import human_only_mean, ppi_mean

    rng = np.random.default_rng(8)
    y, f, samples = epochs(rng, 150, 3)
    lab, unl = slice(0, 120), slice(120, None)  # 40 samples labelled, 110 not
    pilot = pilot_moments(
        y[lab], f[lab], f[unl], clusters=samples[lab], clusters_unlabelled=samples[unl]
    )
    plans = {p.method: p for p in half_width_for_labels(pilot, 120)}
    z, g = norm.ppf(0.975), 40
    fit = sm.OLS(y[lab], np.ones(120)).fit(
        cov_type="cluster", cov_kwds={"groups": samples[lab], "use_correction": False}
    )
    assert plans["human_only"].half_width == pytest.approx(
        z * fit.bse[0] * math.sqrt(g / (g - 1)), rel=1e-9
    )
    human = human_only_mean(y[lab], clusters=samples[lab])
    assert plans["human_only"].half_width == pytest.approx(
        human.half_width * math.sqrt(g / (g - 1)), rel=1e-9
    )
    ppi = ppi_mean(y[lab], f[lab], f[unl], clusters=samples[lab], clusters_unlabelled=samples[unl])
    assert plans["ppi++"].half_width == pytest.approx(ppi.half_width, rel=0.05)


def test_planned_labels_over_epochs_reach_the_target_in_simulation():
    """Samples of 4 epochs (one label a sample, a verdict per epoch), labels drawn by whole
    samples: the human-only estimate on the planned epochs spreads by the target half-width;
    the pilot taken as independent items plans about a quarter of them, whose estimate spreads
    twice as wide — the figure the plan printed before. (A pilot of 500 samples: its moments
    near the pool's, so the check is of the plan, not of a small pilot's luck.)"""
    rng = np.random.default_rng(21)
    m, pool_samples = 4, 4000
    y, f, samples = epochs(rng, pool_samples, m)
    lab, unl = slice(0, 500 * m), slice(500 * m, None)
    args = (y[lab], f[lab], f[unl])
    clustered = pilot_moments(*args, clusters=samples[lab], clusters_unlabelled=samples[unl])
    plain = pilot_moments(*args)
    target = 0.05
    planned = labels_needed(clustered, target)[0].n_labels
    independent = labels_needed(plain, target)[0].n_labels
    assert planned == pytest.approx(m * independent, rel=0.15)
    z = norm.ppf(0.975)

    def spread(n_epochs):
        means = []
        for _ in range(400):
            drawn = rng.choice(pool_samples, size=max(1, n_epochs // m), replace=False)
            means.append(y[np.isin(samples, drawn)].mean())
        return z * np.std(means)

    assert spread(planned) == pytest.approx(target, rel=0.12)
    assert spread(independent) > 1.6 * target
