"""Relations ``assay agreement`` holds, through the command line on long annotation tables
(several annotators per item, majority ties included) and a judge's table: the rows' order of
either file, the order a nominal scale lists its labels in, and the annotators' names leave every
figure as it was — the metrics and their intervals, the annotators' own agreement, the majority's
ties and the Alt-Test; renaming the items leaves every figure and the disagreements carry the new
names.

Drawn by hypothesis: item sets of 3 classes with 3 to 6 annotators (even counts give ties)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.cli import main

CLASSES = ["cat", "dog", "bird"]
SETTINGS = settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def annotations(
    seed: int, n: int, annotators: int, *, ties: bool = True
) -> tuple[list[tuple], list[tuple]]:
    """``(item, annotator, label)`` rows and ``(item, label)`` judge rows: a truth per item,
    each annotator right 70% of the time, the judge 75%; without ``ties`` (3 annotators) the
    third repeats the first, so every item has a majority."""
    rng = random.Random(seed)
    truth = [rng.randrange(3) for _ in range(n)]

    def noisy(i: int, p: float) -> str:
        return CLASSES[truth[i] if rng.random() < p else rng.randrange(3)]

    labels = [[noisy(i, 0.7) for i in range(n)] for _ in range(annotators)]
    if not ties:
        assert annotators == 3
        labels[2] = labels[0]
    rows = [(f"i{i}", f"ann{a}", labels[a][i]) for a in range(annotators) for i in range(n)]
    judge = [(f"i{i}", noisy(i, 0.75)) for i in range(n)]
    return rows, judge


def agreement(folder: Path, rows, judge, scale: str, capsys, *extra: str) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ann.csv").write_text(
        "item,annotator,label\n" + "".join(f"{i},{a},{x}\n" for i, a, x in rows)
    )
    (folder / "judge.csv").write_text("item,label\n" + "".join(f"{i},{x}\n" for i, x in judge))
    argv = ["agreement", "--json", str(folder / "ann.csv"), str(folder / "judge.csv")]
    argv += ["--id-column", "item", "--score-column", "label", "--annotator-column", "annotator"]
    capsys.readouterr()
    assert main([*argv, "--scale", scale, "--disagreements", "1000", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def figures(out: dict) -> dict:
    """Every figure of the result, with what names or orders items, labels and annotators
    taken out: disagreements as a multiset by label names, the confusion matrix by label names,
    the Alt-Test's comparisons by annotator."""
    shown = out["scale"].split(" ", 1)[1].split("|")
    confusion = {
        (shown[r], shown[c]): count
        for r, row in enumerate(out["confusion_matrix"]["rows_reference"])
        for c, count in enumerate(row)
    }
    ann = dict(out["annotators"])
    # Dawid–Skene's section follows the annotators' names and the labels' order in its
    # bootstrap (docs/guarantees.md says so); the rows' order is checked whole, with it
    ann.pop("dawid_skene", None)
    alt = dict(ann.pop("alt_test") or {})
    comparisons = sorted(
        tuple(sorted((k, v) for k, v in c.items() if k != "annotator"))
        for c in alt.pop("comparisons", [])
    )
    ann.pop("annotators")
    return {
        "metrics": out["metrics"],
        "n": out["n"],
        "unscored": out["unscored"],
        "confusion": confusion,
        "disagreements": sorted(
            (d["reference_label"], d["judge_label"]) for d in out["disagreements"]
        ),
        "annotators": ann,
        "alt_test": alt,
        "comparisons": comparisons,
    }


@SETTINGS
@given(
    seed=st.integers(0, 10**6),
    n=st.integers(30, 45),
    annotators=st.integers(3, 6),
    order=st.permutations(CLASSES),
)
def test_rows_labels_and_annotators_order_and_names_do_not_matter(
    tmp_path_factory, capsys, seed, n, annotators, order
):
    rows, judge = annotations(seed, n, annotators)
    folder = tmp_path_factory.mktemp("agreement")
    base = agreement(folder / "base", rows, judge, ",".join(CLASSES), capsys)
    rng = random.Random(seed)

    # the rows of both files shuffled
    shuffled = agreement(
        folder / "rows",
        rng.sample(rows, len(rows)),
        rng.sample(judge, n),
        ",".join(CLASSES),
        capsys,
    )
    assert shuffled == base

    # the nominal scale's labels listed in another order
    listed = agreement(folder / "labels", rows, judge, ",".join(order), capsys)
    assert figures(listed) == figures(base)

    # the annotators renamed (and so listed in another order)
    names = {f"ann{a}": f"rater-{b}" for a, b in enumerate(rng.sample(range(99), annotators))}
    renamed = agreement(
        folder / "annotators",
        [(i, names[a], x) for i, a, x in rows],
        judge,
        ",".join(CLASSES),
        capsys,
    )
    assert figures(renamed) == figures(base)
    assert sorted(renamed["annotators"]["annotators"]) == sorted(names.values())


@pytest.mark.parametrize("ties", [False, True], ids=["no-ties", "ties"])
def test_renaming_the_items_keeps_the_figures_and_the_disagreements_carry_the_new_names(
    tmp_path, capsys, ties
):
    """A bijection on the ids. Without majority ties every figure is equal and the
    disagreements carry the new names. A tie is drawn per item from the seed and the item's
    id, so a renamed item may break its tie the other way: there the relation is what the draw
    promises — as many ties — and the annotators' own agreement, which reads no majority."""
    rows, judge = annotations(11, 40, 4 if ties else 3, ties=ties)
    base = agreement(tmp_path / "base", rows, judge, ",".join(CLASSES), capsys)
    rename = {f"i{i}": f"q-{k:03d}" for i, k in enumerate(random.Random(3).sample(range(999), 40))}
    moved = agreement(
        tmp_path / "renamed",
        [(rename[i], a, x) for i, a, x in rows],
        [(rename[i], x) for i, x in judge],
        ",".join(CLASSES),
        capsys,
    )
    assert moved["annotators"]["majority_ties"] == base["annotators"]["majority_ties"]
    assert (base["annotators"]["majority_ties"] > 0) == ties
    assert moved["annotators"]["agreement"] == base["annotators"]["agreement"]
    if not ties:
        assert figures(moved) == figures(base)
        back = {v: k for k, v in rename.items()}
        assert sorted((back[d["id"]], d["judge_label"]) for d in moved["disagreements"]) == sorted(
            (d["id"], d["judge_label"]) for d in base["disagreements"]
        )


def two_tables(folder: Path, reference, judge, scale: str, capsys, *extra: str) -> dict:
    """``assay agreement --json`` of two ``(item, score)`` tables on ``scale``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in (("ref.csv", reference), ("judge.csv", judge)):
        (folder / name).write_text("item,score\n" + "".join(f"{i},{s}\n" for i, s in rows))
    argv = ["agreement", "--json", str(folder / "ref.csv"), str(folder / "judge.csv")]
    argv += ["--id-column", "item", "--score-column", "score", "--scale", scale, *extra]
    capsys.readouterr()
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def scores(seed: int, n: int, top: int) -> tuple[list[tuple], list[tuple]]:
    """A reference on 1..top and a judge within a step of it, 70% of the time on it."""
    rng = random.Random(seed)
    ref = [rng.randint(1, top) for _ in range(n)]
    judge = [r if rng.random() < 0.7 else min(top, max(1, r + rng.choice((-1, 1)))) for r in ref]
    return [(f"i{i}", s) for i, s in enumerate(ref)], [(f"i{i}", s) for i, s in enumerate(judge)]


@pytest.mark.parametrize(("scale", "top"), [("1-5", 5), ("binary", 2)])
def test_the_data_set_twice_keeps_every_value_and_narrows_every_interval(
    tmp_path, capsys, scale, top
):
    """Each item twice (as a new item): every figure is a share or a moment of the pairs, so
    its value stays; its interval is over twice the items, so it narrows."""
    ref, judge = scores(5, 60, top)
    if scale == "binary":  # 1..2 as 0..1
        ref, judge = ([(i, s - 1) for i, s in side] for side in (ref, judge))
    twice = [*ref, *[(f"{i}-again", s) for i, s in ref]]
    judge_twice = [*judge, *[(f"{i}-again", s) for i, s in judge]]
    extra = ("--threshold", "3") if scale == "1-5" else ()
    base = two_tables(tmp_path / "once", ref, judge, scale, capsys, *extra)
    doubled = two_tables(tmp_path / "twice", twice, judge_twice, scale, capsys, *extra)
    assert doubled["n"] == 2 * base["n"]
    assert base["metrics"].keys() == doubled["metrics"].keys()
    for name, m in base["metrics"].items():
        d = doubled["metrics"][name]
        assert d["value"] == pytest.approx(m["value"]), name
        assert d["n"] == 2 * m["n"], name
        assert d["ci_high"] - d["ci_low"] < m["ci_high"] - m["ci_low"], name


def test_swapping_the_judge_and_the_reference_keeps_the_symmetric_figures(tmp_path, capsys):
    """κ (every weighting), accuracy, CCC, the correlations and MAE do not say which side is
    the reference: their values and intervals stay, to the last digit, when the files swap
    places (the items were resampled in the order of (reference, judge), and the ends moved
    by up to 0.0008 here). Failure precision (true failures among the flagged) and incidence
    (flagged among the true failures) trade places, counts and intervals too."""
    ref, judge = scores(8, 50, 5)
    extra = ("--threshold", "3")
    base = two_tables(tmp_path / "base", ref, judge, "1-5", capsys, *extra)
    swapped = two_tables(tmp_path / "swapped", judge, ref, "1-5", capsys, *extra)
    symmetric = ["kappa_categorical", "kappa_linear", "kappa_quadratic", "kappa_binary"]
    symmetric += ["accuracy", "ccc", "pearson", "spearman", "mae"]
    keys = ("value", "count", "n", "ci_low", "ci_high")
    for name in symmetric:
        assert [swapped["metrics"][name][k] for k in keys] == [
            base["metrics"][name][k] for k in keys
        ], name
    a, b = "failure_precision", "failure_incidence"
    assert [swapped["metrics"][a][k] for k in keys] == [base["metrics"][b][k] for k in keys]
    assert [swapped["metrics"][b][k] for k in keys] == [base["metrics"][a][k] for k in keys]
    assert swapped["confusion_matrix"]["rows_reference"] == [
        list(col) for col in zip(*base["confusion_matrix"]["rows_reference"], strict=True)
    ]
