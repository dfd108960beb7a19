"""Scale compression: the SD ratio, the middle shares and the regression slope against numpy,
scipy's least squares and exact counts, and by seeded simulation a compressing judge told from a
faithful one."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest, linregress

from assay.metrics import bootstrap_ci, scale_compression

ALPHA = 0.05


def compressing(rng, human, k: int, factor: float):
    """A judge that scores ``factor`` of the humans' distance from the middle, plus noise."""
    middle = (k - 1) / 2
    raw = middle + factor * (human - middle) + rng.normal(0, 0.4, human.size)
    return np.clip(np.round(raw), 0, k - 1).astype(int)


def test_figures_equal_their_independent_computations():
    rng = np.random.default_rng(0)
    human = rng.integers(0, 5, 150)
    judge = compressing(rng, human, 5, 0.5)
    res = scale_compression(human, judge, k=5, seed=3)
    assert res.n == 150 and res.middle == (1, 2, 3)
    assert res.sd_ratio.value == pytest.approx(np.std(judge) / np.std(human))
    assert (res.judge_sd, res.human_sd) == pytest.approx(
        (np.std(judge, ddof=1), np.std(human, ddof=1))
    )
    fit = linregress(human, judge)
    assert res.slope.value == pytest.approx(fit.slope)
    assert res.intercept == pytest.approx(fit.intercept)
    judge_middle = int(np.sum((judge > 0) & (judge < 4)))
    human_middle = int(np.sum((human > 0) & (human < 4)))
    assert res.judge_middle_share.count == judge_middle
    exact = binomtest(human_middle, 150).proportion_ci(0.95, method="exact")
    assert (res.human_middle_share.ci_low, res.human_middle_share.ci_high) == pytest.approx(
        (exact.low, exact.high)
    )
    assert res.middle_share_difference.value == pytest.approx((judge_middle - human_middle) / 150)
    # the interval is the seeded item bootstrap of the same statistic
    ci = bootstrap_ci(
        lambda j, h: np.std(j, axis=-1) / np.std(h, axis=-1),
        judge.astype(float),
        human.astype(float),
        seed=3,
    )
    assert (res.sd_ratio.ci_low, res.sd_ratio.ci_high) == pytest.approx((ci.low, ci.high))
    assert res.sd_ratio.ci_method == "percentile bootstrap"
    assert res.mean_difference.value == pytest.approx(judge.mean() - human.mean())
    ci = bootstrap_ci(
        lambda j, h: j.mean(axis=-1) - h.mean(axis=-1),
        judge.astype(float),
        human.astype(float),
        seed=3,
    )
    assert (res.mean_difference.ci_low, res.mean_difference.ci_high) == pytest.approx(
        (ci.low, ci.high)
    )


def test_a_compressing_judge_is_below_one_and_a_faithful_one_is_covered_at_one():
    rng = np.random.default_rng(4)
    draws, n, k = 150, 150, 5
    compressed = covered = 0
    for _ in range(draws):
        human = rng.integers(0, k, n)
        squeezed = scale_compression(human, compressing(rng, human, k, 0.5), k=k)
        compressed += (
            squeezed.sd_ratio.ci_high < 1
            and squeezed.slope.ci_high < 1
            and squeezed.middle_share_difference.ci_low > 0
        )
        # a faithful judge: each item's score kept or redrawn from the humans' (uniform)
        # distribution, so both spreads are the same
        faithful = np.where(rng.random(n) < 0.7, human, rng.integers(0, k, n))
        ratio = scale_compression(human, faithful, k=k).sd_ratio
        covered += ratio.ci_low <= 1 <= ratio.ci_high
    assert compressed / draws >= 0.95
    assert covered / draws >= 1 - ALPHA - 3 * math.sqrt(ALPHA * (1 - ALPHA) / draws)


FIGURES = ("sd_ratio", "slope", "mean_difference", "middle_share_difference")


def _rng_pairs(n: int = 30):
    rng = np.random.default_rng(1)
    human = rng.integers(0, 5, n)
    return human, np.clip(human + rng.integers(-1, 2, n), 0, 4)


def test_clusters_of_one_item_each_are_independent_items():
    human, judge = _rng_pairs()
    alone = scale_compression(human, judge, k=5, seed=3, clusters=[f"s{i}" for i in range(30)])
    assert alone == scale_compression(human, judge, k=5, seed=3)


@pytest.mark.parametrize("m", [2, 3, 5])
def test_m_identical_epochs_of_each_sample_give_the_samples_own_intervals(m):
    """An Inspect log whose samples were each judged m times alike: the figures and intervals
    are the samples' own — the epochs add no evidence — where taken as independent items they
    would be about √m narrower."""
    human, judge = _rng_pairs()
    samples = scale_compression(human, judge, k=5, seed=3)
    epochs = np.repeat(np.arange(30), m)
    got = scale_compression(
        np.repeat(human, m), np.repeat(judge, m), k=5, seed=3, clusters=[f"s{c}" for c in epochs]
    )
    independent = scale_compression(np.repeat(human, m), np.repeat(judge, m), k=5, seed=3)
    for name in FIGURES:
        want, have, narrow = (getattr(r, name) for r in (samples, got, independent))
        assert have.value == pytest.approx(want.value, abs=1e-12)
        assert (have.ci_low, have.ci_high) == pytest.approx((want.ci_low, want.ci_high), abs=1e-12)
        assert have.ci_method == "cluster bootstrap" and have.n == 30 * m
        assert "bootstrap resampled 30 clusters" in have.note
        assert narrow.ci_high - narrow.ci_low < 0.8 * (have.ci_high - have.ci_low), name
    # a share: the bootstrap over the samples, each counted once where all are on one side
    share = got.judge_middle_share
    assert (share.value, share.n, share.count) == (
        samples.judge_middle_share.value,
        30 * m,
        samples.judge_middle_share.count * m,
    )
    assert share.ci_method == "cluster bootstrap"
    every = scale_compression([2, 1, 3] * m, [2, 2, 2] * m, k=5, clusters=[0, 1, 2] * m)
    assert every.judge_middle_share.ci_method == "Clopper–Pearson over clusters"
    assert every.judge_middle_share.ci_low == pytest.approx(binomtest(3, 3).proportion_ci().low)


def test_humans_without_spread_leave_the_ratio_and_slope_undefined():
    res = scale_compression([2, 2, 2, 2], [1, 2, 3, 2], k=5)
    assert math.isnan(res.sd_ratio.value) and math.isnan(res.slope.value)
    assert "the human scores do not vary" in res.sd_ratio.note
    assert res.sd_ratio.ci_low is None


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (([0, 1], [1, 0]), dict(k=2), "at least 3 categories .a middle between the ends., got k=2"),
        (
            ([0, 1, 5], [1, 0, 2]),
            dict(k=5),
            r"human has label 5 at position 2, outside the categories 0..4",
        ),
        (([0, 1, 2], [1, 0]), dict(k=5), "human and judge must have the same length, got 3 and 2"),
        (
            ([0, 1, 2], [1, 0, 1.5]),
            dict(k=5),
            "judge must hold integer category indices, got 1.5 at position 2",
        ),
        (([0, 1, 2], [1, 0, 1]), dict(k=5, n_resamples=10), "n_resamples must be at least 1000"),
    ],
)
def test_bad_input_is_one_line_naming_the_argument(args, kwargs, message):
    with pytest.raises(ValueError, match=message) as info:
        scale_compression(*args, **kwargs)
    assert "\n" not in str(info.value)
