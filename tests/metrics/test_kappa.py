import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from assay.metrics import binarize, cohen_kappa, kappa_binary
from assay.metrics._kappa import _kappa_batched

from ._strategies import label_pairs

WEIGHTS = [None, "linear", "quadratic"]


def recipe_kappa(y_true, y_pred, k, weights):
    """ToolEmu's κ recipe transcribed in plain Python, independent of the implementation."""
    n = len(y_true)
    p = [[0.0] * k for _ in range(k)]
    for a, b in zip(y_true, y_pred, strict=True):
        p[a][b] += 1 / n
    rows = [sum(p[i][j] for j in range(k)) for i in range(k)]
    cols = [sum(p[i][j] for i in range(k)) for j in range(k)]

    def w(i, j):
        if weights is None:
            return 0.0 if i == j else 1.0
        d = abs(i - j) / (k - 1)
        return d if weights == "linear" else d * d

    observed = sum(w(i, j) * p[i][j] for i in range(k) for j in range(k))
    expected = sum(w(i, j) * rows[i] * cols[j] for i in range(k) for j in range(k))
    return math.nan if expected == 0 else 1 - observed / expected


def sklearn_kappa(y_true, y_pred, k, weights):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # sklearn warns when κ is undefined (nan)
        return cohen_kappa_score(y_true, y_pred, labels=list(range(k)), weights=weights)


def assert_same(a, b):
    if math.isnan(b):
        assert math.isnan(a)
    else:
        assert a == pytest.approx(b, abs=1e-12)


@settings(max_examples=50, deadline=None)
@given(label_pairs(), st.sampled_from(WEIGHTS))
def test_kappa_equals_sklearn_and_recipe(pair, weights):
    k, t, p = pair
    value = cohen_kappa(t, p, k=k, weights=weights)
    assert_same(value, sklearn_kappa(t, p, k, weights))
    assert_same(value, recipe_kappa(t.tolist(), p.tolist(), k, weights))


@settings(max_examples=50, deadline=None)
@given(label_pairs(), st.sampled_from(WEIGHTS))
def test_default_k_is_largest_label_plus_one(pair, weights):
    _, t, p = pair
    k = int(max(t.max(), p.max())) + 1
    assert_same(cohen_kappa(t, p, weights=weights), cohen_kappa(t, p, k=k, weights=weights))


# y_true=[0,1,2,2], y_pred=[0,2,2,1], k=3. Joint P: (0,0),(1,2),(2,2),(2,1) each 1/4.
# Marginals: rows = cols = [1/4, 1/4, 1/2].
HAND_T, HAND_P = [0, 1, 2, 2], [0, 2, 2, 1]


def test_unweighted_by_hand():
    # observed disagreement = P(1,2)+P(2,1) = 1/2; expected = 1 - (1/16+1/16+1/4) = 5/8
    # κ = 1 - (1/2)/(5/8) = 1/5
    assert cohen_kappa(HAND_T, HAND_P, k=3) == pytest.approx(1 / 5)


def test_linear_by_hand():
    # W: |d|=1 -> 1/2, |d|=2 -> 1. observed = 1/2·1/4·2 = 1/4
    # expected = 2·(1/2·1/16) + 2·(1·1/8) + 2·(1/2·1/8) = 1/16 + 4/16 + 2/16 = 7/16
    # κ = 1 - (1/4)/(7/16) = 3/7
    assert cohen_kappa(HAND_T, HAND_P, k=3, weights="linear") == pytest.approx(3 / 7)


def test_quadratic_by_hand():
    # W: |d|=1 -> 1/4, |d|=2 -> 1. observed = 1/4·1/4·2 = 1/8
    # expected = 2·(1/4·1/16) + 2·(1·1/8) + 2·(1/4·1/8) = 1/32 + 8/32 + 2/32 = 11/32
    # κ = 1 - (1/8)/(11/32) = 7/11
    assert cohen_kappa(HAND_T, HAND_P, k=3, weights="quadratic") == pytest.approx(7 / 11)


def test_unused_categories_do_not_change_kappa():
    # On a 0..4 scale the weights are divided by k-1 = 4 instead of 2, but κ is a ratio of two
    # sums over the same weights, so the scale factor cancels and empty categories add nothing.
    narrow = cohen_kappa(HAND_T, HAND_P, k=3, weights="linear")
    wide = cohen_kappa(HAND_T, HAND_P, k=5, weights="linear")
    assert wide == pytest.approx(narrow)
    assert wide == pytest.approx(sklearn_kappa(HAND_T, HAND_P, 5, "linear"))


def test_perfect_agreement_is_one():
    assert cohen_kappa([0, 1, 2, 3], [0, 1, 2, 3], weights="quadratic") == 1.0


@pytest.mark.parametrize("weights", WEIGHTS)
def test_single_shared_category_is_nan_like_sklearn(weights):
    # Both raters use only category 1: expected disagreement is 0, κ undefined.
    value = cohen_kappa([1, 1, 1], [1, 1, 1], k=3, weights=weights)
    assert math.isnan(value)
    assert math.isnan(sklearn_kappa([1, 1, 1], [1, 1, 1], 3, weights))


def test_one_constant_rater_gives_zero():
    # y_true all 0: observed = expected = share of y_pred off category 0, so κ = 0.
    assert cohen_kappa([0, 0, 0, 0], [0, 1, 1, 0], k=2) == 0.0


def test_accepts_integral_floats_and_bools():
    assert cohen_kappa([0.0, 1.0, 1.0], [0, 1, 0]) == cohen_kappa([0, 1, 1], [0, 1, 0])
    assert cohen_kappa([False, True, True], [0, 1, 0]) == cohen_kappa([0, 1, 1], [0, 1, 0])


@pytest.mark.parametrize("weights", WEIGHTS)
def test_batched_equals_scalar_row_by_row(weights):
    rng = np.random.default_rng(1)
    k, b, n = 4, 25, 30
    t = rng.integers(0, k, size=(b, n))
    p = np.where(rng.random((b, n)) < 0.6, t, rng.integers(0, k, size=(b, n)))
    t[0], p[0] = 2, 2  # an undefined (nan) row
    batched = _kappa_batched(t, p, k=k, weights=weights)
    assert batched.shape == (b,)
    assert math.isnan(batched[0])
    for i in range(b):
        assert_same(batched[i], cohen_kappa(t[i], p[i], k=k, weights=weights))


def test_binarize_by_hand():
    # ToolEmu: scores >= 2 are "good"
    assert binarize([0, 1, 2, 3, 2.5], 2).tolist() == [0, 0, 1, 1, 1]


@settings(max_examples=50, deadline=None)
@given(label_pairs(min_k=3, max_k=6), st.integers(1, 2))
def test_kappa_binary_equals_sklearn_on_binarised(pair, threshold):
    _, t, p = pair
    expected = sklearn_kappa((t >= threshold).astype(int), (p >= threshold).astype(int), 2, None)
    assert_same(kappa_binary(t, p, threshold), expected)


def test_kappa_binary_by_hand():
    # scores [0,1,2,3] vs [1,2,2,3] at 2 -> [0,0,1,1] vs [0,1,1,1]
    # observed disagreement 1/4; rows [1/2,1/2], cols [1/4,3/4]; expected = 1/2·3/4 + 1/2·1/4 = 1/2
    # κ = 1 - (1/4)/(1/2) = 1/2
    assert kappa_binary([0, 1, 2, 3], [1, 2, 2, 3], 2) == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("y_true", "y_pred", "kwargs", "message"),
    [
        ([0, 1, 2], [0, 1], {}, "same length"),
        ([], [], {}, "empty"),
        ([0, 1, 3], [0, 1, 2], {"k": 3}, r"y_true has label 3 at position 2, outside .*0\.\.2"),
        ([0, 1, 2], [0, 1, 5], {"k": 3}, "y_pred has label 5"),
        ([0, 1.5, 2], [0, 1, 2], {}, "integer category indices, got 1.5 at position 1"),
        ([0, -1, 2], [0, 1, 2], {}, "0-based"),
        ([0, None, 2], [0, 1, 2], {}, "remove unscored"),
        (["a", "b"], [0, 1], {}, "must hold numbers"),
        ([[0, 1]], [[0, 1]], {}, "1-D"),
        ([0, 1], [0, 1], {"k": 0}, "positive integer"),
        ([0, 1], [0, 1], {"weights": "cubic"}, "weights must be"),
    ],
)
def test_bad_input_raises(y_true, y_pred, kwargs, message):
    with pytest.raises(ValueError, match=message):
        cohen_kappa(y_true, y_pred, **kwargs)


def test_kappa_binary_bad_input_raises():
    with pytest.raises(ValueError, match="same length"):
        kappa_binary([0, 1, 2], [0, 1], 1)
    with pytest.raises(ValueError, match="finite"):
        kappa_binary([0, 1], [0, 1], math.nan)
    with pytest.raises(ValueError, match="y_true_scores must hold finite"):
        kappa_binary([0, math.inf], [0, 1], 1)
