"""A history people add to a finished run — a queue's human verdicts, a harness run's review
decisions — kept as one signed chain: which line counts is the last one about its item, so the
order and the completeness of the file decide, not only each line's fields.

Each line is signed with the signing key over its fields, the identity of the run it belongs to
and ``previous`` — the signature of the line before it ("" for the first) —, so a line edited
or added by hand is refused, and a line moved, removed from the middle or copied breaks the
chain at the first line after it. A file cannot vouch for its own end, so the number of lines
and the last signature (the *head*) are kept with the signing key's records
(``<heads>/<name>.json`` in :func:`assay._signing.records_folder`, signed, one per folder: found
by the key's identity, not the path it is read from), as the certificates ledger keeps its
journal's head: lines cut off the end, or the file replaced, are refused on this machine. The
head may lag by the lines a kill left it behind (the file is written first), never lead. A
folder without a head (new, or copied from elsewhere) gets one the first time its history is
read.

A file written before its lines were chained (no line has ``previous``) is adopted as it is,
once, under the writers' lock, and chained from then on — as the ledger adopts certificate
folders written before its journal. Lines that were each signed already (a queue's verdicts)
are checked first, so nothing edited is adopted. Lines that were not signed at all (a harness
run's earlier review decisions) cannot be checked: they are adopted as they stand, and only
while no folder on this machine has chained the same run (a copy of a run, its unsigned file
put back by hand, is refused, not adopted). Once a folder has a head, an unchained file in its
place is refused, never adopted again.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from assay import _signing
from assay._json import loads as load_json
from assay.errors import DataError
from assay.runs._files import write_atomic

PREVIOUS = "previous"
SIGNATURE = "signature"

Numbered = list[tuple[int, dict[str, Any]]]  # (row, record) in file order


class Head(NamedTuple):
    """What the head of a folder's history records: how many lines, and the last signature."""

    count: int
    last: str


@dataclass(frozen=True)
class HistoryKind:
    """What one kind of signed history is, as its signatures and its errors name it."""

    bound_to: str  # the key naming the run's identity in each signature: "queue", "run"
    lines: str  # what the head counts and the errors say: "verdicts", "decisions"
    heads: str  # the kind of the signing key's records the heads are (their folder's name)
    line: Callable[[dict[str, Any]], str]  # one line as an error names it: "verdict on item 'x'"
    signed_before: bool  # lines written before the chain were each signed on their own


class SignedHistory:
    """The chained history in ``path``, bound to ``identity``. ``read(path)`` gives its lines
    as (row, record) with their own fields checked; ``lock()`` is the lock every writer of the
    file holds."""

    def __init__(
        self,
        kind: HistoryKind,
        path: Path,
        identity: str,
        *,
        read: Callable[[Path], Numbered],
        lock: Callable[[], AbstractContextManager[Any]],
    ):
        self.kind, self.path, self.identity = kind, Path(path), identity
        self.folder = self.path.parent
        self._read, self._lock = read, lock

    # -- reading ---------------------------------------------------------------------------------
    def lines(self) -> Numbered:
        """The history checked as a whole: a line edited or added by hand, lines moved, removed
        or copied, or the end cut off is a one-line DataError naming the file and the first
        bad row. A file without a head yet (or of the earlier, unchained format) is settled
        under the lock first (:meth:`settled`)."""
        # the head first, then the lines: a writer appends its lines before it moves the head,
        # so a head read before the file never counts lines the file read after lacks (read the
        # other way round, a decision recorded in between looked like lines cut off)
        head = self.read_head()
        numbered = self._read(self.path)
        if head is not None and chained(numbered):
            self._check(numbered, head)
            return numbered
        with self._lock():
            return self.settled()[0]

    def settled(self) -> tuple[Numbered, str]:
        """The history checked as a whole, an older unchained file adopted first and the head
        recorded when the folder had none, and its last signature; call under the lock."""
        numbered = self._read(self.path)
        head = self.read_head()
        if not chained(numbered):
            self._adopt(numbered, head)
            numbered, head = self._read(self.path), self.read_head()
        last = self._check(numbered, head)
        if head is None:
            self.write_head(len(numbered), last)
        return numbered, last

    def _check(self, numbered: Numbered, head: Head | None) -> str:
        key = _signing.key(create=False) if numbered else b""  # nothing to check: no key needed
        previous, signatures = "", [""]
        for row, r in numbered:
            self._check_signature(key, row, r)
            if r.get(PREVIOUS) != previous:
                raise DataError(
                    f"not the line recorded after the one before it (lines moved, removed or "
                    f"copied): which of the {self.kind.lines} counts depends on the order; "
                    "restore the file",
                    path=self.path,
                    row=row,
                )
            previous = str(r[SIGNATURE])
            signatures.append(previous)
        if head is not None and (head.count > len(numbered) or signatures[head.count] != head.last):
            raise DataError(
                f"holds {len(numbered)} {self.kind.lines}, but {head.count} were recorded "
                f"({self.head_file()}): lines were cut off or the file replaced; restore it",
                path=self.path,
            )
        return previous

    def _check_signature(self, key: bytes, row: int, r: dict[str, Any]) -> None:
        expected = _signing.signed_with(key, self._payload(r))
        signature = r.get(SIGNATURE)
        if not (isinstance(signature, str) and hmac.compare_digest(expected, signature)):
            raise DataError(
                f"{self.kind.line(r)} is not signed by the signing key "
                f"({_signing.key_file()}): edited or added since it was recorded (by hand, "
                "past assay), or recorded with another key",
                path=self.path,
                row=row,
            )

    # -- writing ---------------------------------------------------------------------------------
    def _payload(self, record: dict[str, Any]) -> dict[str, Any]:
        """What a line's signature covers: its fields (``previous`` among them) and the run's
        identity."""
        body = {k: v for k, v in record.items() if k != SIGNATURE}
        return {**body, self.kind.bound_to: self.identity}

    def link(self, record: dict[str, Any], previous: str) -> dict[str, Any]:
        """``record`` chained after the line signed ``previous``, and signed."""
        linked = {**record, PREVIOUS: previous}
        return {**linked, SIGNATURE: _signing.sign(self._payload(linked))}

    def append(
        self,
        records: Iterable[dict[str, Any]],
        settled: tuple[Numbered, str],
        write: Callable[[str], None],
    ) -> list[dict[str, Any]]:
        """``records`` chained after the ``settled`` history (:meth:`settled`, under the same
        hold of the lock), written with ``write`` (one call, whole lines) and the head moved
        past them after: a kill between the two leaves the head behind, never ahead. Returns
        the lines as written."""
        numbered, previous = settled
        out, previous = self._linked(records, previous)
        if out:
            write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out))
            self.write_head(len(numbered) + len(out), previous)
        return out

    def _adopt(self, numbered: Numbered, head: Head | None) -> None:
        """Rewrite an older, unchained history as it is, each line chained to the one before
        and signed, and record its head (see the module's docstring for what is checked)."""
        if head is not None:  # it was chained here: this file is not it
            key = _signing.key(create=False)
            for row, r in numbered:  # a line added by hand is named as such
                self._check_signature(key, row, r)
            raise DataError(
                f"holds no chained {self.kind.lines}, but this folder's were chained "
                f"({self.head_file()}): the file was replaced; restore it",
                path=self.path,
            )
        if self.kind.signed_before:
            key = _signing.key(create=False)
            for row, r in numbered:
                self._check_signature(key, row, r)
        elif self.started_file().exists():
            raise DataError(
                f"holds {self.kind.lines} that are not signed, but this run's {self.kind.lines} "
                f"were signed in another folder on this machine ({self.started_file()}): lines "
                "written by hand (past assay) are not adopted; record them with `assay review`",
                path=self.path,
            )
        bodies = ({k: v for k, v in r.items() if k != SIGNATURE} for _, r in numbered)
        linked, previous = self._linked(bodies, "")
        write_atomic(self.path, [json.dumps(r, ensure_ascii=False) + "\n" for r in linked])
        self.write_head(len(numbered), previous)

    def _linked(
        self, records: Iterable[dict[str, Any]], previous: str
    ) -> tuple[list[dict[str, Any]], str]:
        """``records`` chained one after another from the line signed ``previous``, each signed
        (:meth:`link`), and the last signature."""
        out = []
        for record in records:
            out.append(self.link(record, previous))
            previous = out[-1][SIGNATURE]
        return out, previous

    # -- the head --------------------------------------------------------------------------------
    def head_file(self) -> Path:
        """Where the head of this folder's history is found: with the signing key's records
        (:func:`assay._signing.recorded`, by the key's identity; beside the key file where one
        was written before), else where it is written."""
        return _signing.record_path(self.kind.heads, f"{self._head_name()}.json")

    def _head_name(self) -> str:
        folder = str(self.folder.resolve())
        return _signing.digest({self.kind.bound_to: self.identity, "folder": folder})[:32]

    def started_file(self) -> Path:
        """The mark that some folder on this machine chained this run's history (kept for a
        kind whose older lines were not signed: such a file is adopted only before it), where
        it is found or written (as :meth:`head_file`)."""
        name = f"run-{_signing.digest({self.kind.bound_to: self.identity})[:32]}.started"
        return _signing.record_path(self.kind.heads, name)

    def read_head(self) -> Head | None:
        """The head recorded for the folder (None when none was recorded on this machine)."""
        path = _signing.recorded(self.kind.heads, f"{self._head_name()}.json")
        if path is None:
            return None
        try:
            data = load_json(path.read_text(encoding="utf-8"))
            body = self._head_body(data[self.kind.lines], data["last"])
            ok = _signing.verify(body, data[SIGNATURE])
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError):
            ok = False
        if not ok:
            raise DataError(
                f"{path}: not the head this folder's {self.kind.lines} recorded (edited, or "
                "another key)"
            )
        return Head(body[self.kind.lines], body["last"])

    def write_head(self, count: int, last: str) -> None:
        body = self._head_body(count, last)
        signed = {**body, SIGNATURE: _signing.sign(body)}  # the key made first, if none yet
        folder = _signing.records_folder(self.kind.heads)
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(folder / f"{self._head_name()}.json", json.dumps(signed) + "\n")
        if not self.kind.signed_before:
            (folder / self.started_file().name).touch()

    def _head_body(self, count: int, last: str) -> dict[str, Any]:
        return {self.kind.bound_to: self.identity, self.kind.lines: count, "last": last}


def chained(numbered: Numbered) -> bool:
    """Whether the history was written chained (False: an older file, adopted on first use)."""
    return not numbered or any(PREVIOUS in r for _, r in numbered)
