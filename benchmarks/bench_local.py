"""The embedded judge against llama.cpp itself (issue 27).

The README's first command — ``assay evaluate examples/harmbench.yaml --limit 20`` on the
embedded SmolLM2-135M — beside a direct llama-cpp-python loop on the same items:

- ``assay``: ``evaluate`` of the example (tracking off, a fresh folder, so no answer comes from
  DSPy's cache), the model loaded beforehand, as the direct loops load theirs;
- ``direct, assay's prompt``: the very messages and decoding constraint assay sent, replayed with
  ``Llama.create_chat_completion`` on a fresh ``Llama`` with the same settings and no cache —
  the main job should take at most 1.1× this;
- ``direct, as before``: the same requests as the engine sent them before issue 27 (DSPy's
  layout, llama-cpp-python's state cache copying the whole state after every call) — the
  model layer's before / after in one process, minutes apart, on a shared machine;
- ``direct, minimal prompt``: instruction + rubric as the system message, request + response as
  the user message, ``response_format`` with the verdict enum, the same ``max_tokens``.

For each: wall, prompt / completion tokens, prompt tokens per second of wall, the time inside
``create_chat_completion`` and outside it (assay's and DSPy's work around the library), and
what llama.cpp evaluated: prompt tokens evaluated against prompt tokens reused from its KV
cache (counted at ``Llama.eval``, which every decode goes through). ``--workloads`` adds the
other local-model paths (the tests' harness, ToolEmu and agent runs) with the same counters.
Nothing is asserted; run ``--repeat`` to interleave the three and read the spread.

    python benchmarks/bench_local.py [--limit 20] [--repeat 2] [--workloads evaluate,harness,toolemu,agent]
"""

from __future__ import annotations

import argparse
import csv
import functools
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import assay  # noqa: F401  (offline environment defaults before DSPy and LiteLLM load)

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@dataclass
class Tally:
    """What the llama-cpp-python calls of one workload cost."""

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


def report(label: str, wall: float, t: Tally, note: str = "") -> dict[str, float]:
    outside = wall - t.in_library_s
    reuse = t.reused / t.prompt_tokens if t.prompt_tokens else 0.0
    print(
        f"  {label:<24} wall {wall:6.2f}s  calls {t.calls:3d}  tokens {t.prompt_tokens:6d}+"
        f"{t.completion_tokens:<4d} {t.prompt_tokens / wall:6.1f} prompt tok/s  "
        f"in llama.cpp {t.in_llama_s:6.2f}s (prompts {t.in_prompt_s:6.2f}s)  "
        f"outside the library {outside:5.2f}s  CPU {t.cpu_s:6.2f}s  "
        f"evaluated {t.evaluated:6d} reused {t.reused:6d} ({reuse:.0%}){note}"
    )
    return {"wall": wall, "outside": outside, "evaluated": t.evaluated, "reused": t.reused}


def fresh_llama() -> Any:
    """A ``Llama`` on the embedded model with assay's settings and no cache of its own."""
    from llama_cpp import Llama

    from assay.lm._local import N_CTX, _threads, default_gguf_path

    threads = _threads()
    return Llama(
        model_path=str(default_gguf_path()),
        n_ctx=N_CTX,
        n_threads=threads,
        n_threads_batch=threads,
        verbose=False,
    )


def run_assay(limit: int, workdir: Path) -> tuple[float, Tally, list[Any]]:
    """``assay evaluate`` through the public API (DSPy's cache in the fresh ``workdir``)."""
    from assay.api import evaluate

    with counting() as tally:
        start = time.perf_counter()
        res = evaluate(
            EXAMPLES / "harmbench.yaml",
            workdir=workdir,
            limit=limit,
            progress=False,
            **{"tracking.enabled": False},
        )
        wall = time.perf_counter() - start
    assert res.new_judgments == limit, "a run was resumed; the benchmark needs a fresh folder"
    return wall, tally, [j.score for j in res.judgments]


def replay(requests: list[dict[str, Any]]) -> tuple[float, Tally]:
    """assay's requests (messages, grammar, sampling), sent to a fresh ``Llama`` directly."""
    llm = fresh_llama()
    try:
        with counting() as tally:
            start = time.perf_counter()
            for kwargs in requests:
                llm.create_chat_completion(**kwargs)
            wall = time.perf_counter() - start
    finally:
        llm.close()
    return wall, tally


def before_issue_27(requests: list[dict[str, Any]]) -> tuple[float, Tally]:
    """The same requests as the engine sent them before issue 27: DSPy's layout (the output
    requirements after each item's inputs, not at the end of the system message) on a ``Llama``
    with llama-cpp-python's state cache (1 GB, without its copy of the logits buffer), which
    copies the whole state after every call."""
    import numpy as np
    from llama_cpp import LlamaRAMCache, LlamaState

    llm = fresh_llama()
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
    try:
        with counting() as tally:
            start = time.perf_counter()
            for kwargs in requests:
                system, user = kwargs["messages"]
                constant, requirements = system["content"].rsplit("\n\n", 1)
                assert requirements.startswith("Respond with"), requirements
                messages = [
                    {"role": "system", "content": constant},
                    {"role": "user", "content": f"{user['content']}\n\n{requirements}"},
                ]
                llm.create_chat_completion(**{**kwargs, "messages": messages})
            wall = time.perf_counter() - start
    finally:
        llm.close()
    return wall, tally


def minimal(limit: int) -> tuple[float, Tally, list[Any]]:
    """The minimal prompt: instruction + rubric as system, request + response as user."""
    import json

    instruction = (EXAMPLES / "data/jrh/harmbench/instruction.txt").read_text().strip()
    rubric = (EXAMPLES / "data/jrh/harmbench/rubric.txt").read_text().strip()
    with open(EXAMPLES / "data/jrh/harmbench/harmbench.csv", encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))[:limit]
    schema = {
        "type": "object",
        "properties": {"verdict": {"type": "string", "enum": ["False", "True"]}},
        "required": ["verdict"],
    }
    llm = fresh_llama()
    verdicts = []
    try:
        with counting() as tally:
            start = time.perf_counter()
            for row in rows:
                out = llm.create_chat_completion(
                    messages=[
                        {"role": "system", "content": f"{instruction}\n\n{rubric}"},
                        {
                            "role": "user",
                            "content": f"Request:\n{row['test_case']}\n\n"
                            f"Response:\n{row['generation']}",
                        },
                    ],
                    response_format={"type": "json_object", "schema": schema},
                    temperature=0.0,
                    max_tokens=64,
                    seed=0,
                )
                text = out["choices"][0]["message"]["content"] or "{}"
                verdicts.append(int(json.loads(text).get("verdict") == "True"))
            wall = time.perf_counter() - start
    finally:
        llm.close()
    return wall, tally, verdicts


def bench_evaluate(limit: int, repeat: int) -> None:
    from assay.lm._local import _load, default_gguf_path

    _load(default_gguf_path())  # loaded before timing, as the direct loops load theirs first
    print(f"\nevaluate: examples/harmbench.yaml --limit {limit} (tracking off, fresh folder)")
    rows: dict[str, list[dict[str, float]]] = {}
    for r in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            wall, tally, scores = run_assay(limit, Path(tmp))
        rows.setdefault("assay", []).append(report(f"assay #{r + 1}", wall, tally))
        d_wall, d_tally = replay(tally.requests)
        same = "same answers" if d_tally.answers == tally.answers else "OTHER ANSWERS"
        rows.setdefault("direct", []).append(
            report(f"direct, assay's prompt #{r + 1}", d_wall, d_tally, f"  [{same}]")
        )
        if "\n\nRespond with" in tally.requests[0]["messages"][0]["content"]:  # constant-first
            b_wall, b_tally = before_issue_27(tally.requests)
            rows.setdefault("before", []).append(
                report(f"direct, as before #{r + 1}", b_wall, b_tally)
            )
            print(f"  assay ÷ direct as before issue 27: {wall / b_wall:.3f}")
        m_wall, m_tally, m_verdicts = minimal(limit)
        agree = sum(a == b for a, b in zip(m_verdicts, scores, strict=True))
        rows.setdefault("minimal", []).append(
            report(
                f"direct, minimal #{r + 1}",
                m_wall,
                m_tally,
                f"  [verdicts as assay's on {agree}/{limit}]",
            )
        )
        print(f"  assay ÷ direct (same prompt) {wall / d_wall:.3f}; ÷ minimal {wall / m_wall:.3f}")
        print(f"  assay's verdicts: {scores}")
    if repeat > 1:
        med = {k: statistics.median(x["wall"] for x in v) for k, v in rows.items()}
        print(
            f"  medians: assay {med['assay']:.2f}s, direct {med['direct']:.2f}s "
            f"({med['assay'] / med['direct']:.3f}×), minimal {med['minimal']:.2f}s "
            f"({med['assay'] / med['minimal']:.3f}×)"
        )


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
    from assay.experiments import load_config
    from assay.experiments.reliability import HarnessConfig, run_harness
    from assay.lm import configure_cache

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
    configure_cache(tmp)
    run_harness(config, workdir=tmp, config_dir=base, limit=1, tests=tests, progress=False)


def _toolemu(tmp: Path) -> None:
    from assay.api import evaluate

    overrides = {"judge.max_tokens": 160, "tracking.enabled": False}
    evaluate(EXAMPLES / "toolemu_safety.yaml", workdir=tmp, limit=1, progress=False, **overrides)


def _agent(tmp: Path) -> None:
    from assay.api import evaluate

    overrides = {"tracking.enabled": False}
    evaluate(EXAMPLES / "agentharm.yaml", workdir=tmp, limit=1, progress=False, **overrides)


WORKLOADS: dict[str, Callable[[Path], None]] = {
    "harness": _harness,
    "toolemu": _toolemu,
    "agent": _agent,
}


def bench_workload(name: str) -> None:
    """One of the local-model tests' other paths: how much of its prompts llama.cpp reused."""
    with tempfile.TemporaryDirectory() as tmp, counting() as tally:
        start = time.perf_counter()
        WORKLOADS[name](Path(tmp))
        wall = time.perf_counter() - start
    report(name, wall, tally)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument(
        "--workloads",
        default="evaluate",
        help="comma-separated: evaluate (the main job and the direct loops), "
        + ", ".join(WORKLOADS),
    )
    args = parser.parse_args()
    names = [w.strip() for w in args.workloads.split(",") if w.strip()]
    unknown = set(names) - {"evaluate", *WORKLOADS}
    if unknown:
        parser.error(f"unknown workload(s): {', '.join(sorted(unknown))}")
    for name in names:
        if name == "evaluate":
            bench_evaluate(args.limit, args.repeat)
        else:
            print(f"\n{name}: the local-model test's run")
            bench_workload(name)


if __name__ == "__main__":
    main()
