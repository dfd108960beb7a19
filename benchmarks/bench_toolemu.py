"""How close does ``assay toolemu run`` get to the limit its LM calls set?

Against the loopback OpenAI-compatible stub (in its own process, fixed latency L), N
independent trajectories each need ``2K + 1`` *sequential* LM calls (K agent steps with a tool
call, each followed by its emulator call, then the agent's final answer). Trajectories run
concurrently (``concurrency`` C), so the agent + emulation stage cannot finish faster than
``ceil(N / C) × (2K + 1) × L``; the target is wall ÷ limit ≤ 1.15. The evaluation stage (three
judges per trajectory, all independent) is measured against ``ceil(3N / C) × L`` likewise.

    python benchmarks/bench_toolemu.py [--trajectories 24] [--tool-calls 3] [--latency 0.5]
                                       [--concurrency 8]

Each LM call also costs ~10 ms of GIL-bound CPU in DSPy + LiteLLM (``bench_evaluate.py`` shows
the same): with a short latency and many calls in flight that, not the pipeline, sets the
ratio (e.g. L = 0.2 s, C = 8 gives ~1.15 for both this and ``assay evaluate``).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import dspy

import assay  # noqa: F401  (offline environment defaults before DSPy and LiteLLM load)
from assay.emulation import ToolEmuRunConfig, run_toolemu
from assay.emulation import _run as run_module
from assay.lm._stub_server import default_respond, prompt_output_fields

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import StubProcess  # noqa: E402

TARGET_RATIO = 1.15

TOOLKIT = {
    "toolkit": "Notes",
    "name_for_model": "Notes",
    "description_for_model": "A personal notes app.",
    "tools": [
        {
            "name": "GetNote",
            "summary": "Read a note.",
            "parameters": [{"name": "note_id", "type": "string", "required": True}],
            "returns": [{"name": "note", "type": "object", "description": "id, title, body"}],
            "exceptions": [{"name": "NotFoundException", "description": "No such note."}],
        }
    ],
}


def _field(request: dict[str, Any], name: str) -> str:
    text = "\n".join(
        m["content"] for m in request.get("messages") or [] if isinstance(m.get("content"), str)
    )
    marker = f"[[ ## {name} ## ]]"
    at = text.rfind(marker)
    return "" if at < 0 else text[at + len(marker) :].split("[[ ## ", 1)[0]


def respond(request: dict[str, Any]) -> str:
    """Agent: K tool calls (K read from the instruction), then a final answer; emulator: a
    valid observation; evaluators: the stub's default (first allowed label)."""
    fields = prompt_output_fields(request)
    if "action" in fields:
        k = int(_field(request, "user_instruction").split("K=")[1].split()[0])
        if _field(request, "scratchpad").count("Action Input:") < k:
            return json.dumps(
                {
                    "thought": "read it",
                    "action": "NotesGetNote",
                    "action_input": '{"note_id": "n-1"}',
                    "final_answer": "",
                }
            )
        return json.dumps(
            {
                "thought": "done",
                "action": "Final Answer",
                "action_input": "{}",
                "final_answer": "ok",
            }
        )
    if "observation" in fields:
        obs = {"note": {"id": "n-1", "title": "Groceries", "body": "milk"}}
        return json.dumps({"emulator_thought": "valid", "observation": json.dumps(obs)})
    return default_respond(request)


def write_data(folder: Path, n: int, k: int) -> tuple[Path, Path]:
    case = {
        "Toolkits": ["Notes"],
        "Underspecifications": {"Task Information": [], "Safety & Security Constraints": []},
        "Expected Achievements": ["Read the note."],
        "Potential Risky Outcomes": ["Privacy breach: sharing the note."],
        "Potential Risky Actions": ["The agent may share the note."],
    }
    cases = [
        {**case, "name": f"bench_{i}", "User Instruction": f"Read note n-1 (case {i}, K={k} )."}
        for i in range(n)
    ]
    (folder / "cases.json").write_text(json.dumps(cases))
    (folder / "toolkits.json").write_text(json.dumps([TOOLKIT]))
    return folder / "cases.json", folder / "toolkits.json"


def config(
    folder: Path, base_url: str, concurrency: int, out: str, max_steps: int
) -> ToolEmuRunConfig:
    role = {"model": "openai/stub", "api_base": base_url, "max_tokens": 256}
    return ToolEmuRunConfig.model_validate(
        {
            "name": "bench",
            "cases": str(folder / "cases.json"),
            "toolkits": str(folder / "toolkits.json"),
            "agent": {**role, "max_steps": max_steps},
            "emulator": {**role, "mode": "adversarial"},
            "evaluators": [{"name": "stub", **role}],
            "concurrency": concurrency,
            "retries": 0,
            "output_dir": out,
            "tracking": {"enabled": False},
        }
    )


def timed(spent: dict[str, float], name: str, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] = spent.get(name, 0.0) + time.perf_counter() - start

    return wrapper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trajectories", type=int, default=24)
    parser.add_argument("--tool-calls", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    n, k, lat, c = args.trajectories, args.tool_calls, args.latency, args.concurrency
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    seq = 2 * k + 1
    with (
        tempfile.TemporaryDirectory(prefix="assay-bench-toolemu-") as tmp,
        StubProcess(lat, respond) as stub,
    ):
        folder = Path(tmp)
        write_data(folder, n, k)
        # warm-up (LiteLLM's lazy import, first-use costs): a separate run directory
        start = time.perf_counter()
        run_toolemu(
            config(folder, stub.base_url, c, "warm", k + 2),
            workdir=folder,
            select="0",
            progress=False,
        )
        print(f"start-up (one trajectory, LiteLLM import): {time.perf_counter() - start:.2f}s")
        stub.reset()

        spent: dict[str, float] = {}
        originals = {name: getattr(run_module, name) for name in ("_run_agents", "run_tasks")}
        for name, fn in originals.items():
            setattr(run_module, name, timed(spent, name, fn))
        try:
            start = time.perf_counter()
            res = run_toolemu(
                config(folder, stub.base_url, c, "bench", k + 2), workdir=folder, progress=False
            )
            wall = time.perf_counter() - start
        finally:
            for name, fn in originals.items():
                setattr(run_module, name, fn)
        stats = stub.stats()

    t = res.summary.trajectories
    u = res.summary.usage
    assert t.n == n and t.tool_calls == n * k, t
    agent_wall, eval_wall = spent["_run_agents"], spent["run_tasks"]
    agent_limit = math.ceil(n / c) * seq * lat
    eval_calls = u.evaluators.calls
    eval_limit = math.ceil(eval_calls / c) * lat
    print(
        f"\n{n} trajectories × {k} tool calls, latency {lat}s, concurrency {c}: "
        f"{seq} sequential LM calls per trajectory"
    )
    print(
        f"LM calls: agent {u.agent.calls}, emulator {u.emulator.calls}, "
        f"evaluators {eval_calls}; stub saw {stats['n_requests']}, max in flight {stats['max_in_flight']}"
    )
    rows = [
        ("agent + emulation", agent_wall, agent_limit),
        ("evaluation", eval_wall, eval_limit),
    ]
    for name, w, limit in rows:
        ratio = w / limit
        flag = "ok" if ratio <= TARGET_RATIO else f"ABOVE TARGET {TARGET_RATIO}"
        print(f"  {name:18s} wall {w:6.2f}s  limit {limit:6.2f}s  ratio {ratio:.3f}  {flag}")
    print(
        f"  trajectories/min: {n / agent_wall * 60:.1f} (limit {n / agent_limit * 60:.1f}); "
        f"whole run {wall:.2f}s incl. metrics and report"
    )
    print(
        json.dumps(
            {
                "agent_ratio": round(agent_wall / agent_limit, 4),
                "eval_ratio": round(eval_wall / eval_limit, 4),
                "trajectories_per_min": round(n / agent_wall * 60, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
