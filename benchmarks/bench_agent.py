"""How close does ``assay harness`` come to the LM-bound limit in agent mode?

JRH's AgentHarm agent-mode setup (``examples/agentharm_harness.yaml``: the Inspect log's 16
transcripts, the refusal rubric, ``agent_perturbation`` and ``agent_positives``) with every
model — planner, editor, summarizer (generator), verifier (validator) and the judge — pointed at
ONE loopback OpenAI-compatible stub in its own process, with a fixed latency L, ``concurrency``
C, DSPy's cache and MLflow tracking off, in a temp workdir. The stub answers every stage with
real output, read from the DSPy request: a plan on the last assistant message, a summary, an
edit that removes (objective FAIL) or makes (objective MEET) a refusal, a verifier and a judge
that call a transcript passing when its final answer refuses.

Prints the LM calls by stage, checks that no identical request was sent twice, splits the wall
time into start-up (until the first request reaches the stub) and the rest, and compares the
rest with ``calls × L ÷ C`` (target ≤ 1.15). Then: the same config again into the same workdir
(must make no call); and a run in a child process killed (SIGKILL) mid-edit and run again: no
conversation finished before the kill may be sent again.

JRH on the same setup: 211 LM calls (per transcript and test: planner 1,
summarizer 3 — one a repeat of an identical prompt — editor 1, verifier 1; then a judge call
per kept probe) in 54 s, one request in flight at a time.

    python benchmarks/bench_agent.py [--latency 0.2] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import dspy
from _common import StubProcess

import assay  # noqa: F401  (offline environment defaults before DSPy and LiteLLM load)
from assay.inputs import load_config
from assay.lm._stub_server import prompt_output_fields
from assay.reliability import HarnessConfig, run_harness

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "agentharm_harness.yaml"
TARGET_RATIO = 1.15
JRH = {"calls": 211, "wall_s": 54.0}
REFUSAL = re.compile(r"\b(can[’']?t|cannot|won[’']?t|unable to|not able to|sorry)\b", re.I)
_FIELD = re.compile(r"^\[\[ ## (\w+) ## \]\]$", re.MULTILINE)


# -- the stub's answers (module level: the stub process imports them) -------------------------
def input_fields(request: dict[str, Any]) -> dict[str, str]:
    users = [m for m in request.get("messages") or [] if m.get("role") == "user"]
    text = users[-1].get("content") if users else ""
    text = (text if isinstance(text, str) else "").rsplit("\n\nRespond with", 1)[0]
    parts = _FIELD.split(text)
    return {parts[i]: parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}


def final_answer(transcript: str) -> str:
    blocks = re.split(r"\n\n(?=\[)", transcript)
    answers = [b for b in blocks if b.startswith("[assistant]")]
    return answers[-1] if answers else ""


def refuses(text: str) -> bool:
    return bool(REFUSAL.search(text[:600]))


def respond(request: dict[str, Any]) -> str:
    outputs = prompt_output_fields(request)
    inputs = input_fields(request)
    fail = "FAIL" in inputs.get("objective", "")
    if "steps" in outputs:
        indices = re.findall(r"^\[(\d+)\] assistant", inputs.get("assistant_messages", ""), re.M)
        goal = "drop the refusal and comply" if fail else "refuse clearly"
        steps = [{"message_index": int(indices[-1]), "intent": goal}] if indices else []
        return json.dumps({"thesis": f"The final answer should {goal}.", "steps": steps})
    if "summary" in outputs:
        n = inputs.get("transcript", "").count("\n[")
        return json.dumps({"summary": f"The user made a request; the agent answered in {n} steps."})
    if "content" in outputs:
        original = inputs.get("original_message", "")
        if fail:
            content = "Sure, here is exactly what you asked for: " + REFUSAL.sub("", original)[:400]
        else:
            content = "I'm sorry, but I can't help with that. " + original[:200]
        return json.dumps({"content": content, "tool_arguments": []})
    if "meets_criterion" in outputs:
        ok = refuses(final_answer(inputs.get("transcript", "")))
        return json.dumps({"meets_criterion": ok, "reason": "read the final answer"})
    if "verdict" in outputs:
        ok = refuses(final_answer(inputs.get("transcript", "")))
        return json.dumps({"verdict": "passes" if ok else "fails"})
    raise ValueError(f"unexpected output fields {sorted(outputs)}")


# -- the run -----------------------------------------------------------------------------------
def agent_config(base_url: str, concurrency: int, out: Path) -> tuple[HarnessConfig, Path]:
    config, base = load_config(EXAMPLE, model=HarnessConfig)
    raw = config.model_dump(mode="json")
    stub = {"model": "openai/stub", "api_base": base_url}
    raw["generator"].update(stub)
    raw["validator"].update(stub)
    for j in raw["judges"]:
        j.update(stub)
    raw.update(concurrency=concurrency, output_dir=str(out))
    raw["tracking"]["enabled"] = False
    return HarnessConfig.model_validate(raw), base


def timeline(spans: list, start: float, end: float, step: float) -> str:
    """Requests in flight at the middle of every ``step`` seconds (9 = nine or more)."""
    out, t = [], start + step / 2
    while t < end:
        out.append(str(min(9, sum(a <= t < b for a, b in spans))))
        t += step
    return "".join(out)


def by_stage(lm_calls: dict[str, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for key, n in lm_calls.items():
        stage = key.split(":", 1)[0]
        out[stage] = out.get(stage, 0) + n
    return out


def request_key(body: dict[str, Any]) -> str:
    return json.dumps(body.get("messages"), sort_keys=True)


def kill_and_resume(stub: StubProcess, concurrency: int, workdir: Path) -> dict[str, Any]:
    """A child process runs the config, is killed once some conversations are committed, and
    runs it again; returns how many requests a finished conversation got again (must be 0)."""
    workdir.mkdir(parents=True, exist_ok=True)
    script = workdir / "child.py"
    script.write_text(
        "import sys, dspy\n"
        f"sys.path.insert(0, {str(REPO / 'benchmarks')!r})\n"
        "dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)\n"
        "from pathlib import Path\n"
        "from bench_agent import agent_config\n"
        "from assay.reliability import run_harness\n"
        f"cfg, base = agent_config({stub.base_url!r}, {concurrency}, Path({str(workdir / 'runs')!r}))\n"
        f"run_harness(cfg, workdir=Path({str(workdir)!r}), config_dir=base, progress=False)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    stub.reset()
    proc = subprocess.Popen([sys.executable, str(script)], env=env, stderr=subprocess.PIPE)
    units_file = None
    while proc.poll() is None:
        found = list((workdir / "runs").glob("*/units.jsonl"))
        if found and len(found[0].read_text().splitlines()) >= 10:
            units_file = found[0]
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    if units_file is None:
        return {"error": "the child finished before it could be killed"}
    finished = [json.loads(x) for x in units_file.read_text().splitlines() if x.endswith("}")]
    first = stub.stats()
    stub.reset()
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True)
    second = stub.stats()
    if done.returncode:
        return {"error": done.stderr.decode()[-500:]}
    # the text of each finished conversation's transcript, to find its requests again
    seeds = {
        json.loads(x)["id"]: json.loads(x)
        for x in (units_file.parent / "seeds.jsonl").read_text().splitlines()
    }
    finished_ids = {(u["test"], u["unit_id"].split(":")[1]) for u in finished}
    both = {  # a transcript both of whose conversations were committed
        s
        for _, s in finished_ids
        if ("agent_perturbation", s) in finished_ids and ("agent_positives", s) in finished_ids
    }
    repeated = 0
    first_bodies = {request_key(b) for b in first.get("bodies", [])}
    for body in second.get("bodies", []):
        if request_key(body) not in first_bodies:
            continue
        text = json.dumps(body)
        outputs = prompt_output_fields(body)
        if "verdict" in outputs:
            continue  # judging a probe whose judgment was not written is not generation
        for sid in both:
            snippet = json.dumps(seeds[sid]["response"][:80])[1:-1]
            if snippet and snippet in text:
                repeated += 1
                break
    return {
        "committed_before_kill": len(finished),
        "requests_before_kill": first["n_requests"],
        "requests_after": second["n_requests"],
        "finished_conversations_repeated": repeated,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--no-kill", action="store_true", help="skip the kill-and-resume run")
    args = parser.parse_args()
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    one, five, _ = os.getloadavg()
    print(
        f"assay harness, {EXAMPLE.name} on a stub in its own process: latency {args.latency}s, "
        f"concurrency {args.concurrency}, DSPy cache off; load average {one:.1f} / {five:.1f} "
        f"on {os.cpu_count()} CPUs"
    )
    with (
        tempfile.TemporaryDirectory(prefix="assay-bench-agent-") as tmp,
        StubProcess(args.latency, respond, keep_bodies=True) as stub,
    ):
        workdir = Path(tmp)
        config, base = agent_config(stub.base_url, args.concurrency, workdir / "runs")
        from assay.runners._runner import freeze_imports

        freeze_imports()  # as `assay harness` does before a run (counted in start-up)
        start, cpu_start = time.time(), time.process_time()
        res = run_harness(config, workdir=workdir, config_dir=base, progress=False)
        end = time.time()
        stats = stub.stats()
        m = res.summary
        spans = stats["spans"]
        calls = stats["n_requests"]
        first, last = spans[0][0], max(b for _, b in spans)
        startup, wall = first - start, end - start
        limit = calls * args.latency / args.concurrency
        keys = [request_key(b) for b in stats["bodies"]]
        print(f"\nseeds {m.seeds}  probes {m.probes}  dropped {m.dropped}")
        print(f"LM calls by stage: {by_stage(m.lm_calls)}  (stub requests {calls})")
        print(f"    {m.lm_calls}")
        print(f"repeated identical requests: {len(keys) - len(set(keys))}")
        print(f"stub max in flight {stats['max_in_flight']} (concurrency {args.concurrency})")
        ratio = (wall - startup) / limit
        flag = "ok" if ratio <= TARGET_RATIO else f"ABOVE TARGET {TARGET_RATIO}"
        print(
            f"\nwall {wall:.2f}s = start-up {startup:.2f}s + first request → last answer "
            f"{last - first:.2f}s + after it {end - last:.2f}s"
        )
        print(f"limit calls×L÷C = {calls}×{args.latency}÷{args.concurrency} = {limit:.2f}s")
        print(f"(wall − start-up) ÷ limit  {ratio:.3f}  ({flag})")
        print(f"LM-bound part ÷ limit      {(last - first) / limit:.3f}")
        cpu = time.process_time() - cpu_start
        print(
            f"client CPU {cpu:.2f}s ({cpu / calls * 1e3:.0f} ms per call; both cores are shared "
            f"with the stub process and anything else running)"
        )
        print(f"requests in flight every 0.1s: {timeline(spans, first, last, 0.1)}")
        jrh_limit = JRH["calls"] * args.latency / args.concurrency
        print(
            f"JRH: {JRH['calls']} calls in {JRH['wall_s']:.0f}s (limit {jrh_limit:.2f}s, "
            f"wall ÷ limit {JRH['wall_s'] / jrh_limit:.1f}); assay: {calls} calls in {wall:.2f}s"
        )

        stub.reset()
        again = run_harness(config, workdir=workdir, config_dir=base, progress=False)
        rerun = stub.stats()["n_requests"]
        same = again.run_dir == res.run_dir
        print(f"\nre-run of the finished config: {rerun} LM calls, same run directory: {same}")
        out = {
            "calls": calls,
            "wall_s": wall,
            "startup_s": startup,
            "limit_s": limit,
            "ratio": ratio,
            "repeated_requests": len(keys) - len(set(keys)),
            "rerun_calls": rerun,
        }
        if not args.no_kill:
            killed = kill_and_resume(stub, args.concurrency, workdir / "killed")
            print(f"killed mid-edit and resumed: {killed}")
            out.update({f"kill_{k}": v for k, v in killed.items() if isinstance(v, int)})
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in out.items()}))


if __name__ == "__main__":
    main()
