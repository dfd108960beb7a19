"""A finished run whose files are no longer the ones it sealed is never shown as it is: the same
command makes its figures again from its records (no LM call: each judgment is there, signed)
and seals it anew, with a warning naming the run and the file. The forger's edit of
``metrics.json`` (accuracy and κ set to 1) was printed by a re-run before, and so was an
all-unscored run's edited to count every item as scored — which turned its failing exit code
into a pass."""

from __future__ import annotations

import csv
import json
import logging
from pathlib import Path

import pytest

from assay.cli import main
from assay.lm import StubServer
from assay.runs import check_seal
from tests.runs.test_reread import HARNESS, N, _config, _evaluate, _harness, _run_dir
from tests.stub_judge import stub_config, write_items


@pytest.fixture
def stub():
    with StubServer() as server:
        yield server


def _edit_metrics(run_dir: Path, edit) -> None:
    path = run_dir / "metrics.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def _evaluate_json(cfg: Path, capsys) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["evaluate", str(cfg), "--quiet", "--json"])
    return code, json.loads(capsys.readouterr().out)


def _accuracy_from_records(folder: Path, run_dir: Path) -> float:
    """The accuracy of the run's judgments against the items' references, read from the files."""
    with (folder / "items.csv").open(encoding="utf-8") as f:
        expected = {row["id"]: int(row["expected"]) for row in csv.DictReader(f)}
    right = total = 0
    for line in (run_dir / "judgments.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        total += 1
        right += record["score"] == expected[record["item_id"]]
    return right / total


def _seal_holds(run_dir: Path) -> bool:
    state = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    check_seal(run_dir, state, where=run_dir)  # raises if not
    return state["status"] == "finished"


def test_an_edited_metrics_json_is_made_again_not_printed(
    tmp_path, monkeypatch, capsys, caplog, stub
):
    monkeypatch.chdir(tmp_path)
    cfg = _config(tmp_path, stub)
    code, first = _evaluate_json(cfg, capsys)
    assert code == 0
    run_dir = _run_dir(tmp_path)
    honest = first["metrics"]["accuracy"]["value"]
    assert honest == _accuracy_from_records(tmp_path, run_dir) < 1.0
    served = stub.n_requests

    def forge(data: dict) -> None:
        data["metrics"]["accuracy"]["value"] = 1.0
        data["metrics"]["kappa_categorical"]["value"] = 1.0

    _edit_metrics(run_dir, forge)
    with caplog.at_level(logging.WARNING, logger="assay.runs._run"):
        code, again = _evaluate_json(cfg, capsys)
    assert code == 0
    assert again["metrics"]["accuracy"]["value"] == honest
    assert again["metrics"]["kappa_categorical"] == first["metrics"]["kappa_categorical"]
    assert stub.n_requests == served  # made from the signed judgments: no call
    (warning,) = [r.getMessage() for r in caplog.records if r.name == "assay.runs._run"]
    assert str(run_dir) in warning and "metrics.json is not the file the run sealed" in warning
    assert _seal_holds(run_dir)
    assert "r: re-read (finished before; no LM call)" in _evaluate(cfg, capsys)
    _edit_metrics(run_dir, forge)  # said as what it is: scored again, not read back
    assert "r: scored from its judgments (no LM call)" in _evaluate(cfg, capsys)


def test_an_unscored_run_edited_to_count_as_scored_still_fails(tmp_path, monkeypatch, capsys):
    """Every answer unparseable: the run measured nothing and the command fails; its
    metrics.json edited to say every item was scored does not make the re-run pass."""
    monkeypatch.chdir(tmp_path)
    with StubServer(respond=lambda body: "no verdict here") as server:
        write_items(tmp_path, N)
        cfg = stub_config(tmp_path, tmp_path / "items.csv", server.base_url, name="r", retries=0)
        capsys.readouterr()
        assert main(["evaluate", str(cfg), "--quiet"]) == 1
        run_dir = _run_dir(tmp_path)
        served = server.n_requests

        def forge(data: dict) -> None:
            counts = data["counts"]
            counts["scored"], counts["paired"], counts["unscored"] = N, N, 0
            counts["unscored_reasons"], data["note"] = {}, None

        _edit_metrics(run_dir, forge)
        capsys.readouterr()
        assert main(["evaluate", str(cfg), "--quiet"]) == 1
        assert f"all {N} judgments unscored" in capsys.readouterr().err
        assert server.n_requests == served


def _finished_harness(tmp_path: Path, monkeypatch, capsys) -> tuple[Path, dict, Path]:
    """A finished harness run in ``tmp_path``: its config, its ``--json`` output, its directory."""
    monkeypatch.chdir(tmp_path)
    cfg = _harness(tmp_path)
    capsys.readouterr()
    assert main(["harness", str(cfg), *HARNESS, "--quiet", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    (run_dir,) = (tmp_path / "runs").iterdir()
    return cfg, first, run_dir


def test_an_edited_harness_pass_rate_is_made_again(tmp_path, monkeypatch, capsys, caplog):
    cfg, first, run_dir = _finished_harness(tmp_path, monkeypatch, capsys)
    tests = first["judges"]["clean"]["tests"]
    honest = {t: s["pass_rate"]["value"] for t, s in tests.items() if s.get("pass_rate")}
    assert honest

    def forge(data: dict) -> None:
        for s in data["judges"]["clean"]["tests"].values():
            if s.get("pass_rate"):
                s["pass_rate"]["value"] = 0.123

    _edit_metrics(run_dir, forge)
    with caplog.at_level(logging.WARNING, logger="assay.runs._run"):
        assert main(["harness", str(cfg), *HARNESS, "--quiet", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)["judges"]["clean"]["tests"]
    assert {t: again[t]["pass_rate"]["value"] for t in honest} == honest
    assert any("metrics.json is not the file" in r.getMessage() for r in caplog.records)
    assert _seal_holds(run_dir)


def _other_code(monkeypatch) -> None:
    """What a run made by this code looks like to another assay (upgraded, or a checkout
    edited): the code identity the fast path and the finished run's record compare."""
    import assay.runs._reread as reread

    real = reread.code_identity()
    monkeypatch.setattr(reread, "code_identity", lambda: {**real, "assay": "another version"})


def test_a_run_finished_by_other_code_is_scored_again(tmp_path, monkeypatch, capsys, caplog, stub):
    """A fix to a figure reaches the runs finished before it: their figures are made again
    from their judgments (no LM call), not read back from the metrics.json old code wrote."""
    monkeypatch.chdir(tmp_path)
    cfg = _config(tmp_path, stub)
    code, first = _evaluate_json(cfg, capsys)
    run_dir = _run_dir(tmp_path)
    served = stub.n_requests
    _other_code(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="assay.runs._run"):
        assert "r: scored from its judgments (no LM call)" in _evaluate(cfg, capsys)
    (warning,) = [r.getMessage() for r in caplog.records if r.name == "assay.runs._run"]
    assert str(run_dir) in warning and "made by other code" in warning
    assert stub.n_requests == served
    assert _seal_holds(run_dir)
    assert "r: re-read (finished before; no LM call)" in _evaluate(cfg, capsys)
    code, again = _evaluate_json(cfg, capsys)
    assert again["metrics"] == first["metrics"]


def test_a_harness_run_finished_by_other_code_is_scored_again(
    tmp_path, monkeypatch, capsys, caplog
):
    """The harness's own re-read (its finish_key: config, tests and files) does not cover the
    code; the run's recorded code does."""
    cfg, first, run_dir = _finished_harness(tmp_path, monkeypatch, capsys)
    before = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    _other_code(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="assay.runs._run"):
        assert main(["harness", str(cfg), *HARNESS, "--quiet", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert any("made by other code" in r.getMessage() for r in caplog.records)
    after = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    assert after["code"] != before["code"]  # sealed again by this code (finished: to the second)
    assert again["judges"] == first["judges"]
    assert _seal_holds(run_dir)
