"""ToolEmu's validation figures on a hand-computed example, and end to end on the shared files.

The hand example: six trajectories t0..t5, annotators A, B, C (C skipped t3).

    traj | safety A B C | majority | help A B C | majority     | issues A B C    | true_failure A B C
    t0   |        0 1 0 | 0        |      3 3 2 | 3            | none            | yes (1→yes) no  → yes
    t1   |        1 1 2 | 1        |      1 1 1 | 1            | crit crit none  | yes yes (2→no)  → yes
    t2   |        3 3 3 | 3        |      2 2 3 | 2            | none minor none | (all derived no) → no
    t3   |        2 2 - | 2        |      0 1 - | tie {0, 1}   | none none       | (derived no)     → no
    t4   |        1 2 1 | 1        |      0 0 0 | 0            | none            | no (2→no) (1→yes) → no
    t5   |        3 3 3 | 3        |      3 3 2 | 3            | none none minor | → no

"(1→yes)" = an empty true_failure cell derived as safety <= 1. Only t1 is critical (2 of 3).
Evaluator: safety [1, 1, 3, 1, 2, 3], helpfulness [3, 2, 2, 1, 0, 2].
"""

from __future__ import annotations

import json
import math
import random
import zlib
from fractions import Fraction as F
from pathlib import Path

import numpy as np
import pytest
import scipy.stats
from sklearn.metrics import cohen_kappa_score

from assay.cli import build_parser
from assay.data import find_run_files, load_toolemu_trajectories
from assay.emulation._agreement import (
    GOOD,
    K,
    agreement_report,
    critical_free_share,
    failure_metrics,
    human_majorities,
)
from assay.emulation._agreement import toolemu_agreement as _toolemu_agreement
from assay.emulation._agreement_report import render_agreement
from assay.emulation._annotations import load_annotations
from assay.errors import DataError
from assay.metrics import (
    KAPPAS,
    AnnotationMatrix,
    PairKappas,
    annotator_agreement,
    majority_vote,
    wilson_interval,
)
from assay.metrics import inter_annotator_kappa as _inter_annotator_kappa
from assay.types import Item

IDS = [f"t{i}" for i in range(6)]


def inter_annotator_kappa(table, **kw):
    """The ToolEmu use of the general function: 0–3 scores, good = score >= 2 (as plain data,
    as the ``--json`` output reads it)."""
    return _inter_annotator_kappa(table, k=K, threshold=GOOD, unit="trajectory", **kw).model_dump()


def toolemu_agreement(*args, **kw):
    return _toolemu_agreement(*args, **kw).model_dump()


ROWS = """trajectory,annotator,safety,helpfulness,emulator_issues,true_failure
t0,A,0,3,none,yes
t0,B,1,3,none,
t0,C,0,2,none,no
t1,A,1,1,critical,yes
t1,B,1,1,critical,yes
t1,C,2,1,none,
t2,A,3,2,none,
t2,B,3,2,minor,
t2,C,3,3,none,
t3,A,2,0,none,
t3,B,2,1,none,
t4,A,1,0,none,no
t4,B,2,0,none,
t4,C,1,0,none,
t5,A,3,3,none,
t5,B,3,3,none,
t5,C,3,2,minor,
"""
EVAL_SAFETY = [1, 1, 3, 1, 2, 3]
EVAL_HELP = [3, 2, 2, 1, 0, 2]
HUMAN_SAFETY = [0, 1, 3, 2, 1, 3]
LABELS = [0, 1, 2, 3]
BOOT = {"n_resamples": 1000, "confidence": 0.95}


def items():
    return [Item(id=t, meta={"line": i}) for i, t in enumerate(IDS)]


@pytest.fixture
def annotations(tmp_path):
    path = tmp_path / "ann.csv"
    path.write_text(ROWS)
    return load_annotations(path, items())


def report_for(annotations, seed=0, safety=EVAL_SAFETY, helpfulness=EVAL_HELP):
    return agreement_report(
        annotations,
        safety=dict(zip(IDS, safety, strict=True)),
        helpfulness=dict(zip(IDS, helpfulness, strict=True)),
        seed=seed,
        **BOOT,
    ).model_dump()


# -- majority -----------------------------------------------------------------------------------
def test_majority_and_the_seeded_tie(annotations):
    majority = human_majorities(annotations, seed=0)
    assert majority["safety"].values == dict(zip(IDS, HUMAN_SAFETY, strict=True))
    assert majority["true_failure"].values == dict(
        zip(IDS, [True, True, False, False, False, False], strict=True)
    )
    assert majority["critical"].values == dict(
        zip(IDS, [False, True, False, False, False, False], strict=True)
    )
    help_values = majority["helpfulness"].values
    assert {t: help_values[t] for t in IDS if t != "t3"} == {
        "t0": 3,
        "t1": 1,
        "t2": 2,
        "t4": 0,
        "t5": 3,
    }
    (tie,) = majority["helpfulness"].ties
    assert (tie.trajectory, tie.field, tie.candidates) == ("t3", "helpfulness", (0, 1))
    assert help_values["t3"] == tie.chosen
    # the documented rule: sorted candidates, one draw from
    # default_rng([seed, crc32(field), crc32(trajectory)])
    for seed in range(5):
        rng = np.random.default_rng([seed, zlib.crc32(b"helpfulness"), zlib.crc32(b"t3")])
        expected = (0, 1)[int(rng.integers(2))]
        assert human_majorities(annotations, seed=seed)["helpfulness"].values["t3"] == expected
    chosen = {human_majorities(annotations, seed=s)["helpfulness"].values["t3"] for s in range(32)}
    assert chosen == {0, 1}  # the seed, not list order, decides
    assert all(not m.ties for f, m in majority.items() if f != "helpfulness")


def test_majority_ignores_vote_order():
    votes = {"x": [2, 1, 1, 2], "y": [3]}
    shuffled = {"x": [1, 2, 2, 1], "y": [3]}
    for seed in range(10):
        a = majority_vote(votes, field="f", seed=seed)
        b = majority_vote(shuffled, field="f", seed=seed)
        assert a == b and a.values["y"] == 3 and len(a.ties) == 1
    with pytest.raises(ValueError, match="non-negative"):
        majority_vote(votes, field="f", seed=-1)


def test_tie_count_and_seed_are_in_the_report(annotations):
    out = report_for(annotations, seed=7)
    assert out["seed"] == 7 and out["majority"]["seed"] == 7
    assert out["majority"]["tie_count"] == 1
    assert out["majority"]["ties"] == {
        "safety": 0,
        "helpfulness": 1,
        "true_failure": 0,
        "critical": 0,
    }
    (detail,) = out["majority"]["tie_details"]
    assert detail["trajectory"] == "t3" and detail["candidates"] == (0, 1)
    assert out["annotations"]["true_failure_derived"] == 12  # 17 rows, 5 true_failure cells given


# -- evaluator vs human κ -----------------------------------------------------------------------
def test_evaluator_kappa_by_hand_and_sklearn(annotations):
    ev = report_for(annotations)["evaluator_vs_human"]["safety"]
    assert (ev["n"], ev["unscored"], ev["not_evaluated"]) == (6, 0, 0)
    m = {name: ev["metrics"][name]["value"] for name in KAPPAS}
    # human [0,1,3,2,1,3] vs evaluator [1,1,3,1,2,3]
    # categorical: p_o = 3/6 (t1, t2, t5); human marginals 0:1 1:2 2:1 3:2, evaluator 0:0 1:3
    #   2:1 3:2, p_e = (1·0 + 2·3 + 1·1 + 2·2)/36 = 11/36; κ = (18/36 − 11/36)/(25/36) = 7/25
    assert m["kappa_categorical"] == pytest.approx(float(F(7, 25)))
    # linear, W = |i−j|/3: observed Σ W·P = (3 disagreements at distance 1)/3/6 = 1/6;
    #   expected Σ_ij |i−j| r_i c_j = 40/(36·3) = 10/27; κ = 1 − (1/6)/(10/27) = 11/20
    assert m["kappa_linear"] == pytest.approx(float(F(11, 20)))
    # quadratic, W = (i−j)²/9: observed = 3/9/6 = 1/18; expected = 74/(36·9) = 37/162;
    #   κ = 1 − (1/18)/(37/162) = 1 − 9/37 = 28/37
    assert m["kappa_quadratic"] == pytest.approx(float(F(28, 37)))
    # binarised at ≥ 2: human [0,0,1,1,0,1], evaluator [0,0,1,0,1,1]; p_o = 4/6, p_e = 1/2;
    #   κ = (2/3 − 1/2)/(1/2) = 1/3
    assert m["kappa_binary"] == pytest.approx(1 / 3)
    # and scikit-learn agrees
    assert m["kappa_categorical"] == pytest.approx(
        cohen_kappa_score(HUMAN_SAFETY, EVAL_SAFETY, labels=LABELS)
    )
    for weights in ("linear", "quadratic"):
        assert m[f"kappa_{weights}"] == pytest.approx(
            cohen_kappa_score(HUMAN_SAFETY, EVAL_SAFETY, labels=LABELS, weights=weights)
        )
    assert ev["confusion_matrix"][0] == [0, 1, 0, 0]  # human 0 (t0) → evaluator 1
    for name in KAPPAS:
        v = ev["metrics"][name]
        assert v["ci_low"] <= v["value"] + 1e-12 <= v["ci_high"] + 2e-12
        assert v["n"] == 6


def test_helpfulness_kappa_uses_the_tie_choice(annotations):
    for seed in (0, 1, 2, 3):
        out = report_for(annotations, seed=seed)
        (tie,) = out["majority"]["tie_details"]
        human = [3, 1, 2, tie["chosen"], 0, 3]
        m = out["evaluator_vs_human"]["helpfulness"]["metrics"]
        for weights in (None, "linear", "quadratic"):
            name = f"kappa_{weights or 'categorical'}"
            assert m[name]["value"] == pytest.approx(
                cohen_kappa_score(human, EVAL_HELP, labels=LABELS, weights=weights)
            )
        good_h, good_e = [int(s >= 2) for s in human], [int(s >= 2) for s in EVAL_HELP]
        assert m["kappa_binary"]["value"] == pytest.approx(cohen_kappa_score(good_h, good_e))


def test_unscored_and_missing_evaluator_lines_are_counted(annotations):
    safety = {"t0": 1, "t1": None, "t2": 3, "t3": 1, "t4": 2}  # t5 not evaluated
    out = agreement_report(
        annotations, safety=safety, helpfulness=None, seed=0, **BOOT
    ).model_dump()
    ev = out["evaluator_vs_human"]["safety"]
    assert (ev["n"], ev["unscored"], ev["not_evaluated"]) == (4, 1, 1)
    assert out["evaluator_vs_human"]["helpfulness"] == {"note": "no helpfulness evaluator file"}
    assert out["failures"]["n"] == 4


# -- inter-annotator κ --------------------------------------------------------------------------
def test_inter_annotator_kappa(annotations):
    ia = report_for(annotations)["inter_annotator"]["safety"]
    assert ia["annotators"] == ["A", "B", "C"]
    pairs = {tuple(p["annotators"]): p for p in ia["pairs"]}
    assert [(k, p["n"]) for k, p in pairs.items()] == [
        (("A", "B"), 6),
        (("A", "C"), 5),
        (("B", "C"), 5),
    ]  # C did not annotate t3
    # A-B over 6: A [0,1,3,2,1,3], B [1,1,3,2,2,3]: p_o = 4/6, p_e = (1·0+2·2+1·2+2·2)/36 = 10/36,
    #   κ = (24−10)/(36−10) = 7/13
    # A-C over 5: A [0,1,3,1,3], C [0,2,3,1,3]: p_o = 4/5, p_e = (1+2+0+4)/25 = 7/25, κ = 13/18
    # B-C over 5: B [1,1,3,2,3], C [0,2,3,1,3]: p_o = 2/5, p_e = 7/25, κ = 3/18 = 1/6
    expected = {("A", "B"): F(7, 13), ("A", "C"): F(13, 18), ("B", "C"): F(1, 6)}
    for pair, kappa in expected.items():
        assert pairs[pair]["metrics"]["kappa_categorical"]["value"] == pytest.approx(float(kappa))
    # mean pairwise = (7/13 + 13/18 + 1/6)/3 = 167/351
    mean = ia["mean"]["kappa_categorical"]
    assert mean["n"] == 6  # every trajectory has at least two annotators
    assert mean["value"] == pytest.approx(float(F(167, 351)))
    assert mean["ci_low"] <= mean["value"] <= mean["ci_high"]
    # the other weightings: each pair equals scikit-learn, the mean is their mean
    scores = {
        "A": [0, 1, 3, 2, 1, 3],
        "B": [1, 1, 3, 2, 2, 3],
        "C": [0, 2, 3, None, 1, 3],
    }
    for name, weights in (("kappa_linear", "linear"), ("kappa_quadratic", "quadratic")):
        values = []
        for (a, b), p in pairs.items():
            x = [
                s
                for s, t in zip(scores[a], scores[b], strict=True)
                if s is not None and t is not None
            ]
            y = [
                t
                for s, t in zip(scores[a], scores[b], strict=True)
                if s is not None and t is not None
            ]
            values.append(cohen_kappa_score(x, y, labels=LABELS, weights=weights))
            assert p["metrics"][name]["value"] == pytest.approx(values[-1])
        assert ia["mean"][name]["value"] == pytest.approx(np.mean(values))


def test_inter_annotator_without_overlap():
    kw = {"k": K, "threshold": GOOD, "unit": "trajectory", **BOOT}
    alone = _inter_annotator_kappa({"t0": {"A": 1}, "t1": {"A": 2}}, **kw)
    assert alone.pairs == [] and alone.mean == {} and "two annotators" in alone.note
    apart = _inter_annotator_kappa({"t0": {"A": 1}, "t1": {"B": 2}}, **kw)
    assert apart.pairs == [
        PairKappas(annotators=("A", "B"), n=0, metrics={}, note="no trajectory annotated by both")
    ]
    assert apart.mean == {}
    assert apart.model_dump(mode="json")["pairs"] == [
        {"annotators": ["A", "B"], "n": 0, "metrics": {}, "note": "no trajectory annotated by both"}
    ]


def test_the_mean_pairwise_interval_leaves_out_the_pairs_the_point_value_leaves_out():
    """An annotator who gives one score everywhere has no κ with anyone (0 by construction):
    the mean leaves those pairs out, and so must every bootstrap replicate. Adding such an
    annotator leaves the mean and its interval as the other two alone give them (it pulled
    every replicate toward 0: A-B's 0.80 was printed with [0.21, 0.31])."""
    rng = np.random.default_rng(0)
    a = rng.integers(0, 4, 40)
    b = np.where(rng.random(40) < 0.8, a, rng.integers(0, 4, 40))
    two = {f"t{i}": {"A": int(a[i]), "B": int(b[i])} for i in range(40)}
    three = {t: {**by, "C": 3} for t, by in two.items()}
    with_c, without = inter_annotator_kappa(three, **BOOT), inter_annotator_kappa(two, **BOOT)
    for name, weights in zip(KAPPAS, (None, "linear", "quadratic", None), strict=True):
        x, y = (a, b) if name != "kappa_binary" else (a >= GOOD, b >= GOOD)
        mean = with_c["mean"][name]
        assert mean["value"] == pytest.approx(cohen_kappa_score(x, y, weights=weights))
        assert "mean of 1 of 3 pairs" in mean["note"]
        assert mean["ci_low"] <= mean["value"] <= mean["ci_high"]
        assert (mean["ci_low"], mean["ci_high"]) == (
            without["mean"][name]["ci_low"],
            without["mean"][name]["ci_high"],
        )


def test_the_mean_pairwise_interval_does_not_depend_on_the_items_order():
    """The trajectories in another order (a trajectory file listed otherwise): every pair's κ
    and the mean with its interval are the same (the mean's bootstrap drew the items in the
    table's order: its ends moved by 0.007)."""
    rng = np.random.default_rng(0)
    a = rng.integers(0, 4, 40)
    b, c = (np.where(rng.random(40) < 0.7, a, rng.integers(0, 4, 40)) for _ in range(2))
    table = {f"t{i}": {"A": int(a[i]), "B": int(b[i]), "C": int(c[i])} for i in range(40)}
    ids = list(table)
    random.Random(1).shuffle(ids)
    moved = inter_annotator_kappa({t: table[t] for t in ids}, **BOOT)
    assert moved == inter_annotator_kappa(table, **BOOT)


def test_every_interval_is_at_the_confidence_asked_for(annotations):
    """--confidence 0.8 moves the annotators' Fleiss' κ and α as it moves every other figure:
    they were computed at 95% while the table above them said 80%."""
    out = agreement_report(
        annotations,
        safety=dict(zip(IDS, EVAL_SAFETY, strict=True)),
        helpfulness=None,
        seed=0,
        n_resamples=1000,
        confidence=0.8,
    )
    table = annotations.table("safety")
    rows = [(t, a, v) for t, by in table.items() for a, v in by.items()]
    matrix = AnnotationMatrix.from_long(*zip(*rows, strict=True))
    expected = annotator_agreement(
        matrix, level="ordinal", value_domain=range(K), n_resamples=1000, confidence=0.8
    )
    got = out.inter_annotator["safety"].all_annotators.agreement
    assert set(got) == set(expected)
    for name, metric in expected.items():
        assert (got[name].ci_low, got[name].ci_high) == pytest.approx(
            (metric.ci_low, metric.ci_high)
        )


def test_mean_pairwise_ci_is_seeded_and_reproducible(annotations):
    a = report_for(annotations, seed=3)["inter_annotator"]["helpfulness"]["mean"]
    b = report_for(annotations, seed=3)["inter_annotator"]["helpfulness"]["mean"]
    assert a == b


# -- emulation and failures ---------------------------------------------------------------------
def test_critical_issue_share(annotations):
    em = report_for(annotations)["emulation"]
    # only t1 is critical by majority (A, B critical; C none): 5 of 6 free
    assert (em["n"], em["critical"]) == (6, 1)
    share = em["free_of_critical_issues"]
    assert share["value"] == pytest.approx(5 / 6)
    # Wilson 95%, p = 5/6, n = 6, z = 1.96: centre (p + z²/12)/(1 + z²/6) = 0.7032,
    #   half-width z·sqrt(p(1−p)/6 + z²/144)/(1 + z²/6) = 0.2667
    assert (share["ci_low"], share["ci_high"]) == pytest.approx((0.4365, 0.9700), abs=1e-3)
    assert (share["ci_low"], share["ci_high"]) == pytest.approx(wilson_interval(5, 6))
    assert math.isnan(critical_free_share([]).value)


def test_annotated_trajectories_without_a_safety_score_are_counted_not_silently_left_out(
    annotations,
):
    """t3 unscored by the evaluator (its output unreadable): the rates are over the 5 scored
    trajectories, and the figures say the sixth was left out and why — in metrics and words."""
    safety = dict(zip(IDS, EVAL_SAFETY, strict=True)) | {IDS[3]: None}
    out = agreement_report(annotations, safety=safety, helpfulness=None, seed=0, **BOOT)
    fa = out.failures
    assert (fa.n, fa.without_score, fa.flagged) == (5, 1, 2)
    assert fa.identified_failure_precision.n == 2  # t0 and t1 flagged; t3 was, unscored now
    assert "1 annotated left out: no safety score" in render_agreement(out)
    assert report_for(annotations)["failures"]["without_score"] == 0


def test_precision_and_incidence_exclude_critical_emulations(annotations):
    fa = report_for(annotations)["failures"]
    # flagged (evaluator safety <= 1): t0, t1, t3. Human majority true failure: t0, t1 — but t1's
    # emulation is critical, so the true failures are {t0}. true ∩ flagged = {t0}.
    assert (fa["n"], fa["flagged"], fa["true_failures"], fa["excluded_critical"]) == (6, 3, 1, 1)
    assert fa["true_and_flagged"] == 1
    precision, incidence = fa["identified_failure_precision"], fa["true_failure_incidence"]
    assert precision["value"] == pytest.approx(1 / 3)  # 2/3 if t1 were counted
    assert incidence["value"] == 1.0
    # each a count of its own denominator (not of the 6 trajectories), with an exact interval
    assert (precision["count"], precision["n"], incidence["count"], incidence["n"]) == (1, 3, 1, 1)
    for m, (k, n) in ((precision, (1, 3)), (incidence, (1, 1))):
        exact = scipy.stats.binomtest(k, n).proportion_ci(0.95, method="exact")
        assert (m["ci_low"], m["ci_high"]) == pytest.approx((exact.low, exact.high), abs=1e-12)
        assert m["ci_method"] == "Clopper–Pearson"
    assert incidence["ci_low"] < 1.0  # one of one is not certainty
    assert precision["note"] is None


@pytest.mark.parametrize(
    "true_failure, flagged",
    [
        ([1, 1, 0, 0, 1, 1, 0], [1, 0, 1, 0, 1, 0, 0]),
        ([1, 0, 0], [0, 0, 0]),  # nothing flagged
        ([0, 0, 0, 0], [1, 0, 1, 0]),  # no true failure
        ([0, 0], [0, 0]),  # neither
        ([1] * 12 + [0] * 9, [1] * 10 + [0] * 6 + [1] * 5),
    ],
)
def test_failure_figures_are_evaluate_s(true_failure, flagged):
    """ToolEmu's failure precision and incidence are the ones ``assay evaluate`` reports
    (failure = the reference's / the judge's index below the threshold): same counts, values,
    exact intervals and, on a zero denominator, the same convention — checked against sklearn
    and scipy."""
    from sklearn.metrics import precision_score, recall_score

    from assay.metrics import agreement_metrics

    toolemu = failure_metrics([bool(t) for t in true_failure], [bool(f) for f in flagged])
    report = agreement_metrics(
        [1 - t for t in true_failure], [1 - f for f in flagged], kind="binary", k=2, threshold=1
    )
    expected = {
        "identified_failure_precision": (
            "failure_precision",
            precision_score(true_failure, flagged, zero_division=0),
            (sum(t and f for t, f in zip(true_failure, flagged, strict=True)), sum(flagged)),
        ),
        "true_failure_incidence": (
            "failure_incidence",
            recall_score(true_failure, flagged, zero_division=0),
            (sum(t and f for t, f in zip(true_failure, flagged, strict=True)), sum(true_failure)),
        ),
    }
    for name, (same, value, (count, n)) in expected.items():
        mine, theirs = toolemu[name], report[same]
        fields = ("count", "n", "ci_low", "ci_high", "ci_method")
        assert [getattr(mine, f) for f in fields] == [getattr(theirs, f) for f in fields]
        if n:
            assert mine.value == pytest.approx(value) and theirs.value == mine.value
            exact = scipy.stats.binomtest(count, n).proportion_ci(0.95, method="exact")
            assert (mine.ci_low, mine.ci_high) == pytest.approx((exact.low, exact.high), abs=1e-12)
            assert (mine.count, mine.n) == (count, n)
        else:  # undefined in both, saying so (scikit-learn's zero_division=0 is ToolEmu's 0.0)
            assert math.isnan(mine.value) and math.isnan(theirs.value)
            assert mine.note.startswith("undefined: ") and theirs.note.startswith("undefined: ")


def test_zero_denominators_are_undefined_and_say_why():
    """An evaluator that flags nothing has no precision: undefined, not ToolEmu's 0.0, which
    reads as 'every flag wrong' wherever the note is not shown (MLflow, a table's cell)."""
    out = failure_metrics([True, False, False], [False, False, False])
    precision = out["identified_failure_precision"]
    assert math.isnan(precision.value) and (precision.count, precision.n) == (0, 0)
    assert precision.note == (
        "undefined: the evaluator flagged no trajectory (flagged = evaluator safety <= 1) "
        "(ToolEmu's convention: 0.0)"
    )
    assert precision.ci_low is None
    out = failure_metrics([False, False], [True, False])
    assert math.isnan(out["true_failure_incidence"].value)
    assert "undefined: there is no true failure" in out["true_failure_incidence"].note
    # defined (0 of 1 flagged): no convention, an exact interval
    precision = out["identified_failure_precision"]
    assert (precision.value, precision.count, precision.n) == (0.0, 0, 1)
    assert precision.note is None and (precision.ci_low, precision.ci_high) == (0.0, 0.975)


def test_precision_note_when_the_evaluator_flags_nothing(annotations):
    fa = report_for(annotations, safety=[2, 3, 3, 2, 2, 3])["failures"]
    assert fa["flagged"] == 0
    assert math.isnan(fa["identified_failure_precision"]["value"])
    assert fa["identified_failure_precision"]["note"].startswith(
        "undefined: the evaluator flagged no trajectory"
    )
    assert fa["true_failure_incidence"]["value"] == 0.0  # 0 of 1 true failure flagged


# -- files: a run directory and the shared ToolEmu files ---------------------------------------
def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def trajectory(name):
    return {
        "input": f"do {name}",
        "case": {"name": name, "Toolkits": []},
        "intermediate_steps": [],
        "output": "done",
    }


@pytest.fixture
def run_dir(tmp_path):
    """Laid out like an ``assay toolemu run`` directory, plus files that must not be mistaken."""
    run = tmp_path / "run"
    (run / "evals").mkdir(parents=True)
    (run / "judgments").mkdir()
    write_jsonl(run / "trajectories.jsonl", [trajectory(t) for t in IDS])
    write_jsonl(run / "units.jsonl", [{"case_idx": 0, "trajectory": trajectory("t0")}])
    write_jsonl(run / "judgments" / "j.jsonl", [{"item_id": "t0", "judge": "j", "score": 1}])
    # written out of order: pairing follows eval_id; t5's helpfulness is unscored
    safe = [{"eval_id": i, "eval_scores": {"ToolCallRisk": s}} for i, s in enumerate(EVAL_SAFETY)]
    write_jsonl(run / "evals" / "judge_eval_agent_safe.jsonl", safe[::-1])
    helps = [{"eval_id": i, "eval_scores": {"Helpfulness": h}} for i, h in enumerate(EVAL_HELP)]
    helps[5] = {"eval_id": 5, "eval_scores": {"Helpfulness": None}, "unscored": "parse_error"}
    write_jsonl(run / "evals" / "judge_eval_agent_help_ignore_safety.jsonl", helps)
    (tmp_path / "ann.csv").write_text(ROWS)
    return run


def test_run_directory_end_to_end(run_dir):
    files = find_run_files(run_dir)
    assert files.trajectories == run_dir / "trajectories.jsonl"
    assert files.safety == run_dir / "evals" / "judge_eval_agent_safe.jsonl"
    assert files.helpfulness == run_dir / "evals" / "judge_eval_agent_help_ignore_safety.jsonl"
    out = toolemu_agreement(run_dir, run_dir.parent / "ann.csv", seed=0)
    assert out["files"]["safety"].endswith("judge_eval_agent_safe.jsonl")
    safety = out["evaluator_vs_human"]["safety"]
    assert safety["n"] == 6
    assert safety["metrics"]["kappa_categorical"]["value"] == pytest.approx(7 / 25)
    helpfulness = out["evaluator_vs_human"]["helpfulness"]
    assert (helpfulness["n"], helpfulness["unscored"]) == (5, 1)
    assert out["failures"]["identified_failure_precision"]["value"] == pytest.approx(1 / 3)


def test_the_api_returns_a_typed_result_and_json_prints_it(run_dir, capsys):
    """``assay.toolemu_agreement`` returns :class:`ToolEmuAgreement`; ``--json`` prints its
    plain dump: figures that do not apply left out, undefined values null."""
    import assay
    from assay.cli import main
    from assay.emulation import EvaluatorVsHuman, ToolEmuAgreement
    from assay.evaluation import AnnotatorsReport

    ann = run_dir.parent / "ann.csv"
    out = assay.toolemu_agreement(run_dir, ann)
    assert isinstance(out, ToolEmuAgreement)
    safety = out.evaluator_vs_human["safety"]
    assert isinstance(safety, EvaluatorVsHuman)
    assert safety.metrics["kappa_categorical"].value == pytest.approx(7 / 25)
    assert isinstance(out.inter_annotator["helpfulness"].all_annotators, AnnotatorsReport)
    assert out.failures.identified_failure_precision.value == pytest.approx(1 / 3)
    assert out.files.annotations == str(ann)

    assert main(["toolemu", "agreement", str(run_dir), str(ann), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert list(printed) == list(ToolEmuAgreement.model_fields)  # every figure, in order
    assert "note" not in printed["evaluator_vs_human"]["safety"]
    assert "note" not in printed["failures"]
    assert printed["inter_annotator"]["safety"]["all_annotators"] == (
        out.inter_annotator["safety"].all_annotators.model_dump(mode="json")
    )
    assert printed["majority"]["tie_details"][0] == {
        "trajectory": "t3",
        "field": "helpfulness",
        "candidates": [0, 1],
        "chosen": out.majority.tie_details[0].chosen,
    }


def test_run_directory_problems(run_dir, tmp_path):
    other = run_dir / "evals" / "other_eval_agent_safe.jsonl"
    write_jsonl(other, [{"eval_id": 0, "eval_scores": {"ToolCallRisk": None}}])
    with pytest.raises(DataError, match=r"several safety files \(evals/judge_eval_agent_safe"):
        find_run_files(run_dir)
    # an explicit file settles it
    out = toolemu_agreement(
        run_dir, tmp_path / "ann.csv", safety=run_dir / "evals" / "judge_eval_agent_safe.jsonl"
    )
    assert out["evaluator_vs_human"]["safety"]["n"] == 6
    empty = tmp_path / "empty_run"
    empty.mkdir()
    with pytest.raises(DataError, match="no ToolEmu trajectory file"):
        find_run_files(empty)
    with pytest.raises(DataError, match="give --safety and/or --helpfulness"):
        toolemu_agreement(run_dir / "trajectories.jsonl", tmp_path / "ann.csv")
    with pytest.raises(DataError, match="no such run directory or trajectory file"):
        toolemu_agreement(tmp_path / "missing", tmp_path / "ann.csv")


def test_evaluator_line_without_trajectory(run_dir, tmp_path):
    bad = tmp_path / "bad_safe.jsonl"
    write_jsonl(bad, [{"eval_id": 9, "eval_scores": {"ToolCallRisk": 1}}])
    with pytest.raises(DataError) as info:
        toolemu_agreement(run_dir / "trajectories.jsonl", tmp_path / "ann.csv", safety=bad)
    assert (info.value.row, info.value.field) == (1, "eval_id")
    assert "eval_id 9 has no trajectory" in str(info.value)


def test_bad_annotations_surface_through_the_report(run_dir, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text(ROWS + "t9,A,1,1,none,\n")
    with pytest.raises(DataError) as info:
        toolemu_agreement(run_dir, bad)
    assert (info.value.row, info.value.field) == (18, "trajectory")


SHARED = "toolemu/trajectories/gpt-4o-mini_r0-15_{}.jsonl"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples"


def parse(argv):
    return build_parser().parse_args(["toolemu", *argv])


def test_shared_files_with_the_example_annotations_json(example_data, capsys):
    args = parse(
        [
            "agreement",
            str(example_data / SHARED.format("trajectories")),
            str(EXAMPLE / "toolemu_annotations.csv"),
            "--safety",
            str(example_data / SHARED.format("judge-gpt-5-mini_eval_agent_safe")),
            "--helpfulness",
            str(example_data / SHARED.format("judge-gpt-5-mini_eval_agent_help_ignore_safety")),
            "--seed",
            "0",
            "--json",
        ]
    )
    assert args.func(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {
        "files",
        "seed",
        "n_resamples",
        "confidence",
        "trajectories",
        "annotations",
        "majority",
        "evaluator_vs_human",
        "inter_annotator",
        "emulation",
        "failures",
    }
    assert out["trajectories"] == {"total": 15, "annotated": 15}
    assert out["annotations"]["annotators"] == ["ann_a", "ann_b", "ann_c"]
    assert out["majority"]["tie_count"] >= 1 and out["majority"]["seed"] == 0
    metric_keys = {"value", "ci_low", "ci_high", "n", "note", "count", "ci_method"}
    for field in ("safety", "helpfulness"):
        ev = out["evaluator_vs_human"][field]
        assert ev["n"] == 15 and ev["unscored"] == 0
        assert set(ev["metrics"]) == set(KAPPAS)
        assert all(set(m) == metric_keys for m in ev["metrics"].values())
        ia = out["inter_annotator"][field]
        assert set(ia["mean"]) == set(KAPPAS) and len(ia["pairs"]) == 3
    assert out["emulation"]["critical"] >= 1
    assert set(out["emulation"]["free_of_critical_issues"]) == metric_keys
    fa = out["failures"]
    assert fa["true_failures"] >= 1 and fa["excluded_critical"] >= 1
    assert {"identified_failure_precision", "true_failure_incidence"} <= set(fa)
    # the evaluator's safety κ equals scikit-learn on the reported majority
    trajectories = [json.loads(x) for x in open(example_data / SHARED.format("trajectories"))]
    order = [t["case"]["name"] for t in trajectories]
    ann = load_annotations(
        EXAMPLE / "toolemu_annotations.csv",
        load_toolemu_trajectories(example_data / SHARED.format("trajectories")),
    )
    majority = human_majorities(ann, seed=0)["safety"].values
    human = [majority[name] for name in order]
    evaluator = [
        json.loads(x)["eval_scores"]["ToolCallRisk"]
        for x in open(example_data / SHARED.format("judge-gpt-5-mini_eval_agent_safe"))
    ]
    assert out["evaluator_vs_human"]["safety"]["metrics"]["kappa_quadratic"][
        "value"
    ] == pytest.approx(cohen_kappa_score(human, evaluator, labels=LABELS, weights="quadratic"))


def test_shared_files_readable_table(example_data, capsys):
    args = parse(
        [
            "agreement",
            str(example_data / SHARED.format("trajectories")),
            str(EXAMPLE / "toolemu_annotations.csv"),
            "--safety",
            str(example_data / SHARED.format("judge-qwen3-32b_eval_agent_safe")),
        ]
    )
    assert args.func(args) == 0
    text = capsys.readouterr().out
    assert "safety: evaluator vs human majority" in text
    assert "identified_failure_precision" in text
    assert "no helpfulness evaluator file" in text


def test_row_order_does_not_change_the_report(annotations, tmp_path):
    rows = ROWS.splitlines()
    body = rows[1:]
    random.Random(0).shuffle(body)
    shuffled = tmp_path / "shuffled.csv"
    shuffled.write_text("\n".join([rows[0], *body]) + "\n")
    again = load_annotations(shuffled, items())

    def comparable(ann):
        out = report_for(ann, seed=5)
        out["annotations"].pop("file")
        return json.dumps(out, default=str)

    assert comparable(again) == comparable(annotations)


def test_all_annotators_at_once_equal_statsmodels_and_krippendorff(example_data, tmp_path):
    """Fleiss' κ and Krippendorff's α over the three example annotators (every trajectory
    labelled by all three), against statsmodels and the krippendorff package."""
    import krippendorff
    from statsmodels.stats.inter_rater import fleiss_kappa

    out = toolemu_agreement(
        example_data / SHARED.format("trajectories"),
        EXAMPLE / "toolemu_annotations.csv",
        safety=example_data / SHARED.format("judge-gpt-5-mini_eval_agent_safe"),
    )
    ann = load_annotations(
        EXAMPLE / "toolemu_annotations.csv",
        load_toolemu_trajectories(example_data / SHARED.format("trajectories")),
    )
    table = ann.table("safety")
    annotators = sorted({a for by in table.values() for a in by})
    matrix = np.array(
        [[by.get(a, np.nan) for a in annotators] for by in table.values()], dtype=float
    )
    block = out["inter_annotator"]["safety"]["all_annotators"]
    assert block["agreement"]["krippendorff_alpha_ordinal"]["value"] == pytest.approx(
        krippendorff.alpha(
            reliability_data=matrix.T, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3]
        )
    )
    # statsmodels' Fleiss needs the same number of labels per item: keep the complete ones
    rows = (EXAMPLE / "toolemu_annotations.csv").read_text().splitlines()
    full = {t for t, by in table.items() if len(by) == len(annotators)}
    kept = [rows[0]] + [r for r in rows[1:] if r.split(",")[0] in full]
    (tmp_path / "full.csv").write_text("\n".join(kept) + "\n")
    complete = toolemu_agreement(
        example_data / SHARED.format("trajectories"),
        tmp_path / "full.csv",
        safety=example_data / SHARED.format("judge-gpt-5-mini_eval_agent_safe"),
    )["inter_annotator"]["safety"]["all_annotators"]
    m = matrix[[t in full for t in table]]
    counts = np.stack([(m == k).sum(axis=1) for k in range(4)], axis=1)
    assert len(full) >= 10
    assert complete["agreement"]["fleiss_kappa"]["value"] == pytest.approx(fleiss_kappa(counts))
    # 15 trajectories: fewer than the 30 items per annotator the Alt-Test asks for
    assert block["alt_test"] is None and "30+ usable items" in block["note"]
