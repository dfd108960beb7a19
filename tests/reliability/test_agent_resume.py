"""An agent-test run killed (SIGKILL) mid-edit resumes without repeating a finished
conversation, and every unit and judgment ends up written once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _judged(run_dir: Path) -> list[str]:
    return [
        json.loads(x)["item_id"]
        for f in (run_dir / "judgments").glob("*.jsonl")
        for x in f.read_text().splitlines()
    ]


def test_killed_mid_edit_resumes_without_repeating_a_finished_conversation(tmp_path):
    script = tmp_path / "run.py"
    log = tmp_path / "calls.log"
    script.write_text(
        f"""
import json, re, sys, time
from pathlib import Path
import assay, dspy
dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
from assay.reliability import HarnessConfig, run_harness
from assay.reliability.selftest._selftest_agent import CRITERION, generator, judge_responder, validator, write_data
from assay.lm import ScriptedEngine, register_script
slow = float(sys.argv[1])
def logged(fn, kind):
    def f(call):
        time.sleep(slow)
        source = re.search(r"What is (\\d+) \\+ (\\d+)", call.prompt)
        with open({str(log)!r}, "a") as fh:
            fh.write(kind + " " + (source.group(0) if source else "?") + "\\n")
        return fn(call)
    return f
register_script("r-gen", lambda: ScriptedEngine(respond=logged(generator, "gen")))
register_script("r-val", lambda: ScriptedEngine(respond=logged(validator, "val")))
register_script("r-judge", lambda: ScriptedEngine(respond=logged(judge_responder("clean"), "judge")))
data = write_data(Path({str(tmp_path)!r}) / "data", n=6)
cfg = HarnessConfig.model_validate({{
    "name": "r", "data": {{"path": str(data), "format": "toolemu"}},
    "scale": {{"kind": "binary", "labels": ["fails", "passes"]}},
    "generator": {{"model": "scripted:r-gen"}}, "validator": {{"model": "scripted:r-val"}},
    "judges": [{{"name": "j", "task": "transcript", "model": "scripted:r-judge", "criteria": [CRITERION]}}],
    "tests": {{"agent_perturbation": {{}}}},
    "concurrency": 1, "retries": 0, "tracking": {{"enabled": False}},
    "output_dir": {str(tmp_path / "runs")!r},
}})
res = run_harness(cfg, workdir=Path({str(tmp_path)!r}), progress=False)
print(json.dumps(res.summary.model_dump(mode="json")["judges"]["j"]["tests"]))
"""
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # this checkout's assay, not an installed one
    proc = subprocess.Popen(
        [sys.executable, str(script), "0.1"], stderr=subprocess.PIPE, text=True, env=env
    )
    units = None
    deadline = time.time() + 120
    while time.time() < deadline:
        found = (
            list((tmp_path / "runs").glob("*/units.jsonl")) if (tmp_path / "runs").exists() else []
        )
        if found and len(found[0].read_text().splitlines()) >= 2:
            units = found[0]
            break
        time.sleep(0.02)
    assert units is not None, proc.communicate()[1]
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    finished = [json.loads(x) for x in units.read_text().splitlines() if x.endswith("}")]
    assert 2 <= len(finished) < 6  # killed mid-run: some conversations finished, not all
    done_sources = {u["unit_id"].split(":")[1] for u in finished}
    n_before = len(log.read_text().splitlines())

    out, err = subprocess.Popen(
        [sys.executable, str(script), "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    ).communicate(timeout=300)
    assert out.strip(), err
    seeds = {
        s["id"]: s["request"].split("?")[0]
        for s in map(json.loads, (units.parent / "seeds.jsonl").read_text().splitlines())
    }
    again = log.read_text().splitlines()[n_before:]
    generated_again = {line.split(" ", 1)[1] for line in again if not line.startswith("judge")}
    assert not generated_again & {seeds[s] for s in done_sources}  # no finished conversation redone
    ids = [json.loads(x)["unit_id"] for x in units.read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 6
    judged = _judged(units.parent)
    assert len(judged) == len(set(judged)) == 12  # 6 sources, 6 probes, each once
    first = json.loads(out.strip().splitlines()[-1])
    assert first["agent_perturbation"]["probes"] == 6
