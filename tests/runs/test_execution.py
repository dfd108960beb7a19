"""What may overlap a run's LM calls, said by a runner from outside the package: work the end
needs done ``ahead`` (away from the calls when the run can, else in a thread here), work done
only ``aside``, and the end ``at_end`` after it — the same files and the same MLflow run with
the helper interpreters and without; and no runner says how (helper interpreters, preloads)."""

from __future__ import annotations

import ast
import io
import os
import tokenize
from pathlib import Path

import pytest

from assay.inputs import RunConfig
from assay.runs import Run, TrackedRun

ASSAY = Path(__file__).resolve().parents[2] / "assay"
ME = "tests.runs.test_execution"  # as a helper interpreter imports it


# -- jobs of the runner below (module:function, JSON in and out) -----------------------------
def mark(folder: str, name: str) -> int:
    (Path(folder) / name).write_text(str(os.getpid()))
    return os.getpid()


def report(folder: str) -> dict:
    """The end: what the warm-ups left, and which process drew it."""
    marks = sorted(p.name for p in Path(folder).iterdir() if p.name != "report.md")
    (Path(folder) / "report.md").write_text(" ".join(marks))
    return {"marks": marks, "pid": os.getpid()}


def my_runner(workdir: Path, *, tracking_uri: str) -> tuple[Run, dict, str | None]:
    """A runner of one's own: its reports may be drawn away from its calls, after its first
    answer; it says what, not how."""
    config = RunConfig(name="mine", tracking={"enabled": True})
    where = {"workdir": workdir, "tracking_uri": tracking_uri}
    with Run.open(
        config, "feedc0ffee", command="mine", reports_aside=True, after_first_answer=True, **where
    ) as run:
        out = run.dir / "out"
        out.mkdir(exist_ok=True)
        stats = run.preload("statistics")  # what only the end needs
        run.ahead(f"{ME}:mark", folder=str(out), name="plotting")
        taken = run.aside(f"{ME}:mark", folder=str(out), name="diffs")
        if not taken:  # kept for later: done here before the end
            mark(str(out), "diffs")
        slots = run.call_slots(2)
        with slots.hold():  # an LM call; its end lets the warm-ups go
            pass
        drawn: dict = {}
        run_id = run.finish(
            TrackedRun(name="mine", params={"k": "1"}, metrics={"m": stats.join().mean([1, 3])}),
            meanwhile=lambda: drawn.update(run.at_end(f"{ME}:report", folder=str(out))),
        )
        return run, drawn, run_id


@pytest.mark.parametrize("flag", ["0", "1"])
def test_a_runner_from_outside_says_what_overlaps_and_gets_the_same_run(
    tmp_path, monkeypatch, flag
):
    import mlflow

    monkeypatch.setenv("ASSAY_SIDECAR", flag)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    run, drawn, run_id = my_runner(tmp_path, tracking_uri=uri)
    assert drawn["marks"] == ["diffs", "plotting"]  # every warm-up done before the end
    assert (drawn["pid"] != os.getpid()) == (flag == "1")  # drawn away from the calls or here
    assert (run.dir / "out" / "report.md").read_text() == "diffs plotting"
    assert run.finished and run.mlflow_run_id == run_id
    logged = mlflow.MlflowClient(uri).get_run(run_id)
    assert logged.data.params == {"k": "1"} and logged.data.metrics == {"m": 2.0}
    assert logged.data.tags["assay.command"] == "mine"


def test_without_helper_interpreters_the_end_waits_for_the_work_sent_ahead(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_SIDECAR", "0")
    config = RunConfig(name="here", tracking={"enabled": False})
    with Run.open(config, "0123456789", command="here", workdir=tmp_path) as run:
        out = tmp_path / "out"
        out.mkdir()
        assert run.aside(f"{ME}:mark", folder=str(out), name="x") is False
        assert list(out.iterdir()) == []  # not done: the caller keeps it
        run.ahead(f"{ME}:mark", folder=str(out), name="late")  # a thread, started later
        assert run.at_end(f"{ME}:report", folder=str(out)) == {
            "marks": ["late"],
            "pid": os.getpid(),
        }


# -- no runner says how -----------------------------------------------------------------------
_HOW = ("sidecar", "after_first_call", "Background")
_DOOR = ("assay.runs._sidecar", "assay.runs._background")


def _runner_modules() -> list[Path]:
    """Every module that drives a run: the runners and their stages (not the run lifecycle)."""
    roots = [ASSAY / "experiments", ASSAY / "toolemu"]
    files = [p for root in roots for p in root.rglob("*.py")]
    return [
        p for p in [*files, ASSAY / "api.py"] if (ASSAY / "experiments" / "runs") not in p.parents
    ]


def test_runners_say_what_may_overlap_not_how():
    """No runner names the helper interpreters, their warm-up hooks or the background threads
    (code, not prose: identifiers and imports), nor imports the modules behind the door."""
    found = []
    for path in _runner_modules():
        text = path.read_text(encoding="utf-8")
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.NAME and any(w.lower() in tok.string.lower() for w in _HOW):
                found.append(f"{path.relative_to(ASSAY)}:{tok.start[0]}: {tok.string}")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and node.module in _DOOR:
                found.append(f"{path.relative_to(ASSAY)}:{node.lineno}: import {node.module}")
    assert found == []
