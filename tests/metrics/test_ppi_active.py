"""Active labelling: sampling probabilities that favour the items the judge is unsure of, the
inverse-probability-weighted PPI estimate (unbiased, covering whatever the judge), fewer labels
than uniform sampling for the same width when the judge's probabilities are informative; and the
two phases of ``assay estimate --suggest`` (a uniform pilot, then the queue) covering too."""

import math

import numpy as np
import pytest
from scipy.stats import norm

from assay.decisions._estimate_active import either_phase, second_phase
from assay.metrics import active_ppi_mean, active_sampling_probabilities, draw_active_sample
from assay.metrics._active import active_batched
from assay.metrics._ppi import _Sample, ppi_batched

ALPHA = 0.1
DRAWS = 1000
POOL = 2000


def test_probabilities_follow_the_square_root_of_uncertainty_with_a_uniform_floor():
    p = np.array([0.5, 0.5, 0.1, 0.9, 0.01, 0.0, 0.3, 0.7])
    pi = active_sampling_probabilities(p * (1 - p), 4, uniform_share=0.2)
    root = np.sqrt(p * (1 - p))
    expected = 4 * (0.8 * root / root.sum() + 0.2 / p.size)
    np.testing.assert_allclose(pi, expected)
    assert pi.sum() == pytest.approx(4) and pi.min() >= 0.2 * 4 / p.size
    # a budget that would put an item above 1: capped, the rest spread in proportion
    pi = active_sampling_probabilities(p * (1 - p), 7, uniform_share=0.2)
    assert pi.sum() == pytest.approx(7) and pi.max() == 1.0
    free = pi < 1
    np.testing.assert_allclose(pi[free] / pi[free].sum(), expected[free] / expected[free].sum())
    np.testing.assert_allclose(active_sampling_probabilities(np.zeros(5), 2), 0.4)  # uniform
    np.testing.assert_allclose(active_sampling_probabilities(p * (1 - p), 8), 1.0)  # everything


def test_a_seeded_draw_is_repeatable_and_follows_the_probabilities():
    pi = active_sampling_probabilities(np.linspace(0, 0.25, 20_000), 5000)
    drawn = draw_active_sample(pi, seed=4)
    assert np.array_equal(drawn, draw_active_sample(pi, seed=4))
    assert abs(drawn.size - 5000) < 4 * math.sqrt(5000)
    assert pi[drawn].mean() > pi.mean()  # the uncertain items are drawn more often


def test_the_estimate_is_the_weighted_sum_by_hand():
    rng = np.random.default_rng(1)
    p = rng.random(500)
    y_pool = (rng.random(500) < p).astype(float)
    pi = active_sampling_probabilities(p * (1 - p), 80)
    drawn = draw_active_sample(pi, seed=2)
    for lam in (1.0, 0.4):
        est = active_ppi_mean(y_pool[drawn], drawn, p, pi, lam=lam, alpha=ALPHA)
        xi = np.isin(np.arange(500), drawn)
        z = lam * p + (y_pool - lam * p) * xi / pi
        assert est.value == pytest.approx(z.mean())
        half = norm.ppf(1 - ALPHA / 2) * z.std() / math.sqrt(500)
        assert (est.ci_low, est.ci_high) == pytest.approx((z.mean() - half, z.mean() + half))
        assert est.method == "active_ppi" and est.prediction == "probability"
    # PPI++'s λ̂ is the variance minimiser over λ (checked on a grid)
    est = active_ppi_mean(y_pool[drawn], drawn, p, pi)
    grid = np.linspace(0, 1, 1001)
    variances = [np.var(g * p + (y_pool - g * p) * xi / pi) for g in grid]
    assert est.lam == pytest.approx(grid[int(np.argmin(variances))], abs=1e-3)
    assert est.std_error <= math.sqrt(min(variances) / 500) + 1e-12
    assert est.n_labelled == drawn.size and est.n_unlabelled == 500 - drawn.size
    assert "fixed budget" in est.sampling and "expected budget Σπ = 80.0" in est.note


def pool(rng, judge):
    """``DRAWS`` pools: each item's true probability of a positive label and the judge's
    probability. good: calibrated and mostly sure (90% of items at 0.02 or 0.98);
    useless: independent of the label; adversarial: calibrated, turned upside down."""
    shape = (DRAWS, POOL)
    if judge == "good":
        sure = np.where(rng.random(shape) < 0.5, 0.02, 0.98)
        q = np.where(rng.random(shape) < 0.9, sure, rng.uniform(0.2, 0.8, shape))
        return q, q, 0.5
    if judge == "useless":
        return np.full(shape, 0.3), rng.random(shape), 0.3
    q = rng.random(shape)
    return q, 1 - q, 0.5


def run(rng, q, p, budget, active=True):
    """Label each pool with its inclusion probabilities; the IPW PPI++ estimate of every pool."""
    if active:
        pi = np.stack([active_sampling_probabilities(r * (1 - r), budget) for r in p])
    else:
        pi = np.full(p.shape, budget / p.shape[1])
    y = (rng.random(q.shape) < q).astype(float)
    xi = rng.random(q.shape) < pi
    value, se, _ = active_batched(y, xi / pi, p)
    return value, se, xi.sum(axis=1)


def covered(value, se, truth):
    hits = np.abs(value - truth) <= norm.ppf(1 - ALPHA / 2) * se
    return hits.mean() >= 1 - ALPHA - 3 * math.sqrt(ALPHA * (1 - ALPHA) / hits.size)


@pytest.mark.parametrize("judge", ["good", "useless", "adversarial"])
def test_active_ppi_covers_whatever_the_judge(judge):
    rng = np.random.default_rng(["good", "useless", "adversarial"].index(judge))
    q, p, truth = pool(rng, judge)
    value, se, n = run(rng, q, p, 300)
    assert covered(value, se, truth)
    assert abs(value.mean() - truth) < 3 * value.std() / math.sqrt(DRAWS)  # unbiased
    assert abs(n.mean() - 300) < 3 * math.sqrt(300 / DRAWS)  # the budget, in expectation


def test_active_labelling_reaches_uniform_sampling_width_with_fewer_labels():
    rng = np.random.default_rng(5)
    q, p, truth = pool(rng, "good")
    uniform = run(rng, q, p, 300, active=False)
    active = run(rng, q, p, 240)  # a fifth fewer labels
    assert active[2].mean() < 0.81 * uniform[2].mean()
    assert active[1].mean() <= uniform[1].mean()  # as narrow, or narrower
    assert covered(*uniform[:2], truth) and covered(*active[:2], truth)
    # and the public function on one of these pools agrees with the batched rows
    pi = active_sampling_probabilities(p[0] * (1 - p[0]), 240)
    drawn = draw_active_sample(pi, seed=0)
    y = (rng.random(POOL) < q[0]).astype(float)
    est = active_ppi_mean(y[drawn], drawn, p[0], pi)
    weight = np.zeros(POOL)
    weight[drawn] = 1 / pi[drawn]
    value, se, lam = active_batched(y, weight, p[0])
    assert (est.value, est.std_error, est.lam) == pytest.approx((value, se, lam))
    assert est.effective_labels > 1.5 * drawn.size


# -- the command line's two phases: the labels given before, then the queue ---------------------

FIRST, QUEUE = 100, 150  # the labels given before the draw (uniform), the queue's budget


def two_phases(rng, p, y):
    """Label each pool as ``assay estimate`` does: ``FIRST`` items uniformly at random (the
    labels given before), then the queue drawn from the others with ``second_phase``'s π₂
    (from the judge's p(1 − p), budget ``QUEUE``); every label weighed by 1 / π of either phase
    (``either_phase``). Returns the active PPI++ estimate and SE per pool, the labelled items
    and their π."""
    shape = p.shape
    first = np.zeros(shape, dtype=bool)
    np.put_along_axis(first, np.argsort(rng.random(shape), axis=1)[:, :FIRST], True, axis=1)
    pi2 = np.stack(
        [
            second_phase(row * (1 - row), np.flatnonzero(~before), QUEUE)
            for row, before in zip(p, first, strict=True)
        ]
    )
    pi = either_phase(FIRST / POOL, pi2)
    labelled = first | (~first & (rng.random(shape) < pi2))
    value, se, _ = active_batched(y, labelled / pi, p)
    return value, se, labelled, pi


def uniform_ppi(rng, p, y, n):
    """PPI++ on ``n`` labels drawn uniformly from each pool: estimate and SE per pool."""
    order = np.argsort(rng.random(p.shape), axis=1)
    lab, unl = order[:, :n], order[:, n:]
    take = np.take_along_axis
    s = _Sample(take(y, lab, 1), take(p, lab, 1), take(p, unl, 1), np.ones(n), np.ones(POOL - n))
    value, se, _ = ppi_batched(s)
    return value, se


@pytest.mark.parametrize("judge", ["good", "useless", "adversarial"])
def test_the_two_phases_of_the_command_line_cover_whatever_the_judge(judge):
    """The labels given before and the queue's together: π = p₁ + (1 − p₁) π₂ keeps the estimate
    unbiased and its interval covering; with a good judge it is at least as narrow as PPI++ on
    as many labels drawn uniformly."""
    rng = np.random.default_rng(10 + ["good", "useless", "adversarial"].index(judge))
    q, p, truth = pool(rng, judge)
    y = (rng.random(q.shape) < q).astype(float)
    value, se, labelled, pi = two_phases(rng, p, y)
    assert covered(value, se, truth)
    # unbiased for any fixed λ (here 1); PPI++'s λ̂, fitted on the same labels, adds a bias of
    # order 1 / n, which the coverage above allows for
    fixed = active_batched(y, labelled / pi, p, lam=1.0)[0]
    assert abs(fixed.mean() - truth) < 3 * fixed.std() / math.sqrt(DRAWS)
    n = labelled.sum(axis=1)
    assert abs(n.mean() - (FIRST + QUEUE)) < 3 * math.sqrt(QUEUE / DRAWS)  # the budget
    if judge == "good":
        uniform = uniform_ppi(rng, p, y, FIRST + QUEUE)
        assert covered(*uniform, truth)
        assert se.mean() <= uniform[1].mean()
    # the rows are what the command's active_ppi_mean gives for one pool
    drawn = np.flatnonzero(labelled[0])
    est = active_ppi_mean(y[0, drawn], drawn, p[0], pi[0])
    assert (est.value, est.std_error) == pytest.approx((value[0], se[0]))


Y, DRAWN, P, PI = [1, 0, 1], [0, 2, 3], [0.9, 0.2, 0.8, 0.4], [0.5, 0.5, 0.5, 0.5]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: active_sampling_probabilities([0.1, -0.2], 1), "uncertainty must be non-negative, got -0.2 at position 1"),
        (lambda: active_sampling_probabilities([0.1, np.nan], 1), "uncertainty must hold finite numbers, got nan at position 1"),
        (lambda: active_sampling_probabilities([0.1, 0.2], 3), r"budget must be a number in \(0, 2\]"),
        (lambda: active_sampling_probabilities([0.1, 0.2], 1, uniform_share=0), r"uniform_share must be in \(0, 1\]"),
        (lambda: draw_active_sample([0.5, 1.2]), r"inclusion must hold probabilities in \(0, 1\], got 1.2 at position 1"),
        (lambda: active_ppi_mean(Y, DRAWN, P, [0.5, 0, 0.5, 0.5]), r"inclusion must hold probabilities in \(0, 1\], got 0.0 at position 1"),
        (lambda: active_ppi_mean([], [], P, PI), "y is empty"),
        (lambda: active_ppi_mean(Y, [0, 2], P, PI), "labelled must give the pool position of each of the 3 labels"),
        (lambda: active_ppi_mean(Y, [0, 2, 4], P, PI), "labelled has position 4 at index 2, outside the pool of 4"),
        (lambda: active_ppi_mean(Y, [0, 2, 2], P, PI), "labelled names an item twice"),
        (lambda: active_ppi_mean(Y, DRAWN, P, PI[:3]), "predictions and inclusion must have the same length, got 4 and 3"),
        (lambda: active_ppi_mean(Y, DRAWN, [0.9, 0.2, 1.8, 0.4], PI, prediction="probability"), r"predictions must hold probabilities in \[0, 1\], got 1.8 at position 2"),
        (lambda: active_ppi_mean(Y, DRAWN, P, PI, alpha=1), "alpha must be strictly between 0 and 1"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line(call, message):
    with pytest.raises(ValueError, match=message) as info:
        call()
    assert "\n" not in str(info.value)


def test_over_epochs_the_standard_error_is_statsmodels_cluster_robust_one_over_the_samples():
    """Items that are epochs of one Inspect sample share its label and, near enough, its
    prediction: the mean of ``Z`` over the pool then varies by the samples, not the items. The
    cluster-robust standard error equals statsmodels' (a mean's OLS, clusters, no small-sample
    factor) over the same ``Z``; items each of their own cluster keep the items' standard
    error; epochs that repeat each sample widen it."""
    import statsmodels.api as sm

    rng = np.random.default_rng(5)
    samples, epochs = 120, 4
    ids = np.repeat(np.arange(samples), epochs)
    y_all = (rng.uniform(size=samples) < 0.3).astype(float)[ids]
    f = np.clip(y_all * 0.6 + 0.2 + rng.normal(0, 0.05, ids.size), 0.01, 0.99)
    pi = active_sampling_probabilities(f * (1 - f), 150)
    drawn = draw_active_sample(pi, seed=2)
    alone = active_ppi_mean(y_all[drawn], drawn, f, pi)
    assert active_ppi_mean(y_all[drawn], drawn, f, pi, clusters=range(ids.size)) == alone
    est = active_ppi_mean(y_all[drawn], drawn, f, pi, clusters=[f"s{i}" for i in ids])
    assert est.value == alone.value and est.lam == alone.lam
    weight = np.zeros(ids.size)
    weight[drawn] = 1 / pi[drawn]
    z = est.lam * f * (1 - weight) + y_all * weight
    fit = sm.OLS(z, np.ones(ids.size)).fit(
        cov_type="cluster", cov_kwds={"groups": ids, "use_correction": False}
    )
    assert est.std_error == pytest.approx(float(fit.bse[0]), rel=1e-9)
    assert est.std_error > alone.std_error
    assert est.interval.endswith(f"cluster-robust over {samples} clusters")
