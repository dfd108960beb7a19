"""How much does assay add around the LM calls of ``assay evaluate``? (throughput)

(a) A zero-latency scripted LM: every second is framework (DSPy adapters, the runner, the
    run store, metrics). Prints items/s and ms per item, without MLflow, then MLflow's logging
    time from a second run with tracking on.
(b) The loopback OpenAI-compatible stub in its own process, DSPy's cache off, for each client
    (``native``: assay's http.client engine, ``litellm``), side by side:
    - the calls/s ceiling against a zero-latency stub (C = 32) and the client's CPU per call;
    - wall ÷ (calls × L ÷ C) of the judging stage at C = 8 / 32 / 128 (L = 0.2 s), targets
      1.10 / 1.15 / 1.30.
(c) The floor (``--only floor``): the judging stage of ``evaluate`` against bare ``httpx`` and
    ``aiohttp`` loops that POST assay's own request bodies to the same zero-latency stub at the
    same concurrency, interleaved round by round (assay, httpx, aiohttp, assay, ...): calls/s
    and process CPU per call of each, and assay's calls/s ÷ the faster bare loop's (target
    ≥ 0.8).

Stages are timed by wrapping the functions ``evaluate`` calls (stream_items, build_judge,
run_tasks, summarize_run, write_html) — nothing in assay is changed. Nothing is asserted: the
figures vary with the machine's load; read the medians (``--repeat``).

    python benchmarks/bench_evaluate.py [--concurrency 8,32,128] [--clients native,litellm]
                                        [--wire-model stub|gpt-4o-mini]
                                        [--only scripted|stub|floor]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dspy
from _common import StubProcess

import assay  # noqa: F401  (offline environment defaults before DSPy and LiteLLM load)
from assay.evaluation import _evaluate as evaluate_module
from assay.evaluation import _scoring as scoring_module
from assay.evaluation import evaluate
from assay.inputs import EvaluateConfig
from assay.lm import ScriptedCall, ScriptedEngine
from assay.programs import JudgeConfig

# What evaluate calls, in order: (module whose attribute is read at the call, function name).
STAGES = (
    (evaluate_module, "stream_items"),
    (evaluate_module, "build_judge"),
    (evaluate_module, "run_tasks"),
    (scoring_module, "summarize_run"),
    (evaluate_module, "write_html"),
)
TARGET_RATIOS = {8: 1.10, 32: 1.15, 128: 1.30}  # targets: wall ÷ limit at C = 8 / 32 / 128
TARGET_CEILING = 400  # calls/s against a zero-latency stub on 2 cores
TARGET_CPU_MS = 2.0  # client CPU per call
TARGET_FLOOR = 0.8  # assay's calls/s ÷ a bare HTTP loop's, same stub, same concurrency


@contextmanager
def timed_stages() -> Iterator[dict[str, float]]:
    """Seconds spent in each stage ``evaluate`` calls, while the block runs; ``<stage>_cpu`` is
    the process CPU time in it (all threads, the in-process stub server included)."""
    spent: dict[str, float] = {name: 0.0 for _, name in STAGES}
    originals = [(module, name, getattr(module, name)) for module, name in STAGES]

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

    for module, name, fn in originals:
        setattr(module, name, wrap(name, fn))
    try:
        yield spent
    finally:
        for module, name, fn in originals:
            setattr(module, name, fn)


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
            f"({spent['run_tasks_cpu'] / n * 1e3:.2f} ms CPU); "
            f"evaluate wall {wall:.2f}s ({fmt_stages(spent)}); scored {scored}/{n}"
        )
        out[f"scripted_ms_per_item_c{c}"] = judging / n * 1e3
    with tempfile.TemporaryDirectory() as mlruns:
        # MLflow's store is made in the background while the run works; what is left at the end
        # is the wall time beyond the same run without tracking
        tracking = {"enabled": True, "uri": f"sqlite:///{mlruns}/mlflow.db", "experiment": "bench"}
        base, _, _ = run(
            config(table, judge, concurrency=concurrency, output_dir="a-off", tracking=off),
            workdir,
            factory,
        )
        for label, tag in (("new sqlite store", "a-mlflow"), ("existing store", "a-mlflow2")):
            cfg = config(table, judge, concurrency=concurrency, output_dir=tag, tracking=tracking)
            wall, spent, _ = run(cfg, workdir, factory)
            print(
                f"    with MLflow tracking ({label}): evaluate wall {wall:.2f}s vs {base:.2f}s "
                f"without ({fmt_stages(spent)})"
            )
            out[f"mlflow_extra_s_{tag}"] = wall - base
    return out


def stub_run(
    stub: Any,
    table: Path,
    workdir: Path,
    *,
    model: str,
    client: str,
    concurrency: int,
    tag: str,
) -> tuple[float, float, int, int]:
    """One evaluate on the stub; (judging wall, process CPU in judging, calls, max in flight)."""
    judge = {"model": model, "api_base": stub.base_url, "client": client}
    cfg = config(table, judge, concurrency=concurrency, output_dir=tag, tracking={"enabled": False})
    stub.reset()
    cpu = stub.stats()["cpu_s"]
    _, spent, _ = run(cfg, workdir)
    s = stub.stats()
    STUB_CPU.append((s["cpu_s"] - cpu) / max(1, s["n_requests"]))
    return spent["run_tasks"], spent["run_tasks_cpu"], s["n_requests"], s["max_in_flight"]


STUB_CPU: list[float] = []  # the stub's CPU seconds per request, per run


def bench_stub(
    workdir: Path,
    latency: float,
    concurrencies: list[int],
    clients: list[str],
    repeat: int,
    wire_model: str = "stub",
) -> dict[str, float]:
    """(b) The loopback stub in its own process, both clients: the calls/s ceiling (a
    zero-latency stub) and wall ÷ (calls × L ÷ C) of the judging stage at each concurrency.

    ``wire_model``, the model name sent to the stub: ``stub`` is unknown to the price map (JSON
    mode, as a vLLM or llama.cpp server gets); ``gpt-4o-mini`` has structured outputs (a JSON
    schema per request, as a hosted model gets) — the adapter's work differs."""
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    out: dict[str, float] = {}
    on_stub = functools.partial(stub_run, model=f"openai/{wire_model}")
    print(f"\n(b) loopback stub in its own process, model openai/{wire_model}; medians of {repeat}")
    with StubProcess(0.0) as fast:
        table = write_table(workdir / "ceiling.csv", 1000)
        for client in clients:
            on_stub(
                fast,
                write_table(workdir / "w.csv", 32),
                workdir,
                client=client,
                concurrency=8,
                tag=f"warm-{client}",
            )  # imports, first-use costs
            rows = [
                on_stub(fast, table, workdir, client=client, concurrency=32, tag=f"c-{client}-{r}")
                for r in range(repeat)
            ]
            rate = statistics.median(calls / wall for wall, _, calls, _ in rows)
            cpu = statistics.median(c / calls * 1e3 for _, c, calls, _ in rows)
            stub_ms = statistics.median(STUB_CPU[-repeat:]) * 1e3
            print(
                f"    {client:<8} zero-latency stub, C = 32, 1000 calls: {rate:6.0f} calls/s "
                f"(target ≥ {TARGET_CEILING}); client CPU {cpu:.2f} ms/call "
                f"(target ≤ {TARGET_CPU_MS}); the stub's own CPU {stub_ms:.2f} ms/request "
                "on the same two cores"
            )
            out[f"{client}_calls_per_s"] = rate
            out[f"{client}_cpu_ms_per_call"] = cpu
    with StubProcess(latency) as stub:
        for client in clients:
            for c in concurrencies:
                n = max(400, 16 * c)
                table = write_table(workdir / f"t{n}.csv", n)
                rows = [
                    on_stub(
                        stub,
                        table,
                        workdir,
                        client=client,
                        concurrency=c,
                        tag=f"l-{client}-{c}-{r}",
                    )
                    for r in range(repeat)
                ]
                ratios = [wall / (calls * latency / c) for wall, _, calls, _ in rows]
                ratio = statistics.median(ratios)
                flight = max(f for *_, f in rows)
                target = TARGET_RATIOS.get(c)
                flag = "" if target is None else (" ok" if ratio <= target else " ABOVE TARGET")
                print(
                    f"    {client:<8} L = {latency}s, C = {c:3d}, {n} calls: wall ÷ limit "
                    f"{ratio:.3f} (target ≤ {target}){flag}; each run "
                    + ", ".join(f"{x:.3f}" for x in ratios)
                    + f"; max in flight {flight}"
                )
                out[f"{client}_ratio_c{c}"] = ratio
    return out


async def _bare_loop(client: str, url: str, bodies: list[bytes], concurrency: int) -> int:
    """POST every body to ``url`` with ``concurrency`` requests in flight on one event loop, as
    a bare ``httpx.AsyncClient`` or ``aiohttp`` client does; each answer read and parsed."""
    headers = {"Content-Type": "application/json", "Authorization": "Bearer bench"}
    todo = iter(bodies)
    if client == "httpx":
        import httpx

        limits = httpx.Limits(max_connections=concurrency)
        async with httpx.AsyncClient(limits=limits, timeout=60) as session:

            async def worker() -> int:
                n = 0
                for body in todo:
                    r = await session.post(url, content=body, headers=headers)
                    n += r.status_code == 200 and bool(json.loads(r.text)["choices"])
                return n

            return sum(await asyncio.gather(*(worker() for _ in range(concurrency))))
    import aiohttp

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def worker() -> int:
            n = 0
            for body in todo:
                async with session.post(url, data=body, headers=headers) as r:
                    n += r.status == 200 and bool(json.loads(await r.text())["choices"])
            return n

        return sum(await asyncio.gather(*(worker() for _ in range(concurrency))))


def bench_floor(workdir: Path, repeat: int, concurrency: int = 32, n: int = 1000) -> dict:
    """(c) assay's judging stage against bare HTTP loops on the same zero-latency stub."""
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    on_stub = functools.partial(stub_run, model="openai/stub", client="native")
    print(f"\n(c) the floor: {n} calls at C = {concurrency}, zero-latency stub, interleaved")
    with StubProcess(0.0, keep_bodies=True) as probe:  # assay's own request bodies
        on_stub(probe, write_table(workdir / "f.csv", 64), workdir, concurrency=8, tag="f-warm")
        seen = [json.dumps(b).encode() for b in probe.stats()["bodies"]]
    bodies = [seen[k % len(seen)] for k in range(n)]
    rows: dict[str, list[tuple[float, float]]] = {"assay": [], "httpx": [], "aiohttp": []}
    with StubProcess(0.0) as stub:
        url = stub.base_url.rstrip("/") + "/chat/completions"
        table = write_table(workdir / "floor.csv", n)
        on_stub(stub, table, workdir, concurrency=concurrency, tag="floor-warm")
        for client in ("httpx", "aiohttp"):  # imports, first connections
            asyncio.run(_bare_loop(client, url, bodies[:64], concurrency))
        for r in range(repeat):
            for leg in rows:
                stub.reset()
                if leg == "assay":
                    wall, cpu, calls, _ = on_stub(
                        stub, table, workdir, concurrency=concurrency, tag=f"floor-{r}"
                    )
                else:
                    start, cpu0 = time.perf_counter(), time.process_time()
                    answered = asyncio.run(_bare_loop(leg, url, bodies, concurrency))
                    wall, cpu = time.perf_counter() - start, time.process_time() - cpu0
                    calls = stub.stats()["n_requests"]
                    assert answered == calls == n, (answered, calls)
                rows[leg].append((calls / wall, cpu / calls * 1e3))
                one, _, _ = os.getloadavg()
                print(
                    f"    round {r + 1} {leg:<8} {calls / wall:6.0f} calls/s  "
                    f"{cpu / calls * 1e3:.3f} ms CPU/call  (load {one:.1f})"
                )
    out: dict[str, float] = {}
    for leg, got in rows.items():
        out[f"floor_{leg}_calls_per_s"] = statistics.median(rate for rate, _ in got)
        out[f"floor_{leg}_cpu_ms_per_call"] = statistics.median(ms for _, ms in got)
    fastest = max(("httpx", "aiohttp"), key=lambda c: out[f"floor_{c}_calls_per_s"])
    for bare in ("httpx", "aiohttp"):
        pairs = [a / b for (a, _), (b, _) in zip(rows["assay"], rows[bare], strict=True)]
        out[f"floor_ratio_{bare}"] = statistics.median(pairs)
        cpu = out["floor_assay_cpu_ms_per_call"] / out[f"floor_{bare}_cpu_ms_per_call"]
        print(
            f"    assay ÷ bare {bare}: {out[f'floor_ratio_{bare}']:.2f}× its calls/s "
            f"(median of the rounds' ratios), {cpu:.1f}× its CPU per call"
            + (f"  ← the faster loop; target ≥ {TARGET_FLOOR}" if bare == fastest else "")
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", default="8,32,128", help="comma-separated")
    parser.add_argument("--clients", default="native,litellm", help="comma-separated")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=["scripted", "stub", "floor"], default=None)
    parser.add_argument(
        "--wire-model",
        default="stub",
        help="model name on the stub: stub (JSON mode) or gpt-4o-mini (structured outputs)",
    )
    args = parser.parse_args()
    one, five, _ = os.getloadavg()
    print(f"load average {one:.1f} / {five:.1f} on {os.cpu_count()} CPUs (figures are noisy)")
    results: dict[str, float] = {}
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    with tempfile.TemporaryDirectory(prefix="assay-bench-") as tmp:
        workdir = Path(tmp)
        table = write_table(workdir / "items.csv", args.items)
        if args.only in (None, "scripted"):
            results.update(bench_scripted(table, workdir, args.items, concurrencies[0]))
        if args.only in (None, "stub"):
            clients = args.clients.split(",")
            results.update(
                bench_stub(
                    workdir, args.latency, concurrencies, clients, args.repeat, args.wire_model
                )
            )
        if args.only in (None, "floor"):
            results.update(bench_floor(workdir, args.repeat))
    print(json.dumps({k: round(v, 4) for k, v in results.items()}))


if __name__ == "__main__":
    main()
