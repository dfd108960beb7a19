"""The raters' item response model: parameters recovered from data simulated with known ones
(complete and sparse designs), the same discriminations and category boundaries as girth's
graded response model (``girth.grm_mml``) where both models hold, a strict judge told from one
that cannot tell items apart, and bad input in one line."""

from __future__ import annotations

import girth
import numpy as np
import pytest
from scipy.special import expit

from assay.metrics import AnnotationMatrix, rater_model

THRESHOLDS = np.array([-1.5, -0.5, 0.5, 1.5])


def simulate(rng, n: int, slopes, severities, thresholds=THRESHOLDS, keep: float = 1.0):
    """Scores 0..L−1 of ``n`` items by raters with the given slopes and severities (centred),
    from P(score ≥ c) = σ(a θ − s − τ_c), θ ~ N(0, 1); each score kept with ``keep``."""
    a = np.asarray(slopes, float)
    s = np.asarray(severities, float) - np.mean(severities)
    theta = rng.normal(size=n)
    eta = a[None, :, None] * theta[:, None, None] - s[None, :, None] - thresholds[None, None, :]
    scores = (rng.random((n, a.size))[..., None] < expit(eta)).sum(axis=-1).astype(float)
    scores[rng.random(scores.shape) >= keep] = np.nan
    names = tuple(f"r{j}" for j in range(a.size))
    return AnnotationMatrix(scores, tuple(range(n)), names), theta, s


SLOPES = [2.0, 1.5, 1.0, 1.2, 0.0, 1.8]
SEVERITIES = [0.0, 0.3, -0.5, 1.5, 0.0, -0.6]


def test_known_parameters_are_recovered():
    rng = np.random.default_rng(0)
    annotations, theta, s = simulate(rng, 800, SLOPES, SEVERITIES)
    fit = rater_model(annotations)
    assert fit.converged and fit.note is None
    slopes = np.array([r.discrimination.value for r in fit.raters])
    severities = np.array([r.severity.value for r in fit.raters])
    assert np.abs(slopes - SLOPES).max() < 0.3
    assert np.abs(severities - s).max() < 0.25
    assert np.abs(np.array(fit.thresholds) - THRESHOLDS).max() < 0.25
    assert severities.sum() == pytest.approx(0.0, abs=1e-9)
    quality = np.array([i.quality for i in fit.items])
    assert np.corrcoef(quality, theta)[0, 1] > 0.85
    assert fit.levels == (0.0, 1.0, 2.0, 3.0, 4.0)
    # the Wald intervals hold the true values (a loose check: one fit, six raters)
    inside = [
        r.discrimination.ci_low <= a <= r.discrimination.ci_high
        for r, a in zip(fit.raters, SLOPES, strict=True)
    ]
    assert sum(inside) >= 5


def test_a_strict_judge_is_told_from_one_that_cannot_tell_items_apart():
    rng = np.random.default_rng(1)
    annotations, _, _ = simulate(rng, 600, SLOPES, SEVERITIES)
    readings = {r.rater: r.reading for r in rater_model(annotations).raters}
    assert readings["r3"] == "strict"  # severity 1.5 above the panel, slope 1.2
    assert readings["r4"] == "cannot tell items apart"  # slope 0: scores at random
    assert readings["r2"] == "lenient"


def test_a_judge_that_ranks_items_backwards_reverses_the_scale():
    rng = np.random.default_rng(2)
    annotations, _, _ = simulate(rng, 500, [1.5, 1.5, 1.2, -1.2], [0, 0, 0, 0])
    fit = rater_model(annotations)
    assert fit.raters[3].reading == "reverses the scale"
    assert fit.raters[3].discrimination.value < -0.8 < 0.8 < fit.raters[0].discrimination.value


def test_a_sparse_design_is_fitted_on_the_scores_there_are():
    rng = np.random.default_rng(3)
    annotations, theta, s = simulate(rng, 1500, SLOPES, SEVERITIES, keep=0.5)
    fit = rater_model(annotations)
    slopes = np.array([r.discrimination.value for r in fit.raters])
    severities = np.array([r.severity.value for r in fit.raters])
    assert np.abs(slopes - SLOPES).max() < 0.35
    assert np.abs(severities - s).max() < 0.3
    scored = ~np.isnan(annotations.values).all(axis=1)
    assert fit.n_items_dropped == int((~scored).sum())
    assert len(fit.items) == int(scored.sum())
    assert [i.n for i in fit.items] == list(annotations.counts[scored])


def test_a_judge_giving_one_score_everywhere_stays_finite_and_cannot_tell_items_apart():
    rng = np.random.default_rng(4)
    annotations, _, _ = simulate(rng, 400, [1.5, 1.2, 1.0], [0, 0, 0])
    values = np.column_stack([annotations.values, np.full(400, 4.0)])
    fit = rater_model(
        AnnotationMatrix(values, annotations.item_ids, (*annotations.annotator_ids, "top"))
    )
    top = fit.raters[-1]
    assert np.isfinite(top.severity.value) and top.severity.value < -1.0  # lenient
    assert top.reading == "cannot tell items apart"
    assert top.mean_score == 4.0
    assert top.note.startswith("gave 4 on every item")


def test_discriminations_and_category_boundaries_match_girths_graded_response_model():
    # Where every rater uses every category and the thresholds are shared, girth's graded
    # response model (a threshold set per rater) and this one describe the same curves:
    # girth's P(score ≥ c) = σ(a (θ − b_c)) against σ(a θ − s − τ_c), so a·b_c = s + τ_c.
    rng = np.random.default_rng(5)
    annotations, _, _ = simulate(rng, 1500, [2.0, 1.5, 1.0, 1.2, 1.8], [0.0, 0.3, -0.5, 0.8, -0.6])
    fit = rater_model(annotations)
    reference = girth.grm_mml(annotations.values.T.astype(int))
    slopes = np.array([r.discrimination.value for r in fit.raters])
    assert np.abs(slopes - reference["Discrimination"]).max() < 0.1
    boundaries = np.array([r.severity.value for r in fit.raters])[:, None] + np.array(
        fit.thresholds
    )
    girths = reference["Difficulty"] * reference["Discrimination"][:, None]
    assert np.abs(boundaries - girths).max() < 0.2


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            [[1, 2.5], [0, 1], [2, 2]],
            "scores must be integer ordinal categories, got 2.5 for item 0 by rater 'b'",
        ),
        ([[1], [0], [2]], "at least 2 raters, got 1"),
        (
            [[1, np.nan], [0, np.nan], [2, 1]],
            "rater 'b' has 1 score.s.: the rater model needs at least 2 per rater",
        ),
        (
            [[1, 1], [1, 1], [1, 1]],
            "every score is 1: the rater model needs at least two distinct scores",
        ),
    ],
)
def test_bad_input_is_one_line_naming_the_item_and_rater(values, message):
    values = np.asarray(values, float)
    annotations = AnnotationMatrix(
        values, tuple(range(values.shape[0])), tuple("ab"[: values.shape[1]])
    )
    with pytest.raises(ValueError, match=message) as info:
        rater_model(annotations)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(confidence=1.0), "confidence must be strictly between 0 and 1"),
        (dict(quadrature_points=5), "quadrature_points must be at least 11, got 5"),
        (dict(quadrature_points=20.5), "quadrature_points must be an integer"),
    ],
)
def test_bad_options_are_one_line(kwargs, message):
    rng = np.random.default_rng(6)
    annotations, _, _ = simulate(rng, 20, [1, 1], [0, 0])
    with pytest.raises(ValueError, match=message):
        rater_model(annotations, **kwargs)
