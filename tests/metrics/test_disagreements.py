import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.metrics import Disagreement, disagreements


def test_ranked_by_distance_then_id_by_hand():
    out = disagreements(["e", "d", "c", "b", "a"], [4, 2, 5, 3, 1], [5, 4, 4, 1, 1])
    assert out == [
        Disagreement("b", 3, 1, 2.0),
        Disagreement("d", 2, 4, 2.0),
        Disagreement("c", 5, 4, 1.0),
        Disagreement("e", 4, 5, 1.0),
    ]  # "a" agrees and is left out
    assert disagreements(["e", "d", "c", "b", "a"], [4, 2, 5, 3, 1], [5, 4, 4, 1, 1], top=1) == [
        Disagreement("b", 3, 1, 2.0)
    ]


def test_labels_on_an_ordered_scale():
    scale = ["safe", "risky", "unsafe"]
    out = disagreements(
        [1, 2, 3], ["safe", "unsafe", "risky"], ["unsafe", "unsafe", "safe"], scale=scale
    )
    assert [(d.id, d.distance) for d in out] == [(1, 2.0), (3, 1.0)]


def test_numpy_input_gives_json_ready_records():
    out = disagreements(np.array([10, 11]), np.array([0, 3]), np.array([2, 3]))
    assert out[0].to_dict() == {"id": 10, "reference": 0, "judge": 2, "distance": 2.0}
    json.dumps([d.to_dict() for d in out])  # plain Python values


def test_ids_that_do_not_compare_fall_back_to_their_repr():
    out = disagreements([2, "x"], [0, 0], [1, 1])
    assert [d.id for d in out] == ["x", 2]  # repr: "'x'" < "2"
    assert disagreements(["x", 2], [0, 0], [1, 1]) == out


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=1, max_size=30),
    st.randoms(use_true_random=False),
)
def test_independent_of_input_order_and_equal_to_a_brute_force_ranking(pairs, rnd):
    ids = [f"item{i:02d}" for i in range(len(pairs))]
    ref = [r for r, _ in pairs]
    judge = [j for _, j in pairs]
    out = disagreements(ids, ref, judge)
    expected = sorted(
        ((abs(j - r), i) for i, r, j in zip(ids, ref, judge, strict=True) if j != r),
        key=lambda t: (-t[0], t[1]),
    )
    assert [(d.distance, d.id) for d in out] == [(float(dist), i) for dist, i in expected]
    order = list(range(len(ids)))
    rnd.shuffle(order)
    shuffled = disagreements(
        [ids[k] for k in order], [ref[k] for k in order], [judge[k] for k in order]
    )
    assert shuffled == out


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((["a", "b"], [1, None], [1, 2]), {}, r"reference\[1\] must be a finite number, got None"),
        ((["a", "b"], [1, 2], [1, float("nan")]), {}, r"judge\[1\] must be a finite number"),
        ((["a", "a"], [1, 2], [1, 2]), {}, "'a' appears more than once"),
        ((["a"], [1, 2], [1, 2]), {}, "one entry per item"),
        (
            (["a"], ["ok"], ["bad"]),
            {"scale": ["ok", "fine"]},
            r"judge\[0\] = 'bad' is not on the scale",
        ),
        ((["a"], [1], [2]), {"top": -1}, "top must be"),
        ((["a"], [1], [2]), {"scale": [1, 2, 1]}, "distinct"),
    ],
)
def test_bad_input(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        disagreements(*args, **kwargs)


def test_unordered_categories_are_all_one_step_apart():
    out = disagreements(
        ["x", "y", "z"],
        ["cat", "cat", "dog"],
        ["bird", "dog", "dog"],
        scale=["cat", "dog", "bird"],
        ordered=False,
    )
    assert [(d.id, d.distance) for d in out] == [("x", 1.0), ("y", 1.0)]  # by id, not by position
