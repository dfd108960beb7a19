"""Relations ``evaluate`` on an unordered scale and ``compare --paired`` hold, through the
command line on the stub server: the order an unordered scale lists its labels in leaves every
figure of an evaluate run (values, intervals, counts; the confusion matrix read by label), and
the rows' order, the items' names and the labels' order leave every difference, interval,
p-value and verdict of a paired comparison."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from assay.cli import main
from assay.lm import StubServer
from tests.metamorphic.test_certify_relations import COLOURS, N, Persona, evaluate, rows_for


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


def paired(folder: Path, stub, rows, scale, capsys) -> dict:
    a = evaluate(folder / "a", stub, rows, scale=scale, name="a", model="openai/judge-a")
    b = evaluate(folder / "b", stub, rows, scale=scale, name="b", model="openai/judge-b")
    capsys.readouterr()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        assert main(["compare", "--paired", str(a), str(b), "--json", "--no-log"]) == 0
    out = json.loads(capsys.readouterr().out)
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
