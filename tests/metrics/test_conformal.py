"""Split conformal prediction sets: the quantile against independent computations, the sets of
each score by hand, and the coverage guarantee by seeded simulation over exchangeable splits."""

from __future__ import annotations

import math

import numpy as np
import pytest

from assay.metrics import (
    calibrate_conformal,
    conformal_quantile,
    conformal_rank,
    is_contiguous,
    label_scores,
    prediction_sets,
    probability_matrix,
    set_coverage,
    true_label_scores,
)


@pytest.mark.parametrize("n", [2, 9, 10, 19, 50, 99, 100, 537])
@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.2, 0.5])
def test_quantile_is_the_kth_order_statistic(n, alpha):
    scores = np.random.default_rng(n).random(n)
    k = math.ceil((n + 1) * (1 - alpha) - 1e-9)  # the rank, rounding the float trap away
    q = conformal_quantile(scores, alpha)
    if k > n:
        assert q == math.inf
        return
    assert q == np.sort(scores)[k - 1]
    # numpy's empirical quantile at k/n without interpolation ...
    assert q == np.quantile(scores, k / n, method="inverted_cdf")
    # ... and its "higher" interpolation on the level whose index (n-1)·level is k-1
    assert q == np.quantile(scores, (k - 1) / (n - 1), method="higher")


def test_rank_is_not_fooled_by_binary_floating_point():
    assert (99 + 1) * (1 - 0.45) > 55  # 55.00000000000001
    assert conformal_rank(99, 0.45) == 55  # not 56
    assert conformal_rank(9, 0.1) == 9  # q̂ is the largest score ...
    assert conformal_rank(8, 0.1) == 9  # ... and with one item fewer, the whole scale
    assert conformal_quantile([0.1] * 8, 0.1) == math.inf


P = np.array([[0.5, 0.3, 0.15, 0.05], [0.1, 0.2, 0.3, 0.4], [0.45, 0.05, 0.1, 0.4]])


def test_scores_by_hand():
    assert label_scores(P, "lac") == pytest.approx(1 - P)
    # APS: the mass of every label more probable
    assert label_scores(P, "aps")[0] == pytest.approx([0.0, 0.5, 0.8, 0.95])
    assert label_scores(P, "aps")[2] == pytest.approx([0.0, 0.95, 0.85, 0.45])
    # ordinal: row 2 grows from 0 to 1 (its only neighbour: mass 0.45 before), 2 (0.5), 3 (0.6)
    assert label_scores(P, "ordinal")[2] == pytest.approx([0.0, 0.45, 0.5, 0.6])
    # row 1 grows from 3 down: 2 (0.4 before it), 1 (0.7), 0 (0.9)
    assert label_scores(P, "ordinal")[1] == pytest.approx([0.9, 0.7, 0.4, 0.0])
    assert true_label_scores(P, [1, 1, 3], "lac") == pytest.approx([0.7, 0.8, 0.6])


def test_sets_by_hand():
    cal = calibrate_conformal(P, [1, 1, 3], alpha=0.25, method="lac")  # k = ⌈4·0.75⌉ = 3
    assert (cal.n, cal.rank, cal.qhat) == (3, 3, pytest.approx(0.8))
    sets = prediction_sets(P, cal)  # labels with p ≥ 0.2
    assert sets.tolist() == [
        [True, True, False, False],
        [False, True, True, True],
        [True, False, False, True],  # not contiguous: why ordinal scales use "ordinal"
    ]
    ordinal = prediction_sets(P, calibrate_conformal(P, [1, 1, 3], 0.25, "ordinal"))
    assert ordinal.tolist()[2] == [True, True, True, True]  # the interval must reach 3
    assert ordinal.sum(axis=1).min() >= 1  # never empty: the most probable score is in
    assert is_contiguous(ordinal).all()
    whole = calibrate_conformal(P, [0, 1, 2], alpha=0.1)  # k = 4 > 3 items
    assert whole.whole_scale and prediction_sets(P, whole).all()


def test_set_coverage_per_class_against_a_direct_count():
    sets = np.array([[1, 1, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1], [0, 0, 0]], dtype=bool)
    y = np.array([0, 0, 2, 1, 1])
    out = set_coverage(sets, y)
    assert (out.n, out.covered) == (5, 3)
    assert out.mean_size == pytest.approx(7 / 5)
    assert out.size_counts == (1, 2, 1, 1)  # sizes 0, 1, 2, 3
    by = {c.label: c for c in out.per_class}
    assert (by[0].n, by[0].coverage, by[0].mean_size) == (2, 0.5, 1.5)
    assert (by[1].coverage, by[1].mean_size) == (0.5, 1.5)
    assert (by[2].coverage, by[2].mean_size) == (1.0, 1.0)


def test_probability_matrix_and_bad_inputs():
    m = probability_matrix([{"1": 0.25, "3": 0.75}, {"2": 1.0}], [1, 2, 3])
    assert m.tolist() == [[0.25, 0.0, 0.75], [0.0, 1.0, 0.0]]
    with pytest.raises(ValueError, match="not a score of the scale"):
        probability_matrix([{"7": 1.0}], [1, 2, 3])
    with pytest.raises(ValueError, match="sum to 1"):
        label_scores([[0.5, 0.2]])
    with pytest.raises(ValueError, match="indices in 0..3"):
        true_label_scores(P, [0, 1, 4])
    with pytest.raises(ValueError, match="alpha"):
        conformal_rank(10, 1.0)
    with pytest.raises(ValueError, match="unknown conformal method"):
        label_scores(P, "raps")  # type: ignore[arg-type]


# -- the guarantee, by simulation ------------------------------------------------------------

R = 2000  # seeded calibrate/test splits per case


def _categorical_world(seed: int, n_items: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Items whose true label follows q (Dirichlet) and a judge whose probabilities are a
    miscalibrated, noisy view of q (overconfident): exchangeable, but not a good judge."""
    rng = np.random.default_rng(seed)
    q = rng.dirichlet(np.ones(k), size=n_items)
    y = np.minimum((rng.random((n_items, 1)) > np.cumsum(q, axis=1)).sum(axis=1), k - 1)
    logits = 1.5 * np.log(q) + rng.normal(0, 0.7, size=q.shape)
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True), y


def _ordinal_world(seed: int, n_items: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores 0..k-1 and a judge whose probabilities are a discretised Gaussian around the true
    score, biased up by 0.3 and shifted by noise (sd 0.8), of a width varying per item."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, size=n_items)
    centre = y + rng.normal(0.3, 0.8, size=n_items)
    width = rng.uniform(0.4, 1.5, size=n_items)
    logits = -0.5 * ((np.arange(k)[None, :] - centre[:, None]) / width[:, None]) ** 2
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True), y


WORLDS = {"categorical": _categorical_world, "ordinal": _ordinal_world}


@pytest.mark.parametrize(
    ("method", "world"), [("lac", "categorical"), ("aps", "categorical"), ("ordinal", "ordinal")]
)
@pytest.mark.parametrize(("n", "alpha"), [(100, 0.1), (20, 0.2)])
def test_marginal_coverage_by_simulation(method, world, n, alpha):
    m, k = 40, 5
    probs, labels = WORLDS[world](n, R * (n + m), k)
    # every split at once: the scores of every label, q̂ per split, the sets of its test items
    scores = label_scores(probs, method).reshape(R, n + m, k)
    labels = labels.reshape(R, n + m)
    true = np.take_along_axis(scores, labels[:, :, None], axis=2)[:, :, 0]
    rank = conformal_rank(n, alpha)
    qhat = np.sort(true[:, :n], axis=1)[:, rank - 1] if rank <= n else np.full(R, np.inf)
    sets = scores[:, n:] <= qhat[:, None, None]
    coverage = np.take_along_axis(sets, labels[:, n:, None], axis=2).mean(axis=(1, 2))
    for r in range(25):  # the same as the library's calibrate-then-predict, split by split
        cal = calibrate_conformal(probs.reshape(R, n + m, k)[r, :n], labels[r, :n], alpha, method)
        assert cal.qhat == qhat[r]
        assert (prediction_sets(probs.reshape(R, n + m, k)[r, n:], cal) == sets[r]).all()
    mean, se = coverage.mean(), coverage.std(ddof=1) / math.sqrt(R)
    slack = 4 * se
    assert mean >= 1 - alpha - slack
    # the upper bound needs untied scores; APS and ordinal scores tie at 0 (the true label is
    # the most probable), which matters only when q̂ = 0 (accuracy ≥ 1 − α): not here
    assert mean <= 1 - alpha + 1 / (n + 1) + slack
    if method == "ordinal":
        assert is_contiguous(sets.reshape(-1, k)).all()


def test_lac_sets_on_an_ordinal_scale_are_not_always_contiguous():
    # what the ordinal score is for: the simulation's judge gives LAC gaps on a 1-5 scale
    probs, labels = _categorical_world(7, 2000, 5)
    lac = prediction_sets(probs[1000:], calibrate_conformal(probs[:1000], labels[:1000], 0.1))
    ordinal = prediction_sets(
        probs[1000:], calibrate_conformal(probs[:1000], labels[:1000], 0.1, "ordinal")
    )
    assert not is_contiguous(lac).all()
    assert is_contiguous(ordinal).all()
