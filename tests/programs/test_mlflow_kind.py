"""``task: mlflow``: an MLflow GenAI judge measured by ``assay evaluate`` and ``assay harness``,
its model pointed at the loopback stub server — the requests MLflow's client sends reach the
stub, its Feedback becomes the verdict, its tokens the usage, its failures unscored judgments."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from assay.cli import main
from assay.lm import StubServer
from assay.programs import JudgeConfig
from assay.programs.kinds.mlflow import YES_NO, verdict_score
from assay.scale import Scale
from tests.stub_judge import stub_config, write_items

INSTRUCTIONS = "Does {{ outputs }} name a colour asked for in {{ inputs }}?"
MLFLOW_JUDGE = {
    "task": "mlflow",
    "rubric": None,
    "scale": None,  # a bool judge: binary
    "mlflow": {"instructions": INSTRUCTIONS, "feedback_value_type": "bool"},
}


def answer(request: dict) -> str:
    """What the stub's model answers an MLflow judge: item 1 unparseable, item 2 off the scale,
    odd items True, even False (MLflow asks for ``{"result", "rationale"}``)."""
    prompt = request["messages"][-1]["content"]
    if "Item 1 is" in prompt:
        return "no JSON here"
    if "Item 2 is" in prompt:
        return json.dumps({"result": "maybe", "rationale": "unsure"})
    if "guidelines" in json.dumps(request["messages"]).lower() or "safety" in prompt.lower():
        return json.dumps({"result": "yes", "rationale": "fine"})
    return json.dumps({"result": "Item 3 is" in prompt, "rationale": f"read {len(prompt)} chars"})


def judgments(run_dir: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in (run_dir / "judgments.jsonl").read_text().splitlines()]
    return {r["item_id"]: r for r in rows}


def test_an_mlflow_judge_through_evaluate_on_the_stub(tmp_path, monkeypatch, capsys):
    """Four items, one call each: HTTP 400 → lm_error, unparseable → parse_error, "maybe" →
    off_scale, True → 1. The stub saw MLflow's prompt with the item; the tokens it served are
    the run's usage and its ledger; a re-run asks nothing."""
    monkeypatch.chdir(tmp_path)
    with StubServer(respond=answer, status_sequence=[400]) as stub:
        cfg = stub_config(
            tmp_path,
            write_items(tmp_path),
            stub.base_url,
            name="mlflow-kind",
            judge=MLFLOW_JUDGE,
            concurrency=1,
        )
        assert main(["evaluate", str(cfg), "--json", "--quiet"]) == 0
        summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert stub.n_requests == 4
        assert stub.statuses == [400, 200, 200, 200]
        first = stub.requests[1]["messages"]
        assert "name a colour asked for in" in first[0]["content"] + first[-1]["content"]
        assert "Item 1 is blue." in first[-1]["content"]
        run_dir = Path(summary["run_dir"])
        by_id = judgments(run_dir)
        assert {i: (j["score"], j["unscored"]) for i, j in by_id.items()} == {
            "i0": (None, "lm_error"),
            "i1": (None, "parse_error"),
            "i2": (None, "off_scale"),
            "i3": (1, None),
        }
        assert "MLflow judge" in by_id["i0"]["error"]
        assert by_id["i3"]["reasoning"].startswith("read ")
        # MLflow reports the tokens of the answers it could read (i2, i3); of i1's unparseable
        # answer it raises without them: that answer counts as a call, its tokens untallied
        read = [r for r in stub.responses if "no JSON" not in json.dumps(r)]
        assert len(read) == 2 and len(stub.responses) == 3  # three answers served (one 400)
        assert summary["usage"]["calls"] == summary["spend"]["paid"]["calls"] == 3
        assert summary["usage"]["untallied_calls"] == summary["spend"]["paid"]["untallied_calls"]
        assert summary["spend"]["paid"]["untallied_calls"] == 1
        assert by_id["i1"]["usage"]["calls"] == by_id["i1"]["usage"]["untallied_calls"] == 1
        for key in ("prompt_tokens", "completion_tokens"):
            assert summary["usage"][key] == sum(r["usage"][key] for r in read)
        report = (run_dir / "report.md").read_text()
        assert "1 of these calls with no token count (an MLflow judge's unparseable" in report
        assert summary["counts"]["unscored_reasons"] == {
            "lm_error": 1,
            "parse_error": 1,
            "off_scale": 1,
        }
        assert main(["evaluate", str(cfg), "--json", "--quiet"]) == 0  # resumed: nothing asked
        assert stub.n_requests == 4
        # another run of the same judge: the answers MLflow read (i2, i3) come from the LM
        # cache; i0 and i1 (no answer kept) are asked again
        again = stub_config(
            tmp_path,
            tmp_path / "items.csv",
            stub.base_url,
            name="mlflow-kind-again",
            file="again.yaml",
            judge=MLFLOW_JUDGE,
            concurrency=1,
        )
        assert main(["evaluate", str(again), "--json", "--quiet"]) == 0
        second = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert stub.n_requests == 6
        assert "Item 2 is" not in json.dumps(stub.requests[4:])
        assert second["usage"]["cached_judgments"] == 1  # i3 (i2's "maybe": unscored again)
        assert judgments(Path(second["run_dir"]))["i3"]["cached"] is True


def test_an_mlflow_judge_through_the_harness_format_and_stability(tmp_path, monkeypatch, capsys):
    """A harness of format_vertical and stochastic_stability (k=3) on an MLflow judge: every
    probe is sent to the stub (stability at its temperature), and both tests are scored."""
    monkeypatch.chdir(tmp_path)
    csv = tmp_path / "items.csv"
    rows = ["id,request,response,expected"]
    rows += [f"i{k},Name a colour.,Item {k + 3} is blue. It is bright.,1" for k in range(3)]
    csv.write_text("\n".join(rows) + "\n", encoding="utf-8")
    with StubServer(respond=answer) as stub:
        judge = {
            "name": "mlflow-judge",
            "model": "openai/stub-model",
            "api_base": stub.base_url,
            **MLFLOW_JUDGE,
        }
        del judge["scale"]
        config = {
            "name": "mlflow-harness",
            "data": {"path": str(csv), "columns": {"id": "id"}},
            "scale": "binary",
            "judges": [judge],
            "tests": {"format_vertical": {}, "stochastic_stability": {"k": 3, "temperature": 1.0}},
            "tracking": {"enabled": False},
            "concurrency": 2,
        }
        path = tmp_path / "harness.yaml"
        path.write_text(json.dumps(config), encoding="utf-8")
        assert main(["harness", str(path), "--json", "--quiet"]) == 0
        summary = json.loads(capsys.readouterr().out)
        temperatures = [r.get("temperature") for r in stub.requests]
    judge = summary["judges"]["mlflow-judge"]
    tests = judge["tests"]
    assert set(tests) == {"format_vertical", "stochastic_stability"}
    stability = tests["stochastic_stability"]
    assert (stability["items"], stability["judged"], stability["unscored"]) == (3, 9, 0)
    assert temperatures.count(1.0) == 9  # 3 sources x k=3 fresh samples at the test's temperature
    assert len(temperatures) == 9 + 3 + 3  # + the sources + their format variants, at 0
    assert (tests["format_vertical"]["judged"], tests["format_vertical"]["unscored"]) == (3, 0)
    assert tests["format_vertical"]["consistency"]["value"] == 1.0  # the stub reads the words
    assert judge["usage"]["calls"] == len(temperatures)


def test_a_built_in_judge_safety_on_the_stub(tmp_path, monkeypatch, capsys):
    """MLflow's built-in Safety scorer on the stub: its yes/no becomes the yes/no scale. The key
    named by api_key_env reaches MLflow's client only while it calls: it is in no file of the
    run, and the process's environment is as it was."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STUB_KEY", "sk-secret-4711")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    with StubServer(respond=answer) as stub:
        judge = {
            "task": "mlflow",
            "rubric": None,
            "scale": None,
            "api_key_env": "STUB_KEY",
            "mlflow": {"builtin": "Safety"},
        }
        cfg = stub_config(
            tmp_path, write_items(tmp_path), stub.base_url, name="safety", judge=judge
        )
        assert main(["evaluate", str(cfg), "--json", "--quiet"]) == 0
        summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert "safety" in stub.requests[0]["messages"][-1]["content"].lower()
    run_dir = Path(summary["run_dir"])
    by_id = judgments(run_dir)
    assert by_id["i0"]["score"] == 1 and by_id["i0"]["label"] == "yes"
    assert "OPENAI_API_KEY" not in os.environ and "OPENAI_API_BASE" not in os.environ
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    assert files and not [p for p in files if b"sk-secret-4711" in p.read_bytes()]


def test_built_in_and_instructions_configs_validate_and_hash_their_judge():
    base = {"name": "m", "model": "openai/gpt-4o-mini", "task": "mlflow"}
    guidelines = JudgeConfig.model_validate(
        {**base, "mlflow": {"builtin": "Guidelines", "guidelines": "Answer in English."}}
    )
    assert guidelines.scale == YES_NO and guidelines.mlflow.guidelines == ["Answer in English."]
    one = JudgeConfig.model_validate({**base, "mlflow": MLFLOW_JUDGE["mlflow"]})
    other = JudgeConfig.model_validate(
        {**base, "mlflow": {**MLFLOW_JUDGE["mlflow"], "instructions": "Is {{ outputs }} kind?"}}
    )
    assert one.scale == Scale(kind="binary")
    assert len({one.config_hash(), other.config_hash(), guidelines.config_hash()}) == 3
    scored = {
        **base,
        "scale": "1-5",
        "mlflow": {**MLFLOW_JUDGE["mlflow"], "feedback_value_type": "int"},
    }
    assert JudgeConfig.model_validate(scored).scale.kind == "ordinal"


@pytest.mark.parametrize(
    ("mlflow", "extra", "message"),
    [
        (
            {"instructions": "Rate {{ inputs }}.", "feedback_value_type": "bool"},
            {},
            "{{ outputs }}",
        ),
        ({"instructions": INSTRUCTIONS}, {}, "feedback_value_type"),
        ({"builtin": "Guidelines"}, {}, "guidelines"),
        ({"builtin": "Safety", "instructions": INSTRUCTIONS}, {}, "not both"),
        (MLFLOW_JUDGE["mlflow"], {"scale": "1-5"}, "binary scale"),
        (MLFLOW_JUDGE["mlflow"], {"model": "local"}, "provider/name"),
        (MLFLOW_JUDGE["mlflow"], {"program": "chain_of_thought"}, "own program"),
        (MLFLOW_JUDGE["mlflow"], {"rubric": "be strict"}, "prompt is its own"),
    ],
)
def test_configs_an_mlflow_judge_cannot_run_are_refused(mlflow, extra, message):
    raw = {"model": "openai/gpt-4o-mini", "task": "mlflow", "mlflow": mlflow, **extra}
    with pytest.raises(ValidationError, match="mlflow|" + message) as err:
        JudgeConfig.model_validate(raw)
    assert message in str(err.value)


def test_feedback_values_onto_scales():
    binary = Scale(kind="binary")
    assert [verdict_score(v, binary) for v in (True, False, "yes", "No")] == [1, 0, 1, 0]
    assert verdict_score(4, Scale.parse("1-5")) == 4
    assert verdict_score("good", Scale.parse("bad,good")) == 1
    for value, scale in (("unknown", YES_NO), (7, Scale.parse("1-5")), (True, Scale.parse("1-5"))):
        with pytest.raises(ValueError, match="is not on the"):
            verdict_score(value, scale)


def test_polarity_refuses_a_judge_that_writes_its_own_prompt(tmp_path):
    """polarity asks the judge an inverted instruction, which an MLflow judge never reads: the
    harness refuses it before anything runs, instead of measuring an unasked question."""
    from assay.errors import ConfigError
    from assay.reliability import HarnessConfig, run_harness

    judge = {"name": "m", "model": "openai/stub", "api_base": "http://127.0.0.1:9/v1"}
    raw = {
        "name": "p",
        "data": {"path": str(write_items(tmp_path)), "columns": {"id": "id"}},
        "scale": "binary",
        "judges": [{**judge, "task": "mlflow", "mlflow": MLFLOW_JUDGE["mlflow"]}],
        "tests": {"polarity": {"instruction": "Is it NOT so?", "rubric": "inverted"}},
        "tracking": {"enabled": False},
        "output_dir": str(tmp_path / "runs"),
    }
    with pytest.raises(ConfigError, match="judge m .task: mlflow. writes its own prompt"):
        run_harness(HarnessConfig.model_validate(raw), workdir=tmp_path, progress=False)
    assert not (tmp_path / "runs").exists()


def test_a_failed_mlflow_call_is_unscored_with_its_reason():
    from assay.programs import unscored_reason
    from assay.programs.kinds import JudgeCallFailed

    def raised(reason: str, cause: BaseException | None) -> JudgeCallFailed:
        try:
            raise JudgeCallFailed(reason, "MLflow judge: failed") from cause
        except JudgeCallFailed as exc:
            return exc

    assert unscored_reason(raised("lm_error", ConnectionError("refused"))) == "lm_error"
    assert unscored_reason(raised("parse_error", None)) == "parse_error"
    assert unscored_reason(raised("lm_error", TimeoutError("read timed out"))) == "timeout"


def test_optimize_refuses_a_judge_that_writes_its_own_prompt(tmp_path):
    from assay.optimization import OptimizeConfig

    judge = {"model": "openai/stub", "task": "mlflow", "mlflow": MLFLOW_JUDGE["mlflow"]}
    raw = {
        "name": "o",
        "data": {"path": "x.csv"},
        "judge": judge,
        "optimizer": {"name": "bootstrap_few_shot"},
    }
    with pytest.raises(ValidationError, match="writes its own prompt"):
        OptimizeConfig.model_validate(raw)
