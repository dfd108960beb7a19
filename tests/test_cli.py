"""Bad input through the command line: non-zero exit, one line naming file/row/field, no traceback,
and nothing in the run directory that could be mistaken for results."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from assay.cli import main
from tests.review_runs import name_run

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "evaluate"


@pytest.fixture
def cfg(tmp_path: Path, monkeypatch) -> Path:
    shutil.copytree(FIXTURE, tmp_path / "cfg")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "cfg"


def run_cli(capsys, *args: str) -> tuple[int, str]:
    code = main(list(args))
    err = capsys.readouterr().err.strip()
    return code, err


def assert_one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0], lines[0]


def edit(path: Path, old: str, new: str) -> None:
    path.write_text(path.read_text().replace(old, new))


def no_results(tmp: Path) -> bool:
    return not (tmp / "runs").exists() or not list((tmp / "runs").glob("*/metrics.json"))


def test_missing_config(cfg, capsys):
    assert_one_line_error(
        *run_cli(capsys, "evaluate", str(cfg / "nope.yaml")), "nope.yaml", "not found"
    )


def test_malformed_yaml(cfg, capsys):
    (cfg / "config.yaml").write_text("name: x\ndata: [unclosed\n")
    assert_one_line_error(
        *run_cli(capsys, "evaluate", str(cfg / "config.yaml")), "config.yaml", "malformed YAML"
    )


def test_unknown_config_key(cfg, capsys):
    edit(cfg / "config.yaml", "concurrency: 3", "concurency: 3")
    assert_one_line_error(
        *run_cli(capsys, "evaluate", str(cfg / "config.yaml")), "concurency", "unknown config key"
    )


def test_missing_data_file(cfg, capsys):
    (cfg / "items.csv").unlink()
    assert_one_line_error(*run_cli(capsys, "evaluate", str(cfg / "config.yaml")), "items.csv")
    assert no_results(cfg.parent)


def test_misnamed_column(cfg, capsys):
    edit(cfg / "config.yaml", "response: answer", "response: answr")
    code, err = run_cli(capsys, "evaluate", str(cfg / "config.yaml"))
    assert_one_line_error(code, err, "items.csv", "answr")
    assert not (cfg.parent / "runs").exists()


def test_label_outside_the_scale(cfg, capsys):
    text = (cfg / "items.csv").read_text().splitlines()
    text[3] = text[3].rsplit(",", 1)[0] + ",7"
    (cfg / "items.csv").write_text("\n".join(text) + "\n")
    code, err = run_cli(capsys, "evaluate", str(cfg / "config.yaml"))
    assert_one_line_error(code, err, "items.csv", "row 3", "label")
    assert not (cfg.parent / "runs").exists()


def test_empty_data_set(cfg, capsys):
    (cfg / "items.csv").write_text("uid,question,answer,label\n")
    assert_one_line_error(*run_cli(capsys, "evaluate", str(cfg / "config.yaml")), "items.csv")
    assert not (cfg.parent / "runs").exists()


def test_hosted_model_without_key_names_the_variable(cfg, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, err = run_cli(
        capsys, "evaluate", str(cfg / "config.yaml"), "--model", "openai/gpt-4o-mini"
    )
    assert_one_line_error(code, err, "OPENAI_API_KEY")
    assert not (cfg.parent / "runs").exists()


def test_agreement_malformed_jsonl_line(tmp_path, capsys):
    good = tmp_path / "a.jsonl"
    good.write_text(
        '{"item_id": "a", "judge": "j", "score": 1}\n{"item_id": "b", "judge": "j", "score": 0}\n'
    )
    bad = tmp_path / "b.jsonl"
    bad.write_text('{"item_id": "a", "judge": "j", "score": 1}\n{"item_id": "b", "judge"\n')
    assert_one_line_error(*run_cli(capsys, "agreement", str(good), str(bad)), "b.jsonl", "row 2")


def test_non_zip_eval_log(cfg, capsys, tmp_path):
    (tmp_path / "log.eval").write_text("this is not a zip file")
    edit(
        cfg / "config.yaml", "path: items.csv", f"path: {tmp_path / 'log.eval'}\n  format: inspect"
    )
    edit(
        cfg / "config.yaml",
        "  columns: {id: uid, request: question, response: answer, expected: label}\n",
        "",
    )
    assert_one_line_error(*run_cli(capsys, "evaluate", str(cfg / "config.yaml")), "log.eval")


def test_evaluate_prints_metrics(cfg, capsys):
    assert main(["evaluate", str(cfg / "config.yaml"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "kappa_categorical" in out and "run directory" in out


def test_schema_is_json(capsys):
    import json

    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert "judge" in schema["properties"]


def harness_yaml(tmp_path: Path, tests: str) -> Path:
    from assay.reliability.selftest._selftest import write_data

    data = write_data(tmp_path / "data", n=4)
    cfg = tmp_path / "h.yaml"
    cfg.write_text(
        f"name: h\ndata: {{path: {data}}}\nscale: binary\n"
        "generator: {model: 'scripted:nope'}\nvalidator: {model: 'scripted:nope'}\n"
        "judges: [{name: j, model: 'scripted:nope'}]\n"
        f"tests: {tests}\ntracking: {{enabled: false}}\n"
    )
    return cfg


def test_harness_unknown_test_lists_the_known_ones(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, err = run_cli(capsys, "harness", str(harness_yaml(tmp_path, "{paraphrse: {}}")))
    assert_one_line_error(code, err, "paraphrse", "known tests", "paraphrase")
    assert not (tmp_path / "runs").exists()


def test_harness_synthetic_ordinal_on_a_binary_scale(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, err = run_cli(capsys, "harness", str(harness_yaml(tmp_path, "{synthetic_ordinal: {}}")))
    assert_one_line_error(code, err, "synthetic_ordinal", "ordinal scale")


def test_review_import_of_a_bad_file(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("scale: binary\n")
    name_run(run)
    (run / "seeds.jsonl").write_text("")
    (run / "probes.jsonl").write_text("")
    bad = tmp_path / "review.yaml"
    bad.write_text("- probe_id: nope\n  decision: accept\n  reviewer: ana\n")
    code, err = run_cli(capsys, "review", "import", str(run), str(bad))
    assert_one_line_error(code, err, "review.yaml", "nope")
    assert not (run / "reviews.jsonl").exists()


def test_a_finished_command_runs_the_exit_handlers_then_skips_the_teardown(monkeypatch):
    import assay.cli as cli

    events: list[object] = []
    monkeypatch.setattr(cli.atexit, "_run_exitfuncs", lambda: events.append("exit handlers"))
    monkeypatch.setattr(cli.os, "_exit", lambda code: events.append(("exit", code)))
    assert cli._end(0, ["evaluate"]) == 0 and events == []  # from Python: just returned
    cli._end(3, None)  # the command line
    assert events == ["exit handlers", ("exit", 3)]


@pytest.mark.slow
def test_the_command_line_prints_its_whole_result_and_its_exit_code(cfg, tmp_path):
    import json

    from tests.processes import assay_process

    proc = assay_process("evaluate", str(cfg / "config.yaml"), "--quiet", "--json", cwd=tmp_path)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert json.loads(out)["counts"]["scored"] > 0  # all of it, flushed
    proc = assay_process("evaluate", str(tmp_path / "nope.yaml"), cwd=tmp_path)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 2 and err.startswith("assay: error:") and err.count("\n") == 1
