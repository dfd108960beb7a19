import math

import numpy as np
import pytest
import scipy.stats
from statsmodels.stats.multitest import multipletests

from assay.metrics import AnnotationMatrix, alt_test
from assay.metrics._alt_test import _rejected

# Six items, three annotators and a judge; repeated ten times below (60 items).
#        A  B  C  judge
BLOCK = [
    (1, 1, 1, 1),
    (0, 0, 0, 0),
    (1, 1, 0, 1),
    (0, 1, 1, 1),
    (1, 0, 0, 0),
    (1, 1, 1, 0),
]
# Leave A out: the judge vs A against {B, C} per item: tie, tie, tie (½ vs ½), judge, judge, A
#   -> d = 1[A ≥ judge] − 1[judge ≥ A] = (0, 0, 0, −1, −1, +1); ρ_A = 5/6
# Leave B out: ties everywhere except item 6 (B matches {A, C}, the judge does not)
#   -> d = (0, 0, 0, 0, 0, +1); ρ_B = 5/6
# Leave C out: item 3 the judge matches {A, B} and C does not; item 6 the other way round
#   -> d = (0, 0, −1, 0, 0, +1); ρ_C = 5/6
D = {"A": [0, 0, 0, -1, -1, 1], "B": [0, 0, 0, 0, 0, 1], "C": [0, 0, -1, 0, 0, 1]}


def block_data(repeats=10):
    annotations = {a: {} for a in "ABC"}
    judge = {}
    for r in range(repeats):
        for i, (a, b, c, j) in enumerate(BLOCK):
            item = f"{r}-{i}"
            annotations["A"][item], annotations["B"][item], annotations["C"][item] = a, b, c
            judge[item] = j
    return AnnotationMatrix.from_mapping(annotations), judge


def one_sided_p(d, epsilon):
    """The t-test written out: t = (mean d − ε) / (s / √n), p = P(T_{n−1} ≤ t)."""
    d = np.asarray(d, dtype=float)
    n = d.size
    t = (d.mean() - epsilon) / (d.std(ddof=1) / math.sqrt(n))
    return scipy.stats.t.cdf(t, n - 1)


def test_hand_example_by_versus_bh():
    m, judge = block_data()
    eps = 0.15
    p = {a: one_sided_p(D[a] * 10, eps) for a in "ABC"}
    # C sits between the BY and BH thresholds for rank 2 of m = 3 at q = .05:
    h3 = 1 + 1 / 2 + 1 / 3
    assert p["A"] < 1 / 3 * 0.05 / h3  # rank 1, both reject
    assert 2 / 3 * 0.05 / h3 < p["C"] < 2 / 3 * 0.05  # rank 2: BY keeps H0, BH rejects it
    assert p["B"] > 0.5

    by = alt_test(m, judge, epsilon=eps, min_items_per_annotator=30)
    assert [c.annotator for c in by.comparisons] == ["A", "B", "C"]
    assert [c.p_value for c in by.comparisons] == pytest.approx([p["A"], p["B"], p["C"]])
    assert [c.judge_advantage for c in by.comparisons] == pytest.approx([5 / 6] * 3)
    assert [c.annotator_advantage for c in by.comparisons] == pytest.approx([4 / 6, 1, 5 / 6])
    assert [c.judge_wins for c in by.comparisons] == [True, False, False]
    assert by.winning_rate == pytest.approx(1 / 3) and not by.passed
    assert by.advantage_probability == pytest.approx(5 / 6)
    assert (by.n_items, by.n_items_dropped, by.fdr, by.scoring) == (60, 0, "by", "accuracy")

    bh = alt_test(m, judge, epsilon=eps, fdr="bh")
    assert [c.judge_wins for c in bh.comparisons] == [True, False, True]
    assert bh.winning_rate == pytest.approx(2 / 3) and bh.passed

    # with the reference's default ε = 0.2 both A and C fall under the BY thresholds
    assert alt_test(m, judge).winning_rate == pytest.approx(2 / 3)


# --- against a plain transcription of the reference algorithm -------------------------------


def reference_alt_test(humans, llm, scoring, epsilon, q=0.05, min_humans=2, min_items=30):
    """The published procedure written out with dicts and loops (nitaytech/AltTest)."""

    def align(pred, others):
        if scoring == "accuracy":
            return sum(pred == o for o in others) / len(others)
        return -math.sqrt(sum((pred - o) ** 2 for o in others) / len(others))

    raters = {}
    for h, labels in humans.items():
        for item in labels:
            raters.setdefault(item, []).append(h)
    usable = {i for i, hs in raters.items() if len(hs) >= min_humans and i in llm}
    p_values, rhos = [], []
    for h, labels in humans.items():
        items = [i for i in labels if i in usable]
        if len(items) < min_items:
            continue
        d, wins = [], []
        for i in items:
            others = [humans[g][i] for g in raters[i] if g != h]
            human, judge = align(labels[i], others), align(llm[i], others)
            d.append(int(human >= judge) - int(judge >= human))
            wins.append(int(judge >= human))
        p_values.append(scipy.stats.ttest_1samp(d, epsilon, alternative="less").pvalue)
        rhos.append(sum(wins) / len(wins))
    # Benjamini–Yekutieli step-up: reject the k smallest, k the largest rank under its threshold
    m = len(p_values)
    harmonic = sum(1 / r for r in range(1, m + 1))
    order = sorted(range(m), key=lambda k: p_values[k])
    k_max = max(
        (r for r in range(1, m + 1) if p_values[order[r - 1]] <= r / m * q / harmonic), default=0
    )
    return k_max / m, sum(rhos) / m, p_values, rhos


def simulated(seed, n_items=80, n_annotators=5, k=4, missing=0.25, judge_noise=0.3):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, k, n_items)
    humans = {}
    for a in range(n_annotators):
        noisy = np.where(rng.random(n_items) < 0.65, truth, rng.integers(0, k, n_items))
        humans[f"h{a}"] = {f"i{i}": int(noisy[i]) for i in range(n_items) if rng.random() > missing}
    judged = np.where(rng.random(n_items) < 1 - judge_noise, truth, rng.integers(0, k, n_items))
    llm = {f"i{i}": int(judged[i]) for i in range(n_items) if rng.random() > 0.05}
    return humans, llm


@pytest.mark.parametrize("scoring", ["accuracy", "neg_rmse"])
@pytest.mark.parametrize("epsilon", [0.1, 0.2])
@pytest.mark.parametrize("seed", range(4))
def test_equals_the_reference_procedure(scoring, epsilon, seed):
    humans, llm = simulated(seed, judge_noise=0.15 + 0.1 * seed)
    omega, rho, p_values, rhos = reference_alt_test(humans, llm, scoring, epsilon)
    got = alt_test(AnnotationMatrix.from_mapping(humans), llm, scoring=scoring, epsilon=epsilon)
    assert [c.p_value for c in got.comparisons] == pytest.approx(p_values, rel=1e-9)
    assert [c.judge_advantage for c in got.comparisons] == pytest.approx(rhos)
    assert got.winning_rate == pytest.approx(omega)
    assert got.advantage_probability == pytest.approx(rho)
    assert got.passed == (omega >= 0.5)


def test_the_simulated_cases_include_wins_and_losses():
    # so that the comparison above exercises the FDR step, not only p-values
    omegas = {
        reference_alt_test(*simulated(s, judge_noise=0.15 + 0.1 * s), "accuracy", 0.2)[0]
        for s in range(4)
    }
    assert min(omegas) < 0.5 <= max(omegas)


def test_custom_scoring_function_equals_the_builtin():
    humans, llm = simulated(1)
    m = AnnotationMatrix.from_mapping(humans)

    def share_equal(label, others):
        return float(np.mean(others == label))

    custom = alt_test(m, llm, scoring=share_equal)
    builtin = alt_test(m, llm)
    assert [c.p_value for c in custom.comparisons] == [c.p_value for c in builtin.comparisons]
    assert custom.scoring == "share_equal"


@pytest.mark.parametrize("method", ["by", "bh"])
def test_fdr_control_equals_statsmodels(method):
    rng = np.random.default_rng(0)
    for _ in range(200):
        p = rng.random(rng.integers(1, 12)) ** 3
        expected = multipletests(p, alpha=0.05, method=f"fdr_{method}")[0]
        assert np.array_equal(_rejected(p, 0.05, method), expected)
    assert not _rejected(np.array([np.nan, 1e-9]), 0.05, "by")[0]  # nan is never a win


# --- a difference that does not vary ---------------------------------------------------------


def constant_case(judge_flips: int, h2_flips: int, n=40):
    """h0 and h1 give the truth on all ``n`` items, h2 gets the first ``h2_flips`` wrong and the
    judge the first ``judge_flips``."""
    truth = np.arange(n) % 2
    h2, judged = truth.copy(), truth.copy()
    h2[:h2_flips] ^= 1
    judged[:judge_flips] ^= 1
    labels = {"h0": truth, "h1": truth, "h2": h2}
    humans = {a: {f"i{i}": int(x[i]) for i in range(n)} for a, x in labels.items()}
    return humans, {f"i{i}": float(judged[i]) for i in range(n)}


@pytest.mark.parametrize(
    ("judge_flips", "h2_flips", "untested", "advantages"),
    [
        # the judge copies h0 = h1: against each of them every item ties (d = 0 throughout);
        # against h2, wrong on 8 items, the judge aligns better there (d = −1) and d varies
        (0, 8, {"h0", "h1"}, [(1.0, 1.0), (1.0, 1.0), (1.0, 0.8)]),
        # h2 wrong everywhere, the judge right: better than h2 on every item (d = −1 on all 40),
        # and against h0 or h1 (the others half right, half wrong) a tie on every item
        (0, 40, {"h0", "h1", "h2"}, [(1.0, 1.0), (1.0, 1.0), (1.0, 0.0)]),
        # the judge wrong everywhere: every annotator aligns better on every item (d = +1)
        (40, 0, {"h0", "h1", "h2"}, [(0.0, 1.0), (0.0, 1.0), (0.0, 1.0)]),
    ],
)
@pytest.mark.filterwarnings("ignore:Precision loss occurred:RuntimeWarning")  # scipy, constant d
def test_a_difference_that_does_not_vary_has_the_exact_bound_as_its_p_value(
    judge_flips, h2_flips, untested, advantages
):
    """Where d is the same value c on every item its standard error is 0 and the t statistic
    ±inf: scipy's p-value is exactly 0 below ε (or 1 above it), infinite evidence from 40 items.
    The p-value there is the exact bound ((1 − ε) / (1 − c))^n (1 when c ≥ ε) — checked against
    a linear program over every distribution of d on {−1, 0, 1} with a mean of at least ε —; the
    annotators whose d varies keep scipy's p-value."""
    humans, judge = constant_case(judge_flips, h2_flips)
    got = alt_test(AnnotationMatrix.from_mapping(humans), judge)
    _, _, p_values, _ = reference_alt_test(humans, judge, "accuracy", 0.2)
    assert [(c.judge_advantage, c.annotator_advantage) for c in got.comparisons] == advantages
    for c, scipy_p in zip(got.comparisons, p_values, strict=True):
        if c.annotator in untested:
            assert scipy_p in (0.0, 1.0)  # what the plain t-test claims of a constant d
            d = c.annotator_advantage - c.judge_advantage  # every item's difference
            assert c.p_value == pytest.approx(largest_chance_at_most(d, 0.2) ** 40, rel=1e-9)
        else:
            assert c.p_value == pytest.approx(scipy_p, rel=1e-12) and 0 < c.p_value < 1e-6
    # BY over three annotators at q = 0.05: 0.8^40 = 1.3e-4 and 0.4^40 are wins, 1 is not
    wins = [c.judge_wins for c in got.comparisons]
    assert wins == [c.p_value < 1e-3 for c in got.comparisons]
    assert got.passed == (judge_flips == 0)


def largest_chance_at_most(c: float, epsilon: float) -> float:
    """max P(d ≤ c) over the distributions of d on {−1, 0, 1} with E[d] ≥ ε (scipy's linprog):
    the chance, under H0, that one item's difference is no greater than c."""
    from scipy.optimize import linprog

    values = np.array([-1.0, 0.0, 1.0])
    res = linprog(
        -(values <= c).astype(float),  # maximise the mass at or below c
        A_ub=[-values],  # −E[d] ≤ −ε
        b_ub=[-epsilon],
        A_eq=[np.ones(3)],
        b_eq=[1.0],
        bounds=[(0, 1)] * 3,
    )
    assert res.status == 0
    return -res.fun


# --- dropped items, skipped annotators, bad input --------------------------------------------


def test_dropped_items_and_skipped_annotators_are_reported():
    humans, llm = simulated(2, n_annotators=4, n_items=80, missing=0.1)
    humans["h3"] = dict(list(humans["h3"].items())[:10])  # too few items for a t-test
    humans["h0"]["lonely"] = 1  # one annotator only
    llm.pop("i0", None)
    r = alt_test(AnnotationMatrix.from_mapping(humans), llm)
    assert r.skipped_annotators == ("h3",)
    assert [c.annotator for c in r.comparisons] == ["h0", "h1", "h2"]
    m = AnnotationMatrix.from_mapping(humans)
    usable = [(c >= 2 and i in llm) for i, c in zip(m.item_ids, m.counts, strict=True)]
    assert r.n_items == sum(usable) and r.n_items_dropped == len(usable) - sum(usable)


def test_fewer_than_three_annotators_is_an_error():
    m = AnnotationMatrix.from_mapping({"a": {"x": 1, "y": 0}, "b": {"x": 1, "y": 1}})
    with pytest.raises(ValueError, match="at least 3 annotators .* got 2"):
        alt_test(m, {"x": 1, "y": 0})
    humans, llm = simulated(3, n_annotators=3)
    humans["h2"] = dict(list(humans["h2"].items())[:5])
    with pytest.raises(ValueError, match="3 annotators with 30\\+ usable items each, got 2"):
        alt_test(AnnotationMatrix.from_mapping(humans), llm)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"epsilon": -0.1}, "epsilon must be in"),
        ({"q": 0}, "q must be strictly between"),
        ({"fdr": "bonferroni"}, "fdr must be"),
        ({"scoring": "f1"}, "scoring must be"),
        ({"min_items_per_annotator": 1}, "at least 2"),
    ],
)
def test_bad_options(kwargs, message):
    m, judge = block_data()
    with pytest.raises(ValueError, match=message):
        alt_test(m, judge, **kwargs)


def test_an_unscored_judgment_must_be_decided_by_the_caller():
    m, judge = block_data()
    judge["0-0"] = None
    with pytest.raises(ValueError, match="label of item '0-0' must be a number, got None"):
        alt_test(m, judge)
