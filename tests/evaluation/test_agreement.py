"""assay agreement on the two shared ToolEmu safety evaluations equals scikit-learn."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from assay.cli import main

SAFE = "toolemu/trajectories/gpt-4o-mini_r0-15_judge-{}_eval_agent_safe.jsonl"


def scores(path):
    return [
        json.loads(line)["eval_scores"]["ToolCallRisk"]
        for line in path.read_text().splitlines()
        if line.strip()
    ]


def test_agreement_json_equals_sklearn(example_data, capsys):
    ref_path, cand_path = (
        example_data / SAFE.format("gpt-5-mini"),
        example_data / SAFE.format("qwen3-32b"),
    )
    assert (
        main(
            [
                "agreement",
                "--json",
                str(ref_path),
                str(cand_path),
                "--scale",
                "0-3",
                "--threshold",
                "2",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    ref, cand = scores(ref_path), scores(cand_path)
    assert out["n"] == 15 and out["unscored"] == {"reference": 0, "candidate": 0}
    m = out["metrics"]
    labels = [0, 1, 2, 3]
    assert m["kappa_categorical"]["value"] == pytest.approx(
        cohen_kappa_score(ref, cand, labels=labels)
    )
    assert m["kappa_linear"]["value"] == pytest.approx(
        cohen_kappa_score(ref, cand, labels=labels, weights="linear")
    )
    assert m["kappa_quadratic"]["value"] == pytest.approx(
        cohen_kappa_score(ref, cand, labels=labels, weights="quadratic")
    )
    rb, cb = (np.array(ref) >= 2).astype(int), (np.array(cand) >= 2).astype(int)
    assert m["kappa_binary"]["value"] == pytest.approx(cohen_kappa_score(rb, cb))
    true_fail, flagged = np.array(ref) < 2, np.array(cand) < 2
    assert m["failure_precision"]["value"] == pytest.approx(
        (true_fail & flagged).sum() / flagged.sum()
    )
    assert m["failure_incidence"]["value"] == pytest.approx(
        (true_fail & flagged).sum() / true_fail.sum()
    )
    assert m["accuracy"]["value"] == pytest.approx(np.mean(np.array(ref) == np.array(cand)))
    for v in m.values():
        assert v["ci_low"] <= v["value"] + 1e-12 and v["value"] <= v["ci_high"] + 1e-12


def test_agreement_between_judgments_and_a_table(tmp_path, capsys):
    ref = tmp_path / "human.csv"
    ref.write_text("id,score\na,1\nb,0\nc,1\nd,\n")
    cand = tmp_path / "judgments.jsonl"
    cand.write_text(
        "\n".join(
            json.dumps({"item_id": i, "judge": "j", "score": s})
            for i, s in [("a", 1), ("b", 1), ("c", None), ("d", 0)]
        )
        + "\n"
    )
    assert (
        main(
            [
                "agreement",
                "--json",
                str(ref),
                str(cand),
                "--id-column",
                "id",
                "--score-column",
                "score",
                "--scale",
                "binary",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    # a: 1/1 agree, b: 0/1 disagree; c unscored by the judge; d has no reference score
    assert out["n"] == 2
    assert out["unscored"] == {"reference": 1, "candidate": 1}
    assert out["metrics"]["accuracy"]["value"] == pytest.approx(0.5)


def test_agreement_text_output(example_data, capsys):
    ref_path, cand_path = (
        example_data / SAFE.format("gpt-5-mini"),
        example_data / SAFE.format("qwen3-32b"),
    )
    assert main(["agreement", str(ref_path), str(cand_path), "--threshold", "2"]) == 0
    out = capsys.readouterr().out
    assert "kappa_quadratic" in out and "pairs scored on both sides: 15" in out


def test_tables_without_id_pair_by_row(tmp_path, capsys):
    (tmp_path / "a.csv").write_text("score\n1\n1\n0\n0\n")
    (tmp_path / "b.csv").write_text("score\n1\n0\n0\n0\n")
    assert (
        main(
            [
                "agreement",
                "--json",
                str(tmp_path / "a.csv"),
                str(tmp_path / "b.csv"),
                "--score-column",
                "score",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == 4 and out["paired_by"] == "line"
    assert out["metrics"]["accuracy"]["value"] == pytest.approx(0.75)


def test_disagreements_are_the_most_distant_pairs_first(example_data, capsys):
    ref_path, cand_path = (
        example_data / SAFE.format("gpt-5-mini"),
        example_data / SAFE.format("qwen3-32b"),
    )
    argv = ["agreement", "--json", str(ref_path), str(cand_path), "--scale", "0-3"]
    assert main([*argv, "--disagreements", "100"]) == 0
    out = json.loads(capsys.readouterr().out)
    ref, cand = scores(ref_path), scores(cand_path)
    by_hand = sorted(
        ((abs(r - c), str(i)) for i, (r, c) in enumerate(zip(ref, cand, strict=True)) if r != c),
        key=lambda x: (-x[0], x[1]),
    )
    got = [(d["distance"], d["id"]) for d in out["disagreements"]]
    assert got == [(float(d), i) for d, i in by_hand]
    assert main([*argv, "--disagreements", "2"]) == 0
    assert len(json.loads(capsys.readouterr().out)["disagreements"]) == 2


def test_several_annotators_majority_agreement_and_alt_test(tmp_path, capsys):
    """A long annotation table (5 annotators): the judge is compared with their majority, their
    own agreement equals statsmodels' Fleiss κ and krippendorff's α, and the Alt-Test runs."""
    import krippendorff
    from statsmodels.stats.inter_rater import fleiss_kappa

    from assay.metrics import AnnotationMatrix, alt_test

    rng = np.random.default_rng(7)
    truth = rng.integers(0, 2, size=60)
    labels = {}
    rows = ["item,annotator,label"]
    for a in range(5):
        noisy = np.where(rng.random(60) < 0.15, 1 - truth, truth)
        for i in range(60):
            labels[(i, a)] = int(noisy[i])
            rows.append(f"i{i},ann{a},{noisy[i]}")
    (tmp_path / "ann.csv").write_text("\n".join(rows) + "\n")
    judge = np.where(rng.random(60) < 0.1, 1 - truth, truth)
    (tmp_path / "judge.jsonl").write_text(
        "".join(
            json.dumps({"item_id": f"i{i}", "judge": "j", "score": int(judge[i])}) + "\n"
            for i in range(60)
        )
    )
    argv = ["agreement", "--json", str(tmp_path / "ann.csv"), str(tmp_path / "judge.jsonl")]
    argv += ["--id-column", "item", "--score-column", "label", "--annotator-column", "annotator"]
    assert main([*argv, "--scale", "binary"]) == 0
    out = json.loads(capsys.readouterr().out)
    matrix = np.array([[labels[(i, a)] for a in range(5)] for i in range(60)])
    majority = (matrix.sum(axis=1) >= 3).astype(int)  # 5 annotators: no tie
    assert out["n"] == 60
    assert out["metrics"]["kappa_categorical"]["value"] == pytest.approx(
        cohen_kappa_score(majority, judge)
    )
    a = out["annotators"]
    assert a["annotators"] == [f"ann{k}" for k in range(5)] and a["majority_ties"] == 0
    counts = np.stack([(matrix == 0).sum(axis=1), (matrix == 1).sum(axis=1)], axis=1)
    assert a["agreement"]["fleiss_kappa"]["value"] == pytest.approx(fleiss_kappa(counts))
    assert a["agreement"]["krippendorff_alpha_nominal"]["value"] == pytest.approx(
        krippendorff.alpha(reliability_data=matrix.T, level_of_measurement="nominal")
    )
    direct = alt_test(
        AnnotationMatrix.from_long(
            [f"i{i}" for i in range(60) for _ in range(5)],
            [f"ann{k}" for _ in range(60) for k in range(5)],
            [labels[(i, k)] for i in range(60) for k in range(5)],
        ),
        {f"i{i}": float(judge[i]) for i in range(60)},
        epsilon=0.2,
    )
    assert a["alt_test"]["winning_rate"] == pytest.approx(direct.winning_rate)
    assert a["alt_test"]["passed"] == direct.passed

    # two annotators: agreement, but no Alt-Test (it needs three), said plainly
    two = [r for r in rows if not r.split(",")[1].startswith(("ann2", "ann3", "ann4"))]
    (tmp_path / "two.csv").write_text("\n".join(two) + "\n")
    argv[2] = str(tmp_path / "two.csv")
    assert main([*argv, "--scale", "binary"]) == 0
    two_out = json.loads(capsys.readouterr().out)["annotators"]
    assert two_out["alt_test"] is None and "at least 3 annotators" in two_out["note"]


# -- a nominal multi-class scale --------------------------------------------
CLASSES = ["cat", "dog", "bird"]


def _three_classes(tmp_path, *, seed=35, n=60, names=CLASSES):
    """Five annotators and a judge label ``n`` items with one of three unordered classes
    (written as ``names``): the long annotation table, the judge's table and, by class index,
    the annotations and the judge's labels."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, n)
    humans = {}
    rows = ["item,annotator,label"]
    for a in range(5):
        noisy = np.where(rng.random(n) < 0.7, truth, rng.integers(0, 3, n))
        humans[f"ann{a}"] = {f"i{i}": int(noisy[i]) for i in range(n)}
        rows += [f"i{i},ann{a},{names[noisy[i]]}" for i in range(n)]
    judge = np.where(rng.random(n) < 0.72, truth, rng.integers(0, 3, n))
    llm = {f"i{i}": int(judge[i]) for i in range(n)}
    (tmp_path / "ann.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "judge.csv").write_text(
        "item,label\n" + "".join(f"i{i},{names[judge[i]]}\n" for i in range(n))
    )
    return humans, llm


def _agreement(tmp_path, capsys, scale):
    argv = ["agreement", "--json", str(tmp_path / "ann.csv"), str(tmp_path / "judge.csv")]
    argv += ["--id-column", "item", "--score-column", "label", "--annotator-column", "annotator"]
    assert main([*argv, "--scale", scale]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_nominal_scale_uses_nominal_alpha_and_the_accuracy_alt_test(tmp_path, capsys):
    """``--scale cat,dog,bird``: three unordered classes. Krippendorff's α is nominal (as the
    ``krippendorff`` package computes it) and the Alt-Test aligns by accuracy (the paper's
    procedure for categories); analysed as ordinal the same data gives another ω."""
    import krippendorff

    from tests.metrics.test_alt_test import reference_alt_test

    humans, llm = _three_classes(tmp_path)
    out = _agreement(tmp_path, capsys, "cat,dog,bird")
    assert out["scale"] == "categorical cat|dog|bird" and out["n"] == 60

    a = out["annotators"]
    matrix = np.array([[humans[f"ann{k}"][f"i{i}"] for k in range(5)] for i in range(60)])
    assert set(a["agreement"]) == {"fleiss_kappa", "krippendorff_alpha_nominal"}
    assert a["agreement"]["krippendorff_alpha_nominal"]["value"] == pytest.approx(
        krippendorff.alpha(reliability_data=matrix.T, level_of_measurement="nominal")
    )
    omega, rho, p_values, _ = reference_alt_test(humans, llm, "accuracy", 0.2)
    t = a["alt_test"]
    assert t["scoring"] == "accuracy"
    assert [c["p_value"] for c in t["comparisons"]] == pytest.approx(p_values, rel=1e-9)
    assert (t["winning_rate"], t["advantage_probability"]) == pytest.approx((omega, rho))
    # the judge is compared with the annotators' majority on unordered classes: no weighted κ,
    # and no disagreement is "more distant" than another (bird is not further from cat than dog)
    assert "kappa_categorical" in out["metrics"] and "kappa_linear" not in out["metrics"]
    shown = out["disagreements"]
    assert shown and {d["distance"] for d in shown} == {1.0}
    assert [d["id"] for d in shown] == sorted(d["id"] for d in shown)
    assert {d["reference_label"] for d in shown} <= set(CLASSES)

    # the same classes coded 1, 2, 3: '--scale 1,2,3' reads each number as its label
    _three_classes(tmp_path, names=["1", "2", "3"])
    coded = _agreement(tmp_path, capsys, "1,2,3")
    assert coded["annotators"]["alt_test"] == t
    assert coded["metrics"] == out["metrics"]

    # as ordinal scores (what '--scale' allowed before), α and ω are other numbers
    ordinal = _agreement(tmp_path, capsys, "1-3")["annotators"]
    assert ordinal["alt_test"]["scoring"] == "neg_rmse"
    assert ordinal["alt_test"]["winning_rate"] == pytest.approx(
        reference_alt_test(humans, llm, "neg_rmse", 0.2)[0]
    )
    assert ordinal["alt_test"]["winning_rate"] != pytest.approx(omega)
    assert "krippendorff_alpha_ordinal" in ordinal["agreement"]


def test_a_label_off_the_nominal_scale_names_file_row_and_field(tmp_path, capsys):
    _three_classes(tmp_path)
    with open(tmp_path / "judge.csv", "a") as fh:
        fh.write("i60,fish\n")
    argv = ["agreement", str(tmp_path / "judge.csv"), str(tmp_path / "judge.csv")]
    assert (
        main([*argv, "--id-column", "item", "--score-column", "label", "--scale", "cat,dog,bird"])
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "judge.csv" in err and "row 61" in err and "'label'" in err, err


def _agreement_json(capsys, *args: str) -> dict:
    capsys.readouterr()
    assert main(["agreement", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_blank_line_in_a_one_column_table_is_an_empty_cell_not_a_shift(tmp_path, capsys):
    """Paired by line, a one-column table's blank line (a spreadsheet's empty cell) is a row
    with no score: skipped, every later row paired with the wrong one (8 pairs, κ 1)."""
    (tmp_path / "a.csv").write_text("score\n1\n0\n\n1\n0\n1\n0\n1\n0\n")
    (tmp_path / "b.csv").write_text("score\n1\n0\n1\n0\n1\n\n0\n1\n0\n")
    out = _agreement_json(
        capsys, str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), "--score-column", "score"
    )
    a = [1, 0, None, 1, 0, 1, 0, 1, 0]  # the lines as written
    b = [1, 0, 1, 0, 1, None, 0, 1, 0]
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    assert out["n"] == len(pairs) == 7
    assert out["unscored"] == {"reference": 1, "candidate": 1}
    ref, cand = zip(*pairs, strict=True)
    assert out["metrics"]["accuracy"]["count"] == sum(x == y for x, y in pairs) == 5
    assert out["metrics"]["kappa_categorical"]["value"] == pytest.approx(
        cohen_kappa_score(ref, cand)
    )


def test_an_interval_a_rounding_wide_is_one_of_no_width(tmp_path, capsys):
    """A judge always two points below the humans: linear κ is 0 and Pearson's r is 1 in every
    replicate, computed as ±2e-16 and 1 − 3e-16; the intervals are said to have no width (and
    κ does not print as -0.000)."""
    rng = np.random.default_rng(1)
    scores = rng.integers(3, 6, size=30)
    (tmp_path / "r.csv").write_text(
        "id,score\n" + "".join(f"i{k},{s}\n" for k, s in enumerate(scores))
    )
    (tmp_path / "c.csv").write_text(
        "id,score\n" + "".join(f"i{k},{s - 2}\n" for k, s in enumerate(scores))
    )
    args = [str(tmp_path / "r.csv"), str(tmp_path / "c.csv"), "--id-column", "id"]
    args += ["--score-column", "score", "--scale", "1-5"]
    out = _agreement_json(capsys, *args)
    for name in ("kappa_linear", "pearson", "spearman", "mae"):
        m = out["metrics"][name]
        assert m["ci_low"] == m["ci_high"] and "no width" in m["note"], name
    assert out["metrics"]["kappa_linear"]["value"] == pytest.approx(
        cohen_kappa_score(scores, scores - 2, weights="linear"), abs=1e-12
    )
    capsys.readouterr()
    assert main(["agreement", *args]) == 0
    assert "-0.000" not in capsys.readouterr().out


def test_a_reference_of_one_score_says_so_and_writes_strict_json(tmp_path, capsys):
    """Every reference 3: no slope and no SD ratio — the reading says the reference does not
    vary (not that the judge fails to follow it), and the JSON has null, never NaN."""
    (tmp_path / "r.csv").write_text("id,score\n" + "".join(f"i{k},3\n" for k in range(20)))
    (tmp_path / "c.csv").write_text(
        "id,score\n" + "".join(f"i{k},{1 + k % 5}\n" for k in range(20))
    )
    args = [str(tmp_path / "r.csv"), str(tmp_path / "c.csv"), "--id-column", "id"]
    args += ["--score-column", "score", "--scale", "1-5"]
    capsys.readouterr()
    assert main(["agreement", "--json", *args]) == 0

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in the JSON")

    json.loads(capsys.readouterr().out, parse_constant=refuse)
    assert main(["agreement", *args]) == 0
    text = capsys.readouterr().out
    assert "the reference gave every item the same score" in text
    assert "the slope's interval reaches 0" not in text


# -- several annotators: what the console says of the Alt-Test and of the labels -------------


def _write_long(tmp_path, labels: dict[str, dict[str, str]], judge: dict[str, str]) -> list[str]:
    """ann.csv (``{annotator: {item: label}}``) and judge.csv (an empty string: unscored); the
    command's arguments for them."""
    rows = [f"{i},{a},{x}" for a, items in labels.items() for i, x in items.items()]
    (tmp_path / "ann.csv").write_text("item,annotator,label\n" + "\n".join(rows) + "\n")
    (tmp_path / "judge.csv").write_text(
        "item,label\n" + "".join(f"{i},{x}\n" for i, x in judge.items())
    )
    args = [str(tmp_path / "ann.csv"), str(tmp_path / "judge.csv"), "--id-column", "item"]
    return [*args, "--score-column", "label", "--annotator-column", "annotator"]


def _run(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["agreement", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def _skewed(tmp_path) -> list[str]:
    """100 items, 8 of them unsafe; five annotators each wrong on a tenth of the items; a judge
    that calls every item safe."""
    rng = np.random.default_rng(3)
    truth = np.zeros(100, dtype=int)
    truth[rng.choice(100, 8, replace=False)] = 1
    names = ["safe", "unsafe"]
    labels = {
        f"h{a}": {
            f"q{i}": names[int(x)]
            for i, x in enumerate(np.where(rng.random(100) < 0.1, 1 - truth, truth))
        }
        for a in range(5)
    }
    return _write_long(tmp_path, labels, {f"q{i}": "safe" for i in range(100)})


def test_a_judge_of_one_verdict_passes_the_alt_test_with_a_line_saying_it_is_no_evidence(
    tmp_path, capsys
):
    """A judge that calls every item of an 8%-unsafe set safe wins the Alt-Test (ω 1.00: it
    matches the majority class), while κ is undefined. The pass stands as computed, but the
    verdict says the judge gave one verdict and that the pass is not evidence of agreement."""
    from assay.metrics import AnnotationMatrix, alt_test

    args = [*_skewed(tmp_path), "--scale", "safe,unsafe", "--disagreements", "0"]
    code, out, _ = _run(capsys, "--json", *args)
    assert code == 0
    result = json.loads(out)
    t = result["annotators"]["alt_test"]
    rows = [line.split(",") for line in (tmp_path / "ann.csv").read_text().splitlines()[1:]]
    direct = alt_test(
        AnnotationMatrix.from_long(
            [i for i, _, _ in rows], [a for _, a, _ in rows], [x == "unsafe" for *_, x in rows]
        ),
        {f"q{i}": 0.0 for i in range(100)},
    )
    assert (t["winning_rate"], t["passed"]) == (direct.winning_rate, direct.passed) == (1.0, True)
    assert result["metrics"]["kappa_categorical"]["value"] is None
    assert "one verdict (safe)" in t["note"] and "not evidence of agreement" in t["note"]

    code, out, _ = _run(capsys, *args)
    assert code == 0
    [line] = [x for x in out.splitlines() if x.startswith("Alt-Test (")]
    assert (
        "the judge passes" in line and "but the judge gave one verdict (safe) on every item" in line
    )
    assert "not evidence of agreement" in line


def _lone_labels(tmp_path) -> list[str]:
    """80 binary items: i0..i59 labelled by ann0, ann1 and ann2 (each wrong on 6, as often
    0 → 1 as 1 → 0), i60..i79 by 'solo' alone (half of them 1, as in the others' labels); a
    judge with no verdict on i5."""
    truth = {f"i{i}": i % 2 for i in range(80)}
    labels: dict[str, dict[str, str]] = {}
    for a in range(3):
        flips = {i for i in range(60) if (i // 2) % 10 == a}  # pairs (2m, 2m + 1): 0↔1
        labels[f"ann{a}"] = {f"i{i}": str(truth[f"i{i}"] ^ (i in flips)) for i in range(60)}
    labels["solo"] = {f"i{i}": str(truth[f"i{i}"]) for i in range(60, 80)}
    judge = {i: str(x ^ (int(i[1:]) % 13 == 0)) for i, x in truth.items()}
    judge["i5"] = ""
    return _write_long(tmp_path, labels, judge)


def test_the_alt_test_names_on_the_console_the_annotators_and_items_it_left_out(tmp_path, capsys):
    """'solo' labelled only items no one else did: no item to compare on, so the Alt-Test skips
    it; the items of one label (20) and the one without a judge verdict are dropped. --json
    said so; the console says so too, each on its own line with why."""
    args = [*_lone_labels(tmp_path), "--scale", "binary", "--disagreements", "0"]
    code, out, _ = _run(capsys, "--json", *args)
    t = json.loads(out)["annotators"]["alt_test"]
    assert code == 0 and t["skipped_annotators"] == ["solo"] and t["n_items_dropped"] == 21

    code, out, _ = _run(capsys, *args)
    assert code == 0
    [skipped] = [x for x in out.splitlines() if "solo" in x and "Alt-Test" in x]
    assert "fewer than 30" in skipped
    [dropped] = [x for x in out.splitlines() if "21 of 80 items" in x]
    assert "20 have one label" in dropped and "1 has no judge verdict" in dropped


def test_an_alt_test_without_variation_gives_the_exact_bound_not_infinite_evidence(
    tmp_path, capsys
):
    """h0 and h1 give the truth on all 40 items, h2 errs on 8, and the judge copies h0: against
    h0 (and h1) every item is a tie, d = 0 throughout, and the t-test's p-value was exactly 0 —
    infinite evidence from 40 items. Its p-value is now the exact bound of what 40 ties show at
    ε = 0.2, 0.8^40 = 1.3e-4 (JSON has it as a number), the console says why; the judge still
    wins all three (BY at q = 0.05) and passes, as a copy of two of the annotators should."""
    truth = {f"i{i}": i % 2 for i in range(40)}
    labels = {
        "h0": {i: str(x) for i, x in truth.items()},
        "h1": {i: str(x) for i, x in truth.items()},
        "h2": {i: str(x ^ (int(i[1:]) < 8)) for i, x in truth.items()},
    }
    args = [*_write_long(tmp_path, labels, labels["h0"]), "--scale", "binary"]
    code, out, _ = _run(capsys, "--json", *args, "--disagreements", "0")
    assert code == 0
    t = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
    t = t["annotators"]["alt_test"]
    p = [c["p_value"] for c in t["comparisons"]]
    assert p[:2] == [pytest.approx(0.8**40, rel=1e-12)] * 2
    assert 0 < p[2] < 1e-6
    assert [c["judge_wins"] for c in t["comparisons"]] == [True, True, True]
    assert (t["winning_rate"], t["passed"]) == (1.0, True)

    code, out, _ = _run(capsys, *args, "--disagreements", "0")
    assert code == 0
    said = [x for x in out.splitlines() if "no t-test without variation" in x]
    assert said == [
        f"Alt-Test against {a}: the judge and {a} aligned with the others equally well on all "
        "40 items: no t-test without variation; p = 0.00013, the exact bound "
        "((1 − ε) / (1 − d))^n"
        for a in ("h0", "h1")
    ]


def test_the_annotators_agreement_counts_the_items_with_two_labels(tmp_path, capsys):
    """Items with one label make no pair: Krippendorff's α leaves them out, and Fleiss' κ's
    observed agreement is over the items with two or more labels (Gwet's generalisation counts
    the others in its chance agreement only). Its n is those items: 60, not 80. The one-label
    items here hold 1 as often as the others' labels, so Fleiss' κ over all 80 equals
    statsmodels' over the 60."""
    import krippendorff
    from statsmodels.stats.inter_rater import fleiss_kappa

    args = [*_lone_labels(tmp_path), "--scale", "binary", "--disagreements", "0"]
    code, out, _ = _run(capsys, "--json", *args)
    agreement = json.loads(out)["annotators"]["agreement"]
    rows = [line.split(",") for line in (tmp_path / "ann.csv").read_text().splitlines()[1:]]
    items = sorted({i for i, _, _ in rows}, key=lambda i: int(i[1:]))
    raters = sorted({a for _, a, _ in rows})
    matrix = np.full((len(items), len(raters)), np.nan)
    for i, a, x in rows:
        matrix[items.index(i), raters.index(a)] = int(x)
    paired = matrix[(~np.isnan(matrix)).sum(axis=1) >= 2]
    assert len(items) == 80 and len(paired) == 60
    counts = np.stack([(paired == 0).sum(axis=1), (paired == 1).sum(axis=1)], axis=1)

    kappa, alpha = agreement["fleiss_kappa"], agreement["krippendorff_alpha_nominal"]
    assert kappa["value"] == pytest.approx(fleiss_kappa(counts))
    assert alpha["value"] == pytest.approx(
        krippendorff.alpha(reliability_data=matrix.T, level_of_measurement="nominal")
    )
    assert alpha["value"] == pytest.approx(
        krippendorff.alpha(reliability_data=paired.T, level_of_measurement="nominal")
    )
    assert kappa["n"] == alpha["n"] == 60
    assert "20" in kappa["note"] and "one label" in kappa["note"]


def test_the_reference_of_an_item_with_one_label_is_said_to_be_that_label(tmp_path, capsys):
    """20 items were labelled by one annotator: their reference is that label, not a majority,
    and the annotators' line says so."""
    args = [*_lone_labels(tmp_path), "--scale", "binary", "--disagreements", "0"]
    code, out, _ = _run(capsys, "--json", *args)
    assert code == 0 and json.loads(out)["annotators"]["single_label_items"] == 20
    code, out, _ = _run(capsys, *args)
    [line] = [x for x in out.splitlines() if x.startswith("annotators: ")]
    assert "the reference is the majority of the annotators who labelled the item" in line
    assert "20 items have one label, which is their reference" in line
    assert "the reference is their majority" not in line


def test_nothing_to_measure_prints_the_note_and_exits_non_zero(tmp_path, capsys):
    """No item has both a judge verdict and an annotator's label, or no item has two
    annotators' labels: the note that says so is printed (it was in --json only) and the command
    exits 1 with the reason on stderr, as a run that measured nothing does."""
    labels = {a: {f"i{i}": str(i % 2) for i in range(40)} for a in "abc"}
    args = _write_long(tmp_path, labels, {f"x{i}": str(i % 2) for i in range(40)})
    args += ["--scale", "binary"]
    code, out, err = _run(capsys, *args)
    assert code == 1, out
    assert "note: no item was scored on both sides" in out
    assert err.startswith("assay: error: ") and "no item was scored on both sides" in err
    code, out, err = _run(capsys, "--json", *args)
    assert code == 1 and json.loads(out)["n"] == 0 and err.startswith("assay: error: ")

    lone = {a: {f"i{i}": str(i % 2) for i in range(40) if i % 3 == k} for k, a in enumerate("abc")}
    args = _write_long(tmp_path, lone, {f"i{i}": str(i % 2) for i in range(40)})
    args += ["--scale", "binary"]
    code, out, err = _run(capsys, *args)
    assert code == 1 and "Traceback" not in err, err
    assert "note: no item was labelled by two annotators" in out
    assert err.startswith("assay: error: ") and "no item was labelled by two annotators" in err
    code, out, err = _run(capsys, "--json", *args)
    assert code == 1 and json.loads(out)["annotators"]["agreement"] == {}

    blank = {a: {f"i{i}": "" for i in range(40)} for a in "abc"}
    args = _write_long(tmp_path, blank, {f"i{i}": str(i % 2) for i in range(40)})
    code, out, err = _run(capsys, *args, "--scale", "binary")
    assert code == 2 and err.count("\n") == 1 and "ann.csv" in err and "'label'" in err, err
    assert "no annotator gave a label" in err


# -- a run's judgments.jsonl is read by its labels ----------------------------------------------


def _judge_run(folder, name: str, scale: dict, human: list[str], says: list[str]) -> Path:
    """``assay evaluate`` as a user runs it, with a scripted judge that answers ``says[i]`` on
    item i (whose reference is ``human[i]``); the run's judgments.jsonl."""
    folder.mkdir(exist_ok=True)
    rows = ["id,request,response,expected"] + [
        f"x{i},Question {i}?,Answer {i} SAY-{s}-END.,{h}"
        for i, (h, s) in enumerate(zip(human, says, strict=True))
    ]
    (folder / "items.csv").write_text("\n".join(rows) + "\n")
    rules = [{"match": f"SAY-{s}-END", "output": {"verdict": s}} for s in sorted(set(says))]
    (folder / "sheet.json").write_text(json.dumps({"rules": rules}))
    config = {
        "name": name,
        "data": {"path": "items.csv", "columns": {"id": "id"}},
        "judge": {"name": name, "model": "scripted:sheet.json", "rubric": "r", "scale": scale},
        "concurrency": 4,
        "tracking": {"enabled": False},
    }
    (folder / f"{name}.yaml").write_text(json.dumps(config))
    assert main(["evaluate", str(folder / f"{name}.yaml"), "--quiet"]) == 0
    (run,) = Path("runs").resolve().glob(f"{name}-*")  # the working folder's runs/
    return run / "judgments.jsonl"


def _labels(path) -> dict[str, str]:
    return {j["item_id"]: j["label"] for j in map(json.loads, path.read_text().splitlines())}


def test_a_runs_judgments_are_read_by_their_labels_as_evaluate_reads_them(
    tmp_path, monkeypatch, capsys
):
    """A judge run with ``labels: [False, True], positive: False`` numbers True as 0: read by
    its integer scores against a human table of True/False, it was κ −0.950 and accuracy 0.025
    where ``evaluate`` says κ 0.950 and accuracy 0.975 (39 of 40), and two runs giving the same
    label on all 40 items agreed at accuracy 0.000. Read by its labels, each figure is
    scikit-learn's on the label texts, and without --scale (the run's own scale, from its run
    folder) every figure is evaluate's own, the positive-class rates too."""
    from sklearn.metrics import accuracy_score

    monkeypatch.chdir(tmp_path)
    human = ["True" if i % 2 else "False" for i in range(40)]
    says = [("False" if h == "True" else "True") if i == 20 else h for i, h in enumerate(human)]
    rev = _judge_run(
        tmp_path / "rev",
        "rev",
        {"kind": "binary", "labels": ["False", "True"], "positive": "False"},
        human,
        says,
    )
    fwd = _judge_run(
        tmp_path / "fwd", "fwd", {"kind": "binary", "labels": ["False", "True"]}, human, says
    )
    assert _labels(rev) == _labels(fwd) == {f"x{i}": s for i, s in enumerate(says)}
    table = tmp_path / "human.csv"
    table.write_text("id,label\n" + "".join(f"x{i},{h}\n" for i, h in enumerate(human)))
    columns = ["--id-column", "id", "--score-column", "label"]

    out = _agreement_json(capsys, str(table), str(rev), *columns, "--scale", "binary")
    m = out["metrics"]
    assert m["kappa_categorical"]["value"] == pytest.approx(cohen_kappa_score(human, says))
    assert m["accuracy"]["value"] == pytest.approx(accuracy_score(human, says)) == 0.975
    assert (m["accuracy"]["count"], m["accuracy"]["n"]) == (39, 40)

    ran = json.loads((rev.parent / "metrics.json").read_text())["metrics"]
    out = _agreement_json(capsys, str(table), str(rev), *columns)
    assert out["scale"] == "binary 0/1 (True/False)" and "config.yaml" in out["scale_origin"]
    assert out["metrics"] == ran  # every figure evaluate gave, false positive rate and all

    out = _agreement_json(capsys, str(fwd), str(rev))  # two runs, the same 40 labels
    m = out["metrics"]
    fwd_says = [_labels(fwd)[f"x{i}"] for i in range(40)]
    assert m["accuracy"]["value"] == accuracy_score(fwd_says, says) == 1.0
    assert m["accuracy"]["count"] == 40
    assert m["kappa_categorical"]["value"] == pytest.approx(1.0)


def test_a_nominal_runs_labels_give_the_same_figures_in_any_order_of_the_scale(
    tmp_path, monkeypatch, capsys
):
    """On an unordered scale the order of --scale's labels moves no figure: a judge that gives
    the human label on 27 of 30 items was accuracy 1.000-or-0.333 by the order the labels were
    listed in (its integer scores read on another numbering); now both orders give
    scikit-learn's κ and accuracy on the label texts. A label the scale does not have is a
    one-line error naming the file, row and field, and so is a label with no scale to read it
    on (a judgments file with no run folder beside it)."""
    from sklearn.metrics import accuracy_score

    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(2)
    kinds = ["safe", "unsafe", "unclear"]
    human = [str(x) for x in rng.choice(kinds, 30)]
    says = [kinds[(kinds.index(h) + 1) % 3] if i in (3, 11, 17) else h for i, h in enumerate(human)]
    run = _judge_run(tmp_path, "nominal", {"kind": "categorical", "labels": kinds}, human, says)
    table = tmp_path / "human.csv"
    table.write_text("id,label\n" + "".join(f"x{i},{h}\n" for i, h in enumerate(human)))
    columns = [str(table), str(run), "--id-column", "id", "--score-column", "label"]
    for order in ("safe,unsafe,unclear", "unclear,unsafe,safe", "unsafe,unclear,safe"):
        m = _agreement_json(capsys, *columns, "--scale", order)["metrics"]
        assert m["accuracy"]["value"] == pytest.approx(accuracy_score(human, says)) == 0.9
        assert m["kappa_categorical"]["value"] == pytest.approx(cohen_kappa_score(human, says))

    capsys.readouterr()
    assert main(["agreement", str(run), str(run), "--scale", "safe,unsafe"]) == 2
    err = capsys.readouterr().err.strip()
    row = 1 + [json.loads(x)["label"] for x in run.read_text().splitlines()].index("unclear")
    assert err.count("\n") == 0, err
    assert f"judgments.jsonl, row {row}, field 'label'" in err and "'unclear'" in err, err

    bare = tmp_path / "elsewhere" / "judgments.jsonl"
    bare.parent.mkdir()
    bare.write_text(run.read_text())
    assert main(["agreement", str(bare), str(bare)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "row 1, field 'label'" in err and "--scale" in err, err


def test_a_true_in_a_column_of_scores_is_refused_with_or_without_a_scale(tmp_path, capsys):
    """Without --scale a ``True`` among scores 2..5 was read as the score 1 (κ 1.000 against
    scores 1..5) while --scale 1-5 refused the same file: both refuse it now, in one line
    naming the file, row and field. A column of true/false words is read on a scale that
    places them (--scale binary), as scikit-learn reads them."""
    ref, cand = tmp_path / "ref.csv", tmp_path / "cand.csv"
    ref.write_text("id,score\na,True\nb,2\nc,3\nd,4\ne,5\n")
    cand.write_text("id,score\na,1\nb,2\nc,3\nd,4\ne,5\n")
    argv = ["agreement", str(ref), str(cand), "--id-column", "id", "--score-column", "score"]
    for scale in ([], ["--scale", "1-5"]):
        capsys.readouterr()
        assert main([*argv, *scale]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "ref.csv, row 1, field 'score'" in err, err
        assert "'True'" in err, err

    words = ["True", "False", "True", "True", "False", "False"]
    judge = ["True", "False", "False", "True", "False", "True"]
    ref.write_text("id,score\n" + "".join(f"i{k},{w}\n" for k, w in enumerate(words)))
    cand.write_text("id,score\n" + "".join(f"i{k},{w}\n" for k, w in enumerate(judge)))
    capsys.readouterr()
    assert main(argv) == 2  # true/false words are labels: no scale, no reading
    err = capsys.readouterr().err
    assert "row 1, field 'score'" in err and "True is not an integer label" in err, err
    m = _agreement_json(capsys, *argv[1:], "--scale", "binary")["metrics"]
    assert m["kappa_categorical"]["value"] == pytest.approx(cohen_kappa_score(words, judge))


def test_a_scale_cannot_be_inferred_from_one_score_and_the_error_says_how_to_give_it(
    tmp_path, capsys
):
    """Every score 3 and no --scale: the inferred scale was binary and the error said "3 is not
    on the binary 0/1 scale" — now it says the scale is inferred from the scores and to give
    it with --scale, and with --scale 1-5 the two files agree on every item."""
    c3 = tmp_path / "c3.csv"
    c3.write_text("id,score\na,3\nb,3\n")
    argv = [str(c3), str(c3), "--id-column", "id", "--score-column", "score"]
    capsys.readouterr()
    assert main(["agreement", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "c3.csv" in err, err
    assert "every score on both sides is 3" in err and "inferred" in err, err
    assert "--scale" in err and "binary" not in err, err
    out = _agreement_json(capsys, *argv, "--scale", "1-5")
    assert out["metrics"]["accuracy"]["value"] == 1.0 and out["scale_origin"] == "--scale"
    # two scores seen: their range is the inferred scale, and the result says so
    c3.write_text("id,score\na,3\nb,5\n")
    out = _agreement_json(capsys, *argv)
    assert (out["scale"], out["scale_origin"]) == ("ordinal 3..5", "inferred from the scores")


def test_the_threshold_notes_speak_the_scales_own_scores(tmp_path, capsys):
    """--scale 1-5 --threshold 3: the header says "failure = score < 3" and the notes said
    "index 2" (the threshold's place among the scores); they say "below 3" and "the threshold
    3" now. The figures are scikit-learn's on the scores cut at 3."""
    from sklearn.metrics import precision_score, recall_score

    ref, judge = [1, 4, 5, 2, 3], [3, 4, 5, 4, 3]  # the judge flags no failure
    r, c = tmp_path / "r.csv", tmp_path / "c.csv"
    r.write_text("id,score\n" + "".join(f"i{k},{s}\n" for k, s in enumerate(ref)))
    c.write_text("id,score\n" + "".join(f"i{k},{s}\n" for k, s in enumerate(judge)))
    argv = [str(r), str(c), "--id-column", "id", "--score-column", "score", "--scale", "1-5"]
    m = _agreement_json(capsys, *argv, "--threshold", "3")["metrics"]
    failed, flagged = np.array(ref) < 3, np.array(judge) < 3
    assert m["failure_incidence"]["value"] == recall_score(failed, flagged) == 0.0
    assert m["failure_precision"]["value"] is None  # nothing flagged: no precision
    assert math.isnan(precision_score(failed, flagged, zero_division=np.nan))
    assert m["kappa_binary"]["value"] is None  # the judge put every item on one side
    notes = [v["note"] for v in m.values() if v["note"]]
    assert "the judge flagged no failure (below 3)" in m["failure_precision"]["note"]
    assert "on the same side of the threshold 3" in m["kappa_binary"]["note"]
    assert not any("index" in n for n in notes), notes


def test_the_inferred_scale_holds_every_annotators_scores(tmp_path, capsys):
    """No --scale: the scale was inferred from the annotators' majority and the candidate only,
    so an annotator's 3 where both stayed within 0..2 ended in a 39-line traceback ("3 is not
    on the ordinal 0..2 scale") from the rater model and Dawid–Skene, which read every
    annotator's label. The scale is the range of every score read now: 0..3, and its class 3
    is fitted with the rest."""
    rng = np.random.default_rng(7)
    truth = rng.integers(0, 3, 60)
    rows, judge = [], []
    for i, t in enumerate(truth):
        for a in range(4):
            label = t if rng.random() < 0.8 else (t + 1) % 3
            rows.append(f"i{i},h{a},{3 if a == 3 and i % 12 == 0 else label}\n")
        judge.append(f"i{i},{t if rng.random() < 0.85 else (t + 2) % 3}\n")
    (tmp_path / "ann.csv").write_text("id,ann,score\n" + "".join(rows))
    (tmp_path / "judge.csv").write_text("id,score\n" + "".join(judge))
    argv = [str(tmp_path / "ann.csv"), str(tmp_path / "judge.csv"), "--id-column", "id"]
    argv += ["--score-column", "score", "--annotator-column", "ann"]
    out = _agreement_json(capsys, *argv)
    assert (out["scale"], out["scale_origin"]) == ("ordinal 0..3", "inferred from the scores")
    ds = out["annotators"]["dawid_skene"]
    assert [list(f["recall"]) for f in ds["judges"]] == [["0", "1", "2", "3"]] * 4
    assert out["scale_use"] is not None and out["scale_use"]["raters"][1:] == [
        "h0",
        "h1",
        "h2",
        "h3",
    ]


def test_a_score_off_the_given_scale_is_named_by_its_row(example_data, capsys):
    """A ToolEmu evaluator's score is read on ToolEmu's 0–3 and checked on --scale only once
    paired: it was named by its pair ("field 'reference score of 2'"), with no row to find it
    by. The line of the file and the field it was read from now, in one line."""
    ref = example_data / SAFE.format("gpt-5-mini")
    cand = example_data / SAFE.format("qwen3-32b")
    capsys.readouterr()
    assert main(["agreement", str(ref), str(cand), "--scale", "binary"]) == 2
    err = capsys.readouterr().err.strip()
    first = next(i for i, s in enumerate(scores(ref), start=1) if s not in (0, 1))
    assert err.count("\n") == 0, err
    assert f"{ref}, row {first}, field 'eval_scores': score " in err, err
    assert "is not on the binary 0/1 scale (--scale)" in err, err
