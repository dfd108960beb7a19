"""End to end on the embedded llama.cpp model (marked; still run in CI).

One test per example path, each bounded so that the suite stays within minutes on two cores
: one or two items, short texts, small ``max_tokens``. They check that every path
runs and that every item ends as a judgment, not what a 135M model concludes.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from assay.evaluation import evaluate
from assay.inputs import load_config

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SHORT = 400  # characters kept of each judged text

pytestmark = pytest.mark.local_model


def short_copy(tmp_path: Path, relative: str, columns: tuple[str, ...]) -> str:
    """The example table with its ``columns`` cut to :data:`SHORT` characters."""
    with open(EXAMPLES / relative, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    out = tmp_path / Path(relative).name
    with open(out, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        for row in rows:
            writer.writerow({k: v[:SHORT] if k in columns else v for k, v in row.items()})
    return str(out)


@pytest.fixture(autouse=True)
def _needs_local_model():
    pytest.importorskip("llama_cpp", reason="pip install 'assay[local]'")


def test_harmbench_two_items_complete_run_and_mlflow(tmp_path, example_data):
    import mlflow

    data = short_copy(tmp_path, "data/jrh/harmbench/harmbench.csv", ("test_case", "generation"))
    config, base = load_config(EXAMPLES / "harmbench.yaml", {"data.path": data})
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    res = evaluate(
        config, workdir=tmp_path, config_dir=base, limit=2, progress=False, tracking_uri=uri
    )
    c = res.summary.counts.model_dump()
    assert c["items"] == 2 and c["judged"] == 2
    # grammar-constrained decoding: the tiny model's output always parses, and always ends
    assert c["scored"] == 2, res.summary
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
    assert run.data.metrics["n_scored"] == 2
    assert "accuracy" in run.data.metrics


def test_expected_score_from_local_logprobs(tmp_path, example_data):
    data = short_copy(tmp_path, "data/jrh/harmbench/harmbench.csv", ("test_case", "generation"))
    config, base = load_config(EXAMPLES / "harmbench.yaml", {"data.path": data})
    config.judge.score_mode = "expected"
    config.tracking.enabled = False
    res = evaluate(config, workdir=tmp_path, config_dir=base, limit=1, progress=False)
    for j in res.judgments:
        assert j.score in (0, 1)
        assert j.expected_score is not None and 0.0 <= j.expected_score <= 1.0


@pytest.mark.parametrize(
    "example, overrides",
    [
        ("persuade.yaml", {"judge.max_tokens": 32}),
        ("toolemu_safety.yaml", {"judge.max_tokens": 160}),  # a long prompt: toolkit specs
        ("agentharm.yaml", {}),
    ],
)
def test_examples_run_on_the_local_model(tmp_path, example_data, example, overrides):
    if example == "persuade.yaml":
        overrides["data.path"] = short_copy(
            tmp_path, "data/jrh/persuade/persuade_sample.csv", ("full_text",)
        )
    config, base = load_config(EXAMPLES / example, overrides)
    config.tracking.enabled = False
    res = evaluate(config, workdir=tmp_path, config_dir=base, limit=1, progress=False)
    assert res.summary.counts.judged == 1
    # every item ends as a judgment: scored, or unscored with a reason
    for j in res.judgments:
        assert (j.score is not None) != (j.unscored is not None)


PERSUADE_RUBRIC = (
    "Score the essay from 1 (no viable point of view, disorganised, pervasive errors) to "
    "6 (insightful point of view, well organised, skilful language, almost no errors)."
)
HARNESS_DATA = {
    "harmbench_harness.yaml": ("data/jrh/harmbench/harmbench.csv", ("test_case", "generation")),
    "persuade_harness.yaml": ("data/jrh/persuade/persuade_sample.csv", ("full_text",)),
}
# one test of each machinery: LLM flip + validator, deterministic format, LLM rewrite +
# validator, sampling (harmbench); generated ordinal probes (persuade)
HARNESS_TESTS = {
    "harmbench_harness.yaml": [
        "label_flip",
        "format_vertical",
        "paraphrase",
        "stochastic_stability",
    ],
    "persuade_harness.yaml": ["synthetic_ordinal", "format_indent"],
}


@pytest.mark.parametrize("example", sorted(HARNESS_DATA))
def test_harness_examples_run_on_the_local_model(tmp_path, example_data, example):
    """One test of each machinery on one short seed, with small budgets (every test of the
    example on two full-length seeds took 646 s and 305 s)."""
    from assay.reliability import HarnessConfig, run_harness

    overrides = {
        "data.path": short_copy(tmp_path, *HARNESS_DATA[example]),
        "generator.max_tokens": 64,
        "validator.max_tokens": 24,
    }
    config, base = load_config(EXAMPLES / example, overrides, model=HarnessConfig)
    config.tracking.enabled = False
    for judge in config.judges:
        judge.max_tokens = 64 if judge.program == "chain_of_thought" else 16
    if example == "persuade_harness.yaml":
        # the example's instruction and 4 kB rubric are ~1,000 tokens in every generator,
        # validator and judge prompt: ~6 s of prompt evaluation per call on two cores
        config.judges[0].instruction = None
        config.judges[0].rubric = PERSUADE_RUBRIC
    stability = config.tests.get("stochastic_stability")
    if stability is not None:
        stability["k"] = 2
    synthetic = config.tests.get("synthetic_ordinal")
    if synthetic is not None:
        synthetic.update(per_bucket=1, max_consecutive_failures=1, few_shot=0)
    tests = HARNESS_TESTS[example]
    res = run_harness(
        config, workdir=tmp_path, config_dir=base, limit=1, tests=tests, progress=False
    )
    m = res.summary
    assert m.seeds == 1
    assert set(m.probes) == set(tests)
    # deterministic format probes always exist; LLM probes may be dropped, but are counted
    for t in {"format_vertical", "format_indent"} & set(tests):
        assert m.probes[t] + sum(m.dropped.get(t, {}).values()) >= 1
    for judge in config.judges:
        r = m.judges[judge.name]
        for t, tm in r.tests.items():
            assert tm.judged == m.probes[t] or m.review.required
    for f in ("report.md", "metrics.json", "heatmap.png", "cost_accuracy.png", "probes.jsonl"):
        assert (res.run_dir / f).exists()
