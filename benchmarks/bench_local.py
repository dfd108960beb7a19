"""The embedded judge against llama.cpp itself.

The README's first command — ``assay evaluate examples/harmbench.yaml --limit 20`` on the
embedded SmolLM2-135M — beside a direct llama-cpp-python loop on the same items. Each leg runs
in a fresh process of its own (so no leg inherits another's model, OpenMP threads or caches),
loads its model before its clock starts, and uses the ``Llama(...)`` settings assay uses
(:func:`assay.lm._local.llama_settings`); the legs are interleaved, round after round:

- ``assay``: ``evaluate`` of the example through the public API (tracking off, a fresh folder,
  so no answer comes from DSPy's cache);
- ``direct``: the very requests assay sent (messages, grammar, sampling, ``max_tokens``),
  replayed with ``Llama.create_chat_completion`` — the main job should take at most 1.1× this;
- ``minimal``: instruction + rubric as the system message, request + response as the user
  message, ``response_format`` with the verdict enum, the same ``max_tokens``;
- ``packaged`` (optional): the ``direct`` leg on the package's Q4_1 file without flash
  attention — the model as assay ran it before its weights were dequantized to F32;
- ``before`` (optional): assay's requests as the engine sent them before the constant-first prompt layout (DSPy's
  layout, llama-cpp-python's state cache copying the whole state after every call, the Q4_1
  file);
- ``split`` (optional): assay's requests on two models of half the threads each, one Python
  thread per model, each model half of the items — what several in-process models would give
  against one model with all the threads (``direct``).

A leg named ``NAME@T`` runs with ``ASSAY_LLAMA_THREADS=T`` (``assay@1``: one thread).
For each: wall, prompt / completion tokens, prompt tokens per second of wall, the time inside
``create_chat_completion`` and outside it (assay's and DSPy's work around the library), the
time in llama.cpp (prompts apart), the process's CPU time, and what llama.cpp evaluated:
prompt tokens evaluated against prompt tokens reused from its KV cache (counted at
``Llama.eval``, which every decode goes through); then, per round, each leg's wall ÷ the
``direct`` leg's and whether it gave the same answers. ``--workloads`` adds the other
local-model paths (the tests' harness, ToolEmu and agent runs), each in its own process, with
the same counters. Nothing is asserted; the load average is printed with every leg.

    python benchmarks/bench_local.py [--limit 20] [--repeat 2] [--legs assay,direct,minimal]
        [--workloads evaluate,harness,toolemu,agent]
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import assay  # noqa: F401  (offline environment defaults before DSPy and LiteLLM load)

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@dataclass
class Tally:
    """What the llama-cpp-python calls of one leg cost."""

    calls: int = 0
    in_library_s: float = 0.0  # inside create_chat_completion
    in_llama_s: float = 0.0  # inside Llama.eval (llama.cpp's decode) and Llama.sample
    in_prompt_s: float = 0.0  # of which evaluating prompts (the first eval of each call)
    cpu_s: float = 0.0  # the process's CPU time (every thread: llama.cpp's and Python's)
    evaluated: int = 0  # prompt tokens llama.cpp decoded
    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)

    @property
    def reused(self) -> int:
        return self.prompt_tokens - self.evaluated


_ACTIVE: list[Tally] = []


def _instrument() -> None:
    """Count every ``Llama`` call of this process into the active :class:`Tally` (once)."""
    from llama_cpp import Llama

    if getattr(Llama, "_bench_local", False):
        return
    chat, evaluate, sample = Llama.create_chat_completion, Llama.eval, Llama.sample
    first_eval: dict[int, bool] = {}

    @functools.wraps(chat)
    def timed_chat(self: Any, *args: Any, **kwargs: Any) -> Any:
        first_eval[id(self)] = True
        start = time.perf_counter()
        out = chat(self, *args, **kwargs)
        spent = time.perf_counter() - start
        for tally in _ACTIVE:
            usage = out.get("usage") or {}
            tally.calls += 1
            tally.in_library_s += spent
            tally.prompt_tokens += usage.get("prompt_tokens") or 0
            tally.completion_tokens += usage.get("completion_tokens") or 0
            tally.requests.append(kwargs)
            tally.answers.append(out["choices"][0]["message"].get("content") or "")
        return out

    @functools.wraps(evaluate)
    def timed_eval(self: Any, tokens: Any) -> Any:
        start = time.perf_counter()
        try:
            return evaluate(self, tokens)
        finally:
            spent = time.perf_counter() - start
            for tally in _ACTIVE:
                tally.in_llama_s += spent
                if first_eval.get(id(self)):  # the prompt's remainder; later evals: generated
                    tally.evaluated += len(tokens)
                    tally.in_prompt_s += spent
            first_eval[id(self)] = False

    @functools.wraps(sample)
    def timed_sample(self: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return sample(self, *args, **kwargs)
        finally:
            for tally in _ACTIVE:
                tally.in_llama_s += time.perf_counter() - start

    Llama.create_chat_completion, Llama.eval, Llama.sample = timed_chat, timed_eval, timed_sample
    Llama._bench_local = True


@contextmanager
def counting() -> Iterator[Tally]:
    _instrument()
    tally = Tally()
    _ACTIVE.append(tally)
    cpu = time.process_time()
    try:
        yield tally
    finally:
        _ACTIVE.remove(tally)
        tally.cpu_s = time.process_time() - cpu


def fresh_llama(threads: int | None = None, packaged: bool = False) -> Any:
    """A ``Llama`` on the embedded model with assay's settings (``threads`` for its thread
    count) and no cache of its own; ``packaged``: on the package's Q4_1 file without flash
    attention, as assay ran it before its weights were dequantized to F32."""
    from llama_cpp import Llama

    from assay.lm._local import LlamaCppEngine, default_gguf_path, llama_settings

    engine = LlamaCppEngine(default_gguf_path()) if packaged else LlamaCppEngine.for_model("local")
    settings = llama_settings(engine.flash_attn)
    if threads is not None:
        settings.update(n_threads=threads, n_threads_batch=threads)
    return Llama(model_path=str(engine.path), **settings)


def _plain(kwargs: dict[str, Any]) -> dict[str, Any]:
    """A request as JSON: its grammar as the grammar's text."""
    assert "logits_processor" not in kwargs, "the evaluate example asks for no logprobs"
    out = dict(kwargs)
    if "grammar" in out:
        out["grammar"] = out["grammar"]._grammar
    return out


def _requests(path: Path) -> list[dict[str, Any]]:
    """The requests the ``assay`` leg wrote, ready for ``create_chat_completion``."""
    from llama_cpp import LlamaGrammar

    out = json.loads(path.read_text())
    for kwargs in out:
        if "grammar" in kwargs:
            kwargs["grammar"] = LlamaGrammar.from_string(kwargs["grammar"], verbose=False)
    return out


def _timed(run: Callable[[], Any]) -> tuple[float, Tally, Any]:
    with counting() as tally:
        start = time.perf_counter()
        value = run()
        wall = time.perf_counter() - start
    return wall, tally, value


def leg_assay(limit: int, requests: Path) -> tuple[float, Tally, list[Any]]:
    """``assay evaluate`` through the public API (DSPy's cache in a fresh folder); writes the
    requests it sent to ``requests`` for the direct legs."""
    from assay.api import evaluate
    from assay.lm._local import LlamaCppEngine

    LlamaCppEngine.for_model(
        "local"
    ).loaded()  # loaded before the clock starts, as the direct legs load theirs
    with tempfile.TemporaryDirectory() as tmp:
        wall, tally, res = _timed(
            lambda: evaluate(
                EXAMPLES / "harmbench.yaml",
                workdir=Path(tmp),
                limit=limit,
                progress=False,
                **{"tracking.enabled": False},
            )
        )
    assert res.new_judgments == limit, "a run was resumed; the benchmark needs a fresh folder"
    requests.write_text(json.dumps([_plain(k) for k in tally.requests]))
    return wall, tally, [j.score for j in res.judgments]


def leg_direct(limit: int, requests: Path, packaged: bool = False) -> tuple[float, Tally, None]:
    """assay's requests (messages, grammar, sampling), sent to a fresh ``Llama`` directly
    (``packaged``: on the package's Q4_1 file, see :func:`fresh_llama`)."""
    calls = _requests(requests)
    llm = fresh_llama(packaged=packaged)
    try:
        wall, tally, _ = _timed(lambda: [llm.create_chat_completion(**k) for k in calls])
    finally:
        llm.close()
    return wall, tally, None


def leg_split(limit: int, requests: Path, models: int = 2) -> tuple[float, Tally, None]:
    """assay's requests on ``models`` models of 1/``models`` of the threads each, one Python
    thread per model, each on a contiguous share of the items (so each keeps its prefix)."""
    from concurrent.futures import ThreadPoolExecutor

    from assay.lm._local import llama_settings

    calls = _requests(requests)
    share = -(-len(calls) // models)
    parts = [calls[i : i + share] for i in range(0, len(calls), share)]
    threads = max(1, llama_settings()["n_threads"] // models)
    llms = [fresh_llama(threads) for _ in parts]

    def run(llm: Any, part: list[dict[str, Any]]) -> list[Any]:
        return [llm.create_chat_completion(**k) for k in part]

    try:
        with ThreadPoolExecutor(len(parts)) as pool:
            wall, tally, outs = _timed(lambda: list(pool.map(run, llms, parts)))
    finally:
        for llm in llms:
            llm.close()
    # the tally's answers are in the order calls ended; the legs compare them in request order
    tally.answers = [o["choices"][0]["message"].get("content") or "" for p in outs for o in p]
    return wall, tally, None


def leg_before(limit: int, requests: Path) -> tuple[float, Tally, None]:
    """The same requests as the engine sent them before the constant-first prompt layout: DSPy's layout (the output
    requirements after each item's inputs, not at the end of the system message) on a ``Llama``
    with llama-cpp-python's state cache (1 GB, without its copy of the logits buffer), which
    copies the whole state after every call."""
    import numpy as np
    from llama_cpp import LlamaRAMCache, LlamaState

    calls = _requests(requests)
    llm = fresh_llama(packaged=True)
    blank = np.zeros((1, llm.n_vocab()), dtype=np.single)

    class SlimCache(LlamaRAMCache):
        def __setitem__(self, key: Any, state: Any) -> None:
            state = LlamaState(
                input_ids=state.input_ids,
                scores=blank,
                n_tokens=state.n_tokens,
                llama_state=state.llama_state,
                llama_state_size=state.llama_state_size,
                seed=state.seed,
            )
            super().__setitem__(key, state)

    llm.set_cache(SlimCache(capacity_bytes=1 << 30))
    for kwargs in calls:
        system, user = kwargs["messages"]
        constant, requirements = system["content"].rsplit("\n\n", 1)
        assert requirements.startswith("Respond with"), requirements
        kwargs["messages"] = [
            {"role": "system", "content": constant},
            {"role": "user", "content": f"{user['content']}\n\n{requirements}"},
        ]
    try:
        wall, tally, _ = _timed(lambda: [llm.create_chat_completion(**k) for k in calls])
    finally:
        llm.close()
    return wall, tally, None


def leg_minimal(limit: int, requests: Path) -> tuple[float, Tally, list[int]]:
    """The minimal prompt: instruction + rubric as system, request + response as user, the
    verdict enum as ``response_format``, assay's ``max_tokens`` (read off its requests)."""
    instruction = (EXAMPLES / "data/jrh/harmbench/instruction.txt").read_text().strip()
    rubric = (EXAMPLES / "data/jrh/harmbench/rubric.txt").read_text().strip()
    with open(EXAMPLES / "data/jrh/harmbench/harmbench.csv", encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))[:limit]
    (max_tokens,) = {k["max_tokens"] for k in json.loads(requests.read_text())}
    schema = {
        "type": "object",
        "properties": {"verdict": {"type": "string", "enum": ["False", "True"]}},
        "required": ["verdict"],
    }
    calls = [
        {
            "messages": [
                {"role": "system", "content": f"{instruction}\n\n{rubric}"},
                {
                    "role": "user",
                    "content": f"Request:\n{row['test_case']}\n\nResponse:\n{row['generation']}",
                },
            ],
            "response_format": {"type": "json_object", "schema": schema},
            "temperature": 0.0,
            "max_tokens": max_tokens,
            "seed": 0,
        }
        for row in rows
    ]
    llm = fresh_llama()
    try:
        wall, tally, outs = _timed(lambda: [llm.create_chat_completion(**k) for k in calls])
    finally:
        llm.close()
    verdicts = [
        int(json.loads(o["choices"][0]["message"]["content"] or "{}").get("verdict") == "True")
        for o in outs
    ]
    return wall, tally, verdicts


LEGS: dict[str, Callable[[int, Path], tuple[float, Tally, Any]]] = {
    "assay": leg_assay,
    "direct": leg_direct,
    "minimal": leg_minimal,
    "packaged": functools.partial(leg_direct, packaged=True),
    "before": leg_before,
    "split": leg_split,
}


def _short_copy(tmp: Path, relative: str, columns: tuple[str, ...], n: int = 400) -> str:
    """The example table with ``columns`` cut to ``n`` characters (as the local-model tests)."""
    with open(EXAMPLES / relative, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    out = tmp / Path(relative).name
    with open(out, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        for row in rows:
            writer.writerow({k: v[:n] if k in columns else v for k, v in row.items()})
    return str(out)


def _harness(tmp: Path) -> None:
    from assay.inputs import load_config
    from assay.reliability import HarnessConfig, run_harness

    overrides = {
        "data.path": _short_copy(
            tmp, "data/jrh/harmbench/harmbench.csv", ("test_case", "generation")
        ),
        "generator.max_tokens": 64,
        "validator.max_tokens": 24,
    }
    config, base = load_config(EXAMPLES / "harmbench_harness.yaml", overrides, model=HarnessConfig)
    config.tracking.enabled = False
    for judge in config.judges:
        judge.max_tokens = 64 if judge.program == "chain_of_thought" else 16
    config.tests["stochastic_stability"]["k"] = 2
    tests = ["label_flip", "format_vertical", "paraphrase", "stochastic_stability"]
    run_harness(config, workdir=tmp, config_dir=base, limit=1, tests=tests, progress=False)


def _toolemu(tmp: Path) -> None:
    """``toolemu run`` as tests/emulation/test_toolemu_local.py runs it: agent, emulator and two
    evaluators taking turns on one model."""
    from assay.emulation import load_toolemu_config, run_toolemu

    config, base = load_toolemu_config(EXAMPLES / "toolemu_run.yaml")
    config.agent.max_steps = 2
    config.agent.max_tokens = config.emulator.max_tokens = 96
    config.evaluators[0].max_tokens = 160
    config.evaluators[0].tasks = ["toolemu_safety", "toolemu_helpfulness"]
    config.tracking.enabled = False
    run_toolemu(config, workdir=tmp, config_dir=base, limit=1, progress=False)


def _agent(tmp: Path) -> None:
    """The AgentHarm agent harness as tests/reliability/test_agent_local.py runs
    it: planner, summarizer, editor, verifier and judge taking turns on one model."""
    from assay.inputs import load_config
    from assay.reliability import HarnessConfig, run_harness

    overrides = {
        "generator.max_tokens": 64,
        "validator.max_tokens": 32,
        "tests.agent_perturbation.max_edit_rounds": 1,
        "tests.agent_perturbation.summary_words": 20,
        "tracking.enabled": False,
    }
    config, base = load_config(EXAMPLES / "agentharm_harness.yaml", overrides, model=HarnessConfig)
    config.judges[0].max_tokens = 16
    config.output_dir = str(tmp / "runs")
    run_harness(config, workdir=tmp, config_dir=base, limit=1, progress=False)


WORKLOADS: dict[str, Callable[[Path], None]] = {
    "harness": _harness,
    "toolemu": _toolemu,
    "agent": _agent,
}


def _run_workload(name: str) -> tuple[float, Tally, None]:
    """One of the local-model tests' other paths, the model loaded before the clock starts."""
    from assay.lm._local import LlamaCppEngine

    LlamaCppEngine.for_model("local").loaded()
    from assay.lm import configure_cache

    with tempfile.TemporaryDirectory() as tmp:
        configure_cache(Path(tmp))  # a fresh response cache: every call made, at every run
        return _timed(lambda: WORKLOADS[name](Path(tmp)))


def child(leg: str, limit: int, requests: Path, out: Path) -> None:
    """Run one leg in this (fresh) process and write what it measured to ``out``."""
    import assay.lm._local  # noqa: F401  (its OpenMP defaults, before llama_cpp loads)

    load = os.getloadavg()[0]
    if leg in WORKLOADS:
        wall, tally, verdicts = _run_workload(leg)
    else:
        wall, tally, verdicts = LEGS[leg](limit, requests)
    result = {k: v for k, v in asdict(tally).items() if k != "requests"}
    result.update(wall=wall, reused=tally.reused, verdicts=verdicts)
    result["load"] = (load, os.getloadavg()[0])
    out.write_text(json.dumps(result))


def spawn(name: str, limit: int, requests: Path) -> dict[str, Any]:
    """Run leg ``name`` (``leg@threads``) in a fresh interpreter; what it measured."""
    leg, _, threads = name.partition("@")
    env = dict(os.environ)
    if threads:
        env["ASSAY_LLAMA_THREADS"] = threads
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "leg.json"
        command = [sys.executable, __file__, "--leg", leg, "--limit", str(limit)]
        command += ["--requests", str(requests), "--out", str(out)]
        subprocess.run(command, env=env, check=True)
        return json.loads(out.read_text())


def report(label: str, r: dict[str, Any], note: str = "") -> None:
    wall, prompt, completion = r["wall"], r["prompt_tokens"], r["completion_tokens"]
    reuse = r["reused"] / prompt if prompt else 0.0
    # several models at once (split): their times inside the library add up past the wall
    outside = f"{wall - r['in_library_s']:5.2f}s" if r["in_library_s"] <= wall else "    —"
    print(
        f"  {label:<18} wall {wall:7.2f}s  calls {r['calls']:3d}  tokens {prompt:6d}+"
        f"{completion:<4d} {prompt / wall:6.1f} prompt tok/s {completion / wall:5.2f} gen tok/s  "
        f"in create_chat_completion {r['in_library_s']:7.2f}s (llama.cpp {r['in_llama_s']:7.2f}s,"
        f" prompts {r['in_prompt_s']:7.2f}s)  outside {outside}  "
        f"CPU {r['cpu_s']:7.2f}s  evaluated {r['evaluated']:6d} reused {r['reused']:6d} "
        f"({reuse:.0%})  load {r['load'][0]:.1f}→{r['load'][1]:.1f}{note}",
        flush=True,
    )


def bench_evaluate(limit: int, repeat: int, legs: list[str]) -> None:
    print(f"\nevaluate: examples/harmbench.yaml --limit {limit} (tracking off, fresh folder)")
    if legs[0].partition("@")[0] != "assay":
        raise SystemExit("--legs must start with an assay leg (the others replay its requests)")
    ratios: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        requests = Path(tmp) / "requests.json"
        for r in range(repeat):
            print(f" round {r + 1}")
            results: dict[str, dict[str, Any]] = {}
            for name in legs:
                res = results[name] = spawn(name, limit, requests)
                note = ""
                if name.startswith("assay"):
                    note = f"  verdicts {res['verdicts']}"
                    scores = res["verdicts"]
                    answers = res["answers"]
                elif name.startswith("minimal"):
                    agree = sum(a == b for a, b in zip(res["verdicts"], scores, strict=True))
                    note = f"  [verdicts as assay's on {agree}/{limit}]"
                elif not name.startswith("before"):
                    note = "  [same answers]" if res["answers"] == answers else "  [OTHER ANSWERS]"
                report(name, res, note)
            pairs = [(name, "direct") for name in results if name != "direct"]
            pairs += [("assay", "minimal")] if "minimal" in results else []
            for a, b in pairs:
                if a in results and b in results:
                    ratios.setdefault(f"{a} ÷ {b}", []).append(
                        (
                            results[a]["wall"] / results[b]["wall"],
                            results[a]["cpu_s"] / results[b]["cpu_s"],
                        )
                    )
            print("  " + "; ".join(_ratio(k, v[-1]) for k, v in ratios.items()), flush=True)
    if repeat > 1:
        medians = {
            k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
            for k, v in ratios.items()
        }
        print("  medians of the rounds: " + "; ".join(_ratio(k, v) for k, v in medians.items()))


def _ratio(label: str, wall_cpu: tuple[float, float]) -> str:
    return f"{label} {wall_cpu[0]:.3f} (CPU {wall_cpu[1]:.3f})"


def bench_workload(name: str) -> None:
    """One of the local-model tests' other paths: how much of its prompts llama.cpp reused."""
    print(f"\n{name}: the local-model test's run")
    report(name, spawn(name, 0, Path(os.devnull)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument(
        "--legs",
        default="assay,direct,minimal",
        help=f"comma-separated, the first an assay leg: {', '.join(LEGS)} (NAME@T: T threads)",
    )
    parser.add_argument(
        "--workloads",
        default="evaluate",
        help="comma-separated: evaluate (the legs above), " + ", ".join(WORKLOADS),
    )
    parser.add_argument("--leg", help=argparse.SUPPRESS)  # a child process: run this leg
    parser.add_argument("--requests", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.leg:
        child(args.leg, args.limit, args.requests, args.out)
        return
    names = [w.strip() for w in args.workloads.split(",") if w.strip()]
    legs = [w.strip() for w in args.legs.split(",") if w.strip()]
    unknown = set(names) - {"evaluate", *WORKLOADS}
    unknown |= {leg.partition("@")[0] for leg in legs} - set(LEGS)
    if unknown:
        parser.error(f"unknown workload(s) or leg(s): {', '.join(sorted(unknown))}")
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    for name in names:
        if name == "evaluate":
            bench_evaluate(args.limit, args.repeat, legs)
        else:
            bench_workload(name)


if __name__ == "__main__":
    main()
