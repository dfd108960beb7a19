"""Both agent examples end to end on the embedded llama.cpp model (marked; still run in CI).

Short outputs and one transcript keep each run under a minute: the tiny model's probes are
mostly dropped (a truncated edit does not parse), which is what these tests check — the run
completes, every unit ends as a probe or a counted drop, every stage's calls are counted, and
only confirmed probes are judged.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.inputs import load_config
from assay.reliability import HarnessConfig, run_harness

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
STAGES = {"plan", "summarize", "edit", "verify"}

pytestmark = pytest.mark.local_model


@pytest.fixture(autouse=True)
def _needs_local_model():
    pytest.importorskip("llama_cpp", reason="pip install 'assay[local]'")


def _short(extra: dict | None = None) -> dict:
    return {
        "generator.max_tokens": 64,
        "validator.max_tokens": 32,
        "tests.agent_perturbation.max_edit_rounds": 1,
        "tests.agent_perturbation.summary_words": 20,
        "tracking.enabled": False,
        **(extra or {}),
    }


def _load(name: str, extra: dict | None = None) -> tuple[HarnessConfig, Path]:
    config, base = load_config(EXAMPLES / name, _short(extra), model=HarnessConfig)
    raw = config.model_dump(mode="json")
    raw["judges"][0]["max_tokens"] = 16
    return HarnessConfig.model_validate(raw), base


def _check(res, tests: list[str]) -> None:
    calls = res.summary.lm_calls
    units = [json.loads(x) for x in (res.run_dir / "units.jsonl").read_text().splitlines()]
    assert units and {u["test"] for u in units} == set(tests)
    for u in units:  # every unit: a probe or a drop with its reason
        assert len(u["probes"]) + len(u["dropped"]) == 1, u
    for key, n in calls.items():
        stage = key.split(":", 1)[0]
        assert stage in STAGES | {"judge"} and n >= 0
    assert calls["verify:agent_positives"] >= 1
    probes = [json.loads(x) for x in (res.run_dir / "probes.jsonl").read_text().splitlines()]
    for p in probes:
        assert p["validation"]["verdict"] is True  # nothing unconfirmed is kept
        assert p["meta"]["criterion"] and p["transcript"]
    report = (res.run_dir / "report.md").read_text()
    assert "embedded local model" in report


def test_agentharm_example_on_the_embedded_model(tmp_path, example_data):
    """The AgentHarm example's positives (its transcripts, rubric and verifier on the embedded
    model); the perturbation's planner, summarizer and editor run in the ToolEmu example's test
    below — on AgentHarm's ~1,500-token prompts they were half of this test's 35-46 s."""
    config, base = _load("agentharm_harness.yaml")
    config.output_dir = str(tmp_path / "runs")
    res = run_harness(
        config,
        workdir=tmp_path,
        config_dir=base,
        limit=1,
        tests=["agent_positives"],
        progress=False,
    )
    _check(res, ["agent_positives"])
    judged = res.summary.judges["agentharm-judge"]
    assert judged.source_unscored == 0  # grammar-constrained: the verdict always parses


def test_toolemu_example_on_the_embedded_model(tmp_path, example_data):
    config, base = _load(
        "toolemu_harness.yaml",
        {
            "tests.agent_perturbation.criteria": ["risky_tool_calls"],
            "tests.agent_positives.criteria": ["risky_tool_calls"],
        },
    )
    config.output_dir = str(tmp_path / "runs")
    res = run_harness(config, workdir=tmp_path, config_dir=base, limit=1, progress=False)
    _check(res, ["agent_perturbation", "agent_positives"])
    units = [json.loads(x) for x in (res.run_dir / "units.jsonl").read_text().splitlines()]
    # ordinal criterion: perturbation aims at the configured level, positives at the top one
    assert sorted(u["unit_id"].rsplit(":", 1)[1] for u in units) == ["score=0", "score=3"]
