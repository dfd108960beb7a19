"""A score change split into the judge's shift and the system's change, and the EWMA chart:
the chart against Montgomery's worked example, the decomposition's estimates against plain
means, its intervals against scipy's bootstrap and the normal approximation, and their coverage
of an injected judge offset and system change, by simulation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from assay.metrics import ewma_chart, shift_decomposition

# Montgomery, Introduction to Statistical Quality Control, Table 9.1: 20 observations from
# N(10, 1), then 10 after the mean shifted to 11 — charted in the EWMA example with λ = 0.1,
# L = 2.7, μ0 = 10, σ = 1.
MONTGOMERY = [
    *(9.45, 7.99, 9.29, 11.66, 12.16, 10.18, 8.04, 11.46, 9.20, 10.34),
    *(9.03, 11.47, 10.51, 9.40, 10.08, 9.37, 10.62, 10.31, 8.52, 10.84),
    *(10.90, 9.33, 12.29, 11.50, 10.60, 11.08, 10.38, 11.62, 11.31, 10.52),
]


def test_ewma_chart_reproduces_montgomerys_example():
    c = ewma_chart(MONTGOMERY, smoothing=0.1, width=2.7, center=10, sigma=1)
    # the book's first two points, their limits, and the limits' steady state (10 ± 0.6194)
    assert c.ewma[:2] == pytest.approx([9.945, 9.7495])
    assert (c.lower[0], c.upper[0]) == pytest.approx((9.73, 10.27))
    assert (round(c.lower[1], 2), round(c.upper[1], 2)) == (9.64, 10.36)
    assert (round(c.lower[-1], 2), round(c.upper[-1], 2)) == (9.38, 10.62)
    # z_28 is inside the limits, z_29 outside: the chart signals at observation 29
    assert round(c.ewma[27], 4) == 10.5731 and round(c.ewma[28], 4) == 10.6468
    assert c.first_out == 29
    assert [i + 1 for i, o in enumerate(c.out_of_control) if o] == [29, 30]
    assert c.baseline is None


def test_ewma_estimates_its_centre_and_sigma_from_a_baseline_window():
    c = ewma_chart(MONTGOMERY, smoothing=0.1, width=2.7, baseline=20)
    assert c.center == pytest.approx(np.mean(MONTGOMERY[:20]))
    assert c.sigma == pytest.approx(np.std(MONTGOMERY[:20], ddof=1))
    assert c.baseline == 20
    z = c.center
    for x, e in zip(MONTGOMERY, c.ewma, strict=True):  # the recursion, by hand
        z = 0.1 * x + 0.9 * z
        assert e == pytest.approx(z)
    given = ewma_chart(MONTGOMERY, center=10.0, baseline=20)  # σ from the window, μ0 given
    assert given.center == 10.0 and given.sigma == pytest.approx(c.sigma)


def test_ewma_refusals():
    with pytest.raises(ValueError, match="standard deviation is 0"):
        ewma_chart([3.0, 3.0, 3.0, 4.0], baseline=3)
    with pytest.raises(ValueError, match="baseline"):
        ewma_chart([1.0, 2.0], baseline=3)
    with pytest.raises(ValueError, match="give center and sigma"):
        ewma_chart([1.0, 2.0])
    with pytest.raises(ValueError, match="smoothing"):
        ewma_chart([1.0, 2.0], smoothing=0, center=0, sigma=1)
    with pytest.raises(ValueError, match="sigma"):
        ewma_chart([1.0, 2.0], center=0, sigma=-1)


def test_decomposition_estimates_are_the_plain_means():
    rng = np.random.default_rng(7)
    ao = rng.integers(1, 5, 25)
    an = ao + rng.integers(0, 3, 25)
    old, new = rng.integers(1, 6, 40), rng.integers(1, 6, 55)
    d = shift_decomposition(ao, an, old, new)
    assert d.judge_shift == pytest.approx(np.mean(an - ao))
    assert d.score_change == pytest.approx(new.mean() - old.mean())
    assert d.system_change == pytest.approx(new.mean() - old.mean() - np.mean(an - ao))
    assert (d.anchors, d.old_items, d.new_items) == (25, 40, 55)
    for name in ("judge_shift", "score_change", "system_change"):
        value = getattr(d, name)
        assert getattr(d, f"{name}_low") <= value <= getattr(d, f"{name}_high")
    # seeded: the same interval again, and the same whatever the items' order
    again = shift_decomposition(ao[::-1], an[::-1], old[::-1], new[::-1])
    assert again == d


def test_intervals_against_scipy_and_the_normal_approximation():
    rng = np.random.default_rng(11)
    n = 400
    ao = rng.normal(3, 1, n)
    an = ao + rng.normal(1, 0.5, n)
    old, new = rng.normal(3, 1, n), rng.normal(3.5, 1.2, n)
    d = shift_decomposition(ao, an, old, new, n_resamples=4000)
    ref = stats.bootstrap(
        (an - ao,), np.mean, n_resamples=4000, method="percentile", random_state=1
    ).confidence_interval
    assert (d.judge_shift_low, d.judge_shift_high) == pytest.approx((ref.low, ref.high), abs=0.01)
    # the system change: its three parts independent, so its variance is the sum of theirs
    se = np.sqrt(np.var(an - ao, ddof=1) / n + np.var(old, ddof=1) / n + np.var(new, ddof=1) / n)
    z = stats.norm.ppf(0.975)
    want = (d.system_change - z * se, d.system_change + z * se)
    assert (d.system_change_low, d.system_change_high) == pytest.approx(want, abs=0.03)


def test_an_injected_judge_offset_and_system_change_are_covered():
    """400 seeded pairs of runs on a 1-5 scale: the new judge scores +1 (noisy per item), the
    new system is better by 0.5 on average — each interval covers its truth about 95% of the
    time (within three standard errors of a 95% binomial)."""
    rng = np.random.default_rng(2026)
    sims, shift_hits, system_hits = 400, 0, 0
    for s in range(sims):
        quality_a = rng.integers(1, 4, 30)  # anchors' true quality
        offset = rng.choice([0, 1, 2], size=30)  # mean 1: the judge's shift
        old_q = rng.integers(1, 4, 40)
        new_q = rng.integers(1, 4, 40) + rng.choice([0, 1], size=40)  # +0.5 on average
        new_seen = new_q + rng.choice([0, 1, 2], size=40)  # judged by the new judge
        d = shift_decomposition(
            quality_a, quality_a + offset, old_q, new_seen, n_resamples=1000, seed=s
        )
        shift_hits += d.judge_shift_low <= 1.0 <= d.judge_shift_high
        system_hits += d.system_change_low <= 0.5 <= d.system_change_high
    floor = 0.95 - 3 * np.sqrt(0.05 * 0.95 / sims)
    assert shift_hits / sims >= floor and system_hits / sims >= floor


def test_on_a_binary_scale_the_decomposition_is_of_rates():
    ao = np.array([0, 0, 1, 1, 0, 1, 0, 0, 1, 0])
    an = np.array([1, 0, 1, 1, 1, 1, 0, 1, 1, 0])  # the new judge says yes on 3 more
    old = np.array([0, 1, 0, 1, 0, 0, 1, 0])
    new = np.array([1, 1, 1, 1, 0, 1, 1, 0])
    d = shift_decomposition(ao, an, old, new)
    assert d.old_anchor_score == 0.4 and d.new_anchor_score == 0.7
    assert d.judge_shift == pytest.approx(0.3)
    assert d.score_change == pytest.approx(6 / 8 - 3 / 8)
    assert d.system_change == pytest.approx(3 / 8 - 0.3)


def test_decomposition_refusals():
    with pytest.raises(ValueError, match="pair the same anchors"):
        shift_decomposition([1, 2, 3], [1, 2], [1, 2], [1, 2])
    with pytest.raises(ValueError, match="old needs at least 2"):
        shift_decomposition([1, 2], [1, 2], [1], [1, 2])
    with pytest.raises(ValueError, match="not a finite number"):
        shift_decomposition([1, 2], [1, float("nan")], [1, 2], [1, 2])
    with pytest.raises(ValueError, match="confidence"):
        shift_decomposition([1, 2], [1, 2], [1, 2], [1, 2], confidence=1.5)
