"""Fast at both ends, measured as a new user runs assay: the command line in a fresh process.

Each run is ``python -m assay.cli <command> <config> --quiet`` in a new interpreter with a fresh
working directory (MLflow tracking on, as by default: ``sqlite:///mlflow.db`` there), every
model pointed at the loopback stub in its own process (latency L). The stub records when each
request arrived, so the command's timeline is read from the server's side:

- time to first request: command start → the first request reaching the stub;
- wall and wall ÷ limit, where limit = calls × L ÷ C (start-up and the tail included);
- for the JRH suite, its floor: what a fresh interpreter takes to import DSPy as the command
  line does (measured beside each run) plus ⌈calls ÷ C⌉ waves of L — the least the wall could
  be if assay's own start-up and tail took nothing — and wall − floor, assay's own share;
- a zero-call re-run of the finished config: its wall time (the fixed cost of the command),
  the median of ``--reruns``.

The JRH suite's k = 2 line is printed ÷ its recorded budget (``BUDGET``: wall ÷ limit, the
re-run's wall and CPU seconds): a figure above 1 is a regression to look for. With
``--baseline CHECKOUT`` every measurement is made for that checkout too, the two taking turns
(before, now, now, before, …: a loaded machine's minutes fall on both), and each suite ends
with the ratios now ÷ before of the medians — wall, CPU, first request, and the zero-call
re-run's wall and CPU seconds (CPU: the command's and its helper interpreters', which a loaded
machine moves far less than wall time). A re-run ratio above 1 is the regression this benchmark
is kept for: a re-run that started to load what it need not.

Suites:

- ``jrh``: the HarmBench JRH suite of ``examples/harmbench_harness.yaml`` (label flip, three
  format tests, paraphrase, verbosity long / short, stochastic stability; 10 seeds) with ONE
  judge (``--judges predict``), concurrency 8, beside RAND JRH's figures on the same work. Its
  220 calls are JRH's default config: all seven perturbations, the three format
  tests included, are LLM rewrites, each generated and validated (7 × 10 × 2 = 140), the 70
  probes judged, and ``stochastic_stability`` judged once per item (``number_of_seeds: 1``,
  ``repetitions: 1``: 10). assay's format tests are deterministic (no call), it judges each
  source too (consistency needs the judge's own source verdict), and stability samples each
  item k ≥ 2 times. So the suite runs twice: with k = 2, the nearest to JRH's one judgment per
  item (still twice its stability calls) and the line the targets are read on, and with
  the example as shipped (k = 5: 40 more stability samples than JRH takes). ``--stability-k N``
  runs k = N alone;
- ``evaluate``: ``assay evaluate`` of N synthetic items at concurrency C.

With ``--jrh PATH`` (a checkout of RAND's JRH, run by its own interpreter: ``--jrh-python``,
by default the checkout's ``.venv`` that ``uv sync`` makes, else ``jrhvenv`` beside the
checkout), the jrh suite measures JRH instead of quoting the recorded JRH figures: after each assay run, one JRH
run of the same work (``benchmarks/_jrh.py``: HarmBench, 10 items, the seven perturbation tests
and stochastic stability, one judge, HITL review off, 8 workers) from its command line on the
same stub, read from the stub's spans exactly as assay's; its calls are counted by kind from
the stub's requests. The stub then answers JRH's forced tool calls as tool calls (JRH calls its
models through instructor's tools mode) and DSPy's requests as it does without ``--jrh``.

Nothing is asserted: figures vary with the machine's load; repeat (``--repeat``) and read the
medians.

    python benchmarks/bench_startup.py [--suite jrh|evaluate|both] [--repeat 3] [--client native]
        [--baseline CHECKOUT] [--bytecode compiled|as-is] [--jrh PATH [--jrh-python PYTHON]]

``--bytecode``: ``compiled`` (the default) compiles each checkout once and runs the commands
without ``PYTHONDONTWRITEBYTECODE``, as a user's install runs; ``as-is`` leaves this shell's
``PYTHONDONTWRITEBYTECODE`` and compiles nothing (with the variable set and a checkout never
compiled — a fresh ``git archive`` — every command compiles the modules it imports).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from _common import StubProcess
from _jrh import calls_by_kind, run_jrh, tool_stub

# at module level: the stub's child process imports it (DSPy included, ~2 s) when it starts,
# not on the first request of the first timed run, which it would hold up
from bench_harness import respond as _harness_respond

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "harmbench_harness.yaml"
# RAND's JRH on the same suite and stub: 220 calls in 18.8 s at C = 8, L = 0.2 s;
# the calls by kind follow from its default config (src/configs/default_config.yml)
JRH = {"calls": 220, "wall_s": 18.8}
JRH_CALLS = "140 generation + validation (7 LLM perturbations × 10), 70 probes, 10 stability"
# What the JRH suite's k = 2 line is held to, each figure printed ÷ its budget (above 1: over):
# wall ÷ limit with start-up included and the zero-call re-run's wall (the targets), and that
# re-run's CPU seconds, which a loaded machine moves far less than its wall time (1.7-2.1 s
# while a re-run built the judges' programs; 0.3-0.4 s once it was found by its inputs:
# docs/performance.md)
BUDGET = {"wall_over_limit": 1.25, "rerun_s": 0.6, "rerun_cpu_s": 0.6}
# the figures compared now ÷ before with --baseline
COMPARED = ("wall_s", "cpu_s", "first_request_s", "rerun_s", "rerun_cpu_s")


def _respond(request: dict[str, Any]) -> str:
    return _harness_respond(request)


def jrh_config(
    folder: Path, base_url: str, concurrency: int, client: str | None, stability_k: int | None
) -> Path:
    """The example harness config, every model on the stub, paths made absolute; ``stability_k``
    replaces the example's k of ``stochastic_stability`` when given."""
    raw = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    here = EXAMPLE.parent
    raw["data"]["path"] = str(here / raw["data"]["path"])
    stub = {"model": "openai/stub", "api_base": base_url}
    if client:
        stub["client"] = client
    raw["generator"].update(stub)
    raw["validator"].update(stub)
    for judge in raw["judges"]:
        judge.update(stub)
        for key in ("instruction", "rubric"):
            if str(judge.get(key, "")).startswith("@"):
                judge[key] = "@" + str(here / judge[key][1:])
    raw["concurrency"] = concurrency
    if stability_k is not None:
        raw["tests"]["stochastic_stability"]["k"] = stability_k
    path = folder / "harness.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path


def evaluate_config(
    folder: Path, base_url: str, n: int, concurrency: int, client: str | None
) -> Path:
    lines = ["id,request,response,expected"]
    for k in range(n):
        good = k % 3 == 0
        answer = f"Answer {k}. {'GOOD answer about sunlight and water' if good else 'Not sure.'}"
        lines.append(f"i{k:05d},Question {k}: how do plants grow?,{answer},{int(good)}")
    (folder / "items.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    judge: dict[str, Any] = {
        "name": "bench-judge",
        "model": "openai/stub",
        "api_base": base_url,
        "instruction": "Decide whether the answer is good.",
        "rubric": "A good answer mentions sunlight and water.",
        "scale": {"kind": "binary", "labels": ["False", "True"]},
        "max_tokens": 32,
    }
    if client:
        judge["client"] = client
    raw = {
        "name": "bench",
        "data": {"path": "items.csv", "columns": {"id": "id"}},
        "judge": judge,
        "concurrency": concurrency,
    }
    path = folder / "evaluate.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path


def command(args: list[str], cwd: Path, root: Path) -> tuple[float, float, float]:
    """Run ``python -m assay.cli <args>`` in ``cwd`` with the assay of ``root``; (start time,
    wall seconds, CPU seconds of the command: load-independent, unlike its wall time)."""
    env = {**os.environ, "PYTHONPATH": str(root) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime
    start = time.time()
    proc = subprocess.run(
        [sys.executable, "-m", "assay.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.time() - start
    if proc.returncode != 0:
        raise SystemExit(f"assay {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return start, wall, usage.ru_utime + usage.ru_stime - cpu


def one_suite(
    stub: StubProcess,
    kind: str,
    folder: Path,
    latency: float,
    concurrency: int,
    opts,
    stability_k: int | None = None,
    root: Path | None = None,
) -> dict[str, float]:
    """The suite run once in ``folder`` by the assay of ``root`` (default ``--root``), then
    re-run ``--reruns`` times."""
    root = root or opts.root
    if kind == "jrh":
        cfg = jrh_config(folder, stub.base_url, concurrency, opts.client, stability_k)
        args = ["harness", str(cfg), "--judges", "predict", "--quiet"]
    else:
        cfg = evaluate_config(folder, stub.base_url, opts.items, concurrency, opts.client)
        args = ["evaluate", str(cfg), "--quiet"]
    if opts.ray:
        args.append("--ray")
    stub.reset()
    start, wall, cpu = command(args, folder, root)
    stats = stub.stats()
    stub.reset()
    reruns = [command(args, folder, root)[1:] for _ in range(opts.reruns)]
    return {
        **timeline(stats, start, wall, cpu, latency, concurrency),
        "rerun_s": statistics.median(w for w, _ in reruns),
        "rerun_cpu_s": statistics.median(c for _, c in reruns),
        "rerun_calls": stub.stats()["n_requests"],
    }


def timeline(
    stats: dict[str, Any], start: float, wall: float, cpu: float, latency: float, concurrency: int
) -> dict[str, float]:
    """A command's figures read from the stub's side: its calls, when the first request arrived
    and the last answer left (from the command's start), wall ÷ limit, the time after the last
    answer."""
    spans = stats["spans"]
    calls = stats["n_requests"]
    last = max(b for _, b in spans) - start if spans else float("nan")
    limit = calls * latency / concurrency
    return {
        "calls": calls,
        "first_request_s": spans[0][0] - start if spans else float("nan"),
        "last_answer_s": last,
        "wall_s": wall,
        "limit_s": limit,
        "wall_over_limit": wall / limit if limit else float("nan"),
        "tail_s": wall - last,
        "max_in_flight": stats["max_in_flight"],
        "cpu_s": cpu,
    }


def dspy_start(root: Path) -> float:
    """Wall seconds of a fresh interpreter that only imports DSPy as the command line does
    (IPython marked absent): what any command that builds a DSPy program spends before its
    first request, whatever assay's own code does."""
    env = {**os.environ, "PYTHONPATH": str(root) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    start = time.time()
    subprocess.run(
        [sys.executable, "-c", "import sys; sys.modules['IPython'] = None; import dspy"],
        env=env,
        check=True,
    )
    return time.time() - start


def floor_line(m: dict[str, float], latency: float, concurrency: int) -> str:
    """The least the suite's wall could be with assay's own start-up and tail at zero: a fresh
    interpreter's DSPy import (median ``dspy_start_s``) and then the calls in ⌈calls ÷ C⌉
    waves of L (at most C in flight, each at least L)."""
    waves = -(-int(m["calls"]) // concurrency)
    floor = m["dspy_start_s"] + waves * latency
    return (
        f"    floor {floor:.2f}s: interpreter + DSPy import {m['dspy_start_s']:.2f}s, then "
        f"{waves} waves (⌈{m['calls']:.0f} ÷ {concurrency}⌉) × {latency}s; floor ÷ limit "
        f"{floor / m['limit_s']:.2f}; wall − floor (assay's own start-up, waits and tail) "
        f"{m['wall_s'] - floor:.2f}s"
    )


def jrh_python(checkout: Path, python: Path | None) -> Path:
    """JRH's interpreter: ``python`` if given, else the checkout's ``.venv`` (``uv sync``), else
    ``jrhvenv`` beside the checkout."""
    if python is not None:
        return python
    for candidate in (checkout / ".venv", checkout.parent / "jrhvenv"):
        if (candidate / "bin" / "python").exists():
            return candidate / "bin" / "python"
    raise SystemExit(f"no interpreter for JRH at {checkout}: give --jrh-python")


def one_jrh(
    stub: StubProcess, folder: Path, latency: float, concurrency: int, opts
) -> dict[str, float]:
    """One JRH run of the suite on the stub, read from the stub's spans as :func:`one_suite`
    reads assay's (no zero-call re-run: a JRH run into a finished output folder does not
    resume, it starts over)."""
    stub.reset()
    start, wall, cpu = run_jrh(opts.jrh, opts.jrh_python, stub.base_url, folder, concurrency)
    stats = stub.stats()
    kinds = calls_by_kind(stats["bodies"], opts.jrh)
    return {
        **timeline(stats, start, wall, cpu, latency, concurrency),
        **{f"calls_{kind}": n for kind, n in kinds.items()},
    }


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def print_timeline(m: dict[str, float]) -> None:
    """The line of :func:`timeline`'s figures (medians)."""
    print(
        f"    calls {m['calls']:.0f}  first request after {m['first_request_s']:.2f}s  "
        f"last answer {m['last_answer_s']:.2f}s  wall {m['wall_s']:.2f}s  "
        f"limit calls×L÷C {m['limit_s']:.2f}s  wall ÷ limit {m['wall_over_limit']:.2f}  "
        f"(after the last answer {m['tail_s']:.2f}s; max in flight {m['max_in_flight']:.0f}; "
        f"CPU {m['cpu_s']:.1f}s)"
    )


def show(
    title: str,
    runs: list[dict[str, float]],
    jrh: bool,
    note: str | None = None,
    budget: bool = False,
    latency: float = 0.0,
    concurrency: int = 1,
) -> dict[str, float]:
    """Print the medians of ``runs``; ``jrh``: beside the recorded JRH figures, with its targets,
    or with ``note`` instead where the work is not JRH's (the example's own k); runs with a
    ``dspy_start_s`` get the floor line (:func:`floor_line`, ``latency`` and ``concurrency``
    the suite's)."""
    m = median_of(runs)
    print(f"\n{title} (median of {len(runs)})")
    print_timeline(m)
    print(
        f"    zero-call re-run: {m['rerun_s']:.2f}s, CPU {m['rerun_cpu_s']:.2f}s "
        f"({m['rerun_calls']:.0f} calls)   "
        "each run: "
        + ", ".join(
            f"{r['wall_s']:.1f}s/{r['first_request_s']:.2f}s/{r['rerun_s']:.2f}s" for r in runs
        )
        + "  (wall/first request/re-run)"
    )
    if jrh:
        speed, calls = ("(target ≥ 2.5) ", " (target ≤ 0.9)") if note is None else ("", "")
        print(
            f"    JRH on the same suite: {JRH['calls']} calls, {JRH['wall_s']}s → assay "
            f"{JRH['wall_s'] / m['wall_s']:.2f}× faster {speed}with "
            f"{m['calls'] / JRH['calls']:.2f}× its calls{calls}" + (f"; {note}" if note else "")
        )
        print(f"    JRH's calls: {JRH_CALLS}")
    if "dspy_start_s" in m:
        print(floor_line(m, latency, concurrency))
    if budget:
        print(
            "    ÷ budget: "
            + ", ".join(f"{k} {m[k]:.2f} ÷ {b} = {m[k] / b:.2f}" for k, b in BUDGET.items())
            + "  (above 1: over budget)"
        )
    return m


def show_ratios(now: dict[str, float], before: dict[str, float], baseline: Path) -> None:
    """Each compared figure's median now ÷ before (``--baseline``)."""
    print(
        f"    now ÷ before ({baseline}): "
        + ", ".join(
            f"{k} {now[k]:.2f} ÷ {before[k]:.2f} = {now[k] / before[k]:.2f}"
            for k in COMPARED
            if before.get(k)
        )
    )


def show_jrh(runs: list[dict[str, float]], assay: dict[str, float]) -> dict[str, float]:
    """JRH's measured medians beside assay's (``assay``: the medians :func:`show` returned)."""
    m = median_of(runs)
    print(f"\nRAND JRH on the same suite and stub, measured (median of {len(runs)})")
    print_timeline(m)
    other = f", {m['calls_other']:.0f} not JRH's" if m["calls_other"] else ""
    print(
        f"    JRH's calls (the stub's requests): {m['calls_generation']:.0f} generation + "
        f"{m['calls_validation']:.0f} validation, {m['calls_probes']:.0f} probes judged, "
        f"{m['calls_stability']:.0f} stability{other}   each run: "
        + ", ".join(f"{r['wall_s']:.1f}s/{r['first_request_s']:.2f}s" for r in runs)
        + "  (wall/first request)"
    )
    print(
        f"    → assay {m['wall_s'] / assay['wall_s']:.2f}× faster than JRH (wall) with "
        f"{assay['calls'] / m['calls']:.2f}× its calls; first request "
        f"{m['first_request_s'] / assay['first_request_s']:.1f}× sooner"
    )
    return m


def variants(suites: list[str], opts) -> list[tuple[str, str, int | None, str, str | None]]:
    """(output key, suite, stability k, title, note in place of the targets) of each
    measurement."""
    out: list[tuple[str, str, int | None, str, str | None]] = []
    if "jrh" in suites:
        head = "HarmBench JRH suite, one judge (assay harness --judges predict)"
        if opts.stability_k is not None:
            k = opts.stability_k
            out.append(("jrh", "jrh", k, f"{head}, stability k={k}", None))
        else:
            raw = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
            k, seeds = raw["tests"]["stochastic_stability"]["k"], raw["sample"]["n"]
            out.append(
                ("jrh", "jrh", 2, f"{head}, stability k=2: JRH's work (the targets' line)", None)
            )
            note = f"k = {k} takes {k * seeds} stability samples to JRH's {seeds}"
            out.append(("jrh_example", "jrh", k, f"{head}, the example as shipped (k={k})", note))
    if "evaluate" in suites:
        out.append(("evaluate", "evaluate", None, f"assay evaluate, {opts.items} items", None))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", choices=["jrh", "evaluate", "both"], default="both")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--items", type=int, default=200, help="evaluate suite: items")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--client", choices=["litellm", "native"], default=None)
    parser.add_argument(
        "--stability-k",
        type=int,
        default=None,
        help="jrh suite: samples per item of stochastic_stability, run alone (default: k = 2, "
        "the nearest to JRH's one judgment per item, then the example's k = 5)",
    )
    parser.add_argument(
        "--reruns", type=int, default=3, help="zero-call re-runs after each run (their median)"
    )
    parser.add_argument("--ray", action="store_true", help="judge on Ray (--ray)")
    parser.add_argument(
        "--root", type=Path, default=ROOT, help="the checkout whose assay runs (compare commits)"
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="a checkout measured in turn with --root (the commit before a change); each suite "
        "ends with the ratios now ÷ before",
    )
    parser.add_argument(
        "--bytecode",
        choices=["compiled", "as-is"],
        default="compiled",
        help="compiled: each checkout compiled once, the commands run without "
        "PYTHONDONTWRITEBYTECODE (a user's install); as-is: this shell's setting, nothing "
        "compiled",
    )
    parser.add_argument(
        "--jrh",
        type=Path,
        default=None,
        help="jrh suite: a checkout of RAND's JRH, measured after each assay run on the same "
        "stub (default: the recorded JRH figures are quoted)",
    )
    parser.add_argument(
        "--jrh-python",
        type=Path,
        default=None,
        help="JRH's interpreter (Python >= 3.13 with its dependencies; default: the checkout's "
        ".venv, else jrhvenv beside the checkout)",
    )
    opts = parser.parse_args()
    opts.root = opts.root.resolve()
    if opts.baseline is not None:
        opts.baseline = opts.baseline.resolve()
    if opts.jrh is not None:
        opts.jrh = opts.jrh.resolve()
        # absolute, not resolved: a venv's python is a symlink to its base interpreter
        opts.jrh_python = jrh_python(opts.jrh, opts.jrh_python).absolute()
    one, five, _ = os.getloadavg()
    print(
        f"assay from the command line, stub L = {opts.latency}s in its own process, "
        f"C = {opts.concurrency}, client {opts.client or 'default'}, assay from {opts.root}; "
        f"load average {one:.1f} / "
        f"{five:.1f} on {os.cpu_count()} CPUs"
    )
    suites = ["jrh", "evaluate"] if opts.suite == "both" else [opts.suite]
    measure_jrh = opts.jrh is not None and "jrh" in suites
    if measure_jrh:
        print(f"JRH from {opts.jrh} with {opts.jrh_python}, one run after each assay run")
    roots = [opts.root] if opts.baseline is None else [opts.baseline, opts.root]
    if opts.bytecode == "as-is":
        print(
            "bytecode as this shell has it: PYTHONDONTWRITEBYTECODE "
            + ("set" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "unset")
            + ", nothing compiled by the benchmark"
        )
    elif os.environ.get("PYTHONDONTWRITEBYTECODE"):
        # every command would compile the checkout's modules from source at start (~0.4 s on a
        # slow machine): a property of this shell, not of assay; compile them once instead
        import compileall

        for root in roots:
            compileall.compile_dir(str(root / "assay"), quiet=1)
        if measure_jrh:
            compileall.compile_dir(str(opts.jrh / "src"), quiet=1)
        print(
            "note: PYTHONDONTWRITEBYTECODE is set here; the checkouts were compiled once and the "
            "commands run without it, as a user's would"
        )
        os.environ.pop("PYTHONDONTWRITEBYTECODE")
    if opts.baseline is not None:
        print(f"baseline (before): {opts.baseline}; each measurement taken in turn with it")
    out: dict[str, Any] = {}
    # with --jrh, one stub serves both: JRH's tool calls answered as tool calls, its bodies kept
    stub_cm = tool_stub(opts.latency) if measure_jrh else StubProcess(opts.latency, _respond)
    with stub_cm as stub:
        for key, kind, k, title, note in variants(suites, opts):
            runs, before, jrh_runs = [], [], []
            for n in range(opts.repeat):
                # interleaved: before, now, now, before, ... (the same share of each minute)
                for root in roots if n % 2 == 0 else roots[::-1]:
                    folder = Path(tempfile.mkdtemp(prefix=f"assay-startup-{kind}-"))
                    try:
                        got = one_suite(
                            stub, kind, folder, opts.latency, opts.concurrency, opts, k, root
                        )
                    finally:
                        shutil.rmtree(folder, ignore_errors=True)
                    if kind == "jrh":  # the floor, measured beside each run
                        got["dspy_start_s"] = dspy_start(root)
                    (runs if root == opts.root else before).append(got)
                if key == "jrh" and measure_jrh:  # beside the run of JRH's work
                    folder = Path(tempfile.mkdtemp(prefix="jrh-startup-"))
                    try:
                        jrh_runs.append(one_jrh(stub, folder, opts.latency, opts.concurrency, opts))
                    finally:
                        shutil.rmtree(folder, ignore_errors=True)
            budget = key == "jrh" and k == 2
            timing = {"latency": opts.latency, "concurrency": opts.concurrency}
            out[key] = show(title, runs, kind == "jrh" and not measure_jrh, note, budget, **timing)
            if before:
                out[f"{key}_before"] = show(f"{title}, before", before, False, **timing)
                show_ratios(out[key], out[f"{key}_before"], opts.baseline)
            if jrh_runs:
                out["jrh_measured"] = show_jrh(jrh_runs, out[key])
    print(json.dumps({k: {n: round(v, 3) for n, v in m.items()} for k, m in out.items()}))


if __name__ == "__main__":
    main()
