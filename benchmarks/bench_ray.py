"""The Ray engine as the work grows: wall time and the driver's peak memory of ``evaluate`` on
``execution: {engine: ray, address: local}``, on N items judged by the loopback stub (zero
latency, in its own process).

Each run is a process of its own that calls :func:`assay.evaluation.evaluate` (tracking off,
DSPy's response cache off, so every item is a call, concurrency 32, no sidecar): the engine
starts a Ray instance on this machine (``ray.init`` as it does for ``address: local``, one CPU
a worker), judges on its actors, and the process prints its wall time (the whole run, Ray's
start included; items/s is over it) and its own peak RSS (``getrusage(RUSAGE_SELF)``: the
driver, not Ray's daemons or actors). Beside them, the calls' span: the stub's first arrival to
its last answer — the actors' pace; a driver slow to take the results in finishes after it.

    PYTHONPATH=$PWD python benchmarks/bench_ray.py                     # 2,000 and 10,000 items
    PYTHONPATH=$PWD python benchmarks/bench_ray.py --sizes 500 2000 --repeat 2

``--root NAME=PATH`` (repeatable) runs each checkout's assay in turn at every size — e.g.
``--root before=/tmp/before --root after=$PWD``, the code before and after a change
interleaved on the same items, so both see the machine's load of the same minutes. The load
average is printed with every row; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import StubProcess, add_root_option  # noqa: E402
from bench_scale import write_items  # noqa: E402

DRIVER = """
import json, resource, sys, time
from pathlib import Path

import dspy

from assay.evaluation import evaluate
from assay.inputs import EvaluateConfig

csv, base_url, where = sys.argv[1], sys.argv[2], Path(sys.argv[3])
dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)  # every item a call
config = EvaluateConfig.model_validate({
    "name": "ray-scale",
    "data": {"path": csv, "columns": {"id": "id"}},
    "judge": {
        "name": "j",
        "model": "openai/stub-model",
        "api_base": base_url,
        "rubric": "names a colour",
        "scale": {"kind": "binary", "labels": ["False", "True"]},
    },
    "concurrency": 32,
    "output_dir": str(where / "runs"),
    "tracking": {"enabled": False},
    "execution": {"engine": "ray", "address": "local"},
})
started = time.monotonic()
result = evaluate(config, workdir=where, progress=False)
wall = time.monotonic() - started
print(json.dumps({
    "wall": wall,
    "judged": result.new_judgments,
    "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""


def run_once(n: int, keep: Path, base_url: str, stub: StubProcess, code: Path | None) -> dict:
    """One ``evaluate`` of ``n`` items on Ray in a fresh process and run folder: its wall
    seconds, the calls' (the stub's first arrival to its last answer), the driver's peak RSS
    in MB."""
    csv = keep / f"items{n}.csv"
    if not csv.exists():
        write_items(csv, n)
    where = Path(tempfile.mkdtemp(prefix=f"n{n}-", dir=keep))
    env = {**os.environ, "ASSAY_SIDECAR": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    if code is not None:
        env["PYTHONPATH"] = str(code)
    stub.reset()
    cmd = [sys.executable, "-c", DRIVER, str(csv), base_url, str(where)]
    proc = subprocess.run(cmd, cwd=where, env=env, capture_output=True, text=True)
    said = proc.stdout.strip().splitlines()
    if proc.returncode or not said:
        raise SystemExit(
            f"{n} items: the driver exited {proc.returncode}\n{proc.stdout[-2000:]}\n"
            f"{proc.stderr[-3000:]}"
        )
    out = json.loads(said[-1])
    spans = stub.stats()["spans"]
    if out["judged"] != n or len(spans) != n:
        raise SystemExit(f"{n} items: {out['judged']} judged, {len(spans)} calls")
    out["calls"] = max(end for _, end in spans) - min(start for start, _ in spans)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[2_000, 10_000], help="items")
    ap.add_argument("--repeat", type=int, default=1, help="rounds (each size, each checkout)")
    ap.add_argument("--keep", type=Path, help="a folder to keep the runs in (default: temporary)")
    add_root_option(ap)
    args = ap.parse_args()
    roots = [tuple(r.split("=", 1)) for r in args.root] or [("", None)]
    with tempfile.TemporaryDirectory() as tmp, StubProcess(0.0) as stub:
        keep = args.keep or Path(tmp)
        keep.mkdir(parents=True, exist_ok=True)
        print(
            f"{'code':>8} {'items':>7} {'round':>5} {'wall s':>7} {'calls s':>8} "
            f"{'items/s':>8} {'driver MB':>9} {'load':>5}"
        )
        for n in args.sizes:
            for r in range(args.repeat):
                for name, code in roots:
                    res = run_once(n, keep, stub.base_url, stub, Path(code) if code else None)
                    print(
                        f"{name:>8} {n:>7,} {r + 1:>5} {res['wall']:>7.1f} "
                        f"{res['calls']:>8.1f} {n / res['wall']:>8.0f} {res['rss']:>9.0f} "
                        f"{os.getloadavg()[0]:>5.1f}",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
