"""Memory of ``assay evaluate`` (and ``assay harness``) as the work grows: peak RSS of the main
process.

Each size gets a CSV of N items and a config judged by the loopback stub (zero latency, in its
own process, concurrency 32, no sidecar, no MLflow); ``assay evaluate`` runs in a subprocess
whose peak RSS is read with ``os.wait4``, then again on the finished run (no LM call).
Prints a table: items, wall, peak RSS, what each 1,000 items added to the peak since the size
before (the slope), the zero-call re-run's wall and RSS.

    PYTHONPATH=$PWD python benchmarks/bench_scale.py              # 5,000 and 50,000 items
    PYTHONPATH=$PWD python benchmarks/bench_scale.py --million    # and 1,000,000
    PYTHONPATH=$PWD python benchmarks/bench_scale.py --sizes 2000 20000 --keep /tmp/scale

``--root NAME=PATH`` (repeatable) runs ``assay evaluate`` from each checkout in turn at every
size — e.g. ``--root main=/tmp/main --root branch=$PWD``, the code before and after a change
interleaved on the same items, so both see the machine's load of the same minutes.

``--harness SEEDS...`` (e.g. ``--harness 10 100 300``) measures ``assay harness`` of the
HarmBench example instead — N seeds (past its 596 rows, the rows copied, each copy's texts
marked with its number), one judge, ``stochastic_stability`` at k = 2, every model on
a stub that answers as generator, validator and judge (``bench_harness.respond``), concurrency
16, no sidecar — and prints its LM calls with each row, and the largest RSS sampled while the
calls still arrived with what each call added to it (the judging's growth; the peak adds the
end's: MLflow's logging, the reports, whose report.html shows every probe).

``--pairs ROWS...`` (e.g. ``--pairs 200000``) measures building labelled pairs instead: a scored
table of ROWS rows in groups of four responses to one prompt (``data.pairs: {score: score}``,
about six pairs a group), its pairs read through ``assay.inputs.stream_items`` once in a
subprocess (after a first reading that converts the table to ``datasets``' Arrow files), and a
table of 100 rows for the imports alone. With ``--root`` each checkout in turn, and the peak
beside the first one's (``--root before=<checkout> --root now=$PWD``: the pairs built in memory
against streamed).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import StubProcess, add_root_option  # noqa: E402


def write_items(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as f:
        f.write("id,request,response,expected\n")
        for k in range(n):
            f.write(f"i{k},What colour is item {k}?,Item {k} is blue.,{k % 2}\n")


def write_scored(path: Path, n: int) -> None:
    """A scored table of ``n`` rows, four responses to each prompt, scores 1 to 6."""
    with path.open("w", encoding="utf-8") as f:
        f.write("id,request,response,score\n")
        for k in range(n):
            f.write(
                f"e{k},Write an essay on topic {k // 4}.,"
                f"Essay {k}: the topic {k // 4} seen from side {k % 4} at some length.,"
                f"{(k * 7919) % 6 + 1}\n"
            )


PAIRS = """
import sys
from pathlib import Path

from assay.data import ColumnMap, iter_table
from assay.inputs import DataConfig, stream_items
from assay.programs import PAIRWISE

path, cache, what = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
if what == "table":  # the rows alone, as the pairs read them
    print(sum(1 for _ in iter_table(path, columns=ColumnMap(id="id", expected=None), cache_dir=cache)))
else:
    data = DataConfig(path=path, columns={"id": "id"}, pairs={"score": "score"})
    notes = {}
    n = sum(1 for _ in stream_items(data, PAIRWISE, cache_dir=cache, notes=notes))
    assert n == notes["pairs"]["pairs"]
    print(n)
"""


def measure_pairs(n: int, root: Path, code: Path | None, what: str = "pairs") -> dict[str, float]:
    """Wall seconds, peak RSS and pairs (rows: ``what="table"``) of one reading of a scored
    table's pairs."""
    where = root / f"pairs{n}"
    where.mkdir(parents=True, exist_ok=True)
    csv = where / "scored.csv"
    if not csv.exists():
        write_scored(csv, n)
    env = {**os.environ, **({"PYTHONPATH": str(code)} if code is not None else {})}
    cmd = [sys.executable, "-c", PAIRS, str(csv), str(where / "hf"), what]
    wall, rss, status, out, _ = peak_of(cmd, where, env)
    if status:
        raise SystemExit(f"{n} rows: the pairs' reading exited with status {status}")
    return {"wall": wall, "rss": rss, "pairs": int(out.split()[-1])}


def pairs_table(sizes: list[int], keep: Path, roots: list[tuple]) -> None:
    """``--pairs``: a row per size and checkout, the peak beside the first checkout's, the
    imports' (a table of 100 rows) and the table's rows read alone."""
    print(
        f"{'code':>8} {'rows':>9} {'pairs':>9} {'wall s':>8} {'peak MB':>8} {'x first':>8} "
        f"{'imports MB':>11} {'rows alone MB':>14} {'load':>5}"
    )
    for n in sizes:
        first = None
        for name, code in roots:
            where = keep / name if name else keep
            code = Path(code).resolve() if code else None
            imports = measure_pairs(100, where, code)  # and the Arrow files of both tables
            measure_pairs(n, where, code)
            r = measure_pairs(n, where, code)
            alone = measure_pairs(n, where, code, "table")
            first = first or r["rss"]
            print(
                f"{name:>8} {n:>9,} {r['pairs']:>9,} {r['wall']:>8.1f} {r['rss']:>8.0f} "
                f"{r['rss'] / first:>8.2f} {imports['rss']:>11.0f} {alone['rss']:>14.0f} "
                f"{os.getloadavg()[0]:>5.1f}",
                flush=True,
            )


def run_once(
    args: list[str], cwd: Path, root: Path | None = None, stub: StubProcess | None = None
) -> tuple[float, float, int, float | None]:
    """Wall seconds, peak RSS in MB, exit status of one ``assay <args> --quiet`` (of the code
    in ``root`` when given), and with ``stub`` the largest RSS seen while its calls arrived."""
    env = {**os.environ, "ASSAY_SIDECAR": "0"}
    if root is not None:
        env["PYTHONPATH"] = str(root)
    cmd = [sys.executable, "-m", "assay.cli", *args, "--quiet"]
    wall, rss, status, _, calling = peak_of(cmd, cwd, env, stub)
    return wall, rss, status, calling


def peak_of(
    cmd: list[str], cwd: Path, env: dict[str, str], stub: StubProcess | None = None
) -> tuple[float, float, int, str, float | None]:
    """Wall seconds, peak RSS in MB (``os.wait4``), exit status and standard output of one run
    of ``cmd``; with ``stub``, also the largest RSS sampled (every 0.1 s) while the stub was
    still receiving calls — the LM phase's, apart from what the end (reports, logging) adds.
    None when no call came."""
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, text=True)
    samples: list[tuple[int, float]] = []
    sampler = None
    if stub is not None:
        first = stub.n_requests

        def sample() -> None:
            while proc.poll() is None:
                try:
                    status = Path(f"/proc/{proc.pid}/status").read_text()
                except OSError:
                    return
                kb = next(
                    (int(x.split()[1]) for x in status.splitlines() if x.startswith("VmRSS")), None
                )
                if kb is None:  # exited: a zombie has no memory
                    return
                samples.append((stub.n_requests - first, kb / 1024))
                time.sleep(0.1)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - started
    calling = None
    if sampler is not None:
        sampler.join()
        calls = stub.n_requests - first
        calling = max((rss for n, rss in samples if 0 < n < calls), default=None)
    return wall, usage.ru_maxrss / 1024, status, out, calling


def measure(n: int, root: Path, base_url: str, code: Path | None = None) -> dict[str, float]:
    where = root / f"n{n}"
    where.mkdir(parents=True, exist_ok=True)
    csv = where / "items.csv"
    if not csv.exists():
        write_items(csv, n)
    config = where / "config.yaml"
    judge = {
        "name": "j",
        "model": "openai/stub-model",
        "api_base": base_url,
        "rubric": "names a colour",
        "scale": {"kind": "binary", "labels": ["False", "True"]},
    }
    config.write_text(
        json.dumps(
            {
                "name": "scale",
                "data": {"path": str(csv), "columns": {"id": "id"}},
                "judge": judge,
                "concurrency": 32,
                "tracking": {"enabled": False},
            }
        )
    )
    return twice(["evaluate", str(config)], where, code, f"{n} items")


def measure_harness(seeds: int, root: Path, stub: StubProcess, code: Path | None) -> dict:
    """``assay harness`` of the HarmBench example on ``seeds`` seeds (see the module's text)."""
    import yaml
    from bench_startup import jrh_config

    where = root / f"harness{seeds}"
    where.mkdir(parents=True, exist_ok=True)
    config = jrh_config(where, stub.base_url, 16, None, 2)
    raw = yaml.safe_load(config.read_text(encoding="utf-8"))
    raw["sample"]["n"] = seeds
    raw["data"]["path"] = str(_harness_data(Path(raw["data"]["path"]), seeds, where))
    config.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    stub.reset()
    r = twice(["harness", str(config), "--judges", "predict"], where, code, f"{seeds} seeds", stub)
    return {**r, "calls": stub.n_requests}


def _harness_data(path: Path, seeds: int, where: Path) -> Path:
    """The example's table, or, for more seeds than its rows, its rows copied as often as it
    takes: each copy's id, request and response marked with the copy's number, so that no two
    rows are one item (their keys are made of the texts)."""
    import csv

    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if seeds <= len(rows):
        return path
    copies = -(-seeds // len(rows))
    out = where / f"{path.stem}_x{copies}.csv"
    with out.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        for c in range(copies):
            for row in rows:
                mark = f" (copy {c})" if c else ""
                w.writerow(
                    {
                        **row,
                        "idx": f"{row['idx']}-{c}" if c else row["idx"],
                        "test_case": row["test_case"] + mark,
                        "generation": row["generation"] + mark,
                    }
                )
    return out


def twice(
    args: list[str], where: Path, code: Path | None, what: str, stub: StubProcess | None = None
) -> dict[str, Any]:
    """A command run, then run again on its finished run (no LM call)."""
    wall, rss, status, calling = run_once(args, where, code, stub)
    rerun_wall, rerun_rss, rerun_status, _ = run_once(args, where, code)
    if status or rerun_status:
        raise SystemExit(f"{what}: assay {args[0]} exited with status {status or rerun_status}")
    return {
        "wall": wall,
        "rss": rss,
        "calling_rss": calling,
        "rerun_wall": rerun_wall,
        "rerun_rss": rerun_rss,
    }


def marginal(before: dict[str, tuple[int, float]], code: str, n: int, rss: float, per: int) -> str:
    """What each unit (``per`` of them) added to the peak since the code's previous size: the
    slope, not the peak over the size, which the imports and caches every run has, whatever
    its size, would make large at small sizes. ``—`` at the first size."""
    last = before.get(code)
    before[code] = (n, rss)
    if last is None or n == last[0]:
        return "—"
    return f"{(rss - last[1]) / (n - last[0]) * per:.2f}"


def calling_columns(before: dict[str, tuple[int, float]], code: str, r: dict[str, Any]) -> str:
    """The largest RSS while the calls arrived, and what each call added to it since the size
    before (KB): the judging's own growth, apart from the reports' at the end."""
    if r["calling_rss"] is None:
        return f"{'—':>11} {'—':>9}"
    per_call = marginal(before, code, r["calls"], r["calling_rss"], 1024)
    return f"{r['calling_rss']:>11.0f} {per_call:>9}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", help="items (default: 5,000 and 50,000)")
    ap.add_argument("--million", action="store_true", help="also 1,000,000 items")
    ap.add_argument("--keep", type=Path, help="a folder to keep the runs in (default: temporary)")
    add_root_option(ap)
    ap.add_argument("--harness", type=int, nargs="*", default=[], metavar="SEEDS",
                    help="assay harness of the HarmBench example on this many seeds")  # fmt: skip
    ap.add_argument("--pairs", type=int, nargs="*", default=[], metavar="ROWS",
                    help="labelled pairs built from a scored table of this many rows")  # fmt: skip
    args = ap.parse_args()
    alone = args.harness or args.pairs  # --harness or --pairs alone: that alone
    default = [] if alone else [5_000, 50_000]
    sizes = (default if args.sizes is None else args.sizes) + ([1_000_000] if args.million else [])
    roots = [tuple(r.split("=", 1)) for r in args.root] or [("", None)]
    if args.harness:
        from bench_startup import _respond

        with tempfile.TemporaryDirectory() as tmp, StubProcess(0.0, _respond) as stub:
            keep = args.keep or Path(tmp)
            print(
                f"{'code':>8} {'seeds':>6} {'calls':>7} {'wall s':>8} {'peak MB':>8} "
                f"{'+MB/seed':>9} {'calling MB':>11} {'+KB/call':>9} {'re-run s':>9} "
                f"{'re-run MB':>10} {'load':>5}"
            )
            before: dict[str, tuple[int, float]] = {}
            before_calls: dict[str, tuple[int, float]] = {}
            for n in args.harness:
                for name, code in roots:
                    where = keep / name if name else keep
                    r = measure_harness(n, where, stub, Path(code).resolve() if code else None)
                    print(
                        f"{name:>8} {n:>6} {r['calls']:>7} {r['wall']:>8.1f} {r['rss']:>8.0f} "
                        f"{marginal(before, name, n, r['rss'], 1):>9} "
                        f"{calling_columns(before_calls, name, r)} {r['rerun_wall']:>9.1f} "
                        f"{r['rerun_rss']:>10.0f} {os.getloadavg()[0]:>5.1f}",
                        flush=True,
                    )
    if args.pairs:
        with tempfile.TemporaryDirectory() as tmp:
            pairs_table(args.pairs, args.keep or Path(tmp), roots)
    if not sizes:
        return
    with tempfile.TemporaryDirectory() as tmp, StubProcess(0.0) as stub:
        keep = args.keep or Path(tmp)
        print(
            f"{'code':>8} {'items':>9} {'wall s':>8} {'peak MB':>8} {'+MB/1k':>7} {'re-run s':>9} "
            f"{'re-run MB':>10} {'load':>5}"
        )
        before = {}
        for n in sizes:
            for name, code in roots:
                where = keep / name if name else keep
                r = measure(n, where, stub.base_url, Path(code).resolve() if code else None)
                print(
                    f"{name:>8} {n:>9,} {r['wall']:>8.1f} {r['rss']:>8.0f} "
                    f"{marginal(before, name, n, r['rss'], 1000):>7} {r['rerun_wall']:>9.1f} "
                    f"{r['rerun_rss']:>10.0f} {os.getloadavg()[0]:>5.1f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
