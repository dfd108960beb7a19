"""fit_threshold: the κ-optimal cut on probabilities, checked against brute force and by hand."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from assay.metrics import fit_threshold


def test_hand_example():
    # perfectly separable at any t in (0.4, 0.6]: the midpoint 0.5 is chosen, κ = 1
    t, k = fit_threshold([0.1, 0.2, 0.4, 0.6, 0.7, 0.9], [0, 0, 0, 1, 1, 1])
    assert t == pytest.approx(0.5) and k == pytest.approx(1.0)


def test_shifted_probabilities_get_a_shifted_threshold():
    # a judge whose P(1) never exceeds 0.3: argmax says always 0, the threshold recovers it
    p = [0.05, 0.08, 0.1, 0.21, 0.25, 0.29]
    y = [0, 0, 0, 1, 1, 1]
    t, k = fit_threshold(p, y)
    assert 0.1 < t < 0.21 and k == pytest.approx(1.0)
    assert cohen_kappa_score(y, (np.array(p) >= 0.5).astype(int)) == 0.0


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.UndefinedMetricWarning")
@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.integers(0, 1)), min_size=2, max_size=30))
@example(rows=[(0.0, 0), (5e-324, 1)])  # the midpoint of these underflows to 0.0
def test_no_threshold_beats_the_fitted_one(rows):
    p = np.array([r[0] for r in rows])
    y = np.array([r[1] for r in rows])
    t, k = fit_threshold(p, y)
    for cand in np.concatenate(([-1.0, 2.0], p)):
        pred = (p >= cand).astype(int)
        other = cohen_kappa_score(y, pred, labels=[0, 1])
        if not np.isnan(other):
            assert other <= k + 1e-9
    got = cohen_kappa_score(y, (p >= t).astype(int), labels=[0, 1])
    assert (np.isnan(got) and k == -1.0) or got == pytest.approx(k)


def test_bad_input():
    with pytest.raises(ValueError, match="same length"):
        fit_threshold([0.1], [0, 1])
    with pytest.raises(ValueError, match="0 or 1"):
        fit_threshold([0.1, 0.2], [0, 2])
