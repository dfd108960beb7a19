"""A finished harness run re-read, not re-done: when nothing that its metrics depend on has
changed since it finished — the whole config, the tests and judges selected, and the run's
units, judgments and review decisions — a re-run returns the stored metrics and MLflow run at
once, with no LM call, no scoring, no report and no new MLflow run.

A ``metrics.json`` this version cannot read (written by an older one) is not re-read: the run
scores again from its files, which makes no LM call either (units and judgments are stored).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay._files import sha256_file
from assay.reliability._files import UNSEALED_READS
from assay.reliability._results import HarnessSummary
from assay.types import stable_hash


def finish_key(config: Any, run_dir: Path, *, tests: list[Any], judges: list[str]) -> str:
    """What a finished run's metrics are a function of: the config, the selection (the test
    instances, and their programs' state as loaded: a ``*_state`` file's content, not its
    path) and the bytes of every file the scoring reads (units, judgments, reviews)."""
    files = [
        *(run_dir / name for name in UNSEALED_READS),
        *sorted(run_dir.glob("judgments/*.jsonl")),
    ]
    digests = {}
    for path in files:
        if path.is_file():
            digests[path.name] = sha256_file(path)  # a block at a time: tens of MB at scale
    return stable_hash(
        {
            "config": config.model_dump(mode="json"),
            "tests": [t.name for t in tests],
            "judges": judges,
            "states": {t.name: {r: p.dump_state() for r, p in t.programs().items()} for t in tests},
            "files": digests,
        }
    )


def finished_summary(run: Any, key: str) -> HarnessSummary | None:
    """The stored summary, if the run finished before with this very key (its metrics.json is
    what it would write) and that file is readable; None when the run must score again."""
    if not (run.finished and run.state.get("finish_key") == key):
        return None
    return HarnessSummary.stored(run.dir)
