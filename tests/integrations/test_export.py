"""assay's judge exported: ``assay.integrations.mlflow.scorer`` inside a real
``mlflow.genai.evaluate`` (a local SQLite store, and a real ``mlflow server`` over HTTP) and
``assay.integrations.inspect.scorer`` inside an Inspect eval whose solver is ``mockllm/model`` —
the judge on the loopback stub, measured first by ``assay evaluate`` and ``assay harness``."""

from __future__ import annotations

import json

import pytest

from assay.cli import main
from assay.lm import StubServer
from assay.lm._stub_server import prompt_output_fields
from tests.stub_judge import stub_config

SKY = "The sky is blue."  # judged True
NOT_SURE = "I cannot say."  # judged False
GARBAGE = "<<garbage>>"  # the stub's model answers no JSON: unscored (parse_error)
ROWS = [SKY, NOT_SURE, GARBAGE]


def respond(request: dict) -> str:
    """The stub judge: True for items 1 and 3 (whose reference is 1) and for SKY, else False;
    no JSON at all for GARBAGE."""
    prompt = request["messages"][-1]["content"]
    if GARBAGE in prompt:
        return "not JSON"
    fields = prompt_output_fields(request)
    yes = any(text in prompt for text in ("Item 1 is", "Item 3 is", SKY))
    return json.dumps({**fields, "verdict": "True" if yes else "False"})


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """A stub server, an evaluate run and a harness run (format_vertical) of the same judge."""
    folder = tmp_path_factory.mktemp("measured")
    items = folder / "items.csv"  # two sentences each: format_vertical puts them on two lines
    rows = [
        f"i{k},What colour is item {k}?,Item {k} is blue. It is bright.,{k % 2}" for k in range(4)
    ]
    items.write_text("\n".join(["id,request,response,expected", *rows]) + "\n", encoding="utf-8")
    with StubServer(respond=respond) as stub:
        cfg = stub_config(
            folder,
            items,
            stub.base_url,
            name="export",
            output_dir=str(folder / "runs"),
        )
        assert main(["evaluate", str(cfg), "--quiet"]) == 0
        (run_dir,) = (folder / "runs").iterdir()
        judge = json.loads(cfg.read_text())["judge"]
        harness = {
            "name": "export-harness",
            "data": {"path": str(items), "columns": {"id": "id"}},
            "scale": judge["scale"],
            "judges": [judge],
            "tests": {"format_vertical": {}},
            "tracking": {"enabled": False},
            "output_dir": str(folder / "harness"),
        }
        path = folder / "harness.yaml"
        path.write_text(json.dumps(harness), encoding="utf-8")
        assert main(["harness", str(path), "--quiet"]) == 0
        (harness_dir,) = (folder / "harness").iterdir()
        stub.reset()
        yield {"run": run_dir, "harness": harness_dir, "stub": stub}


def expected_metadata(measured) -> dict[str, str]:
    evaluate = json.loads((measured["run"] / "metrics.json").read_text())
    kappa = evaluate["metrics"]["kappa_categorical"]
    assert kappa["value"] == 1.0  # the stub agrees with every reference
    return {
        "assay.judge": "stub-judge",
        "assay.config_hash": evaluate["config_hash"],
        "assay.run_hash": evaluate["run_hash"],
        "assay.n": "4",
        "assay.kappa_categorical": "1",
        "assay.kappa_categorical_ci_low": "1",
        "assay.kappa_categorical_ci_high": "1",
        "assay.worst_test_rate": "1",  # the stub reads words, not layout: every probe passes
        "assay.worst_test": "format_vertical.consistency",  # (a tie with pass_rate: by name)
    }


def run_mlflow_evaluate(measured, tracking_uri: str) -> dict[str, object]:
    """``mlflow.genai.evaluate`` of the three rows with the exported scorer; the Feedback of
    each row, read back from the store."""
    import mlflow
    from mlflow.genai import evaluate

    from assay.integrations.mlflow import scorer

    mlflow.set_tracking_uri(tracking_uri)
    mlflow.set_experiment("assay-export")
    data = [{"inputs": {"question": "What colour is the sky?"}, "outputs": r} for r in ROWS]
    result = evaluate(data=data, scorers=[scorer(measured["run"], harness=measured["harness"])])
    out = {}
    for trace_id in result.result_df["trace_id"]:  # each row's trace, read back from the store
        trace = mlflow.get_trace(trace_id)
        (fb,) = [a for a in trace.info.assessments if a.name == "stub-judge"]
        out[trace_id] = fb
    return {"result": result, "feedback": out}


def check_feedback(measured, feedbacks: dict) -> None:
    by_value = {}
    for fb in feedbacks.values():
        assert fb.source.source_type == "LLM_JUDGE"
        assert (
            fb.source.source_id == f"stub-judge@{expected_metadata(measured)['assay.config_hash']}"
        )
        for key, value in expected_metadata(measured).items():
            assert fb.metadata[key] == value, key
        by_value[fb.value if fb.error is None else fb.error.error_code] = fb
    assert set(by_value) == {True, False, "UNSCORED_PARSE_ERROR"}
    assert by_value[True].metadata["assay.calls"] == "1"
    assert by_value["UNSCORED_PARSE_ERROR"].value is None


def test_the_exported_scorer_in_mlflow_evaluate_on_a_local_store(measured, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the store's trace artifacts: ./mlruns
    got = run_mlflow_evaluate(measured, f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert measured["stub"].n_requests >= len(ROWS)  # the rows were judged on the stub
    check_feedback(measured, got["feedback"])


@pytest.mark.slow  # starts an mlflow server process
def test_the_exported_scorer_in_mlflow_evaluate_on_a_server(
    measured, mlflow_server, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    got = run_mlflow_evaluate(measured, mlflow_server)
    check_feedback(measured, got["feedback"])


def test_the_exported_scorer_in_an_inspect_eval(measured, tmp_path, monkeypatch):
    """The solver is Inspect's mockllm model answering each sample; the assay judge scores
    its completion: values, metadata and the scored mean (the unscored sample left out)."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.solver import generate

    from assay.integrations.inspect import scorer

    monkeypatch.chdir(tmp_path)
    outputs = [ModelOutput.from_content("mockllm/model", r) for r in ROWS]
    for out in outputs:  # with usage given, mockllm counts no tokens (tiktoken: a download)
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    model = get_model("mockllm/model", custom_outputs=outputs)
    samples = [Sample(input="What colour is the sky?", id=f"s{i}") for i in range(len(ROWS))]
    task = Task(
        dataset=samples,
        solver=generate(),
        scorer=scorer(measured["run"], harness=measured["harness"]),
    )
    (log,) = eval(task, model=model, log_dir=str(tmp_path), display="none", max_samples=1)
    assert log.status == "success", (log.error, [s.error for s in log.samples or []])
    scores = {s.output.completion: s.scores["stub-judge"] for s in log.samples}
    assert (scores[SKY].value, scores[NOT_SURE].value) == (1, 0)
    assert scores[GARBAGE].metadata["assay.unscored"] == "parse_error"
    for key, value in expected_metadata(measured).items():
        assert scores[SKY].metadata[key] == value, key
    metrics = log.results.scores[0].metrics
    assert metrics["scored_mean"].value == 0.5  # (1 + 0) / 2: the unscored one is no 0
    assert metrics["unscored"].value == 1


def test_a_harness_run_of_another_judge_is_refused(measured):
    """The reliability figures travel only with the judge config they were measured on."""
    from assay.errors import ConfigError
    from assay.inputs import load_config
    from assay.integrations import load_judge

    config = load_config(measured["run"] / "config.yaml")[0].judge
    same = load_judge(config, harness=measured["harness"])
    assert same.figures["assay.worst_test_rate"] == "1"
    other = config.model_copy(update={"rubric": "Another rubric."})
    with pytest.raises(ConfigError, match="measured no judge with config hash"):
        load_judge(other, harness=measured["harness"])
    with pytest.raises(ConfigError, match="not a harness run"):
        load_judge(config, harness=measured["run"])
