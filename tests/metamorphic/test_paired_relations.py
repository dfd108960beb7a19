"""Relations ``evaluate`` on an unordered scale and ``compare --paired`` hold, through the
command line on the stub server: the order an unordered scale lists its labels in leaves every
figure of an evaluate run (values, intervals, counts; the confusion matrix read by label), and
the rows' order, the items' names and the labels' order leave every difference, interval,
p-value and verdict of a paired comparison; swapping the two runs mirrors it."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from assay.cli import main
from assay.lm import StubServer
from tests.metamorphic.test_certify_relations import (
    BINARY,
    COLOURS,
    N,
    Persona,
    evaluate,
    rows_for,
)
from tests.metamorphic.test_swapped_judges import bits, negated


@pytest.fixture(scope="module")
def stub():
    with StubServer(respond=Persona(8)) as server:
        yield server


def metrics(run_dir: Path) -> dict:
    return json.loads((run_dir / "metrics.json").read_text())["metrics"]


def by_label(run_dir: Path, labels: list[str]) -> dict:
    """The confusion matrix keyed by the labels' names."""
    cm = json.loads((run_dir / "metrics.json").read_text())["confusion_matrix"]["rows_reference"]
    return {(labels[r], labels[c]): x for r, row in enumerate(cm) for c, x in enumerate(row)}


def judges(folder: Path, stub, rows, scale) -> tuple[Path, Path]:
    """Two judges' runs on ``rows``, each wrong on a quarter of its own."""
    a = evaluate(folder / "a", stub, rows, scale=scale, name="a", model="openai/judge-a")
    b = evaluate(folder / "b", stub, rows, scale=scale, name="b", model="openai/judge-b")
    return a, b


def compared(folder: Path, a: Path, b: Path, capsys) -> dict:
    """``compare --paired A B --json``."""
    capsys.readouterr()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        assert main(["compare", "--paired", str(a), str(b), "--json", "--no-log"]) == 0
    return json.loads(capsys.readouterr().out)


def paired(folder: Path, stub, rows, scale, capsys) -> dict:
    out = compared(folder, *judges(folder, stub, rows, scale), capsys)
    return {k: out[k] for k in ("comparison", "verdict", "n_items", "n_paired")}


def test_an_unordered_scale_s_label_order_leaves_every_figure(stub, tmp_path, capsys):
    rows = rows_for(6, colours=True)
    runs = []
    for i, labels in enumerate([COLOURS, ["blue", "red", "green"], ["green", "blue", "red"]]):
        scale = {"kind": "categorical", "labels": labels}
        runs.append((evaluate(tmp_path / str(i), stub, rows, scale=scale), labels))
    (base, labels), others = runs[0], runs[1:]
    assert metrics(base)["kappa_categorical"]["ci_low"] is not None
    for run_dir, listed in others:
        assert metrics(run_dir) == metrics(base)
        assert by_label(run_dir, listed) == by_label(base, labels)


@pytest.mark.parametrize("scale", ["binary", "colours"])
def test_rows_order_names_and_label_order_leave_a_paired_comparison(stub, tmp_path, capsys, scale):
    colours = scale == "colours"
    rows = rows_for(7, colours=colours)
    first = {"kind": "categorical", "labels": COLOURS} if colours else None
    other = (
        {"kind": "categorical", "labels": ["blue", "red", "green"]}
        if colours
        else {"kind": "binary", "labels": ["True", "False"], "positive": "True"}
    )
    base = paired(
        tmp_path / "base",
        stub,
        rows,
        first or {"kind": "binary", "labels": ["False", "True"]},
        capsys,
    )
    renamed = {r["id"]: f"renamed-{i:03d}" for i, r in enumerate(random.Random(2).sample(rows, N))}
    moved = [{**r, "id": renamed[r["id"]]} for r in random.Random(7).sample(rows, N)]
    again = paired(tmp_path / "moved", stub, moved, other, capsys)
    assert base["n_items"] == N
    for key in ("comparison", "verdict", "n_items", "n_paired"):
        assert again[key] == base[key], key


@pytest.mark.parametrize(
    ("scale", "seed"), [("binary", 11), ("colours", 11), ("binary", 9), ("colours", 9)]
)
def test_swapping_the_two_runs_mirrors_every_difference(stub, tmp_path, capsys, scale, seed):
    """``compare --paired B A`` is ``compare --paired A B`` seen in a mirror, to the last digit:
    each judge's figures its own, every difference and its interval's ends negated (the ends
    exchanged), the same p-values and the other judge better (the items were resampled in
    another order when the runs swapped places, and the ends moved: by up to 0.05 on these
    items). On the items of seed 9 B's verdicts are A's in a mirror (for each reference, as many
    items where A says x and B says y as where A says y and B says x): swapped, the runs are
    the same data, and every difference is 0 with an interval that is its own mirror image."""
    colours = scale == "colours"
    listed = {"kind": "categorical", "labels": COLOURS} if colours else BINARY
    a, b = judges(tmp_path, stub, rows_for(seed, colours=colours), listed)
    base = compared(tmp_path, a, b, capsys)
    swapped = compared(tmp_path, b, a, capsys)
    assert (swapped["a"], swapped["b"]) == (base["b"], base["a"])
    x, y = base["comparison"], swapped["comparison"]
    assert (y["a_only_right"], y["b_only_right"]) == (x["b_only_right"], x["a_only_right"])
    for d, s in zip(x["differences"], y["differences"], strict=True):
        name = d["metric"]
        assert s["metric"] == name
        assert (bits(s["a"]), bits(s["b"])) == (bits(d["b"]), bits(d["a"])), name
        assert bits(s["delta"]) == bits(negated(d["delta"])), name
        assert (s["ci_low"], s["ci_high"]) == (negated(d["ci_high"]), negated(d["ci_low"])), name
        assert [bits(s[k]) for k in ("p_value", "p_adjusted")] == [
            bits(d[k]) for k in ("p_value", "p_adjusted")
        ], name
        assert s["better"] == {"A": "B", "B": "A", None: None}[d["better"]], name
        assert s["items_needed"] == d["items_needed"], name
    own_mirror = [d["ci_low"] == -d["ci_high"] for d in x["differences"]]
    assert all(own_mirror) if seed == 9 else not any(own_mirror)
    if seed == 9:
        assert all(d["delta"] == 0 and d["better"] is None for d in x["differences"])
