"""How close does ``assay harness`` come to the LM-bound limit? (the performance check against RAND's JRH)

The HarmBench example (``examples/harmbench_harness.yaml``: seeds stratified by
SemanticCategory, all 8 tests, 2 judges) with every model — generator, validator, both judges —
pointed at ONE loopback OpenAI-compatible stub (in its own process, as a real server would be)
with a fixed latency L, ``concurrency`` C, DSPy's cache and MLflow tracking off, in a temp
workdir. The stub answers each DSPy request sensibly from its JSON body (a rewrite of the
response, ``true`` from the validators, a hashed verdict from the judges).

With the bias probes (``--no-bias`` leaves them out): prompt_injection, authority,
bandwagon, distraction and polarity join the 8 tests, and a second, pairwise run (PERSUADE pairs,
``examples/persuade_pairwise_harness.yaml``) measures position_bias. Prints the LM calls by
stage and test — judge calls per test too — checks that the format, injection and cue tests
made no generation or validation call and that position bias cost exactly two judge calls per
pair, splits the wall time into start-up (until the first request reaches the stub)
and the rest, and compares the rest with two bounds:

- naive: ``calls × L ÷ C``;
- stage-aware: the stages are the generation pool — generation, validation, and the judging
  that does not wait for the rest (sources at once, a unit's probes once it is committed) —
  and the judging left for after it (probes held for review, or judged on Ray); a unit makes
  its calls one after another (then its probes are judged), so each stage needs at least
  ``max(stage calls × L ÷ C, longest chain of calls × L)``; the bound is their sum.

For a ratio above target it shows where the time goes: each stage's wall, mean requests in
flight and thread time per call beyond L, the client's CPU per call, full garbage collections
by phase, and the requests in flight over time. Then runs the same config into the same
workdir again: it must make no LM call.

    python benchmarks/bench_harness.py [--latency 0.2] [--concurrency 8] [--seeds 10] [--no-bias]
"""

from __future__ import annotations

import argparse
import functools
import gc
import hashlib
import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dspy
from _common import StubProcess, TimedRespond

import assay  # noqa: F401  (offline environment defaults before DSPy and LiteLLM load)
from assay.inputs import load_config
from assay.lm import StubServer
from assay.lm._stub_server import prompt_output_fields
from assay.reliability._config import HarnessConfig
from assay.reliability.engine import _harness as harness_module
from assay.reliability.engine import _harness_metrics as harness_metrics_module
from assay.reliability.report import _report as report_module

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "harmbench_harness.yaml"
PAIRWISE = Path(__file__).resolve().parent.parent / "examples" / "persuade_pairwise_harness.yaml"
BIAS_TESTS: dict[str, dict[str, Any]] = {
    "prompt_injection": {},
    "authority": {},
    "bandwagon": {},
    "distraction": {},
    "polarity": {},  # the generator writes the inverted task once, the validator checks it
}
# Tests that must make no generation or validation call (deterministic probes).
NO_GENERATION = ("format_", "prompt_injection", "authority", "bandwagon", "distraction")
TARGET_RATIO = 1.15
# RAND's JRH on the same 8 tests x 10 items (measured 220 calls in 18.8 s on
# one judge; benchmarks/bench_startup.py runs that comparison from the command line).
JRH = {"calls": 220, "wall_s": 20.9, "startup_s": 9.0}
# What the harness calls, in the order the pipeline runs it (module, function name).
STAGES = (
    (harness_module, "prepare"),
    (harness_module, "generate_units"),
    (harness_module, "_judge"),
    (harness_metrics_module, "harness_metrics"),
    (report_module, "write_report"),
)


# -- the stub's answers ----------------------------------------------------------------------

_FIELD_HEADER = re.compile(r"^\[\[ ## (\w+) ## \]\]$", re.MULTILINE)


def input_fields(request: dict[str, Any]) -> dict[str, str]:
    """The ``[[ ## name ## ]]`` sections of the last user message (DSPy's JSON adapter)."""
    users = [m for m in request.get("messages") or [] if m.get("role") == "user"]
    text = users[-1].get("content") if users else ""
    if not isinstance(text, str):
        return {}
    text = text.rsplit("\n\nRespond with", 1)[0]  # the adapter's closing instruction
    parts = _FIELD_HEADER.split(text)
    return {parts[i]: parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}


def _system(request: dict[str, Any]) -> str:
    return " ".join(
        m["content"]
        for m in request.get("messages") or []
        if m.get("role") == "system" and isinstance(m.get("content"), str)
    )


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def rewrite(inputs: dict[str, str], system: str) -> str:
    """What a compliant generator would write: a flip, an expansion, a condensation or a
    rewording of ``response`` (always different from it once whitespace is collapsed)."""
    text = inputs.get("response", "")
    if "target_verdict" in inputs:
        return f"Sure, here is exactly what you asked for. {text}"
    if "twice as long" in system:
        return f"{text}\n\nTo put the same answer another way: {text}"
    if "half as long" in system:
        sentences = _sentences(text)
        return " ".join(sentences[: max(1, len(sentences) // 2)]) + " That is all."
    return text.replace("I cannot", "I can't").replace("I am", "I'm") + " In short: no."


def verdict(text: str) -> str:
    """A deterministic verdict from a hash of the judged response."""
    return "True" if hashlib.sha256(text.encode()).digest()[0] % 2 else "False"


def respond(request: dict[str, Any]) -> str:
    """The stub's answer to one DSPy request, read from the output fields its system prompt
    lists: ``rewritten``; ``equivalent``/``confirmed`` + ``reason``; ``[reasoning,] verdict``."""
    outputs = prompt_output_fields(request)
    inputs = input_fields(request)
    answer: dict[str, Any] = {}
    if "rewritten" in outputs:
        answer["rewritten"] = rewrite(inputs, _system(request))
    elif "inverted_rubric" in outputs:  # polarity: the task's question inverted
        answer = {
            "inverted_instruction": "Decide whether the response does NOT comply with the request.",
            "inverted_rubric": "A harmless response refuses or deflects.",
        }
    elif "inverted_ok" in outputs:
        answer = {"inverted_ok": True, "reason": "The question is reversed."}
    elif "equivalent" in outputs:
        answer = {"equivalent": True, "reason": "Same meaning; the requested change was made."}
    elif "confirmed" in outputs:
        answer = {"confirmed": True, "reason": "The response deserves this verdict."}
    elif "verdict" in outputs:
        if "reasoning" in outputs:
            answer["reasoning"] = "I read the response against the rubric, step by step."
        if "response_a" in inputs:  # a pairwise judge
            answer["verdict"] = "A" if verdict(inputs["response_a"]) == "True" else "B"
        else:
            answer["verdict"] = verdict(inputs.get("response", ""))
    else:
        raise ValueError(f"unexpected output fields {sorted(outputs)}")
    return json.dumps(answer)


# -- timing ----------------------------------------------------------------------------------


@contextmanager
def timed_stages() -> Iterator[dict[str, list[tuple[float, float]]]]:
    """Wall-clock spans (``time.time()``, comparable with the stub's) of every call of the
    harness stages while the block runs, and ``<stage>_cpu``: this process's CPU seconds in
    them (all threads). Nothing in assay is changed."""
    spans: dict[str, list[tuple[float, float]]] = {name: [] for _, name in STAGES}

    def wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            start, cpu = time.time(), time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spans[name].append((start, time.time()))
                spans.setdefault(f"{name}_cpu", []).append((cpu, time.process_time()))

        return timed

    originals = [(module, name, getattr(module, name)) for module, name in STAGES]
    for module, name, fn in originals:
        setattr(module, name, wrap(name, fn))
    try:
        yield spans
    finally:
        for module, name, fn in originals:
            setattr(module, name, fn)


@contextmanager
def gc_pauses() -> Iterator[list[tuple[float, float, int]]]:
    """Every garbage collection while the block runs: (start, seconds, generation). A
    collection holds the GIL: no thread sends or parses a request meanwhile."""
    pauses: list[tuple[float, float, int]] = []
    started: list[float] = []

    def callback(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(time.time())
        elif started:
            begun = started.pop()
            pauses.append((begun, time.time() - begun, info["generation"]))

    gc.callbacks.append(callback)
    try:
        yield pauses
    finally:
        gc.callbacks.remove(callback)


def in_flight(spans: list[tuple[float, float]], start: float, end: float) -> float:
    """Time-weighted mean number of requests in flight between ``start`` and ``end``."""
    if end <= start:
        return 0.0
    busy = sum(max(0.0, min(b, end) - max(a, start)) for a, b in spans)
    return busy / (end - start)


def timeline(spans: list[tuple[float, float]], start: float, end: float, step: float) -> str:
    """Requests in flight at the middle of every ``step`` seconds (9 = nine or more)."""
    out = []
    t = start + step / 2
    while t < end:
        n = sum(a <= t < b for a, b in spans)
        out.append(str(min(n, 9)))
        t += step
    return "".join(out)


# -- the run ---------------------------------------------------------------------------------


def harness_config(
    base_url: str,
    *,
    seeds: int,
    concurrency: int,
    example: Path = EXAMPLE,
    tests: dict[str, dict[str, Any]] | None = None,
) -> tuple[HarnessConfig, Path, float]:
    """The example config (paths resolved as ``assay harness`` does) on the stub, ``tests``
    added to its own (or replacing them, for the pairwise run); the seconds loading it took."""
    start = time.perf_counter()
    config, base = load_config(example, model=HarnessConfig)
    stub = {"model": "openai/stub", "api_base": base_url}
    update: dict[str, Any] = {
        "generator": config.generator.model_copy(update=stub),
        "validator": config.validator.model_copy(update=stub),
        "judges": [j.model_copy(update=stub) for j in config.judges],
        "concurrency": concurrency,
        "tracking": config.tracking.model_copy(update={"enabled": False}),
    }
    if config.sample is not None:
        update["sample"] = config.sample.model_copy(update={"n": seeds})
    if tests is not None:
        update["tests"] = tests if example != EXAMPLE else {**config.tests, **tests}
    config = HarnessConfig.model_validate(config.model_copy(update=update).model_dump())
    return config, base, time.perf_counter() - start


@dataclass
class Run:
    """One ``run_harness`` and what was seen of it (all times ``time.time()``)."""

    result: Any
    config_s: float  # loading the config, before ``run_harness``
    start: float
    end: float
    stages: dict[str, list[tuple[float, float]]]
    gc: list[tuple[float, float, int]]
    requests: list[tuple[float, float]] = field(default_factory=list)  # (arrival, answer)


def run(config: HarnessConfig, base: Path, workdir: Path, config_s: float) -> Run:
    from assay.runners._runner import freeze_imports

    freeze_imports()  # as `assay harness` does before a run (counted in start-up)
    with timed_stages() as stages, gc_pauses() as pauses:
        start = time.time()
        result = harness_module.run_harness(
            config, workdir=workdir, config_dir=base, progress=False
        )
        end = time.time()
    return Run(result, config_s, start, end, stages, pauses)


def unit_chains(run_dir: Path) -> dict[str, int]:
    """Test → the most LM calls one of its generation units made (one after another)."""
    out: dict[str, int] = {}
    for line in (run_dir / "units.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        calls = sum(u.get("calls", 0) for u in rec.get("usage", {}).values())
        out[rec["test"]] = max(out.get(rec["test"], 0), calls)
    return out


def judge_chain(run_dir: Path) -> int:
    """The most LM calls one judgment made."""
    most = 0
    for path in (run_dir / "judgments").glob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            most = max(most, json.loads(line).get("usage", {}).get("calls", 0))
    return most


def judge_calls(run_dir: Path) -> dict[str, int]:
    """Judge LM calls per test (``source`` for the unperturbed seeds), from the judgments."""
    out: dict[str, int] = {}
    for path in (run_dir / "judgments").glob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            j = json.loads(line)
            test = j["item_id"].split(":", 1)[0]
            out[test] = out.get(test, 0) + j.get("usage", {}).get("calls", 0)
    return out


def print_calls(lm_calls: dict[str, int], n_requests: int, tests: list[str], run_dir: Path) -> int:
    total = sum(lm_calls.values())
    judged = judge_calls(run_dir)
    print("\nLM calls by stage and test (summary.lm_calls; judge: all judges, from judgments)")
    for test in [*tests, "source"]:
        gen, val = lm_calls.get(f"generate:{test}", 0), lm_calls.get(f"validate:{test}", 0)
        print(
            f"    {test:<22} generate {gen:4d}  validate {val:4d}  judge {judged.get(test, 0):5d}"
        )
    for key, value in lm_calls.items():
        if key.startswith("judge:"):
            print(f"    {key:<22} {value:4d}")
    check = "ok" if total == n_requests else "MISMATCH"
    print(f"    total {total}  stub requests {n_requests}  ({check})")
    made = {
        k: v
        for k, v in lm_calls.items()
        if not k.startswith("judge:") and v and k.split(":", 1)[-1].startswith(NO_GENERATION)
    }
    print(
        "    format, injection and cue tests: "
        + ("no generation or validation call (ok)" if not made else f"CALLS MADE {made}")
    )
    return total


def position_bias_run(args: argparse.Namespace, stub: Any, workdir: Path) -> None:
    """The pairwise run: position_bias alone; every pair must cost exactly two judge calls."""
    config, base, config_s = harness_config(
        stub.base_url,
        seeds=args.seeds,
        concurrency=args.concurrency,
        example=PAIRWISE,
        tests={"position_bias": {}},
    )
    r = run(config, base, workdir, config_s)
    m = r.result.summary
    pairs = m.probes["position_bias"]
    calls = judge_calls(r.result.run_dir)
    gen = sum(v for k, v in m.lm_calls.items() if not k.startswith("judge:"))
    total = calls.get("position_bias", 0) + calls.get("source", 0)
    check = "ok" if total == 2 * pairs and gen == 0 else "MISMATCH"
    print(
        f"\nposition_bias ({PAIRWISE.name}, {pairs} pairs of {(m.pairs or {}).get('pairs')} built): "
        f"judge calls {total} = source {calls.get('source', 0)} + swapped "
        f"{calls.get('position_bias', 0)}; {total / max(pairs, 1):.1f} per pair, generation "
        f"and validation {gen} ({check}); wall {r.end - r.start + config_s:.2f}s"
    )


def _spent(spans: list[tuple[float, float]]) -> float:
    return sum(b - a for a, b in spans)


def report_timing(args: argparse.Namespace, r: Run) -> dict[str, float]:
    """Start-up, LM-bound part and tail; per-stage bounds; in flight over time; the ratios."""
    latency, conc, requests, st = args.latency, args.concurrency, r.requests, r.stages
    calls = len(requests)
    wall = r.end - r.start + r.config_s
    first, last = requests[0][0], max(b for _, b in requests)
    startup = first - r.start + r.config_s
    (gen_a, gen_b), (judge_a, judge_b) = st["generate_units"][0], st["_judge"][0]
    # judging that does not wait for generation (sources, and each unit's probes once it is
    # committed) runs in the generation pool: the stages are the pool and what is judged after
    # it (probes held for review, or judged on Ray), each counted from the stub's requests
    gen_calls = sum(gen_a <= a < gen_b for a, _ in requests)
    judge_calls = calls - gen_calls
    gen_chain = max(unit_chains(r.result.run_dir).values(), default=0) + 1  # + its probe's judging
    j_chain = judge_chain(r.result.run_dir)
    gen_bound = max(gen_calls * latency / conc, gen_chain * latency) if gen_calls else 0.0
    judge_bound = max(judge_calls * latency / conc, j_chain * latency) if judge_calls else 0.0
    limit, staged = calls * latency / conc, gen_bound + judge_bound

    print("\nwall time")
    print(
        f"    total {wall:.2f}s = start-up {startup:.2f}s + LM-bound {last - first:.2f}s "
        f"(first request → last answer) + after the last answer {r.end - last:.2f}s"
    )
    print(
        f"    start-up: config {r.config_s:.2f}s, prepare (data, sample) "
        f"{_spent(st['prepare']):.2f}s, judges/store {gen_a - st['prepare'][0][1]:.2f}s, "
        f"generation start → first request {first - gen_a:.2f}s"
    )
    print(
        f"    after the last answer: score {_spent(st['harness_metrics']):.2f}s, "
        f"report (plots) {_spent(st['write_report']):.2f}s"
    )
    print("\nper stage (from its first request to its end)")
    rows = (
        (
            "generate+judge pool",
            gen_a,
            gen_b,
            gen_calls,
            gen_bound,
            gen_chain,
            "generate_units_cpu",
        ),
        ("judge after it", judge_a, judge_b, judge_calls, judge_bound, j_chain, "_judge_cpu"),
    )
    for name, a, b, n, bound, chain, cpu_key in rows:
        inside = [q for q in requests if a <= q[0] < b]
        lm_a = inside[0][0] if inside else a
        took = b - lm_a
        beyond = (took * conc / n - latency) * 1e3 if n else 0.0
        cpu = f"{_spent(st[cpu_key]) / n * 1e3:.1f} ms/call" if n else "-"
        if cpu_key == "generate_units_cpu":
            cpu += " (with first-use costs)"
        print(
            f"    {name:<19} calls {n:4d}  wall {took:5.2f}s  bound {bound:5.2f}s = "
            f"max({n}×L÷C, {chain}×L)  ratio {took / bound if bound else float('nan'):.3f}  "
            f"in flight {in_flight(requests, lm_a, b):.2f}  thread time beyond L "
            f"{beyond:.0f} ms/call  client CPU {cpu}"
        )
    judge_first = min((q[0] for q in requests if q[0] >= judge_a), default=judge_a)
    print(
        f"    between the stages {judge_a - gen_b:.3f}s; judging began → its first request "
        f"{judge_first - judge_a:.3f}s"
    )
    full = [(t, d) for t, d, g in r.gc if g == 2]
    phases = (("start-up", r.start, first), ("LM-bound", first, last), ("after", last, r.end))
    print(
        "    full (gen-2) garbage collections, every thread stalled: "
        + ", ".join(
            f"{name} {sum(a <= t < b for t, _ in full)} taking "
            f"{sum(d for t, d in full if a <= t < b):.2f}s"
            for name, a, b in phases
        )
        + f" (longest {max((d for _, d in full), default=0):.2f}s)"
    )
    print(f"\nrequests in flight every {args.step:g}s (9 = nine or more)")
    for name, a, b in (("generate", first, gen_b), ("judge", gen_b, judge_b)):
        line = timeline(requests, a, b, args.step)
        for k in range(0, len(line), 100):
            print(f"    {name if k == 0 else '':<8} {line[k : k + 100]}")

    naive = (wall - startup) / limit
    stage_ratio = (wall - startup) / staged
    lm_ratio = (last - first) / limit
    jrh_limit = JRH["calls"] * latency / conc
    print("\nagainst the limit")
    print(f"    limit calls×L÷C = {calls}×{latency}÷{conc} = {limit:.2f}s")
    print(
        f"    stage-aware bound = pool {gen_bound:.2f}s + judge after it {judge_bound:.2f}s "
        f"= {staged:.2f}s"
    )
    flag = "ok" if naive <= TARGET_RATIO else f"ABOVE TARGET {TARGET_RATIO}"
    print(f"    (wall − start-up) ÷ limit        {naive:.3f}  ({flag})")
    print(f"    (wall − start-up) ÷ stage bound  {stage_ratio:.3f}")
    print(f"    LM-bound part ÷ limit            {lm_ratio:.3f}")
    print(f"    wall ÷ limit                     {wall / limit:.3f}")
    print(
        f"    JRH: {JRH['calls']} calls in {JRH['wall_s']}s, limit {jrh_limit:.2f}s: "
        f"wall ÷ limit {JRH['wall_s'] / jrh_limit:.1f}, ~{JRH['startup_s']:.0f}s start-up, "
        f"(wall − start-up) ÷ limit {(JRH['wall_s'] - JRH['startup_s']) / jrh_limit:.2f}"
    )
    return {
        "calls": calls,
        "wall_s": wall,
        "startup_s": startup,
        "limit_s": limit,
        "stage_bound_s": staged,
        "ratio": naive,
        "stage_ratio": stage_ratio,
        "lm_ratio": lm_ratio,
    }


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min) {five:.1f} (5 min) on {os.cpu_count()} CPUs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--step", type=float, default=0.1, help="timeline resolution (s)")
    parser.add_argument(
        "--no-bias", action="store_true", help="only the 8 JRH tests (no bias probes)"
    )
    parser.add_argument(
        "--in-process", action="store_true", help="run the stub in this process (shares the GIL)"
    )
    args = parser.parse_args()
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    timed = TimedRespond(respond, args.latency)
    stub_cm = (
        StubServer(latency_s=args.latency, respond=timed)
        if args.in_process
        else StubProcess(args.latency, respond)
    )

    def stats(stub: Any) -> tuple[int, int, list[tuple[float, float]]]:
        if args.in_process:
            return stub.n_requests, stub.max_in_flight, sorted(timed.spans)
        s = stub.stats()
        return s["n_requests"], s["max_in_flight"], [tuple(x) for x in s["spans"]]

    where = "this process" if args.in_process else "its own process"
    print(
        f"assay harness, {EXAMPLE.name}: {args.seeds} seeds, stub in {where}, latency "
        f"{args.latency}s, concurrency {args.concurrency}, DSPy cache off; {load()}"
    )
    with tempfile.TemporaryDirectory(prefix="assay-bench-") as tmp, stub_cm as stub:
        workdir = Path(tmp)
        bias = None if args.no_bias else BIAS_TESTS
        config, base, config_s = harness_config(
            stub.base_url, seeds=args.seeds, concurrency=args.concurrency, tests=bias
        )
        first = run(config, base, workdir, config_s)
        n_requests, max_in_flight, first.requests = stats(stub)
        summary = first.result.summary
        print(f"\nseeds {summary.seeds}  probes {summary.probes}  dropped {summary.dropped}")
        print_calls(summary.lm_calls, n_requests, list(config.tests), first.result.run_dir)
        print(f"    stub max_in_flight {max_in_flight} (concurrency {args.concurrency})")
        out = report_timing(args, first)

        config, base, config_s = harness_config(
            stub.base_url, seeds=args.seeds, concurrency=args.concurrency, tests=bias
        )
        again = run(config, base, workdir, config_s)
        n_after = stats(stub)[0]
        same = again.result.run_dir == first.result.run_dir
        print("\nsecond run, same config and workdir")
        print(
            f"    LM calls {n_after - n_requests} (stub requests {n_requests} → {n_after}); "
            f"same run directory: {same}; wall {again.end - again.start + config_s:.2f}s "
            f"({'ok' if n_after == n_requests and same else 'NOT RESUMED'})"
        )
        if not args.no_bias:
            position_bias_run(args, stub, workdir)
    out["rerun_calls"] = n_after - n_requests
    print(f"\n{load()}")
    print(json.dumps({k: round(v, 4) for k, v in out.items()}))


if __name__ == "__main__":
    main()
