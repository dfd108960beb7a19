import math

import numpy as np
import pytest
import sklearn.metrics
from hypothesis import given, settings

from assay.metrics import (
    accuracy,
    confusion_matrix,
    error_rate,
    false_negative_rate,
    false_positive_rate,
)
from assay.metrics._classification import (
    _accuracy_batched,
    _error_rate_batched,
    _false_negative_rate_batched,
    _false_positive_rate_batched,
)

from ._strategies import label_pairs

# y_true = [0,0,0,1,1], y_pred = [0,1,1,1,0]: TN = 1, FP = 2, TP = 1, FN = 1
T, P = [0, 0, 0, 1, 1], [0, 1, 1, 1, 0]


def test_by_hand():
    assert accuracy(T, P) == pytest.approx(2 / 5)  # TN + TP = 2 of 5
    assert error_rate(T, P) == pytest.approx(3 / 5)
    assert false_positive_rate(T, P) == pytest.approx(2 / 3)  # FP / (FP + TN)
    assert false_negative_rate(T, P) == pytest.approx(1 / 2)  # FN / (FN + TP)
    assert confusion_matrix(T, P, 2).tolist() == [[1, 2], [1, 1]]  # rows = y_true


def test_rates_are_nan_without_the_conditioning_class():
    assert math.isnan(false_positive_rate([1, 1], [0, 1]))  # no true negatives
    assert math.isnan(false_negative_rate([0, 0], [0, 1]))  # no true positives
    assert false_negative_rate([1, 1], [0, 1]) == pytest.approx(1 / 2)


def test_confusion_matrix_keeps_unused_categories():
    # k = 4 even though category 3 never occurs
    assert confusion_matrix([0, 2], [1, 2], 4).tolist() == [
        [0, 1, 0, 0],
        [0, 0, 0, 0],
        [0, 0, 1, 0],
        [0, 0, 0, 0],
    ]


@settings(max_examples=50, deadline=None)
@given(label_pairs())
def test_accuracy_and_confusion_equal_sklearn(pair):
    k, t, p = pair
    assert accuracy(t, p) == pytest.approx(sklearn.metrics.accuracy_score(t, p))
    assert error_rate(t, p) == pytest.approx(1 - sklearn.metrics.accuracy_score(t, p))
    np.testing.assert_array_equal(
        confusion_matrix(t, p, k), sklearn.metrics.confusion_matrix(t, p, labels=list(range(k)))
    )


@settings(max_examples=50, deadline=None)
@given(label_pairs(min_k=2, max_k=2))
def test_rates_equal_sklearn_confusion(pair):
    _, t, p = pair
    (tn, fp), (fn, tp) = sklearn.metrics.confusion_matrix(t, p, labels=[0, 1])
    fpr, fnr = false_positive_rate(t, p), false_negative_rate(t, p)
    if fp + tn == 0:
        assert math.isnan(fpr)
    else:
        assert fpr == pytest.approx(fp / (fp + tn))
    if fn + tp == 0:
        assert math.isnan(fnr)
    else:
        assert fnr == pytest.approx(fn / (fn + tp))


@pytest.mark.parametrize(
    ("batched", "scalar"),
    [
        (_accuracy_batched, accuracy),
        (_error_rate_batched, error_rate),
        (_false_positive_rate_batched, false_positive_rate),
        (_false_negative_rate_batched, false_negative_rate),
    ],
)
def test_batched_equals_scalar_row_by_row(batched, scalar):
    rng = np.random.default_rng(4)
    t = rng.integers(0, 2, size=(30, 10))
    p = rng.integers(0, 2, size=(30, 10))
    t[0], t[1] = 0, 1  # rows where FNR, then FPR, are undefined
    values = batched(t, p)
    assert values.shape == (30,)
    for i in range(30):
        np.testing.assert_equal(values[i], scalar(t[i], p[i]))


@pytest.mark.parametrize("metric", [false_positive_rate, false_negative_rate])
def test_rates_reject_non_binary_labels(metric):
    with pytest.raises(ValueError, match="y_pred must hold binary labels 0/1, got 2 at position 1"):
        metric([0, 1], [0, 2])


@pytest.mark.parametrize("metric", [accuracy, error_rate])
def test_accuracy_bad_input_raises(metric):
    with pytest.raises(ValueError, match="same length"):
        metric([0, 1], [0])
    with pytest.raises(ValueError, match="empty"):
        metric([], [])


def test_confusion_matrix_bad_input_raises():
    with pytest.raises(ValueError, match=r"y_pred has label 2 at position 0, outside .*0\.\.1"):
        confusion_matrix([0], [2], 2)
    with pytest.raises(ValueError, match="positive integer"):
        confusion_matrix([0], [0], 0)
