"""The certificates ledger's journal: what each ``certify`` consumed and spent, one signed line
per certificate, each line chained to the one before, its head kept with the signing key's
records (found by the key's identity).

A certificate's folder (``certificate.json`` and its reports) is its record for people; the
journal is what the ledger counts. The items a certificate consumed and the share of δ its
attempt took stay consumed and spent when its folder is deleted — cleaning up old certificates
must not free a validation set or reset an attempt budget. Each line is signed with the signing
key and names the digest of the line before it: a line edited, removed from the middle or moved
is refused. The number of lines and the last one's digest (the *head*) are kept with the
signing key's records (``ledgers/<ledger id>.json`` in :func:`assay._signing.records_folder`:
found by the key's identity, not by the path it is read from — the same key through a symlink
or a copy in another folder finds the same head), so a journal cut short, replaced or removed is
refused on this machine. A ledger removed whole, its ``ledger-id`` with it, is a new ledger:
nothing left on disk tells it from one never used. A ledger written before the journal existed
adopts its certificate folders as they are, the first time it certifies.

The ledger's tuning records (:mod:`._tuning`) are journaled the same way, in a journal of their
own (:data:`TUNINGS`: ``tuning.jsonl`` beside the certificates' journal, its head
``ledgers/<ledger id>-tuning.json``): a record folder deleted leaves its items refused to the
judge it tuned, and a tuning journal removed, cut back or edited is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay import _signing
from assay._json import loads as load_json
from assay.errors import RunError
from assay.runs import write_atomic

JOURNAL = "journal.jsonl"
"""The certificates' journal's file in the ledger folder."""


@dataclass(frozen=True)
class Journal:
    """One of a ledger's journals: its file, its head's name, and what its lines are."""

    file: str  # in the ledger folder
    head: str  # the head's name after the ledger id (signed in the head: one is not the other)
    name: str  # what a refusal calls it
    lines: str  # what its lines are, as a refusal counts them
    kept: str  # what stays when their folders are deleted, as a refusal says it


CERTIFICATES = Journal(
    file=JOURNAL,
    head="",
    name="journal",
    lines="certificates",
    kept="the items they consumed stay consumed",
)
TUNINGS = Journal(
    file="tuning.jsonl",
    head="-tuning",
    name="tuning journal",
    lines="tuning records",
    kept="the items they were fitted on stay refused to the judges they tuned",
)
KEPT = (
    "certificate",
    "decision",
    "issued",
    "judge",
    "config_hash",
    "policy",
    "delta_per_bar",
    "results",
    "fingerprint_rule",
    "item_fingerprints",
    "event",
)
"""What a journal line keeps of a certificate: what the ledger decides on (the items consumed,
under which fingerprint rule; the judge, the policy's name and the δ the attempt took) and what
a refusal names."""


class JournalError(RunError):
    """A journal that is not what this ledger wrote: one line naming it and what is wrong."""


SIGNED = Journal(
    file="signed.jsonl",
    head="",
    name="journal of every certificate this signing key signed",
    lines="certificates",
    kept="the items they consumed stay consumed, in every ledger",
)
"""The signing key's own journal of every certificate it signed, in whichever ledger (kept with
the key's records, :func:`signed_folder`): what a certificate consumed stays consumed when the
next one is issued in another runs folder — ``--output-dir`` elsewhere, the data copied to a
new project — on this machine. Its lines are the ledgers' entries, with the ledger's id and
folder."""
SIGNED_TUNINGS = Journal(
    file="signed-tunings.jsonl",
    head="-tunings",
    name="journal of every tuning record this signing key signed",
    lines="tuning records",
    kept="the items they were fitted on stay refused to the judges they tuned, in every ledger",
)
"""The signing key's own journal of every tuning record it signed, in whichever ledger (beside
:data:`SIGNED`): a threshold fitted in one runs folder is refused on its items in every other."""
SIGNED_ID = "signed"
"""The name of :data:`SIGNED`'s head among the ledgers' heads (a ledger's id is 32 hex
digits: never this)."""


def signed_folder() -> Path:
    """Where the signing key keeps :data:`SIGNED` (its records, found by the key's identity;
    the key must exist)."""
    return _signing.records_folder("certificates")


POLICY_CLAIM = ("confidence", "positive", "bars")
"""What a policy asks of a judge, whatever it is called (its planned attempts and resamples are
how the claim is tested, not what it is)."""


def entry_of(certificate: dict[str, Any]) -> dict[str, Any]:
    """A certificate's journal entry (:data:`KEPT`): its policy kept by name and by what it
    asks (:data:`POLICY_CLAIM`: the same claim under another name counts the same attempts), its
    results by the bars they were (their number is the attempt's share of δ)."""
    entry = {k: certificate.get(k) for k in KEPT}
    policy = certificate.get("policy")
    entry["policy"] = (
        {k: policy.get(k) for k in ("name", *POLICY_CLAIM)} if isinstance(policy, dict) else None
    )
    entry["results"] = [
        r.get("metric") if isinstance(r, dict) else None for r in certificate.get("results") or []
    ]
    return entry


def journaled(ledger: Path, ledger_id: str | None) -> dict[str, dict[str, Any]] | None:
    """The certificates the ledger's journal holds, by id (:func:`read`: checked); None for a
    ledger that never had a journal — none on disk, no head on this machine: written before the
    journal existed, its certificate folders not adopted yet."""
    if not (ledger / JOURNAL).exists() and _head_path(ledger_id, CERTIFICATES) is None:
        return None
    return {str(e.get("certificate")): e for e in read(ledger, ledger_id)}


def read(
    ledger: Path, ledger_id: str | None, journal: Journal = CERTIFICATES
) -> list[dict[str, Any]]:
    """The journal's entries, each checked: signed by the key, chained to the one before, and
    the whole as long as its head says (when this machine has seen it)."""
    path = ledger / journal.file
    head = _read_head(ledger_id, journal)
    if not path.exists():
        if head is not None and head["entries"] > 0:
            raise JournalError(
                f"{path}: the ledger's {journal.name} is gone, but it held {head['entries']} "
                f"{journal.lines} ({_head_path(ledger_id, journal)}): {journal.kept} — "
                "restore the journal"
            )
        return []
    entries, previous, digests = [], "", [""]
    try:
        lines = _whole_lines(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise JournalError(f"{path}: cannot read the ledger's {journal.name} ({exc})") from None
    for n, line in enumerate(lines, start=1):
        try:
            record = load_json(line)
            signature = record.pop("signature")
        except (ValueError, AttributeError, KeyError, TypeError):
            raise JournalError(f"{path}, line {n}: not a journal line") from None
        if record.get("previous") != previous or not _signing.verify(record, signature):
            raise JournalError(
                f"{path}, line {n}: not the line this ledger wrote there (edited, moved, or a "
                "line before it removed): the journal is what the ledger counts — restore it"
            )
        previous = _signing.digest(record)
        digests.append(previous)
        entries.append(record["entry"])
    # the head may lag by the lines a kill left it behind (the journal is written first); it
    # may not be ahead of the journal, nor name another line at its count
    seen = head is None or (
        head["entries"] <= len(entries) and digests[head["entries"]] == head["last"]
    )
    if not seen:
        assert head is not None
        n, lines = head["entries"], journal.lines
        if n > len(entries):
            held = f"holds {len(entries)} {lines}, but this ledger recorded {n}"
        else:  # as many lines or more, but not the ones recorded
            held = f"does not hold the {n} {lines} this ledger recorded"
        raise JournalError(
            f"{path}: the {journal.name} {held} ({_head_path(ledger_id, journal)}): lines were "
            "removed or the journal replaced — restore it"
        )
    return entries


def append(
    ledger: Path, ledger_id: str, entries: list[dict[str, Any]], journal: Journal = CERTIFICATES
) -> None:
    """Add ``entries`` (:func:`entry_of`, for the certificates) to ``journal`` and move its
    head; call under the ledger's lock, after :func:`read`. A last line a kill cut short is cut
    off first (what it was writing is adopted from its folder: :func:`read` leaves it out)."""
    path = ledger / journal.file
    previous = ""
    count = 0
    if path.exists():
        lines = _whole_lines(path)
        with path.open("r+b") as fh:  # drop a torn tail before appending after it
            fh.truncate(sum(len(line.encode("utf-8")) + 1 for line in lines))
        count = len(lines)
        if lines:
            last = load_json(lines[-1])
            last.pop("signature")
            previous = _signing.digest(last)
    with path.open("a", encoding="utf-8") as fh:
        for entry in entries:
            record = {"previous": previous, "entry": entry}
            line = {**record, "signature": _signing.sign(record)}
            fh.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
            previous = _signing.digest(record)
            count += 1
        fh.flush()
    _write_head(ledger_id, journal, count, previous)


def _whole_lines(path: Path) -> list[str]:
    """The journal's lines that end in a newline: a last one without (a write cut short by a
    kill) is left out."""
    text = path.read_text(encoding="utf-8")
    return text.split("\n")[:-1]


HEADS = "ledgers"
"""The kind of the signing key's records that the journals' heads are."""


def head_file(ledger_id: str, journal: Journal = CERTIFICATES) -> Path:
    """Where the head of the ledger's ``journal`` is written: with the signing key's records,
    by its identity."""
    return _signing.records_folder(HEADS) / f"{ledger_id}{journal.head}.json"


def _head_path(ledger_id: str | None, journal: Journal) -> Path | None:
    """Where the head of the ledger's ``journal`` is found (:func:`assay._signing.recorded`: the
    key's records, or beside the key file where a head was written before), None when this
    machine has none."""
    if ledger_id is None:
        return None
    return _signing.recorded(HEADS, f"{ledger_id}{journal.head}.json")


def _head_body(ledger_id: str, journal: Journal, entries: object, last: object) -> dict[str, Any]:
    """What a head's signature covers: a tuning journal's names its journal, so that the
    certificates' head cannot stand for it (the certificates' is as it was before)."""
    body = {"ledger": ledger_id, "entries": entries, "last": last}
    return body if journal == CERTIFICATES else {**body, "journal": journal.file}


def _read_head(ledger_id: str | None, journal: Journal) -> dict[str, Any] | None:
    """The head this machine recorded for the ledger's ``journal`` (None when it has recorded
    none)."""
    path = _head_path(ledger_id, journal)
    if path is None:
        return None
    assert ledger_id is not None
    try:
        data = load_json(path.read_text(encoding="utf-8"))
        body = _head_body(ledger_id, journal, data["entries"], data["last"])
        ok = _signing.verify(body, data["signature"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        ok = False
    if not ok:
        raise JournalError(f"{path}: not the head this ledger recorded (edited, or another key)")
    return body


def _write_head(ledger_id: str, journal: Journal, entries: int, last: str) -> None:
    body = _head_body(ledger_id, journal, entries, last)
    signed = {**body, "signature": _signing.sign(body)}  # the key made first, if none yet
    path = head_file(ledger_id, journal)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(signed) + "\n")
