import math

import pytest

from assay.metrics import cost_per_accuracy_point


def test_by_hand():
    # $1.50 for 75 % accuracy: 1.50 / 75 = $0.02 per point
    assert cost_per_accuracy_point(1.5, 0.75) == pytest.approx(0.02)
    assert cost_per_accuracy_point(0, 0.5) == 0.0


def test_zero_accuracy_is_infinite():
    assert cost_per_accuracy_point(2.0, 0.0) == math.inf
    assert cost_per_accuracy_point(0.0, 0.0) == math.inf


@pytest.mark.parametrize(
    ("cost", "accuracy", "message"),
    [
        (-1.0, 0.5, "total_cost_usd must be >= 0"),
        (1.0, 1.5, r"accuracy must be a proportion in \[0, 1\]"),
        (1.0, math.nan, "accuracy must be finite"),
        ("1", 0.5, "total_cost_usd must be a number"),
    ],
)
def test_bad_input_raises(cost, accuracy, message):
    with pytest.raises(ValueError, match=message):
        cost_per_accuracy_point(cost, accuracy)
