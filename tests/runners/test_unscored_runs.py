"""A run whose judgments are all unscored measured nothing: the command fails (exit 1) with one
line counting the reasons, whatever the reason and whichever runner judged — evaluate,
harness, selective calibrate — and certify refuses such a run before it consumes an item.
The model server is the loopback stub answering garbage or an HTTP error, or a server that
never answers (every attempt a timeout)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from assay.cli import main
from assay.lm import StubServer
from tests.decisions.test_selective import write_config as selective_config
from tests.evaluation.test_faults import black_hole  # noqa: F401  (the fixture)
from tests.stub_judge import N_ITEMS, stub_config, write_items


def error_line(capsys) -> str:
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip() and "LiteLLM" not in x]
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


def test_evaluate_with_every_answer_unparseable_fails(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with StubServer(respond=lambda body: "garbage") as stub:
        cfg = stub_config(tmp_path, write_items(tmp_path), stub.base_url, name="e", retries=0)
        assert main(["evaluate", str(cfg), "--quiet"]) == 1
    assert error_line(capsys) == f"assay: error: all {N_ITEMS} judgments unscored: parse_error 4"
    (run,) = (tmp_path / "runs").iterdir()
    said = "The run measured nothing: all 4 judgments unscored: parse_error 4."
    assert said in (run / "report.md").read_text()
    assert said in (run / "report.html").read_text()
    # re-reading the finished run fails the same way, without a call
    assert main(["evaluate", str(cfg), "--quiet", "--json"]) == 1
    assert error_line(capsys).endswith("all 4 judgments unscored: parse_error 4")


def test_harness_whose_every_judgment_timed_out_fails(tmp_path, monkeypatch, capsys, black_hole):  # noqa: F811
    monkeypatch.chdir(tmp_path)
    harness = {
        "name": "h",
        "data": {"path": str(write_items(tmp_path)), "columns": {"id": "id"}},
        "scale": {"kind": "binary", "labels": ["False", "True"]},
        "judges": [
            {
                "name": "slow",
                "model": "openai/stub-model",
                "api_base": black_hole.base_url,
                "timeout": 1,
                "rubric": "A good response names a colour.",
            }
        ],
        "tests": {"stochastic_stability": {"k": 2}},
        "retries": 0,
        "concurrency": 3 * N_ITEMS,
        "tracking": {"enabled": False},
    }
    (tmp_path / "h.yaml").write_text(json.dumps(harness))
    assert main(["harness", "h.yaml", "--quiet"]) == 1
    line = error_line(capsys)
    assert line == "assay: error: judge slow: all 8 probe verdicts unscored: timeout 8", line


def test_selective_calibrate_with_every_judgment_a_timeout_says_so(
    tmp_path,
    monkeypatch,
    capsys,
    black_hole,  # noqa: F811
):
    """Not "more labelled items": nothing was judged, so no threshold could be calibrated."""
    monkeypatch.chdir(tmp_path)
    judge = {
        "api_base": black_hole.base_url,
        "timeout": 1,
        "scale": {"kind": "binary", "labels": ["False", "True"]},
        "confidence": {"source": "probability"},
    }
    cfg = selective_config(
        tmp_path,
        black_hole.base_url,
        judges=[{**judge, "name": "cheap", "model": "openai/stub-cheap"}],
        retries=0,
        concurrency=64,
    )
    assert main(["selective", "calibrate", str(cfg), "--quiet"]) == 1
    captured = capsys.readouterr()
    assert "more labelled items" not in captured.out
    (line,) = [x for x in captured.err.splitlines() if x.startswith("assay:")]
    n = re.fullmatch(r"assay: error: all (\d+) judgments unscored: timeout (\d+)", line)
    assert n and n.group(1) == n.group(2) == "45", line  # the calibration part: 60 less 25%


def test_certify_refuses_a_run_that_measured_nothing_and_consumes_no_item(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    with StubServer(status_sequence=[500] * 100) as stub:
        cfg = stub_config(tmp_path, write_items(tmp_path), stub.base_url, name="c", retries=0)
        assert main(["evaluate", str(cfg), "--quiet"]) == 1
    capsys.readouterr()
    (run,) = (tmp_path / "runs").iterdir()
    policy = tmp_path / "policy.yaml"
    policy.write_text(json.dumps({"confidence": 0.95, "bars": {"accuracy": 0.5}}))
    assert main(["certify", str(run), "--policy", str(policy)]) == 2
    line = error_line(capsys)
    assert f"{run}: all 4 judgments unscored: lm_error 4: nothing to certify on" in line
    assert not list(Path(tmp_path / "runs").glob("certificates/*/certificate.json"))
