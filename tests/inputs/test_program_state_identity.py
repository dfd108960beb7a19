"""A judge's saved program state counts by its content: an optimizer writing the same file
again makes another judge, whose items are judged again — never the old judgments re-read
under the new state (a number from a program that did not run)."""

from __future__ import annotations

import json

from assay.cli import main
from assay.lm import StubServer
from assay.programs import JudgeConfig, build_judge, save_program
from tests.stub_judge import stub_config, write_items


def _evaluate(config, capsys) -> dict:
    assert main(["evaluate", str(config), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_program_state_edited_in_place_is_another_judge(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with StubServer() as stub:
        csv = write_items(tmp_path)
        state = tmp_path / "program.json"
        plain = stub_config(tmp_path, csv, stub.base_url, name="state")
        judge = json.loads(plain.read_text())["judge"]
        save_program(build_judge(JudgeConfig.model_validate(judge)), state)
        config = stub_config(
            tmp_path, csv, stub.base_url, name="state", judge={"program_state": str(state)}
        )
        first = _evaluate(config, capsys)
        assert first["new_judgments"] == 4 and stub.n_requests == 4

        again = _evaluate(config, capsys)  # unchanged: re-read, no call
        assert again["new_judgments"] == 0 and stub.n_requests == 4

        saved = json.loads(state.read_text())
        (predictor,) = [v for v in saved.values() if isinstance(v, dict) and "signature" in v]
        predictor["signature"]["instructions"] = "Judge like the optimized judge."
        state.write_text(json.dumps(saved))  # the same path, another content

        edited = _evaluate(config, capsys)
        assert edited["new_judgments"] == 4 and stub.n_requests == 8
        assert edited["config_hash"] != first["config_hash"]
        sent = json.dumps(stub.requests[-1])
        assert "Judge like the optimized judge." in sent  # the new state is what ran


def test_a_program_state_that_can_move_is_refused(tmp_path, monkeypatch, capsys):
    """``models:/judge@champion`` resolves to another version once the alias moves, while the
    run's identity would stay: refused in one line before anything runs; a pinned version
    (``models:/judge/3``) is the identity."""
    monkeypatch.chdir(tmp_path)
    with StubServer() as stub:
        csv = write_items(tmp_path)
        config = stub_config(
            tmp_path,
            csv,
            stub.base_url,
            name="moving",
            judge={"program_state": "models:/judge@champion"},
        )
        assert main(["evaluate", str(config)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "models:/judge@champion" in err[0]
        assert "pin one, e.g. models:/<name>/3" in err[0]
        assert stub.n_requests == 0 and not (tmp_path / "runs").exists()
    pinned = JudgeConfig.model_validate(
        {"model": "openai/x", "scale": "binary", "program_state": "models:/judge/3"}
    )
    assert pinned.program_state == "models:/judge/3"


def test_a_file_reference_in_a_config_built_in_python_is_refused(tmp_path):
    """``rubric: "@rubric.txt"`` is read by the YAML loader; a config built in Python with it
    would send the file's *name* to the model as the rubric — refused, naming the field."""
    import pytest
    from pydantic import ValidationError

    from assay.inputs import load_config

    (tmp_path / "rubric.txt").write_text("A good response names a colour.\n")
    judge = {"model": "openai/x", "scale": "binary", "rubric": "@rubric.txt"}
    with pytest.raises(ValidationError, match=r"rubric\n.*'@rubric.txt' is a file reference"):
        JudgeConfig.model_validate(judge)
    csv = write_items(tmp_path)
    config = stub_config(tmp_path, csv, "http://127.0.0.1:9/v1", name="f", judge=judge)
    loaded, _ = load_config(config)  # from YAML: the file's text
    assert loaded.judge.rubric == "A good response names a colour."


def test_a_program_state_edited_with_its_size_and_time_kept_is_another_judge(tmp_path):
    """In one process (a notebook, the API): the state's digest is read from its bytes each
    time, never remembered by the file's size and modification time, which an edit can keep."""
    import os

    state = tmp_path / "program.json"
    judge = JudgeConfig.model_validate(
        {
            "model": "openai/stub-model",
            "api_base": "http://127.0.0.1:9/v1",
            "scale": "binary",
            "program_state": str(state),
        }
    )
    save_program(build_judge(judge.model_copy(update={"program_state": None})), state)
    first = judge.config_hash()
    text, st = state.read_text(), state.stat()
    edited = text.replace('"instructions": "', '"instructions": "X', 1).replace("  ", " ", 1)
    assert len(edited) == len(text) and edited != text
    state.write_text(edited)
    os.utime(state, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert judge.config_hash() != first
