import dataclasses
import math

import numpy as np
import pytest

from assay.metrics import (
    MetricValue,
    accuracy,
    agreement_confusion,
    agreement_metrics,
    bootstrap_ci,
    ccc,
    cohen_kappa,
    error_rate,
    failure_incidence,
    failure_precision,
    false_negative_rate,
    false_positive_rate,
    kappa_binary,
    mae,
    pearson,
    spearman,
)
from assay.metrics._ordinal import _ccc_batched

ALWAYS = ["kappa_categorical", "accuracy"]
ORDINAL = ["kappa_linear", "kappa_quadratic", "ccc", "pearson", "spearman", "mae"]
BINARY = ["balanced_accuracy", "error_rate", "false_positive_rate", "false_negative_rate"]
RATES = ["accuracy", "error_rate", "false_positive_rate", "false_negative_rate"]
RATES += ["failure_precision", "failure_incidence"]
THRESHOLD = ["kappa_binary", "failure_precision", "failure_incidence"]


def pair(n=120, k=4, seed=3):
    rng = np.random.default_rng(seed)
    ref = rng.integers(0, k, size=n)
    cand = np.clip(ref + rng.integers(-1, 2, size=n), 0, k - 1)
    return ref, cand


@pytest.mark.parametrize(
    ("kind", "k", "threshold", "names"),
    [
        ("categorical", 4, None, ALWAYS),
        ("categorical", 4, 2, ALWAYS + THRESHOLD),
        ("ordinal", 4, None, ALWAYS + ORDINAL),
        ("ordinal", 4, 2, ALWAYS + ORDINAL + THRESHOLD),
        ("binary", 2, None, ALWAYS + BINARY),
        ("binary", 2, 1, ALWAYS + BINARY + THRESHOLD),
    ],
)
def test_names_and_order(kind, k, threshold, names):
    ref, cand = pair(k=k)
    result = agreement_metrics(ref, cand, kind=kind, k=k, threshold=threshold)
    assert list(result) == names
    for name, value in result.items():
        assert isinstance(value, MetricValue)
        assert value.ci_low <= value.value <= value.ci_high
        if name not in RATES:  # a rate's n is its denominator (test_rates_are_counts_...)
            assert value.n == len(ref) and value.count is None
            assert value.ci_method == (
                "MOVER–Wilson"
                if name == "balanced_accuracy"
                else "BCa bootstrap"
                if name.startswith("kappa")
                else "percentile bootstrap"
            )


def test_ordinal_values_equal_the_public_functions():
    ref, cand = pair()
    r = agreement_metrics(ref, cand, kind="ordinal", k=4, threshold=2)
    expected = {
        "kappa_categorical": cohen_kappa(ref, cand, k=4),
        "accuracy": accuracy(ref, cand),
        "kappa_linear": cohen_kappa(ref, cand, k=4, weights="linear"),
        "kappa_quadratic": cohen_kappa(ref, cand, k=4, weights="quadratic"),
        "ccc": ccc(ref, cand),
        "pearson": pearson(ref, cand),
        "spearman": spearman(ref, cand),
        "mae": mae(ref, cand),
        "kappa_binary": kappa_binary(ref, cand, 2),
        "failure_precision": failure_precision(ref < 2, cand < 2),
        "failure_incidence": failure_incidence(ref < 2, cand < 2),
    }
    assert {name: v.value for name, v in r.items()} == pytest.approx(expected)


def test_binary_values_equal_the_public_functions():
    ref, cand = pair(k=2)
    r = agreement_metrics(ref, cand, kind="binary", k=2)
    assert r["error_rate"].value == pytest.approx(error_rate(ref, cand))
    assert r["false_positive_rate"].value == pytest.approx(false_positive_rate(ref, cand))
    assert r["false_negative_rate"].value == pytest.approx(false_negative_rate(ref, cand))


def test_cis_come_from_one_seeded_index_matrix():
    ref, cand = pair()
    r = agreement_metrics(ref, cand, kind="ordinal", k=4, seed=9, confidence=0.9)
    ci = bootstrap_ci(_ccc_batched, ref, cand, seed=9, confidence=0.9)
    assert (r["ccc"].ci_low, r["ccc"].ci_high) == pytest.approx((ci.low, ci.high), abs=1e-12)
    assert agreement_metrics(ref, cand, kind="ordinal", k=4, seed=9, confidence=0.9) == r
    other = agreement_metrics(ref, cand, kind="ordinal", k=4, seed=10, confidence=0.9)
    assert other["ccc"].ci_low != r["ccc"].ci_low


def test_zero_denominator_failure_metrics_are_undefined_with_a_note():
    """A candidate that flags nothing has no failure precision: undefined (null in
    metrics.json, left out of MLflow), not ToolEmu's 0.0, which was logged as a precision of
    0 beside its n of 0 and read as every flag wrong."""
    from assay.runs._tracking import flatten_metrics

    # the candidate never goes below the threshold: nothing flagged
    r = agreement_metrics([0, 1, 2, 3], [2, 2, 2, 3], kind="ordinal", k=4, threshold=2)
    precision = r["failure_precision"]
    assert math.isnan(precision.value) and (precision.count, precision.n) == (0, 0)
    assert precision.note.startswith(
        "undefined: the candidate flagged no failure (index < 2) (ToolEmu's convention: 0.0)"
    )
    assert precision.ci_low is None and precision.ci_high is None  # no item to count
    assert "failure_precision" not in flatten_metrics({"failure_precision": precision.to_dict()})
    incidence = r["failure_incidence"]
    assert incidence.value == 0.0  # 0 of the 2 true failures were flagged: defined
    assert (incidence.count, incidence.n) == (0, 2)
    assert not incidence.note.startswith("undefined")
    # the candidate flagged nothing: this rate is lost by construction, and the note says so
    assert incidence.note.startswith("the candidate put every item on one side of index 2")


def test_undefined_kappa_is_nan_with_a_note_and_no_ci():
    r = agreement_metrics([1, 1, 1], [1, 1, 1], kind="ordinal", k=3)
    kappa = r["kappa_categorical"]
    assert math.isnan(kappa.value)
    assert kappa.note.startswith("undefined: the reference or the candidate put every item in one")
    assert kappa.ci_low is None and kappa.ci_high is None and kappa.ci_method is None
    assert r["accuracy"].value == 1.0
    assert r["accuracy"].note == "the candidate gave one verdict (index 1) on every item"


def test_a_judge_with_one_verdict_has_no_kappa_and_honest_rates():
    """A judge that says "unsafe" (1) on every item: κ is 0 by the formula (sklearn agrees) but
    measures nothing, so it is undefined; its rates keep an exact interval of real width."""
    from sklearn.metrics import cohen_kappa_score

    ref, cand = np.array([0] * 75 + [1] * 75), np.ones(150, dtype=int)
    assert cohen_kappa_score(ref, cand) == 0.0
    r = agreement_metrics(
        ref,
        cand,
        kind="binary",
        k=2,
        names=("the reference", "the judge"),
        labels=["safe", "unsafe"],
    )
    kappa = r["kappa_categorical"]
    assert math.isnan(kappa.value) and kappa.ci_low is None
    assert "the judge gave one verdict (unsafe) on every item" in kappa.note
    fpr, fnr = r["false_positive_rate"], r["false_negative_rate"]
    assert (fpr.value, fpr.count, fpr.n) == (1.0, 75, 75)
    assert (fnr.value, fnr.count, fnr.n) == (0.0, 0, 75)
    assert fpr.ci_low == pytest.approx(0.025 ** (1 / 75)) and fpr.ci_high == 1.0
    assert fnr.ci_low == 0.0 and fnr.ci_high == pytest.approx(1 - 0.025 ** (1 / 75))
    for rate in (fpr, fnr):
        assert rate.ci_method == "Clopper–Pearson"
        assert rate.note == (
            "the judge gave one verdict (unsafe) on every item, so this rate is won or lost "
            "by construction"
        )
    # balanced accuracy 0.5 by construction, with the width of its two rates' intervals
    balanced = r["balanced_accuracy"]
    assert balanced.value == 0.5 and balanced.ci_low < 0.5 < balanced.ci_high
    assert balanced.note == "the judge gave one verdict (unsafe) on every item"
    # the reference in one category: κ undefined whatever the judge says
    one_class = agreement_metrics([1] * 6, [1, 0, 1, 1, 0, 1], kind="binary", k=2)
    assert math.isnan(one_class["kappa_categorical"].value)
    assert math.isnan(one_class["false_positive_rate"].value)
    assert one_class["false_positive_rate"].n == 0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rates_are_counts_of_their_denominator_with_exact_intervals(seed):
    """Each rate's count and n against sklearn's confusion matrix, its interval against
    statsmodels' Clopper–Pearson (``method="beta"``)."""
    from sklearn.metrics import confusion_matrix as sk_confusion
    from statsmodels.stats.proportion import proportion_confint

    rng = np.random.default_rng(seed)
    ref = rng.integers(0, 2, size=97)
    cand = np.where(rng.random(97) < 0.8, ref, 1 - ref)
    (tn, fp), (fn, tp) = sk_confusion(ref, cand, labels=[0, 1])
    r = agreement_metrics(ref, cand, kind="binary", k=2, threshold=1, confidence=0.9)
    expected = {
        "accuracy": (tp + tn, 97),
        "error_rate": (fp + fn, 97),
        "false_positive_rate": (fp, fp + tn),
        "false_negative_rate": (fn, fn + tp),
        # failure = index < 1: the reference's negatives are the true failures
        "failure_precision": (tn, tn + fn),
        "failure_incidence": (tn, tn + fp),
    }
    for name, (count, n) in expected.items():
        m = r[name]
        assert (m.count, m.n) == (count, n), name
        assert m.value == pytest.approx(count / n)
        low, high = proportion_confint(count, n, alpha=0.1, method="beta")
        assert (m.ci_low, m.ci_high) == pytest.approx((low, high), abs=1e-12), name
        assert m.ci_method == "Clopper–Pearson"


def test_dropped_replicates_are_counted_in_the_note():
    ref, cand = [0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 1, 1]
    r = agreement_metrics(ref, cand, kind="binary", k=2)
    # the items are resampled in their canonical order (by their categories' counts)
    from assay.metrics._intervals import canonical_order
    from assay.metrics._validate import category_ranks

    ref_, cand_ = np.asarray(ref), np.asarray(cand)
    order = canonical_order(ref_, cand_, ranks=category_ranks(["0", "1"], ref_, cand_))
    idx = np.random.default_rng(0).integers(0, 6, size=(1000, 6))
    resampled = ref_[order][idx]
    one_class = int(((resampled == 0).all(axis=1) | (resampled == 1).all(axis=1)).sum())
    assert one_class > 0
    assert r["kappa_categorical"].note.startswith(
        f"{one_class} of 1000 bootstrap replicates were dropped as undefined: "
        "the reference or the candidate put every item in one category"
    )


def test_metric_value_is_frozen_and_serialises():
    value = MetricValue(value=0.5, ci_low=0.25, ci_high=0.75, n=10, note=None, count=5)
    assert value.to_dict() == {
        "value": 0.5,
        "ci_low": 0.25,
        "ci_high": 0.75,
        "n": 10,
        "note": None,
        "count": 5,
        "ci_method": None,
    }
    with pytest.raises(dataclasses.FrozenInstanceError):
        value.value = 1.0


def test_an_undefined_value_is_null_in_json_and_nan_when_read_back():
    from pydantic import TypeAdapter

    adapter = TypeAdapter(MetricValue)
    undefined = MetricValue(math.nan, None, None, 3, note="undefined: why")
    data = adapter.dump_json(undefined)
    assert b'"value":null' in data and b"NaN" not in data
    assert math.isnan(adapter.validate_json(data).value)


def test_agreement_confusion_by_hand():
    # rows = reference: ref 0 -> cand 0, 1; ref 1 -> cand 1; ref 2 -> cand 2 (twice)
    assert agreement_confusion([0, 0, 1, 2, 2], [0, 1, 1, 2, 2], 3) == [
        [1, 1, 0],
        [0, 1, 0],
        [0, 0, 2],
    ]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "nominal", "k": 3}, "kind must be one of"),
        ({"kind": "binary", "k": 3}, "binary scale has k=2"),
        ({"kind": "ordinal", "k": 3, "threshold": 3}, r"threshold must be an index in 1\.\.2"),
        ({"kind": "ordinal", "k": 3, "threshold": 0}, r"threshold must be an index in 1\.\.2"),
        ({"kind": "ordinal", "k": 3, "threshold": 1.5}, "threshold must be a category index"),
        ({"kind": "ordinal", "k": 2, "threshold": 1}, "reference has label 2"),
        ({"kind": "ordinal", "k": 3, "n_resamples": 100}, "at least 1000"),
    ],
)
def test_bad_input_raises(kwargs, message):
    with pytest.raises(ValueError, match=message):
        agreement_metrics([0, 1, 2], [0, 1, 1], **kwargs)


def test_a_single_category_is_rejected():
    with pytest.raises(ValueError, match="at least 2 categories"):
        agreement_metrics([0, 0], [0, 0], kind="categorical", k=1)


def test_mismatched_lengths_name_the_arguments():
    with pytest.raises(ValueError, match="reference and candidate must have the same length"):
        agreement_metrics([0, 1, 2], [0, 1], kind="ordinal", k=3)
    with pytest.raises(ValueError, match="candidate has label 3"):
        agreement_confusion([0, 1], [0, 3], 3)


def test_balanced_accuracy_has_the_mover_interval_of_its_two_rates():
    """Balanced accuracy is the mean of the true positive rate over the reference's positives
    and the true negative rate over its negatives: its interval combines their Wilson
    intervals (statsmodels' ``proportion_confint(method="wilson")``) by MOVER (Zou & Donner
    2008); sklearn gives the value."""
    from sklearn.metrics import balanced_accuracy_score
    from statsmodels.stats.proportion import proportion_confint

    rng = np.random.default_rng(4)
    ref = (rng.random(60) < 0.2).astype(int)
    cand = np.where(rng.random(60) < 0.85, ref, 1 - ref)
    m = agreement_metrics(ref, cand, kind="binary", k=2, confidence=0.9)["balanced_accuracy"]
    tp, pos = int(((ref == 1) & (cand == 1)).sum()), int((ref == 1).sum())
    tn, neg = int(((ref == 0) & (cand == 0)).sum()), int((ref == 0).sum())
    (l1, u1), (l2, u2) = (
        proportion_confint(c, t, alpha=0.1, method="wilson") for c, t in ((tp, pos), (tn, neg))
    )
    p1, p2 = tp / pos, tn / neg
    assert m.value == pytest.approx(balanced_accuracy_score(ref, cand))
    assert (m.ci_low, m.ci_high) == pytest.approx(
        (
            (p1 + p2) / 2 - math.hypot(p1 - l1, p2 - l2) / 2,
            (p1 + p2) / 2 + math.hypot(u1 - p1, u2 - p2) / 2,
        )
    )
    assert (m.n, m.ci_method) == (60, "MOVER–Wilson")
    undefined = agreement_metrics([0, 0, 0], [0, 1, 0], kind="binary", k=2)["balanced_accuracy"]
    assert math.isnan(undefined.value) and undefined.ci_low is None
    assert (
        undefined.note
        == "undefined: the reference lacks a negative (index 0) or a positive (index 1)"
    )


def test_balanced_accuracy_s_interval_covers_with_a_rare_class():
    """Seeded simulation: 20 items, 15% positives, a judge with true positive rate 0.8 and true
    negative rate 0.9 (balanced accuracy 0.85). A percentile bootstrap over the items covered
    0.85 in about 60% of draws at 95% (3 positives all found give a true positive rate of 1
    in every resample); the interval must cover in at least 92%."""
    rng = np.random.default_rng(1)
    covered = drawn = 0
    for draw in range(600):
        ref = (rng.random(20) < 0.15).astype(int)
        cand = np.where(ref == 1, rng.random(20) < 0.8, rng.random(20) < 0.1).astype(int)
        if ref.min() == ref.max():
            continue
        m = agreement_metrics(ref, cand, kind="binary", k=2, seed=draw)["balanced_accuracy"]
        drawn += 1
        covered += m.ci_low <= 0.85 <= m.ci_high
    assert covered / drawn >= 0.92


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_threshold_on_named_unordered_categories_fails_the_categories_listed_before_it(seed):
    """``--scale zeta,mid,alpha --threshold 1``: failure is a verdict listed before ``mid``
    (``zeta``). The categories are recoded in an order of their own so that the listing moves
    no figure; the threshold was then read in the recoded order, which failed other categories
    (on five items: 'flagged no failure', where 1 of 2 flags was a true failure). The failure
    figures against their counts by hand and κ on the binarised pairs against scikit-learn."""
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(seed)
    ref = rng.choice(4, size=80, p=[0.4, 0.3, 0.2, 0.1])  # recoded: beta, alpha, mid, zeta
    cand = np.where(rng.random(80) < 0.7, ref, rng.integers(0, 4, size=80))
    labels = ["zeta", "mid", "alpha", "beta"]
    r = agreement_metrics(ref, cand, kind="categorical", k=4, threshold=2, labels=labels)
    true_failure, flagged = ref < 2, cand < 2
    precision, incidence = r["failure_precision"], r["failure_incidence"]
    assert (precision.count, precision.n) == ((true_failure & flagged).sum(), flagged.sum())
    assert (incidence.count, incidence.n) == ((true_failure & flagged).sum(), true_failure.sum())
    assert r["kappa_binary"].value == pytest.approx(cohen_kappa_score(ref >= 2, cand >= 2))
    assert r["kappa_categorical"].value == pytest.approx(cohen_kappa_score(ref, cand))
    assert (
        "the threshold alpha"
        in agreement_metrics(
            ref, np.full(80, 3), kind="categorical", k=4, threshold=2, labels=labels
        )["kappa_binary"].note
    )


def test_ccc_of_a_judge_with_one_verdict_is_undefined_as_kappa_is():
    """Lin's CCC of a judge that says 2 on every item is 0 by its formula (no covariance),
    whatever the 2 — printed as '0.000 [0.000, 0.000]', which read as no concordance measured.
    It is undefined with the reason, as κ, Pearson and Spearman are; elsewhere it is Lin's."""
    ref = np.array([0, 1, 2, 3, 1, 2, 0, 3, 2, 1])
    for constant in (0, 2, 3):
        cand = np.full(10, constant)
        by_hand = (
            2
            * np.cov(ref, cand, bias=True)[0, 1]
            / (ref.var() + cand.var() + (ref.mean() - cand.mean()) ** 2)
        )
        assert by_hand == 0.0
        m = agreement_metrics(ref, cand, kind="ordinal", k=4, names=("the reference", "the judge"))
        for name in ("ccc", "pearson", "spearman", "kappa_linear"):
            assert math.isnan(m[name].value) and m[name].ci_low is None, name
        assert m["ccc"].note.startswith(
            "undefined: the reference or the judge put every item in one category "
            "(CCC is 0 by construction then)"
        )
    cand = np.array([0, 1, 2, 3, 2, 2, 0, 3, 1, 1])
    m = agreement_metrics(ref, cand, kind="ordinal", k=4)["ccc"]
    lin = (
        2
        * np.cov(ref, cand, bias=True)[0, 1]
        / (ref.var() + cand.var() + (ref.mean() - cand.mean()) ** 2)
    )
    assert m.value == pytest.approx(lin) and m.ci_low <= m.value <= m.ci_high


@pytest.mark.parametrize(
    ("confidence", "label"),
    [(0.95, "95%"), (0.975, "97.5%"), (0.9, "90%"), (0.999, "99.9%"), (0.57, "57%")],
)
def test_a_confidence_level_is_labelled_with_its_digits(confidence, label):
    """``f"{0.975:.0%}"`` labelled a 97.5% interval "98%", and a table's header
    ``int(100 · confidence)`` cut it to "97%" (0.57 to "56%": 56.99999…): one formatter, every
    digit of the level and no float noise."""
    from assay.metrics import fmt_level, metric_table

    assert fmt_level(confidence) == label
    table = metric_table("t", {"accuracy": {"value": 0.5}}, confidence)
    assert table.columns[2] == f"{label} CI"
