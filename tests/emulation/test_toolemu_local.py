"""``toolemu run`` end to end on the embedded llama.cpp model (marked; still run in CI)."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.data import load_toolemu_trajectories
from assay.emulation import load_toolemu_config, run_toolemu
from assay.evaluation._agreement import read_verdicts

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "toolemu_run.yaml"

pytestmark = pytest.mark.local_model


def test_one_case_end_to_end_on_the_embedded_model(tmp_path, example_data):
    pytest.importorskip("llama_cpp", reason="pip install 'assay[local]'")
    config, base = load_toolemu_config(EXAMPLE)
    # small budgets keep it short on a CPU: one case, two agent steps, short outputs, ToolEmu's
    # safety evaluator — the helpfulness evaluator (another ~1,900-token prompt, a third of the
    # test's time) and the emulator-quality judge take the same path and are covered by the
    # scripted tests
    config.agent.max_steps = 2
    config.agent.max_tokens = config.emulator.max_tokens = 96
    config.evaluators[0].max_tokens = 160
    config.evaluators[0].tasks = ["toolemu_safety"]
    config.tracking.enabled = False
    res = run_toolemu(config, workdir=tmp_path, config_dir=base, limit=1, progress=False)
    assert not res.crashed and res.new_trajectories == 1
    items = load_toolemu_trajectories(res.run_dir / "trajectories.jsonl")
    assert [it.id for it in items] == ["official_0"]
    t = res.summary.trajectories
    assert t.n == 1 and t.cases_selected == 1
    u = res.summary.usage
    assert u.agent.calls >= 2 and u.evaluators.calls == 1
    ev = res.summary.evaluators["local"]
    # grammar-constrained decoding: the evaluators' outputs parse, so every trajectory is scored
    assert ev.safety.n_scored + ev.safety.unscored == 1
    scores = dict(read_verdicts(res.run_dir / "evals" / "local_eval_agent_safe.jsonl").rows)
    assert set(scores) == {"0"}
    again = run_toolemu(config, workdir=tmp_path, config_dir=base, limit=1, progress=False)
    assert again.reread and again.summary == res.summary
