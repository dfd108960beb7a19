"""Votes one member cannot drag: the trimmed mean equal to scipy's ``trim_mean``, a member
answering the scale's extreme moving the mean by (extreme − truth) / members and the trimmed
mean not out of the other members' range; capped weights that leave no member above its cap,
and a weighted vote a contaminated member cannot turn against the others united — where the
majority of three loses a third of its accuracy and an uncapped weighted vote follows the
contaminated member."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import trim_mean

from assay.metrics import (
    capped_weights,
    dawid_skene,
    reliability_weights,
    trimmed_mean,
    weighted_vote,
)


def test_trimmed_mean_equals_scipy():
    rng = np.random.default_rng(0)
    scores = rng.integers(1, 11, size=(50, 5)).astype(float)
    expected = [trim_mean(row, proportiontocut=1 / 5) for row in scores]
    assert np.allclose(trimmed_mean(scores, trim=1), expected, atol=1e-12)
    assert np.allclose(trimmed_mean(scores, trim=0), scores.mean(axis=1))


def test_trimmed_mean_with_missing_scores():
    scores = [[1, 2, 9, math.nan], [3, math.nan, math.nan, 4], [1, 5, 6, 7]]
    out = trimmed_mean(scores, trim=1)
    assert out[0] == 2 and math.isnan(out[1]) and out[2] == 5.5


def test_an_extreme_member_drags_the_mean_not_the_trimmed_mean():
    """Four honest members score items of quality 2..8 on a 1–10 scale within ±1; a fifth
    always answers 10. The mean moves by (10 − quality) / 5 on average (1.0 here); the trimmed
    mean stays between the honest members' lowest and highest score on every item."""
    rng = np.random.default_rng(1)
    quality = rng.integers(2, 9, size=400)
    honest = np.clip(quality[:, None] + rng.integers(-1, 2, size=(400, 4)), 1, 10).astype(float)
    panel = np.column_stack([honest, np.full(400, 10.0)])
    mean_shift = panel.mean(axis=1) - honest.mean(axis=1)
    assert mean_shift.mean() == pytest.approx(((10 - honest.mean(axis=1)) / 5).mean())
    assert mean_shift.mean() > 0.9
    robust = trimmed_mean(panel, trim=1)
    assert (robust >= honest.min(axis=1)).all() and (robust <= honest.max(axis=1)).all()
    assert np.abs(robust - honest.mean(axis=1)).mean() < 0.5


def test_capped_weights():
    shares = capped_weights([10, 1, 1, 1, 1], cap=0.4)
    assert shares.sum() == pytest.approx(1) and shares.max() == pytest.approx(0.4)
    assert np.allclose(shares[1:], 0.15)
    assert np.allclose(capped_weights([1, 2, 3]), [0.2, 0.4, 0.4])
    assert np.allclose(capped_weights([1, 3, 0]), [0.5, 0.5, 0])  # two with a weight
    assert np.allclose(capped_weights([0, 0, 0]), 1 / 3)
    assert np.allclose(capped_weights([2, 1, 1, 1], cap=0.5), [0.4, 0.2, 0.2, 0.2])


def test_reliability_weights_are_log_odds_and_zero_below_chance():
    w = reliability_weights([0.8, 0.5, 0.2, 1.0], k=2)
    assert w[0] == pytest.approx(math.log(4)) and w[1] == 0 and w[2] == 0
    assert w[3] == pytest.approx(math.log(0.999 / 0.001))
    assert reliability_weights([0.6], k=3)[0] == pytest.approx(math.log(0.6 * 2 / 0.4))


def test_weighted_vote_and_its_ties():
    labels, tie = weighted_vote([[0, 1, 1], [0, 1, math.nan], [math.nan] * 3], [2, 1, 1], k=2)
    assert labels.tolist() == [0, 0, -1] and tie.tolist() == [True, False, False]


def contaminated_panel(rng, n=600, accuracy=0.8):
    truth = (rng.random(n) < 0.5).astype(int)
    honest = [np.where(rng.random(n) < accuracy, truth, 1 - truth) for _ in range(2)]
    return truth, np.column_stack([*honest, 1 - truth]).astype(float)  # the third: always wrong


def test_a_member_always_wrong_breaks_the_majority_of_three_not_the_capped_weighted_vote():
    """Two members right 80% of the time and one always wrong: the majority is right only when
    both honest members are (0.8² = 0.64, down from 0.896 for three honest members); the vote
    weighted by Dawid–Skene accuracies (the wrong member's weight is 0) and capped keeps the
    honest members' level (0.8: the two share the weight, a split broken toward the lower
    class). Dawid–Skene's own verdict learns that the third member answers the opposite."""
    truth, panel = contaminated_panel(np.random.default_rng(2))
    majority = (panel.sum(axis=1) >= 2).astype(int)
    assert (majority == truth).mean() == pytest.approx(0.64, abs=0.04)
    fit = dawid_skene(panel)
    assert (fit.labels == truth).mean() > 0.95
    weights = capped_weights(
        reliability_weights([j.accuracy.value for j in fit.judges], k=2), cap=0.4
    )
    labels, _ = weighted_vote(panel, weights, k=2)
    assert (labels == truth).mean() > 0.76


def test_no_member_outvotes_the_others_united_under_a_cap():
    """A contaminated member that looks perfect (its weight 20× the others') decides every item
    with uncapped weights, even against four members who agree; capped at 0.4 it never does."""
    rng = np.random.default_rng(3)
    others = np.repeat(rng.integers(0, 3, size=(300, 1)), 4, axis=1)  # the four agree
    adversary = (others[:, :1] + 1) % 3  # and it never does
    panel = np.column_stack([others, adversary]).astype(float)
    raw = np.array([1.0, 1.0, 1.0, 1.0, 20.0])
    uncapped, _ = weighted_vote(panel, raw / raw.sum(), k=3)
    assert (uncapped == adversary[:, 0]).all()
    capped, _ = weighted_vote(panel, capped_weights(raw, cap=0.4), k=3)
    assert (capped == others[:, 0]).all()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: trimmed_mean([[1, 2, 3]], trim=-1), "trim must be a non-negative integer"),
        (lambda: trimmed_mean([[1, math.inf, 3]]), "finite .* at item 0, member 1"),
        (lambda: capped_weights([1, -1]), "non-negative, got -1.0 at position 1"),
        (lambda: capped_weights([1, 1, 1], cap=0.2), "cap 0.2 is below 1/3"),
        (lambda: capped_weights([1, 1], cap=0), r"cap must be in \(0, 1\]"),
        (lambda: reliability_weights([1.2], k=2), r"\[0, 1\], got 1.2 at position 0"),
        (lambda: weighted_vote([[0, 2]], [1, 1], k=2), "classes 0..1, got 2 at item 0, member 1"),
        (lambda: weighted_vote([[0, 1]], [1, 1, 1], k=2), "one entry per member"),
    ],
)
def test_bad_input_is_one_line(call, message):
    with pytest.raises(ValueError, match=message) as exc:
        call()
    assert "\n" not in str(exc.value)
