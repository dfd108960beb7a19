"""Harness run folders the review tests write by hand: the ``run.json`` a review needs (its run
hash is what every decision is signed over), and decisions written past assay (by hand)."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any


def name_run(run_dir: Path) -> str:
    """Write the ``run.json`` of a hand-made harness run folder, naming a run hash of its own
    (the tests share one signing key: each folder is a run no other test has reviewed)."""
    run_hash = secrets.token_hex(8)
    (run_dir / "run.json").write_text(json.dumps({"run_hash": run_hash, "kind": "harness"}))
    return run_hash


def append_by_hand(run_dir: Path, *records: dict[str, Any]) -> None:
    """Append decisions to ``reviews.jsonl`` as a person would with an editor, past assay."""
    with (run_dir / "reviews.jsonl").open("a") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in records)


def sign_by_hand(run_dir: Path, *records: dict[str, Any]) -> None:
    """Append decisions signed and chained with the signing key, the head moved past them —
    what someone holding the key could write past ``assay review import``, whose checks they
    skip: the fields of such a line are still checked as the run reads it."""
    from assay.reliability.review._review_chain import review_history

    history = review_history(run_dir)
    settled = history.settled()
    history.append(records, settled, lambda text: _append_text(run_dir / "reviews.jsonl", text))


def _append_text(path: Path, text: str) -> None:
    with path.open("a") as fh:
        fh.write(text)
