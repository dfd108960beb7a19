"""What a kill leaves of a run, for tests that stand for one by cutting a finished run's records.

A run's writer moves the heads of its records files beside the signing key ahead of each commit
(:mod:`assay.runs._record_heads`), so a run killed after ``k`` records leaves its files with
those ``k`` records and its heads at ``k`` (or ahead, by lines they hold). Cutting a finished run's records alone
is not that: it is records removed, and the run is refused. A test that cuts records to stand
for a kill calls :func:`left_by_a_kill` after the cut."""

from __future__ import annotations

import json
from pathlib import Path

from assay import _signing
from assay.runs._record_heads import Heads, RecordHeads, Tally, tally_file
from assay.runs._signed import mac_of


def left_by_a_kill(run_dir: Path) -> None:
    """Set the run's heads to what its records files hold now, as a writer killed between two
    commits left them (a run with no instance keeps none)."""
    state = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    if state.get("instance") is None:
        return
    heads = RecordHeads(run_dir, state["run_hash"], state["instance"])
    recorded = heads.read() or Heads()
    now = {name: tally_file(run_dir / name).value() for name in recorded.records}
    heads.write(_signing.key(create=False), Heads(now))


def made_before_heads(run_dir: Path) -> None:
    """The run as one written before the heads were kept: none beside the key."""
    state = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    if state.get("instance") is not None:
        RecordHeads(run_dir, state["run_hash"], state["instance"]).file.unlink(missing_ok=True)


def killed_mid_commit(
    run_dir: Path, keep: int, batch: int, torn: int = 0, name: str = "judgments.jsonl"
) -> None:
    """What a kill while a commit was written leaves: the heads counting the first ``keep +
    batch`` records of ``name`` and holding the last ``batch`` of them (written ahead of the
    lines), the file with its first ``keep`` records and ``torn`` characters of the next."""
    state = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    heads = RecordHeads(run_dir, state["run_hash"], state["instance"])
    recorded = heads.read() or Heads()
    path = run_dir / name
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    counted = lines[: keep + batch]
    path.write_text("".join(lines[:keep]) + lines[keep][:torn], encoding="utf-8")
    tally = Tally()
    for line in counted:
        tally.add(mac_of(line.rstrip("\n").encode()) or b"")
    records = {**recorded.records, name: tally.value()}
    pending = {name: [line.rstrip("\n") for line in counted[keep:]]}
    heads.write(_signing.key(create=False), Heads(records, pending))
