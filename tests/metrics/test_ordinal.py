import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from sklearn.metrics import mean_absolute_error

from assay.metrics import ccc, mae, pearson, spearman
from assay.metrics._ordinal import _ccc_batched, _mae_batched, _pearson_batched, _spearman_batched

from ._strategies import score_pairs

# x = [1, 2, 3], y = [1, 2, 4]: means 2 and 7/3; population var_x = 2/3,
# var_y = (16/9 + 1/9 + 25/9)/3 = 14/9, cov = ((-1)(-4/3) + 0 + (1)(5/3))/3 = 1.
X, Y = [1, 2, 3], [1, 2, 4]


def constant(a):
    return np.ptp(a) == 0


def test_ccc_by_hand():
    # 2·1 / (2/3 + 14/9 + (2 - 7/3)²) = 2 / (21/9) = 6/7
    assert ccc(X, Y) == pytest.approx(6 / 7)


def test_pearson_by_hand():
    # cov / (sd_x·sd_y) = 1 / sqrt(2/3 · 14/9) = sqrt(27/28)
    assert pearson(X, Y) == pytest.approx(math.sqrt(27 / 28))


def test_spearman_by_hand():
    # both are already in rank order -> ranks identical -> ρ = 1
    assert spearman(X, Y) == pytest.approx(1.0)
    # ties get average ranks: [1, 1, 2] -> [1.5, 1.5, 3]; vs [1, 2, 3]: r = sqrt(3)/2
    assert spearman([1, 1, 2], [1, 2, 3]) == pytest.approx(math.sqrt(3) / 2)


def test_mae_by_hand():
    # |1-1| + |2-2| + |3-4| = 1 over 3 items
    assert mae(X, Y) == pytest.approx(1 / 3)


def test_ccc_penalises_a_shift_that_pearson_ignores():
    assert pearson([1, 2, 3], [2, 3, 4]) == pytest.approx(1.0)
    # var 2/3 each, cov 2/3, shift 1: 2·(2/3) / (4/3 + 1) = 4/7
    assert ccc([1, 2, 3], [2, 3, 4]) == pytest.approx(4 / 7)


def test_constant_sides():
    assert math.isnan(ccc([2, 2, 2], [2, 2, 2]))  # 0 / 0
    assert ccc([2, 2, 2], [3, 3, 3]) == 0.0
    assert ccc([2, 2, 2], [1, 2, 3]) == 0.0
    assert math.isnan(pearson([0.1, 0.1, 0.1], [1, 2, 3]))
    assert math.isnan(spearman([1, 2, 3], [5, 5, 5]))


@settings(max_examples=50, deadline=None)
@given(score_pairs())
def test_ccc_equals_numpy_formula(pair):
    x, y = pair
    if constant(x) and constant(y) and x[0] == y[0]:
        assert math.isnan(ccc(x, y))
        return
    cov = np.cov(x, y, bias=True)
    expected = 2 * cov[0, 1] / (cov[0, 0] + cov[1, 1] + (x.mean() - y.mean()) ** 2)
    assert ccc(x, y) == pytest.approx(expected, abs=1e-9)


@settings(max_examples=50, deadline=None)
@given(score_pairs(min_size=2))
def test_pearson_and_spearman_equal_scipy(pair):
    x, y = pair
    if constant(x) or constant(y):
        assert math.isnan(pearson(x, y))
        assert math.isnan(spearman(x, y))
        return
    assert pearson(x, y) == pytest.approx(scipy.stats.pearsonr(x, y).statistic, abs=1e-9)
    assert spearman(x, y) == pytest.approx(scipy.stats.spearmanr(x, y).statistic, abs=1e-9)


@settings(max_examples=50, deadline=None)
@given(score_pairs())
def test_mae_equals_sklearn(pair):
    x, y = pair
    assert mae(x, y) == pytest.approx(mean_absolute_error(x, y))


@pytest.mark.parametrize(
    ("batched", "scalar"),
    [
        (_ccc_batched, ccc),
        (_pearson_batched, pearson),
        (_spearman_batched, spearman),
        (_mae_batched, mae),
    ],
)
def test_batched_equals_scalar_row_by_row(batched, scalar):
    rng = np.random.default_rng(3)
    x = rng.integers(0, 5, size=(30, 20)).astype(float)
    y = np.clip(x + rng.integers(-1, 2, size=(30, 20)), 0, 4)
    x[0], y[0] = 2.0, 2.0  # both the same constant
    x[1] = 3.0  # one side constant
    values = batched(x, y)
    assert values.shape == (30,)
    for i in range(30):
        np.testing.assert_allclose(values[i], scalar(x[i], y[i]), rtol=1e-12)


@pytest.mark.parametrize("metric", [ccc, pearson, spearman, mae])
@pytest.mark.parametrize(
    ("x", "y", "message"),
    [
        ([1, 2, 3], [1, 2], "same length"),
        ([], [], "empty"),
        ([1, math.nan], [1, 2], "y_true must hold finite numbers, got nan at position 1"),
        ([1, 2], ["a", "b"], "y_pred must hold numbers"),
    ],
)
def test_bad_input_raises(metric, x, y, message):
    with pytest.raises(ValueError, match=message):
        metric(x, y)


@pytest.mark.parametrize("shape", [(1,), (2,), (9,), (60,), (3, 9), (200, 40), (4, 5, 6)])
@pytest.mark.parametrize("levels", [2, 3, 10, None])
def test_average_ranks_equal_scipy_rankdata(shape, levels):
    """Spearman's ranks (ties averaged) are assay's own, without scipy.stats: equal to
    ``scipy.stats.rankdata`` to the last bit, along the last axis of a batch too."""
    from assay.metrics._ordinal import average_ranks

    rng = np.random.default_rng(sum(shape) * 7 + (levels or 0))
    a = rng.normal(size=shape) if levels is None else rng.integers(0, levels, size=shape) * 1.0
    assert np.array_equal(average_ranks(a), scipy.stats.rankdata(a, axis=-1))
