"""What signing a run's records costs: a 50,000-judgment run read back (a resume) with every
record's signature checked, against the same lines read without the check, interleaved.

    python benchmarks/bench_records.py [--records 50000] [--repeat 5]

Prints seconds per read and the ratio signed ÷ plain (median over the repeats). Nothing is
asserted: the figure varies with the machine's load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import assay  # noqa: F401  (offline environment defaults)
from assay.runs import RunStore
from assay.types import Judgment


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("ASSAY_SIGNING_KEY_FILE", str(Path(tmp) / "key"))
        signed = RunStore(Path(tmp) / "signed", "bench")
        signed.path.mkdir()
        plain = Path(tmp) / "plain"
        plain.mkdir()
        lines_signed, lines_plain = [], []
        seal = signed._seal(create=True)
        for k in range(args.records):
            body = Judgment(
                item_id=f"item-{k}",
                judge="bench",
                score=k % 2,
                label=str(k % 2),
                reasoning="The response names a colour, so it meets the rubric." * 3,
            ).model_dump_json()
            lines_plain.append(body + "\n")
            lines_signed.append(seal.sign("judgments.jsonl", body) + "\n")
        (signed.path / "judgments.jsonl").write_text("".join(lines_signed), encoding="utf-8")
        (plain / "judgments.jsonl").write_text("".join(lines_plain), encoding="utf-8")
        plain_store = RunStore(plain, "bench")
        times: dict[str, list[float]] = {"signed": [], "plain": []}
        for _ in range(args.repeat):
            for name, read in (
                ("plain", lambda: plain_store.records("judgments.jsonl", Judgment, signed=False)),
                ("signed", lambda: RunStore(signed.path, "bench").judgments()),
            ):
                t0 = time.perf_counter()
                n = len(read())
                times[name].append(time.perf_counter() - t0)
                assert n == args.records
        s, p = statistics.median(times["signed"]), statistics.median(times["plain"])
        print(f"{args.records} records: signed {s:.3f} s · plain {p:.3f} s · ratio {s / p:.2f}")


if __name__ == "__main__":
    main()
