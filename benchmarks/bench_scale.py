"""Memory of ``assay evaluate`` as the items grow: peak RSS of the main process.

Each size gets a CSV of N items and a config judged by the loopback stub (zero latency, in its
own process, concurrency 32, no sidecar, no MLflow); ``assay evaluate`` runs in a subprocess
whose peak RSS is read with ``os.wait4``, then again on the finished run (no LM call).
Prints a table: items, wall, peak RSS, MB per 1,000 items, the zero-call re-run's wall and RSS.

    PYTHONPATH=$PWD python benchmarks/bench_scale.py              # 5,000 and 50,000 items
    PYTHONPATH=$PWD python benchmarks/bench_scale.py --million    # and 1,000,000
    PYTHONPATH=$PWD python benchmarks/bench_scale.py --sizes 2000 20000 --keep /tmp/scale

``--root NAME=PATH`` (repeatable) runs ``assay evaluate`` from each checkout in turn at every
size — e.g. ``--root main=/tmp/main --root branch=$PWD``, the code before and after a change
interleaved on the same items, so both see the machine's load of the same minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import StubProcess  # noqa: E402


def write_items(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as f:
        f.write("id,request,response,expected\n")
        for k in range(n):
            f.write(f"i{k},What colour is item {k}?,Item {k} is blue.,{k % 2}\n")


def run_once(config: Path, cwd: Path, root: Path | None = None) -> tuple[float, float, int]:
    """Wall seconds, peak RSS in MB and exit status of one ``assay evaluate`` (of the code in
    ``root`` when given)."""
    env = {**os.environ, "ASSAY_SIDECAR": "0"}
    if root is not None:
        env["PYTHONPATH"] = str(root)
    started = time.monotonic()
    cmd = [sys.executable, "-m", "assay.cli", "evaluate", str(config), "--quiet"]
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    return time.monotonic() - started, usage.ru_maxrss / 1024, status


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
    wall, rss, status = run_once(config, where, code)
    rerun_wall, rerun_rss, rerun_status = run_once(config, where, code)
    if status or rerun_status:
        raise SystemExit(f"{n} items: assay evaluate exited with status {status or rerun_status}")
    return {"items": n, "wall": wall, "rss": rss, "rerun_wall": rerun_wall, "rerun_rss": rerun_rss}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[5_000, 50_000])
    ap.add_argument("--million", action="store_true", help="also 1,000,000 items")
    ap.add_argument("--keep", type=Path, help="a folder to keep the runs in (default: temporary)")
    ap.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="a checkout whose assay to run (repeatable: each in turn at every size)",
    )
    args = ap.parse_args()
    sizes = args.sizes + ([1_000_000] if args.million else [])
    roots = [tuple(r.split("=", 1)) for r in args.root] or [("", None)]
    with tempfile.TemporaryDirectory() as tmp, StubProcess(0.0) as stub:
        keep = args.keep or Path(tmp)
        print(
            f"{'code':>8} {'items':>9} {'wall s':>8} {'peak MB':>8} {'MB/1k':>7} {'re-run s':>9} "
            f"{'re-run MB':>10} {'load':>5}"
        )
        for n in sizes:
            for name, code in roots:
                where = keep / name if name else keep
                r = measure(n, where, stub.base_url, Path(code).resolve() if code else None)
                print(
                    f"{name:>8} {n:>9,} {r['wall']:>8.1f} {r['rss']:>8.0f} "
                    f"{r['rss'] / n * 1000:>7.2f} {r['rerun_wall']:>9.1f} {r['rerun_rss']:>10.0f} "
                    f"{os.getloadavg()[0]:>5.1f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
