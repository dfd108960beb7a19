"""A reference label is read by the scale's own names before anything else, so the same
verdicts get the same metrics and the same disagreements whatever the order of the scale's
labels (a binary ``["True", "False"]`` once read the CSV's ``True`` as 1, the name of
``False``, and inverted every reference). Through ``assay evaluate`` with the scripted LM."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, cohen_kappa_score, confusion_matrix

from assay.cli import main
from assay.evaluation._scoring import agreement_summary
from assay.scale import Scale

# ten items; the judge is right on 7: one missed True (i3), two False called True (i6, i7)
REFS = ["True"] * 4 + ["False"] * 6
SAYS = ["True", "True", "True", "False", "False", "False", "True", "True", "False", "False"]


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # the command's caches live in its working directory


def evaluate(
    folder: Path, capsys, scale: dict[str, Any], written: list[Any], says: list[str]
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Run ``assay evaluate`` on a table whose reference column holds ``written`` and a
    scripted judge answering ``says``; its ``--json`` summary and its disagreements by id."""
    folder.mkdir()
    with (folder / "items.csv").open("w", newline="") as fh:
        rows = [(f"i{n}", f"Question {n}?", f"Answer {n}.", ref) for n, ref in enumerate(written)]
        csv.writer(fh).writerows([("id", "question", "answer", "label"), *rows])
    rules = [{"match": f"Answer {n}.", "output": {"verdict": v}} for n, v in enumerate(says)]
    (folder / "sheet.json").write_text(json.dumps({"rules": rules}))
    config = {
        "name": "refs",
        "data": {
            "path": "items.csv",
            "columns": {
                "id": "id",
                "request": "question",
                "response": "answer",
                "expected": "label",
            },
        },
        "judge": {
            "name": "j",
            "model": "scripted:sheet.json",
            "instruction": "Is the answer right?",
            "rubric": "A right answer.",
            "scale": scale,
        },
        "output_dir": str(folder / "runs"),
        "tracking": {"enabled": False},
    }
    (folder / "config.yaml").write_text(json.dumps(config))
    assert main(["evaluate", str(folder / "config.yaml"), "--quiet", "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    lines = (Path(out["run_dir"]) / "disagreements.jsonl").read_text().splitlines()
    return out, {d["id"]: d for d in map(json.loads, lines)}


def binary(
    folder: Path,
    capsys,
    labels: list[str],
    written: list[str],
    says: list[str],
    positive: str | None = None,
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """:func:`evaluate` on a binary scale named ``labels`` (and ``positive``, when given)."""
    scale = {"kind": "binary", "labels": labels}
    return evaluate(
        folder,
        capsys,
        scale if positive is None else {**scale, "positive": positive},
        written,
        says,
    )


def value(out: dict[str, Any], metric: str) -> float:
    return out["metrics"][metric]["value"]


ENCODINGS = [
    (["False", "True"], {"True": "True", "False": "False"}),
    (["no", "yes"], {"True": "yes", "False": "no"}),
    (["no", "yes"], {"True": "TRUE", "False": "false"}),  # true/false words on yes/no names
]


def case(names: list[str], spelt: dict[str, str]) -> tuple[list[str], list[str], list[str]]:
    """The references and verdicts of REFS and SAYS in ``names`` ``[false, true]``, and the
    references as written in the CSV (``spelt``)."""
    name = {"True": names[1], "False": names[0]}
    return [name[r] for r in REFS], [name[s] for s in SAYS], [spelt[r] for r in REFS]


@pytest.mark.parametrize("names, spelt", ENCODINGS)
def test_the_same_verdicts_score_the_same_whatever_the_label_order(tmp_path, capsys, names, spelt):
    refs, says, written = case(names, spelt)
    neg, pos = names
    ordered, by_order = binary(tmp_path / "a", capsys, [neg, pos], written, says)
    swapped, by_swap = binary(tmp_path / "b", capsys, [pos, neg], written, says)

    # every item read as the CSV says: judged against its own reference
    assert ordered["counts"]["paired"] == swapped["counts"]["paired"] == 10
    for out in (ordered, swapped):
        assert value(out, "accuracy") == pytest.approx(accuracy_score(refs, says))
        assert value(out, "kappa_categorical") == pytest.approx(cohen_kappa_score(refs, says))
    # the disagreements name the references the CSV holds, in either order
    expected = {f"i{n}": (r, s) for n, (r, s) in enumerate(zip(refs, says, strict=True)) if r != s}
    for records in (by_order, by_swap):
        assert {i: (d["reference_label"], d["judge_label"]) for i, d in records.items()} == expected

    # FPR/FNR are on score 1, the second label: the order swaps them
    (tn, fp), (fn, tp) = confusion_matrix(refs, says, labels=[neg, pos])
    assert value(ordered, "false_positive_rate") == pytest.approx(fp / (fp + tn))
    assert value(ordered, "false_negative_rate") == pytest.approx(fn / (fn + tp))
    assert value(swapped, "false_positive_rate") == pytest.approx(fn / (fn + tp))
    assert value(swapped, "false_negative_rate") == pytest.approx(fp / (fp + tn))


@pytest.mark.parametrize("names, spelt", ENCODINGS[:2])
def test_a_named_positive_class_makes_the_order_irrelevant(tmp_path, capsys, names, spelt):
    _, says, written = case(names, spelt)
    neg, pos = names
    ordered, by_order = binary(tmp_path / "a", capsys, [neg, pos], written, says)
    explicit, by_explicit = binary(tmp_path / "b", capsys, [pos, neg], written, says, pos)
    assert explicit["metrics"] == ordered["metrics"]  # FPR and FNR with their intervals
    assert by_explicit == by_order  # scores too: the positive label is 1 in both


def test_a_reference_the_scale_cannot_place_is_one_line_naming_the_item(tmp_path, capsys):
    written = ["True", "False", "maybe", *REFS[3:]]
    scale = {"kind": "binary", "labels": ["True", "False"]}
    with pytest.raises(AssertionError):
        evaluate(tmp_path / "a", capsys, scale, written, SAYS)
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err] and "Traceback" not in err
    assert err.endswith(
        "items.csv, row 3, field 'label': item 'i2': 'maybe' is not on the binary 0/1 "
        "(True/False) scale"
    )
    assert not (tmp_path / "a" / "runs").exists()


def test_true_false_words_are_refused_where_they_could_mean_either_name(tmp_path, capsys):
    scale = {"kind": "binary", "labels": ["yes", "unsure"]}  # is "true" yes, or score 1?
    with pytest.raises(AssertionError):
        evaluate(tmp_path / "a", capsys, scale, ["true"] * 10, ["yes"] * 10)
    err = capsys.readouterr().err.strip()
    assert "row 1, field 'label': item 'i0': True is not on the binary 0/1 (yes/unsure)" in err


def test_a_categorical_scale_reads_true_and_false_as_its_label_names(tmp_path, capsys):
    """``False|True|Unsure``: a column holding only True and False (which the CSV reader
    types as booleans) is read as the labels ``True`` and ``False``, not as 1 and 0."""
    says = [*SAYS[:9], "Unsure"]
    out, records = evaluate(tmp_path / "a", capsys, "False,True,Unsure", REFS, says)
    assert out["counts"]["paired"] == 10
    assert value(out, "accuracy") == pytest.approx(accuracy_score(REFS, says))
    assert value(out, "kappa_categorical") == pytest.approx(cohen_kappa_score(REFS, says))
    assert {i: d["reference_label"] for i, d in records.items()} == {
        f"i{n}": r for n, (r, s) in enumerate(zip(REFS, says, strict=True)) if r != s
    }


@pytest.mark.parametrize("names", [["False", "True"], ["True", "False"]])
def test_agreement_reads_an_annotation_table_by_the_same_names(tmp_path, names):
    """``assay agreement`` of a judge's verdicts (scores, in judgments.jsonl) with a table of
    human labels written as names: the table is read as evaluate reads its references."""
    import assay

    scale = Scale(kind="binary", labels=names)
    verdicts = [
        {"item_id": f"i{n}", "judge": "j", "score": scale.label_scores[s]}
        for n, s in enumerate(SAYS)
    ]
    (tmp_path / "judgments.jsonl").write_text("".join(json.dumps(v) + "\n" for v in verdicts))
    with (tmp_path / "humans.csv").open("w", newline="") as fh:
        csv.writer(fh).writerows([("id", "label"), *((f"i{n}", r) for n, r in enumerate(REFS))])
    out = assay.agreement(
        str(tmp_path / "humans.csv"),
        str(tmp_path / "judgments.jsonl"),
        scale=scale,
        id_column="id",
        score_column="label",
    )
    assert out.n == 10
    assert out.metrics["accuracy"].value == pytest.approx(accuracy_score(REFS, SAYS))
    assert out.metrics["kappa_categorical"].value == pytest.approx(cohen_kappa_score(REFS, SAYS))


@pytest.mark.parametrize(
    "labels",
    [["False", "True"], ["True", "False"], ["no", "yes"], ["yes", "no"], ["True", "False", "1"]],
)
def test_a_0_1_column_means_true_and_false_whatever_the_order_of_true_false_names(
    tmp_path, capsys, labels
):
    """References written 1/0 (1 true) against a judge answering in the scale's true/false
    names: the same metrics as sklearn's on the truth, whichever name the scale lists first. A
    ``["True", "False"]`` scale once read the 1 as its score 1, the label ``False``, and
    turned a κ of 0.4 into −0.4 with no word said; ``positive`` changes nothing of it."""
    labels, positive = labels[:2], (labels[0] if len(labels) == 3 else None)
    word = {True: next(n for n in labels if n.lower() in ("true", "yes")), False: None}
    word[False] = next(n for n in labels if n != word[True])
    says = [word[s == "True"] for s in SAYS]
    out, records = binary(
        tmp_path / "run",
        capsys,
        labels,
        ["1" if r == "True" else "0" for r in REFS],
        says,
        positive,
    )
    assert out["counts"]["paired"] == 10
    assert value(out, "accuracy") == pytest.approx(accuracy_score(REFS, SAYS))
    assert value(out, "kappa_categorical") == pytest.approx(cohen_kappa_score(REFS, SAYS))
    assert {i: d["reference_label"] for i, d in records.items()} == {
        f"i{n}": word[r == "True"]
        for n, (r, s) in enumerate(zip(REFS, SAYS, strict=True))
        if r != s
    }


def test_two_runs_with_the_same_verdicts_agree_whatever_their_scales_names(tmp_path, capsys):
    """``assay agreement`` of two runs' judgments that gave the same verdict on every item,
    one on ``["True", "False"]``, the other on ``["0", "1"]``: each reads the other's label by
    what it means (1 is true), so they agree on every item (they agreed on none)."""
    import assay

    runs = {}
    for name, labels in (("tf", ["True", "False"]), ("digits", ["0", "1"])):
        word = {
            "True": labels[0] if name == "tf" else "1",
            "False": labels[1] if name == "tf" else "0",
        }
        out, _ = binary(
            tmp_path / name, capsys, labels, [word[r] for r in REFS], [word[s] for s in SAYS]
        )
        runs[name] = Path(out["run_dir"]) / "judgments.jsonl"
    for a, b in ((runs["tf"], runs["digits"]), (runs["digits"], runs["tf"])):
        out = assay.agreement(str(a), str(b))
        assert out.n == 10 and out.metrics["accuracy"].value == 1.0
        assert out.metrics["kappa_categorical"].value == pytest.approx(1.0)


# -- the property: the order of a scale's labels is no part of its metrics ----------------------
NAMES = ["True", "False", "yes", "no", "pass", "fail", "Unsure", "A", "b"]


@st.composite
def labelled(draw: Any) -> tuple[list[str], list[str], list[str], list[str]]:
    """Label names, a permutation of them, and references and verdicts written as names."""
    names = draw(st.lists(st.sampled_from(NAMES), min_size=2, max_size=4, unique=True))
    order = draw(st.permutations(names))
    n = draw(st.integers(min_value=4, max_value=30))
    refs = draw(st.lists(st.sampled_from(names), min_size=n, max_size=n))
    says = draw(st.lists(st.sampled_from(names), min_size=n, max_size=n))
    return names, list(order), refs, says


def scale_of(names: list[str], positive: str | None = None) -> Scale:
    if len(names) == 2:
        return Scale(kind="binary", labels=names, positive=positive)
    return Scale(kind="categorical", labels=names)


def measured(scale: Scale, refs: list[str], says: list[str]) -> dict[str, Any]:
    ref = [scale.coerce(r) for r in refs]
    said = [scale.read_verdict(s) for s in says]
    summary = agreement_summary(ref, said, scale, threshold=None, n_resamples=1000, seed=3)
    return {k: (m.value, m.ci_low, m.ci_high) for k, m in summary.metrics.items()}


def same(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a == pytest.approx(b, nan_ok=True)


@settings(max_examples=60, deadline=None)
@given(labelled())
def test_permuting_the_labels_leaves_every_metric_unchanged(case):
    names, order, refs, says = case
    first, second = measured(scale_of(names), refs, says), measured(scale_of(order), refs, says)
    assert first.keys() == second.keys()
    assert same(first["accuracy"], second["accuracy"])
    assert first["accuracy"][0] == pytest.approx(accuracy_score(refs, says))
    assert same(first["kappa_categorical"], second["kappa_categorical"])
    if len(names) == 2:
        swapped = order != names  # FPR/FNR are on score 1, the second label
        fpr, fnr = (
            ("false_negative_rate", "false_positive_rate")
            if swapped
            else ("false_positive_rate", "false_negative_rate")
        )
        assert same(first["false_positive_rate"], second[fpr])
        assert same(first["false_negative_rate"], second[fnr])
        # with the positive class named, the order changes nothing at all
        explicit = measured(scale_of(order, positive=names[1]), refs, says)
        assert all(same(first[k], explicit[k]) for k in first)


def test_metrics_in_steps_say_so_where_the_scores_are_not_one_apart():
    """``low: 0, medium: 1, high: 10``: MAE, CCC, Pearson and the weighted κ are computed on the
    categories' positions, which the note says; MAE is then the mean distance in positions."""
    scale = Scale(
        kind="categorical",
        labels=["low", "medium", "high"],
        scores={"low": 0, "medium": 1, "high": 10},
    )
    ref = [0, 1, 10, 10, 1, 0, 10, 1, 0, 10]
    said = [1, 1, 0, 10, 10, 0, 1, 1, 0, 0]
    metrics = agreement_summary(ref, said, scale, threshold=None, seed=3).metrics
    position = {0: 0, 1: 1, 10: 2}
    steps = sum(abs(position[a] - position[b]) for a, b in zip(ref, said, strict=True))
    assert metrics["mae"].value == pytest.approx(steps / len(ref))
    for name in ("mae", "ccc", "pearson", "kappa_linear", "kappa_quadratic"):
        assert "in steps between neighbouring categories" in metrics[name].note, name
    assert metrics["spearman"].note is None and metrics["accuracy"].note is None
    consecutive = Scale(kind="categorical", labels=["a", "b", "c"], scores={"a": 1, "b": 2, "c": 3})
    plain = agreement_summary([1, 2, 3, 3], [1, 3, 3, 2], consecutive, threshold=None).metrics
    assert "in steps" not in (plain["mae"].note or "")


@pytest.mark.parametrize("scale", [[], ["--scale", "binary"]])
def test_a_huge_cell_is_named_by_its_start_and_length_not_echoed(tmp_path, capsys, scale):
    """A 100,000-character reference (a 200 MB one printed 200 MB of stderr and took 18 s):
    the one-line error quotes its first characters and says how long it is."""
    (tmp_path / "big.csv").write_text("id,score\na,1\nb," + "1" * 100_000 + "\n")
    (tmp_path / "ok.csv").write_text("id,score\na,1\nb,0\n")
    code = main(
        ["agreement", "big.csv", "ok.csv", "--id-column", "id", "--score-column", "score", *scale]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.splitlines() == [err] and len(err) < 400, err[:500]
    assert "big.csv, row 2, field 'score': item 'b': '1111" in err
    assert "(100,000 characters)" in err


def test_no_message_is_longer_than_a_readable_line() -> None:
    from assay.errors import MESSAGE_LIMIT, DataError

    text = str(DataError("x" * 1_000_000, path="f.csv", row=1, field="a"))
    assert text.startswith("f.csv, row 1, field 'a': xxx") and len(text) < MESSAGE_LIMIT + 80
    assert text.endswith("(the message's 1,000,025 characters cut)")
