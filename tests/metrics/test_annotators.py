import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss_kappa

from assay.metrics import (
    AnnotationMatrix,
    annotator_agreement,
    count_table,
    fleiss_kappa,
    krippendorff_alpha,
)

NAN = math.nan

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the worked example with
# missing data: 4 observers × 12 units. Published: nominal .743, ordinal .815, interval .849.
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
).T  # items × annotators

# Fleiss (1971) as reproduced on Wikipedia ("Fleiss' kappa", worked example): 10 subjects,
# 14 raters, 5 categories; P̄ = 0.378, P̄e = 0.213, κ = 0.210.
FLEISS_1971 = np.array(
    [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
)


def noisy_annotations(n_items=40, n_annotators=5, k=4, agree=0.6, missing=0.0, seed=0):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, k, n_items)
    values = np.where(
        rng.random((n_items, n_annotators)) < agree,
        truth[:, None],
        rng.integers(0, k, (n_items, n_annotators)),
    ).astype(float)
    values[rng.random(values.shape) < missing] = np.nan
    return values


# --- Fleiss' κ -------------------------------------------------------------------------------


def test_fleiss_kappa_worked_example():
    assert fleiss_kappa(FLEISS_1971) == pytest.approx(0.20993, abs=1e-5)
    assert fleiss_kappa(FLEISS_1971) == pytest.approx(statsmodels_fleiss_kappa(FLEISS_1971))


@st.composite
def equal_count_labels(draw):
    """items × raters category indices, every item rated by the same number of raters."""
    raters, n, k = draw(st.integers(2, 8)), draw(st.integers(2, 25)), draw(st.integers(2, 5))
    cells = st.lists(st.integers(0, k - 1), min_size=n * raters, max_size=n * raters)
    return np.array(draw(cells)).reshape(n, raters), k


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # statsmodels on one category
@settings(max_examples=40, deadline=None)
@given(equal_count_labels())
def test_fleiss_kappa_equals_statsmodels_with_equal_counts(labels_k):
    labels, k = labels_k
    table = count_table(labels, k=k)
    got = fleiss_kappa(table)
    if np.isnan(got):  # one category only: chance agreement is 1, κ undefined
        assert (table.sum(axis=0) > 0).sum() == 1
    else:
        assert got == pytest.approx(statsmodels_fleiss_kappa(table), abs=1e-12)


def test_fleiss_kappa_unequal_counts_by_hand():
    # Gwet's generalisation. Items (counts per category 0, 1):
    #   [2, 0]: agreement 1, shares (1, 0)       [1, 2]: agreement 2/6, shares (1/3, 2/3)
    #   [1, 1]: agreement 0, shares (1/2, 1/2)   [0, 1]: one rating (no pair), shares (0, 1)
    # P_a = (1 + 1/3 + 0) / 3 = 4/9;  π = (11/24, 13/24);  P_e = (121 + 169) / 576 = 290/576
    # κ = (256/576 − 290/576) / (286/576) = −34/286   (irrCAC's fleiss() gives −0.118881 too)
    table = [[2, 0], [1, 2], [1, 1], [0, 1], [0, 0]]  # the unlabelled last item is ignored
    assert fleiss_kappa(table) == pytest.approx(-34 / 286)


def test_count_table_from_a_long_table():
    m = AnnotationMatrix.from_long(
        items=["a", "a", "b", "b", "b", "c"],
        annotators=["x", "y", "x", "y", "z", "z"],
        labels=[0, 0, 1, 2, 1, 2],
    )
    assert m.item_ids == ("a", "b", "c") and m.annotator_ids == ("x", "y", "z")
    assert np.array_equal(count_table(m, k=3), [[2, 0, 0], [0, 2, 1], [0, 0, 1]])
    assert list(m.counts) == [2, 3, 1]
    same = AnnotationMatrix.from_mapping(
        {"x": {"a": 0, "b": 1}, "y": {"a": 0, "b": 2}, "z": {"b": 1, "c": 2}}
    )
    assert np.array_equal(same.values, m.values, equal_nan=True)


# --- Krippendorff's α ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)]
)
def test_krippendorff_alpha_worked_example(level, published):
    assert krippendorff_alpha(KRIPPENDORFF_2011, level=level) == pytest.approx(published, abs=5e-4)


def test_krippendorff_nominal_alpha_by_hand():
    # 3 items × 2 annotators, no missing: (0,0), (1,1), (0,1). Coincidences: o00 = 2, o11 = 2,
    # o01 = o10 = 1; n0 = n1 = 3, n = 6. α = 1 − (n − 1)·D_o / D_e = 1 − 5·2 / (2·3·3) = 4/9.
    assert krippendorff_alpha([[0, 0], [1, 1], [0, 1]]) == pytest.approx(4 / 9)
    # with two annotators α (nominal) and Fleiss' κ differ only by the small-sample term
    assert fleiss_kappa(count_table([[0, 0], [1, 1], [0, 1]])) == pytest.approx(1 / 3)


def test_krippendorff_ignores_unpairable_items_and_is_nan_without_disagreement():
    base = krippendorff_alpha(KRIPPENDORFF_2011)
    lonely = np.vstack([KRIPPENDORFF_2011, [NAN, 4, NAN, NAN]])  # one label: unpairable
    assert krippendorff_alpha(lonely) == pytest.approx(base)
    assert math.isnan(krippendorff_alpha([[1, 1], [1, 1], [2, NAN]]))


def test_krippendorff_value_domain():
    a = krippendorff_alpha(KRIPPENDORFF_2011, level="ordinal", value_domain=[1, 2, 3, 4, 5])
    assert a == pytest.approx(0.815, abs=5e-4)
    with pytest.raises(
        ValueError, match="label 5.0 of item 9 by annotator 1 is not in value_domain"
    ):
        krippendorff_alpha(KRIPPENDORFF_2011, value_domain=[1, 2, 3, 4])
    with pytest.raises(ValueError, match="strictly increasing"):
        krippendorff_alpha(KRIPPENDORFF_2011, level="ordinal", value_domain=[3, 2, 1, 4, 5])


# --- intervals -------------------------------------------------------------------------------


def test_agreement_with_item_bootstrap_intervals():
    values = noisy_annotations(missing=0.2)
    out = annotator_agreement(values, level="nominal", seed=1)
    assert set(out) == {"fleiss_kappa", "krippendorff_alpha_nominal"}
    assert out["fleiss_kappa"].value == pytest.approx(fleiss_kappa(count_table(values)))
    assert out["krippendorff_alpha_nominal"].value == pytest.approx(krippendorff_alpha(values))
    for m in out.values():
        assert m.n == 40 and m.ci_low < m.value < m.ci_high
    # resampling items: the same as recomputing α on the rows of the same index matrix, the
    # items taken in their canonical order (sorted by their labels, each item's sorted: neither
    # the rows' order nor the annotators' is an input)
    from assay.metrics._intervals import canonical_order

    shuffled = annotator_agreement(values[::-1], level="nominal", seed=1)
    assert {k: m.to_dict() for k, m in shuffled.items()} == {k: m.to_dict() for k, m in out.items()}
    others = annotator_agreement(values[:, ::-1], level="nominal", seed=1)
    assert {k: m.to_dict() for k, m in others.items()} == {k: m.to_dict() for k, m in out.items()}
    values = values[canonical_order(np.sort(values, axis=1))]
    idx = np.random.default_rng(1).integers(0, 40, size=(1000, 40))
    loop = [krippendorff_alpha(values[r]) for r in idx]
    low, high = np.percentile(loop, [2.5, 97.5])
    alpha = out["krippendorff_alpha_nominal"]
    assert (alpha.ci_low, alpha.ci_high) == pytest.approx((low, high))
    kappas = [fleiss_kappa(count_table(values[r], k=4)) for r in idx[:200]]
    from assay.metrics._annotators import _fleiss_batched, _fleiss_parts

    agree, shares = _fleiss_parts(count_table(values, k=4))
    assert _fleiss_batched(agree[idx[:200]], shares[idx[:200]]) == pytest.approx(kappas)
    assert annotator_agreement(values, seed=1) == out  # seeded


def test_agreement_n_counts_the_items_with_two_labels():
    """Krippendorff's worked example has 12 units, one of them with a single label; one more
    such item is added. α and Fleiss' κ measure agreement on the 11 with pairs: their n."""
    lonely = np.vstack([KRIPPENDORFF_2011, [NAN, 4, NAN, NAN]])
    out = annotator_agreement(lonely, n_resamples=1000)
    alpha, kappa = out["krippendorff_alpha_nominal"], out["fleiss_kappa"]
    assert alpha.value == pytest.approx(0.743, abs=5e-4)
    assert alpha.n == kappa.n == 11
    for m in (alpha, kappa):
        assert "the 2 items with one label" in m.note
    assert annotator_agreement(KRIPPENDORFF_2011[:9], n_resamples=1000)["fleiss_kappa"].note is None


def test_interval_data_gets_alpha_only():
    values = noisy_annotations(k=5).astype(float) / 2  # half-points: not category indices
    out = annotator_agreement(values, level="interval")
    assert set(out) == {"krippendorff_alpha_interval"}


# --- bad input -------------------------------------------------------------------------------


def test_bad_input():
    with pytest.raises(
        ValueError, match="rows 0 and 2 both give a label for item 'a' by annotator 'x'"
    ):
        AnnotationMatrix.from_long(["a", "b", "a"], ["x", "x", "x"], [0, 1, 1])
    with pytest.raises(ValueError, match="one entry per row"):
        AnnotationMatrix.from_long(["a", "b"], ["x"], [0, 1])
    with pytest.raises(ValueError, match="at least one item with two or more ratings"):
        fleiss_kappa([[1, 0], [0, 1]])
    with pytest.raises(ValueError, match="non-negative integer counts"):
        fleiss_kappa([[1.5, 0], [0, 2]])
    with pytest.raises(ValueError, match="at least two annotators"):
        krippendorff_alpha([[1], [2]])
    with pytest.raises(ValueError, match="level must be"):
        krippendorff_alpha(KRIPPENDORFF_2011, level="ratio")
    with pytest.raises(ValueError, match="0-based category indices"):
        count_table([[0, -1]])
