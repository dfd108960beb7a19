"""How much does assay add around the LM calls of ``assay evaluate``?

(a) A zero-latency scripted LM: every second is framework (DSPy adapters, the runner, the
    run store, metrics). Prints items/s and ms per item, without MLflow, then MLflow's logging
    time from a second run with tracking on.
(b) The loopback OpenAI-compatible stub through LiteLLM with a fixed latency L and
    ``concurrency`` C, DSPy's cache off: the judging stage should take about
    ``calls × L ÷ C``; the ratio of the measured wall time to that limit should stay ≤ 1.15.

Stages are timed by wrapping the functions ``evaluate`` calls (load_items, build_judge,
judge_items, summarize_run, log_run) — nothing in assay is changed.

    python benchmarks/bench_evaluate.py [--items 400] [--latency 0.2] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import functools
import json
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dspy
from _common import StubProcess

import assay  # noqa: F401  (offline environment defaults before DSPy and LiteLLM load)
from assay.experiments import EvaluateConfig, evaluate
from assay.experiments import _evaluate as evaluate_module
from assay.lm import ScriptedCall, ScriptedEngine, StubServer
from assay.programs import JudgeConfig

STAGES = ("load_items", "build_judge", "run_tasks", "summarize_run", "write_html")
TARGET_RATIO = 1.15


@contextmanager
def timed_stages() -> Iterator[dict[str, float]]:
    """Seconds spent in each stage ``evaluate`` calls, while the block runs; ``<stage>_cpu`` is
    the process CPU time in it (all threads, the in-process stub server included)."""
    spent: dict[str, float] = dict.fromkeys(STAGES, 0.0)
    originals = {name: getattr(evaluate_module, name) for name in STAGES}

    def wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            start, cpu = time.perf_counter(), time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[name] += time.perf_counter() - start
                spent[f"{name}_cpu"] = spent.get(f"{name}_cpu", 0.0) + time.process_time() - cpu

        return timed

    for name, fn in originals.items():
        setattr(evaluate_module, name, wrap(name, fn))
    try:
        yield spent
    finally:
        for name, fn in originals.items():
            setattr(evaluate_module, name, fn)


def write_table(path: Path, n: int) -> Path:
    """``n`` synthetic items; every third response is marked good (expected 1)."""
    lines = ["id,request,response,expected"]
    for k in range(n):
        good = k % 3 == 0
        answer = f"Answer {k}. {'GOOD answer about sunlight and water' if good else 'Not sure.'}"
        lines.append(f"i{k:05d},Question {k}: how do plants grow?,{answer},{int(good)}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def config(
    table: Path, judge: dict[str, Any], *, concurrency: int, output_dir: str, tracking: dict
) -> EvaluateConfig:
    return EvaluateConfig.model_validate(
        {
            "name": "bench",
            "data": {"path": str(table), "columns": {"id": "id"}},
            "judge": {
                "name": "bench-judge",
                "instruction": "Decide whether the answer is good.",
                "rubric": "A good answer mentions sunlight and water.",
                "scale": {"kind": "binary", "labels": ["False", "True"]},
                "max_tokens": 32,
                **judge,
            },
            "concurrency": concurrency,
            "retries": 0,
            "output_dir": output_dir,
            "tracking": tracking,
        }
    )


def run(cfg: EvaluateConfig, workdir: Path, lm_factory=None) -> tuple[float, dict[str, float], Any]:
    with timed_stages() as spent:
        start = time.perf_counter()
        result = evaluate(cfg, workdir=workdir, progress=False, lm_factory=lm_factory)
        wall = time.perf_counter() - start
    assert result.new_judgments == len(result.judgments), (
        "a run was resumed; use a fresh output_dir"
    )
    return wall, spent, result


def scripted_factory() -> Callable[[JudgeConfig], dspy.LM]:
    def respond(call: ScriptedCall) -> dict[str, str]:
        return {"verdict": "True" if "GOOD answer" in call.prompt else "False"}

    def factory(cfg: JudgeConfig) -> dspy.LM:
        engine = ScriptedEngine(respond=respond, name="bench")
        return dspy.LM(
            "scripted/bench",
            engine=engine,
            cache=False,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            num_retries=0,
        )

    return factory


def fmt_stages(spent: dict[str, float]) -> str:
    return "  ".join(f"{k}={v:.2f}s" for k, v in spent.items() if v and not k.endswith("_cpu"))


def bench_scripted(table: Path, workdir: Path, n: int, concurrency: int) -> dict[str, float]:
    print(f"\n(a) scripted zero-latency LM, {n} items")
    judge = {"model": "scripted:bench"}
    factory = scripted_factory()
    off = {"enabled": False}
    # warm-up: imports, DSPy/pydantic first-use costs (not part of the per-item overhead)
    wall, _, _ = run(
        config(table, judge, concurrency=1, output_dir="a-warm", tracking=off), workdir, factory
    )
    print(f"    cold start-up (first evaluate in the process): {wall:.2f}s")
    out: dict[str, float] = {}
    for c in sorted({1, concurrency}):
        cfg = config(table, judge, concurrency=c, output_dir=f"a-c{c}", tracking=off)
        wall, spent, result = run(cfg, workdir, factory)
        judging = spent["run_tasks"]
        scored = sum(j.score is not None for j in result.judgments)
        print(
            f"    concurrency {c}: {n / judging:7.1f} items/s judging, "
            f"{judging / n * 1e3:6.2f} ms/item framework overhead "
            f"({spent['judge_items_cpu'] / n * 1e3:.2f} ms CPU); "
            f"evaluate wall {wall:.2f}s ({fmt_stages(spent)}); scored {scored}/{n}"
        )
        out[f"scripted_ms_per_item_c{c}"] = judging / n * 1e3
    with tempfile.TemporaryDirectory() as mlruns:
        tracking = {"enabled": True, "uri": f"sqlite:///{mlruns}/mlflow.db", "experiment": "bench"}
        cfg = config(
            table, judge, concurrency=concurrency, output_dir="a-mlflow", tracking=tracking
        )
        wall, spent, _ = run(cfg, workdir, factory)
        print(
            f"    with MLflow tracking (new sqlite store): log_run {spent['log_run']:.2f}s of "
            f"evaluate wall {wall:.2f}s ({fmt_stages(spent)})"
        )
        cfg = config(
            table, judge, concurrency=concurrency, output_dir="a-mlflow2", tracking=tracking
        )
        wall, spent, _ = run(cfg, workdir, factory)
        print(f"    with MLflow tracking (existing store): log_run {spent['log_run']:.2f}s")
        out["mlflow_log_s"] = spent["log_run"]
    return out


def bench_stub(
    table: Path, workdir: Path, n: int, latency: float, concurrency: int, *, separate: bool
) -> dict[str, float]:
    where = "its own process" if separate else "this process (shares the GIL)"
    print(
        f"\n(b) loopback stub in {where} via LiteLLM: {n} items, latency {latency}s, "
        f"concurrency {concurrency}"
    )
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    off = {"enabled": False}
    tag = "proc" if separate else "thread"
    with StubProcess(latency) if separate else StubServer(latency_s=latency) as stub:
        judge = {"model": "openai/stub", "api_base": stub.base_url}
        # warm-up: LiteLLM is imported lazily on the first call (seconds); keep it out of the ratio
        warm_table = write_table(workdir / f"warm-{tag}.csv", concurrency)
        warm = config(
            warm_table, judge, concurrency=concurrency, output_dir=f"b-warm-{tag}", tracking=off
        )
        wall, _, _ = run(warm, workdir)
        print(f"    start-up (first evaluate of {concurrency} items, LiteLLM import): {wall:.2f}s")
        stub.reset()
        cfg = config(table, judge, concurrency=concurrency, output_dir=f"b-{tag}", tracking=off)
        wall, spent, result = run(cfg, workdir)
        calls, in_flight = stub.n_requests, stub.max_in_flight
    judging = spent["run_tasks"]
    limit = calls * latency / concurrency
    ratio = judging / limit if limit else float("nan")
    scored = sum(j.score is not None for j in result.judgments)
    print(
        f"    calls {calls}  judging wall {judging:.2f}s  limit calls×L÷C {limit:.2f}s  "
        f"ratio {ratio:.3f} (target ≤ {TARGET_RATIO})  max_in_flight {in_flight}"
    )
    print(f"    outside judging {wall - judging:.2f}s ({fmt_stages(spent)}); scored {scored}/{n}")
    cpu_ms = spent["run_tasks_cpu"] / calls * 1e3
    print(
        f"    per call: {(judging * concurrency / calls - latency) * 1e3:.1f} ms of thread time "
        f"beyond L; {cpu_ms:.1f} ms of process CPU (GIL-bound: the ratio grows past 1 "
        f"once CPU per call approaches L÷C = {latency / concurrency * 1e3:.1f} ms)"
    )
    return {
        f"stub_{tag}_ratio": ratio,
        f"stub_{tag}_max_in_flight": in_flight,
        f"stub_{tag}_cpu_ms_per_call": cpu_ms,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--only", choices=["scripted", "stub"], default=None)
    args = parser.parse_args()
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="assay-bench-") as tmp:
        workdir = Path(tmp)
        table = write_table(workdir / "items.csv", args.items)
        if args.only in (None, "scripted"):
            results.update(bench_scripted(table, workdir, args.items, args.concurrency))
        if args.only in (None, "stub"):
            for separate in (True, False):
                results.update(
                    bench_stub(
                        table,
                        workdir,
                        args.items,
                        args.latency,
                        args.concurrency,
                        separate=separate,
                    )
                )
    print("\nsummary")
    for key, value in results.items():
        flag = ""
        if key.endswith("_ratio"):
            flag = "  ok" if value <= TARGET_RATIO else f"  ABOVE TARGET {TARGET_RATIO}"
        print(f"    {key:<26} {value:8.3f}{flag}")
    print(json.dumps({k: round(v, 4) for k, v in results.items()}))


if __name__ == "__main__":
    main()
