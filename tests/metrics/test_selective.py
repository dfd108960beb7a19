"""Selective evaluation and cascades: the exact binomial p-value against
scipy's binomtest, the threshold against a plain re-implementation of fixed-sequence testing, and
the guarantee — P(risk on kept items > α) ≤ δ — by seeded simulation over 1,000 splits, for one
judge and for a two-stage cascade."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest

from assay.metrics import (
    calibrate_cascade,
    cascade_assignment,
    keeps,
    risk_p_value,
    selective_threshold,
)

SPLITS = 1000


@pytest.mark.parametrize(
    ("k", "n", "alpha"), [(0, 10, 0.1), (3, 40, 0.2), (12, 50, 0.15), (5, 5, 0.5)]
)
def test_p_value_is_scipys_exact_binomial_test(k, n, alpha):
    assert risk_p_value(k, n, alpha) == pytest.approx(
        binomtest(k, n, alpha, alternative="less").pvalue, rel=1e-12
    )


def fixed_sequence(conf, agrees, alpha, delta):
    """Learn-then-test written out plainly: distinct confidences from the top (those keeping
    too few items to ever reject skipped), binomtest at each, stop at the first null not
    rejected."""
    last = None
    for lam in sorted({c for c in conf if not math.isnan(c)}, reverse=True):
        kept = [a for c, a in zip(conf, agrees, strict=True) if c >= lam]
        if (1 - alpha) ** len(kept) > delta:  # p ≥ (1 − α)^n: never rejected
            continue
        wrong = len(kept) - sum(kept)
        if binomtest(wrong, len(kept), alpha, alternative="less").pvalue > delta:
            break
        last = lam
    return last


def test_threshold_is_fixed_sequence_testing():
    rng = np.random.default_rng(3)
    for _ in range(50):
        n = int(rng.integers(1, 120))
        conf = np.round(rng.uniform(size=n), 2)  # ties among confidences
        conf[rng.uniform(size=n) < 0.05] = np.nan
        agrees = (rng.uniform(size=n) < 0.6 + 0.4 * np.nan_to_num(conf)).astype(int)
        got = selective_threshold(conf, agrees, alpha=0.15, delta=0.1)
        assert got.threshold == fixed_sequence(list(conf), list(agrees), 0.15, 0.1)
        if got.certified:
            kept = keeps(conf, got.threshold)
            assert got.kept == kept.sum() and got.n == n
            assert got.risk == pytest.approx(1 - agrees[kept].mean())


def test_no_threshold_certifies_a_judge_no_better_than_alpha():
    got = selective_threshold([0.9] * 30 + [0.5] * 30, [0, 1, 1] * 20, alpha=0.1, delta=0.1)
    assert not got.certified and got.kept == 0 and "no threshold certifies" in got.note
    few = selective_threshold([0.9, 0.8, 0.7], [1, 1, 1], alpha=0.1, delta=0.1)
    assert not few.certified and "needs at least 22 kept" in few.note
    assert not keeps([0.99], None).any()
    with pytest.raises(ValueError, match="same length|differ in length"):
        selective_threshold([0.5], [1, 0], alpha=0.1, delta=0.1)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        selective_threshold([1.5], [1], alpha=0.1, delta=0.1)


# Synthetic judges with a known risk curve: confidence c ~ U(0, 1), P(disagree | c) = a·(1 − c)²,
# so the population risk of the items kept at λ is R(λ) = a·(1 − λ)²/3 and P(kept) = 1 − λ.
A1, A2 = 0.6, 0.45  # R1(λ) = 0.2·(1 − λ)²; stage 2, stronger: R2(λ) = 0.15·(1 − λ)²
ALPHA, DELTA, N_CAL = 0.1, 0.1, 400
SLACK = 3 * math.sqrt(DELTA * (1 - DELTA) / SPLITS)  # three Monte-Carlo standard errors


def synthetic(rng, a, n):
    conf = rng.uniform(size=n)
    agrees = (rng.uniform(size=n) >= a * (1 - conf) ** 2).astype(int)
    return conf, agrees


def risk_and_mass(a, lam):
    """Population risk on items kept at ``lam`` and the share kept (0 when none)."""
    if lam is None:
        return 0.0, 0.0
    return a * (1 - lam) ** 2 / 3, 1 - lam


def test_a_judge_just_worse_than_alpha_is_certified_at_most_delta_of_the_time():
    """Risk 0.12 whatever the confidence: every threshold certified is a failure."""
    rng = np.random.default_rng(11)
    conf = rng.uniform(size=(SPLITS, N_CAL))
    agrees = (rng.uniform(size=(SPLITS, N_CAL)) >= 0.12).astype(int)
    certified = sum(
        selective_threshold(c, a, alpha=ALPHA, delta=DELTA).certified
        for c, a in zip(conf, agrees, strict=True)
    )
    assert certified / SPLITS <= DELTA + SLACK


def test_one_judge_keeps_its_guarantee_over_1000_splits():
    rng = np.random.default_rng(2025)
    failures = certified = 0
    for _ in range(SPLITS):
        lam = selective_threshold(*synthetic(rng, A1, N_CAL), alpha=ALPHA, delta=DELTA).threshold
        risk, mass = risk_and_mass(A1, lam)
        certified += mass > 0
        failures += risk > ALPHA
    assert certified > 0.9 * SPLITS  # not vacuous: a threshold is found nearly always
    assert failures / SPLITS <= DELTA + SLACK


def test_a_two_stage_cascade_keeps_its_guarantee_over_1000_splits():
    rng = np.random.default_rng(7)
    failures = 0
    coverage = []
    for _ in range(SPLITS):
        c1, a1 = synthetic(rng, A1, N_CAL)
        c2, a2 = synthetic(rng, A2, N_CAL)  # independent of stage 1 given the item
        s1, s2 = calibrate_cascade([c1, c2], [a1, a2], alpha=ALPHA, delta=DELTA)
        assert s1.delta == s2.delta == DELTA / 2 and s2.n == N_CAL - s1.kept
        r1, m1 = risk_and_mass(A1, s1.threshold)
        r2, m2 = risk_and_mass(A2, s2.threshold)
        kept = m1 + (1 - m1) * m2
        risk = (m1 * r1 + (1 - m1) * m2 * r2) / kept if kept else 0.0
        failures += risk > ALPHA
        coverage.append(kept)
    assert np.mean(coverage) > 0.5  # stage 2 keeps much of what stage 1 escalates
    assert failures / SPLITS <= DELTA + SLACK


def test_cascade_assignment_is_the_first_stage_that_keeps():
    stage = cascade_assignment([[0.9, 0.2, 0.2, np.nan], [0.1, 0.8, 0.1, 0.9]], [0.5, 0.7])
    assert stage.tolist() == [0, 1, -1, 1]
    assert cascade_assignment([[0.9]], [None]).tolist() == [-1]
