"""A signed queue's verdict history as one chain: which verdict counts is the last line of an
item, so the order and the completeness of ``human_verdicts.jsonl`` decide the estimate, not
only each line's fields.

Each line is signed with the signing key over its fields, the queue's run hash and
``previous`` — the signature of the line before it ("" for the first) —, so a line moved,
removed from the middle or copied breaks the chain at the first line after it. A file cannot
vouch for its own end, so the number of lines and the last signature are kept beside the
signing key (``label-queues/<queue>.json``, signed, one per queue folder), as the certificates
ledger keeps its journal's head: lines cut off the end are refused on this machine. The head
may lag by the lines a kill left it behind (the file is written first), never lead. A queue
folder copied elsewhere has no head yet: the copy is its own queue from there on.

A file written before verdicts were chained (no line has ``previous``) is adopted as it is,
the first time it is read or written under the queue's lock, and chained from then on — the way
the ledger adopts certificate folders written before its journal: each of its lines was already
signed, so nothing in it is forged; only its order could not be checked, no less than before.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from assay import _signing
from assay._json import loads as load_json
from assay.errors import DataError
from assay.runs import write_atomic

PREVIOUS = "previous"


def payload(record: dict[str, Any], identity: str) -> dict[str, Any]:
    """What a verdict's signature covers: its fields (``previous`` among them) and the queue's
    run hash."""
    body = {k: v for k, v in record.items() if k != "signature"}
    return {**body, "queue": identity}


def chained(numbered: list[tuple[int, dict[str, Any]]]) -> bool:
    """Whether the history was written chained (False: an older file, adopted on first use)."""
    return not numbered or any(PREVIOUS in r for _, r in numbered)


def check(
    path: Path, numbered: list[tuple[int, dict[str, Any]]], identity: str, queue_dir: Path
) -> str:
    """Check the chained history ``numbered`` (row, record) of ``path`` as a whole: each line
    signed, each naming the signature of the line before, as many lines as the head recorded
    (or more, by a kill's lag). Returns the last signature ("" for none); a break is a one-line
    DataError naming the file and the first bad row."""
    previous, signatures = "", [""]
    for row, r in numbered:
        _check_signature(path, row, r, identity)
        if r.get(PREVIOUS) != previous:
            raise DataError(
                "not the verdict recorded after the line before it (lines moved, removed or "
                "copied): which verdict counts depends on the order; restore the file",
                path=path,
                row=row,
            )
        previous = str(r["signature"])
        signatures.append(previous)
    head = read_head(queue_dir, identity)
    if head is not None and (
        head["verdicts"] > len(numbered) or signatures[head["verdicts"]] != head["last"]
    ):
        raise DataError(
            f"holds {len(numbered)} verdicts, but {head['verdicts']} were recorded "
            f"({head_file(queue_dir, identity)}): lines were cut off or the file replaced; "
            "restore it",
            path=path,
        )
    return previous


def _check_signature(path: Path, row: int, r: dict[str, Any], identity: str) -> None:
    if not _signing.verify(payload(r, identity), r.get("signature")):
        raise DataError(
            f"verdict on item {r['item_id']!r} is not signed by the signing key "
            f"({_signing.key_file()}): edited or added since it was recorded, or recorded with "
            "another key",
            path=path,
            row=row,
        )


def link(record: dict[str, Any], identity: str, previous: str) -> dict[str, Any]:
    """``record`` chained after the line signed ``previous``, and signed."""
    linked = {**record, PREVIOUS: previous}
    return {**linked, "signature": _signing.sign(payload(linked, identity))}


def adopt(
    path: Path, numbered: list[tuple[int, dict[str, Any]]], identity: str, queue_dir: Path
) -> None:
    """Rewrite an older, unchained history as it is, each line chained to the one before and
    signed, and record its head; call under the queue's lock. Each line's own signature is
    checked first: a line edited or added by hand is refused, not adopted."""
    if read_head(queue_dir, identity) is not None:  # it was chained here: this file is not it
        raise DataError(
            "holds no chained verdicts, but this queue's were chained "
            f"({head_file(queue_dir, identity)}): the file was replaced; restore it",
            path=path,
        )
    for row, r in numbered:
        _check_signature(path, row, r, identity)
    previous, lines = "", []
    for _, r in numbered:
        linked = link({k: v for k, v in r.items() if k != "signature"}, identity, previous)
        previous = linked["signature"]
        lines.append(json.dumps(linked, ensure_ascii=False) + "\n")
    write_atomic(path, lines)
    write_head(queue_dir, identity, len(numbered), previous)


def head_file(queue_dir: Path, identity: str) -> Path:
    """Where the head of a queue folder's history is kept: beside the signing key."""
    name = _signing.digest({"queue": identity, "folder": str(Path(queue_dir).resolve())})
    return _signing.key_file().parent / "label-queues" / f"{name[:32]}.json"


def read_head(queue_dir: Path, identity: str) -> dict[str, Any] | None:
    """The head recorded for the queue folder (None when none was recorded on this machine)."""
    path = head_file(queue_dir, identity)
    try:
        data = load_json(path.read_text(encoding="utf-8"))
        body = {"queue": identity, "verdicts": data["verdicts"], "last": data["last"]}
        ok = _signing.verify(body, data["signature"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        ok = False
    if not ok:
        raise DataError(f"{path}: not the head this queue recorded (edited, or another key)")
    return body


def write_head(queue_dir: Path, identity: str, verdicts: int, last: str) -> None:
    path = head_file(queue_dir, identity)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"queue": identity, "verdicts": verdicts, "last": last}
    write_atomic(path, json.dumps({**body, "signature": _signing.sign(body)}) + "\n")
