"""End to end on the embedded llama.cpp model (marked; still run in CI)."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.experiments import evaluate, load_config

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

pytestmark = pytest.mark.local_model


@pytest.fixture(autouse=True)
def _needs_local_model():
    pytest.importorskip("llama_cpp", reason="pip install 'assay[local]'")


def test_harmbench_three_items_complete_run_and_mlflow(tmp_path, example_data):
    import mlflow

    config, base = load_config(EXAMPLES / "harmbench.yaml")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    res = evaluate(
        config, workdir=tmp_path, config_dir=base, limit=3, progress=False, tracking_uri=uri
    )
    c = res.summary.counts.model_dump()
    assert c["items"] == 3 and c["judged"] == 3
    # grammar-constrained decoding: the tiny model's output always parses
    assert c["scored"] == 3, res.summary
    for j in res.judgments:
        assert j.model == "local" and j.usage.calls == 1 and j.usage.prompt_tokens > 0
    files = {p.name for p in res.run_dir.iterdir()}
    assert {
        "config.yaml",
        "judgments.jsonl",
        "metrics.json",
        "report.md",
        "program.json",
        "run.json",
    } <= files
    run = mlflow.MlflowClient(tracking_uri=uri).get_run(res.mlflow_run_id)
    assert run.data.params["judge.model"] == "local"
    assert run.data.metrics["n_scored"] == 3
    assert "accuracy" in run.data.metrics


def test_expected_score_from_local_logprobs(tmp_path, example_data):
    config, base = load_config(EXAMPLES / "harmbench.yaml")
    config.judge.score_mode = "expected"
    config.tracking.enabled = False
    res = evaluate(config, workdir=tmp_path, config_dir=base, limit=2, progress=False)
    for j in res.judgments:
        assert j.score in (0, 1)
        assert j.expected_score is not None and 0.0 <= j.expected_score <= 1.0


@pytest.mark.parametrize("example", ["persuade.yaml", "toolemu_safety.yaml", "agentharm.yaml"])
def test_examples_run_on_the_local_model(tmp_path, example_data, example):
    config, base = load_config(EXAMPLES / example)
    config.tracking.enabled = False
    res = evaluate(config, workdir=tmp_path, config_dir=base, limit=2, progress=False)
    assert res.summary.counts.judged == 2
    # every item ends as a judgment: scored, or unscored with a reason
    for j in res.judgments:
        assert (j.score is not None) != (j.unscored is not None)


@pytest.mark.parametrize("example", ["harmbench_harness.yaml", "persuade_harness.yaml"])
def test_harness_examples_run_on_the_local_model(tmp_path, example_data, example):
    from assay.experiments.reliability import HarnessConfig, run_harness

    config, base = load_config(EXAMPLES / example, model=HarnessConfig)
    config.tracking.enabled = False
    res = run_harness(config, workdir=tmp_path, config_dir=base, limit=2, progress=False)
    m = res.metrics
    assert m["seeds"] == 2
    assert set(m["probes"]) == set(config.tests)
    # deterministic format probes always exist; LLM probes may be dropped, but are counted
    for t in ("format_vertical", "format_intraline", "format_indent"):
        assert m["probes"][t] + sum(m["dropped"].get(t, {}).values()) >= 1
    for judge in config.judges:
        r = m["judges"][judge.name]
        for t, tm in r["tests"].items():
            assert tm["judged"] == m["probes"][t] or m["review"]["required"]
    for f in ("report.md", "metrics.json", "heatmap.png", "cost_accuracy.png", "probes.jsonl"):
        assert (res.run_dir / f).exists()
