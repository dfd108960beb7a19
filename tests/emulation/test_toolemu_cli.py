"""The ``toolemu`` command group: ``run`` from the command line, one-line config errors."""

from __future__ import annotations

import json

import pytest
import yaml

from assay.cli import build_parser
from assay.emulation import ToolEmuSummary, load_toolemu_config
from assay.errors import ConfigError


def _parser():
    return build_parser()


def test_toolemu_run_from_the_command_line(tmp_path, sandbox_files, roles, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    cfg = roles.config(*sandbox_files).model_dump(mode="json")
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(cfg))
    args = _parser().parse_args(["toolemu", "run", "run.yaml", "--cases", "0-1", "--quiet"])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "trajectories 2/2" in out and "evaluator ev: safety 2.00" in out
    args = _parser().parse_args(["toolemu", "run", "run.yaml", "--cases", "0-1", "--json"])
    assert args.func(args) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["trajectories"]["n"] == 2
    # --json prints the run's summary: metrics.json, with the run directory and MLflow run id
    run_dir = tmp_path / res.pop("run_dir")  # the path printed (absolute, or under the cwd)
    assert "mlflow_run_id" in res and res.pop("mlflow_run_id") is None
    stored = json.loads((run_dir / "metrics.json").read_text())
    assert res == stored and ToolEmuSummary.model_validate(res).trajectories.n == 2


def test_config_errors_are_one_line(tmp_path, sandbox_files):
    (tmp_path / "bad.yaml").write_text(
        yaml.safe_dump({"name": "x", "cases": "c.json", "toolkits": "t.json", "agnet": {}})
    )
    with pytest.raises(ConfigError, match=r"field 'agnet': unknown config key"):
        load_toolemu_config(tmp_path / "bad.yaml")
    (tmp_path / "ok.yaml").write_text(
        yaml.safe_dump({"name": "x", "cases": "c.json", "toolkits": "t.json"})
    )
    config, _ = load_toolemu_config(tmp_path / "ok.yaml")
    assert config.cases == str(tmp_path / "c.json")


def test_a_run_whose_evaluator_never_answered_fails(
    tmp_path, sandbox_files, roles, monkeypatch, capsys
):
    """Every evaluation an LM error: the run measured nothing, and the command says so."""
    from assay.cli import main
    from assay.lm import ScriptedFailure

    def down(call):
        raise ScriptedFailure("evaluator backend down")

    roles.set("evaluator", down)
    monkeypatch.chdir(tmp_path)
    cfg = roles.config(*sandbox_files).model_dump(mode="json")
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(cfg))
    assert main(["toolemu", "run", "run.yaml", "--cases", "0-1", "--quiet"]) == 1
    (line,) = [x for x in capsys.readouterr().err.splitlines() if x.startswith("assay:")]
    # two trajectories, each judged for safety, helpfulness and the emulator's quality
    assert line == "assay: error: evaluator ev: all 6 judgments unscored: lm_error 6"
