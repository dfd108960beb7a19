import math

import numpy as np
import pytest
from hypothesis import given, settings
from sklearn.metrics import precision_score, recall_score

from assay.metrics import failure_incidence, failure_precision
from assay.metrics._failure import _failure_incidence_batched, _failure_precision_batched

from ._strategies import bool_pairs

# true failures at 0, 1, 4, 5; flagged at 0, 2, 4 -> true ∩ flagged = {0, 4}
TRUE = [True, True, False, False, True, True]
FLAGGED = [True, False, True, False, True, False]


def test_precision_by_hand():
    # |true ∩ flagged| / |flagged| = 2 / 3
    assert failure_precision(TRUE, FLAGGED) == pytest.approx(2 / 3)


def test_incidence_by_hand():
    # |true ∩ flagged| / |true| = 2 / 4
    assert failure_incidence(TRUE, FLAGGED) == pytest.approx(1 / 2)


def test_nothing_flagged_gives_zero_precision_by_convention():
    assert failure_precision([True, False], [False, False]) == 0.0
    assert math.isnan(failure_precision([True, False], [False, False], zero_division=math.nan))
    # incidence is still defined: 0 of 1 true failure was flagged
    assert failure_incidence([True, False], [False, False]) == 0.0


def test_no_true_failure_gives_zero_incidence_by_convention():
    assert failure_incidence([False, False], [True, False]) == 0.0
    assert math.isnan(failure_incidence([False, False], [True, False], zero_division=math.nan))
    assert failure_precision([False, False], [True, False]) == 0.0  # 0 of 1 flag is right


def test_accepts_zero_one_integers():
    assert failure_precision([1, 1, 0], [1, 0, 1]) == pytest.approx(1 / 2)


@settings(max_examples=50, deadline=None)
@given(bool_pairs())
def test_equal_sklearn_precision_and_recall(pair):
    true, flagged = pair
    assert failure_precision(true, flagged) == pytest.approx(
        precision_score(true, flagged, zero_division=0)
    )
    assert failure_incidence(true, flagged) == pytest.approx(
        recall_score(true, flagged, zero_division=0)
    )


def test_batched_equals_scalar_row_by_row():
    rng = np.random.default_rng(2)
    true = rng.random((30, 12)) < 0.3
    flagged = rng.random((30, 12)) < 0.3
    flagged[0] = False  # zero-denominator rows
    true[1] = False
    for zero_division in (0.0, math.nan):
        precision = _failure_precision_batched(true, flagged, zero_division=zero_division)
        incidence = _failure_incidence_batched(true, flagged, zero_division=zero_division)
        assert precision.shape == incidence.shape == (30,)
        for i in range(30):
            np.testing.assert_equal(
                precision[i], failure_precision(true[i], flagged[i], zero_division=zero_division)
            )
            np.testing.assert_equal(
                incidence[i], failure_incidence(true[i], flagged[i], zero_division=zero_division)
            )


@pytest.mark.parametrize(
    ("true", "flagged", "message"),
    [
        ([True, False], [True], "true_failure and flagged must have the same length"),
        ([], [], "true_failure is empty"),
        ([0, 2], [0, 1], "true_failure must hold binary labels 0/1, got 2"),
        ([0, 1], [0.5, 1], "flagged must hold integer"),
    ],
)
def test_bad_input_raises(true, flagged, message):
    with pytest.raises(ValueError, match=message):
        failure_precision(true, flagged)
    with pytest.raises(ValueError, match=message):
        failure_incidence(true, flagged)
