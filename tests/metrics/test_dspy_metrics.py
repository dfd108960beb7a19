from types import SimpleNamespace

import pytest

from assay.metrics import absolute_error_score, exact_match, quadratic_agreement


def ex(expected):
    return SimpleNamespace(expected=expected)


def pred(score):
    return SimpleNamespace(score=score)


def test_exact_match():
    assert exact_match(ex(2), pred(2)) == 1.0
    assert exact_match(ex(2), pred(3)) == 0.0
    assert exact_match(ex(2), pred(None)) == 0.0  # unscored is a miss
    assert exact_match(ex(2), SimpleNamespace()) == 0.0  # no score at all: unscored
    assert exact_match(ex(2), pred(2.0)) == 1.0  # integral floats are scores too


def test_absolute_error_score_by_hand():
    metric = absolute_error_score(1, 5)
    assert metric(ex(3), pred(3)) == 1.0
    assert metric(ex(3), pred(5)) == pytest.approx(0.5)  # 1 - |3-5| / (5-1)
    assert metric(ex(1), pred(5)) == 0.0  # 1 - 4/4
    assert metric(ex(3), pred(None)) == 0.0
    assert metric(ex(3), pred(9)) == 0.0  # off the scale counts as unscored
    assert metric.__name__ == "absolute_error_score"


def test_quadratic_agreement_by_hand():
    metric = quadratic_agreement(0, 3)
    assert metric(ex(1), pred(2)) == pytest.approx(8 / 9)  # 1 - (1/3)²
    assert metric(ex(0), pred(2)) == pytest.approx(5 / 9)  # 1 - (2/3)²
    assert metric(ex(0), pred(3)) == 0.0  # 1 - 1²
    assert metric(ex(0), pred(None)) == 0.0
    assert metric.__name__ == "quadratic_agreement"


@pytest.mark.parametrize(
    "metric", [exact_match, absolute_error_score(0, 3), quadratic_agreement(0, 3)]
)
def test_with_a_trace_every_metric_is_a_boolean_exact_match(metric):
    trace = [("step", {}, {})]
    assert metric(ex(2), pred(2), trace) is True
    assert metric(ex(2), pred(1), trace) is False
    assert metric(ex(2), pred(None), trace) is False


def test_real_dspy_objects_work():
    dspy = pytest.importorskip("dspy")
    example = dspy.Example(text="x", expected=3).with_inputs("text")
    assert quadratic_agreement(1, 5)(example, dspy.Prediction(score=1)) == pytest.approx(0.75)
    assert exact_match(example, dspy.Prediction(score=None)) == 0.0


def test_bad_input_raises():
    with pytest.raises(ValueError, match="scale_max must be greater than scale_min"):
        absolute_error_score(3, 3)
    with pytest.raises(ValueError, match="scale_min must be an integer"):
        quadratic_agreement(0.5, 3)
    with pytest.raises(ValueError, match="example.expected is missing"):
        exact_match(SimpleNamespace(), pred(1))
    with pytest.raises(ValueError, match="example.expected is missing"):
        exact_match(ex(None), pred(1))
    with pytest.raises(ValueError, match="pred.score must be an integer score, got 2.5"):
        exact_match(ex(2), pred(2.5))
    with pytest.raises(ValueError, match="outside the scale 0..3"):
        quadratic_agreement(0, 3)(ex(7), pred(1))


def test_within_one_by_hand():
    from assay.metrics import within_one

    assert within_one(ex(3), pred(3)) == 1.0
    assert within_one(ex(3), pred(4)) == 1.0
    assert within_one(ex(3), pred(2)) == 1.0
    assert within_one(ex(3), pred(5)) == 0.0
    assert within_one(ex(3), pred(None)) == 0.0  # unscored is a miss
    assert within_one(ex(3), pred(4), trace=[("step", {}, {})]) is False  # exact under a trace
    assert within_one(ex(3), pred(3), trace=[("step", {}, {})]) is True


def prob(p, score=None):
    return SimpleNamespace(expected_score=p, score=score)


def test_log_loss_score_by_hand():
    import math

    from assay.metrics import log_loss_score

    metric = log_loss_score(eps=0.01)  # cap log(100) = 4.605 nats
    assert metric(ex(1), prob(1.0)) == 1.0
    assert metric(ex(0), prob(0.0)) == 1.0
    assert metric(ex(1), prob(0.5)) == pytest.approx(1 - math.log(2) / math.log(100))  # 0.8495
    assert metric(ex(0), prob(0.9)) == pytest.approx(1 - math.log(10) / math.log(100))  # 0.5
    assert metric(ex(1), prob(0.01)) == 0.0 and metric(ex(1), prob(0.0)) == 0.0  # capped
    assert metric(ex(1), prob(None)) == 0.0  # no probability: a miss
    assert metric(ex(1), prob(0.2, score=1), trace=[1]) is True  # exact match on pred.score
    assert metric(ex(1), prob(0.9, score=0), trace=[1]) is False
    assert metric.__name__ == "log_loss_score"


def test_log_loss_score_mean_is_an_affine_function_of_sklearn_log_loss():
    import math

    import numpy as np
    import sklearn.metrics

    from assay.metrics import log_loss_score

    eps = 0.01
    rng = np.random.default_rng(0)
    p = rng.random(200) ** 2
    p[:5] = [0.0, 1.0, 0.001, 0.999, 0.5]
    y = (rng.random(200) < 0.4).astype(int)
    metric = log_loss_score(eps)
    mean_score = np.mean([metric(ex(int(t)), prob(float(q))) for t, q in zip(y, p, strict=True)])
    # clip the probability of the expected verdict from below at eps, then take sklearn's loss
    clipped = np.where(y == 1, np.maximum(p, eps), np.minimum(p, 1 - eps))
    loss = sklearn.metrics.log_loss(y, clipped, labels=[0, 1])
    assert mean_score == pytest.approx(1 - loss / math.log(1 / eps))


def test_log_loss_score_bad_input():
    from assay.metrics import log_loss_score

    with pytest.raises(ValueError, match="eps must be"):
        log_loss_score(0.0)
    with pytest.raises(ValueError, match="binary references 0/1, got 3"):
        log_loss_score()(ex(3), prob(0.5))
    with pytest.raises(ValueError, match=r"probability in \[0, 1\], got 1.2"):
        log_loss_score()(ex(1), prob(1.2))
    with pytest.raises(ValueError, match="got 'high'"):
        log_loss_score()(ex(1), prob("high"))
