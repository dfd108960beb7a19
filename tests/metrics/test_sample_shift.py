"""compare_samples: a labelled sample against the items it should be a random sample of — the
statistics computed by hand (the largest gap of the two empirical CDFs; Pearson's chi-square
with Yates' correction on 2 × 2), the p-values from their distributions; random samples of the
same items rejected at about α, a shifted one found; Holm equal to statsmodels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from assay.metrics import compare_samples, holm


def test_numeric_feature_is_the_ks_statistic_by_hand():
    rng = np.random.default_rng(1)
    a, b = rng.normal(0, 1, 40), rng.normal(0.3, 1, 300)
    out = compare_samples(a, b, what="text length", kind="numeric")
    grid = np.concatenate([a, b])
    gap = max(abs((a <= x).mean() - (b <= x).mean()) for x in grid)
    assert out.statistic == pytest.approx(gap, abs=1e-12)
    # the asymptotic Kolmogorov distribution agrees with the exact one to a few percent here
    n_eff = a.size * b.size / (a.size + b.size)
    assert out.p_value == pytest.approx(stats.kstwobign.sf(gap * math.sqrt(n_eff)), rel=0.1)
    assert (out.n_labelled, out.n_unlabelled, out.what) == (40, 300, "text length")


def test_categorical_feature_is_pearsons_chi_square_by_hand():
    labelled = ["a"] * 12 + ["b"] * 3 + ["c"] * 5
    unlabelled = ["a"] * 30 + ["b"] * 40 + ["c"] * 30
    out = compare_samples(labelled, unlabelled, what="category", kind="categorical")
    observed = np.array([[12, 3, 5], [30, 40, 30]], dtype=float)
    expected = observed.sum(1, keepdims=True) * observed.sum(0) / observed.sum()
    chi2 = ((observed - expected) ** 2 / expected).sum()
    assert out.statistic == pytest.approx(chi2, rel=1e-12)
    assert out.p_value == pytest.approx(stats.chi2.sf(chi2, df=2), rel=1e-9)
    assert out.note is None
    # 2 x 2: Yates' continuity correction, and a note when an expected count is below 5
    two = compare_samples(["x"] * 3 + ["y"], ["x"] * 5 + ["y"] * 9, what="s", kind="categorical")
    o = np.array([[3, 1], [5, 9]], dtype=float)
    e = o.sum(1, keepdims=True) * o.sum(0) / o.sum()
    yates = ((np.maximum(abs(o - e) - 0.5, 0)) ** 2 / e).sum()
    assert two.statistic == pytest.approx(yates, rel=1e-12)
    assert "below 5" in two.note


def test_one_category_has_nothing_to_compare():
    out = compare_samples(["a", "a"], ["a"], what="split", kind="categorical")
    assert out.p_value == 1.0 and "one category" in out.note


def test_random_samples_of_the_same_items_are_rejected_at_about_alpha_and_a_shift_is_found():
    rng = np.random.default_rng(7)
    rejected = shifted = 0
    draws = 400
    for _ in range(draws):
        pool = rng.lognormal(6, 1, 500)
        picked = rng.random(500) < 0.1
        rejected += (
            compare_samples(pool[picked], pool[~picked], what="n", kind="numeric").p_value < 0.05
        )
        # the labelled items are the longest texts' neighbours: a biased choice
        order = np.argsort(pool)
        biased = np.zeros(500, bool)
        biased[order[-150:][rng.permutation(150)[:50]]] = True
        shifted += (
            compare_samples(pool[biased], pool[~biased], what="n", kind="numeric").p_value < 0.05
        )
    se = math.sqrt(0.05 * 0.95 / draws)
    assert rejected / draws <= 0.05 + 3 * se
    assert shifted / draws > 0.99


def test_holm_equals_statsmodels(monkeypatch):
    import gc

    # statsmodels' Holm runs a full collection on each call: 50 of them took 19 s in a test
    # worker holding DSPy, MLflow and the rest; the adjusted p-values do not depend on it
    monkeypatch.setattr(gc, "collect", lambda generation=2: 0)
    rng = np.random.default_rng(3)
    for _ in range(50):
        p = rng.random(rng.integers(1, 8)) ** 3
        want = multipletests(p, method="holm")[1]
        assert np.max(np.abs(holm(p) - want)) <= 1e-12
    assert np.isnan(holm([0.01, math.nan])[1]) and holm([0.01, math.nan])[0] == 0.01


@pytest.mark.parametrize(
    ("labelled", "unlabelled", "kind", "match"),
    [
        ([], [1.0], "numeric", "at least one item"),
        ([1.0], [], "categorical", "at least one item"),
        (["a", None], ["b"], "categorical", "no category at position 1"),
        ([1.0], [2.0], "ordinal", "kind must be"),
    ],
)
def test_bad_input_is_one_line(labelled, unlabelled, kind, match):
    with pytest.raises(ValueError, match=match):
        compare_samples(labelled, unlabelled, what="x", kind=kind)
