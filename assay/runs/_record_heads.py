"""How many records a run instance wrote to each of its files, kept beside the signing key: a
record removed from a run is refused, never judged again.

Each record is signed on its own (:mod:`._signed`), so a record edited, added or taken from
another run is refused as it is read. A record *removed* leaves every other line as it was, and
a run that resumes or is made again from its records judges the missing items again: a fresh
draw of the judge that no file can tell from the first. Delete the lines a judge got wrong, run
the command again, and only lucky draws are kept — a coin-flip judge certified in a few rounds.

So the writer keeps, for each run instance (its hash and ``instance``, :func:`._signed.signed_run`)
the *head* of each of its records files: how many records it wrote there and the SHA-256 of
their signatures in order. The heads are kept in one signed log per instance under the signing
key's identity (``run-heads/<id>.jsonl`` in ``$XDG_STATE_HOME/assay/keys/<key id>/``:
:class:`RecordHeads`)
— where the command finds them on its own, not in the run folder, which an edited ``run.json``
could make look interrupted or new, and not by the folder's path, so a run moved or copied is
the same run.

The head is written *ahead* of the records: each commit of records (one per group commit,
:func:`._files.group_commit`) first writes the head that counts them, with the lines themselves
(``pending``), then appends them to their files. A kill between the two leaves the head ahead
of the files by lines it holds: the next run that goes on writes them into their files (cutting
a torn last line first) and goes on — nothing lost, nothing judged twice. So no moment leaves a
record uncounted: a record removed, even the last one written before a kill, is refused, not
judged again. The pending lines are cleared when the run is sealed.

Before a run goes on — resumed, scored again from its records, or given more work — each file
its head names is read once: one that holds fewer records than its head counts (beyond the
pending lines), is gone, or whose records are not the ones counted (lines removed and others
copied in their place, or moved), is refused in one line naming the run folder, the file and
the head, before anything is written or asked.

A run is one instance wherever its folder is: a copy of a run folder reads as the run, and goes
on as it would have; once one of the two has gone on, the other — an older state of the same
instance — is refused where it would go on (it is still read as it sealed it).

What the heads do not cover: a run created before heads were kept, or brought from a machine
whose key folder is not this one's: its files have no head here, and a file's records are taken
as they stand the first time a command adds to it here, and counted from then on (as a copied
review history is adopted, :mod:`._signed_history`); a run with no instance (read only as it
sealed it, never resumed); and whoever can write beside the key, who can also read it and sign.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay import _signing
from assay._json import loads as load_json
from assay.errors import RunError
from assay.runs._files import cannot_write, write_atomic
from assay.runs._signed import mac_of, signed_run

HEADS = "run-heads"
"""The folder beside the signing key where the heads of run instances are kept."""
COMPACT_AT = 1 << 20
"""A heads log past this many bytes is rewritten to its last line."""


class Tally:
    """The head of one records file as its records go by: how many, and the SHA-256 of their
    signatures in order."""

    __slots__ = ("count", "_digest")

    def __init__(self) -> None:
        self.count = 0
        self._digest = hashlib.sha256()

    def add(self, mac: bytes) -> None:
        self._digest.update(mac)
        self.count += 1

    def value(self) -> tuple[int, str]:
        return self.count, self._digest.hexdigest()

    def copy(self) -> Tally:
        out = Tally()
        out.count, out._digest = self.count, self._digest.copy()
        return out


@dataclass
class Heads:
    """A run instance's heads as recorded: each file's (count, digest), and the lines of the
    last commit, counted and perhaps not yet in their files (none once the run is sealed)."""

    records: dict[str, tuple[int, str]] = field(default_factory=dict)
    pending: dict[str, list[str]] = field(default_factory=dict)


def heads_file(name: str) -> Path:
    """Where a run instance's heads log ``name`` is: among the records kept under the signing
    key's identity (``$XDG_STATE_HOME/assay/keys/<key id>/run-heads/``, :func:`assay._signing.
    record_path`), so that the same key read through a link or a copy elsewhere finds the same
    heads, as the certificate journals and signed histories find theirs."""
    return _signing.record_path(HEADS, name)


class RecordHeads:
    """The heads of one run instance (a run with an instance; none for one without), kept as a
    log beside the key: each commit appends one entry — a signed line of the heads, then the
    pending lines as they are — so that recording them costs an append, not a file replaced;
    the last whole entry is the heads. The log is rewritten to its last entry (atomically) on
    a process's first write, which drops an entry a kill tore, and whenever it has grown past
    :data:`COMPACT_AT` bytes."""

    def __init__(self, run_dir: Path, run_hash: str, instance: str):
        self.run_dir = run_dir
        self.identity = signed_run(run_hash, instance)
        name = _signing.digest({"run": self.identity})[:32]
        self.file = heads_file(f"{name}.jsonl")
        self._size: int | None = None  # the log's bytes, once this process has rewritten it

    def read(self) -> Heads | None:
        """The heads as last recorded on this machine (None: none recorded here)."""
        try:
            lines = self.file.read_bytes().split(b"\n")[:-1]  # whole lines: a torn one is not
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise RunError(f"{self.run_dir}: cannot read {self.file} ({exc.strerror})") from None
        last, k = None, 0
        try:
            while k < len(lines):  # entry by entry: the last one whole is the heads
                header = load_json(lines[k].decode("utf-8"))
                n = sum(int(c) for c in header["pending"].values())
                if k + 1 + n > len(lines):
                    break  # torn by a kill: the entry before it holds
                last, k = (header, lines[k + 1 : k + 1 + n]), k + 1 + n
            if last is None:
                return None  # no whole entry: the first write was killed
            header, pending = last
            body = self._body(header["records"], header["pending"], _lines_digest(pending))
            ok = _signing.verify(body, header["signature"])
            records = {str(f): (int(v[0]), str(v[1])) for f, v in header["records"].items()}
            lines_of: dict[str, list[str]] = {}
            for name, count in sorted(header["pending"].items()):
                lines_of[str(name)] = [ln.decode("utf-8") for ln in pending[: int(count)]]
                pending = pending[int(count) :]
        except (ValueError, KeyError, TypeError, AttributeError, IndexError):
            ok = False
        if not ok:
            raise RunError(
                f"{self.run_dir}: {self.file} is not the count of records this run recorded "
                "(edited, or another key): its records cannot be checked; restore it, or move "
                "the run directory aside and run its config again"
            )
        return Heads(records, lines_of)

    def write(self, key: bytes, heads: Heads, *, compact: bool = False) -> None:
        """Record ``heads``, signed with ``key`` (the signing key as the run read it once);
        ``compact``: the log rewritten to this entry (a run sealed: what it reads from then)."""
        names = sorted(heads.pending)
        pending = [line.encode("utf-8") for name in names for line in heads.pending[name]]
        counts = {name: len(heads.pending[name]) for name in names}
        body = self._body(heads.records, counts, _lines_digest(pending))
        signature = _signing.signed_with(key, body)
        header = {"records": heads.records, "pending": counts, "signature": signature}
        entry = b"\n".join([json.dumps(header).encode(), *pending]) + b"\n"
        try:
            if compact or self._size is None or self._size + len(entry) > COMPACT_AT:
                self.file.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(self.file, entry.decode("utf-8"))
                self._size = len(entry)
                return
            fd = os.open(self.file, os.O_WRONLY | os.O_APPEND)
            try:
                view = memoryview(entry)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
            self._size += len(entry)
        except OSError as exc:
            raise cannot_write(self.file, exc) from None

    def _body(self, records: Any, pending: Any, lines: str) -> dict[str, Any]:
        """What an entry's signature covers: the run, the heads, how many lines are pending in
        each file and the SHA-256 of those lines."""
        return {"run": self.identity, "records": records, "pending": pending, "lines": lines}

    def check(
        self, name: str, head: tuple[int, str], pending: list[str]
    ) -> tuple[Tally, list[str]]:
        """The tally of the records file ``name`` once its records are those its ``head``
        counts, and the ``pending`` lines a kill kept from it (to be written); else a one-line
        :class:`RunError` naming the run folder, the file and what is missing."""
        count, digest = head
        before = count - len(pending)  # what the file held before the last commit
        ahead = [line.encode() for line in pending]
        tally, prefix = Tally(), Tally()
        lines, bad = 0, False
        for line in whole_lines(self.run_dir / name):
            mac, k = mac_of(line), lines - before
            bad = bad or (mac is None if k < 0 else k < len(ahead) and line != ahead[k])
            lines += 1
            if mac is not None:
                tally.add(mac)
            if lines == before:
                prefix = tally.copy()
        if lines < before:
            what = f"holds {lines} records" if (self.run_dir / name).exists() else "is gone"
            raise RunError(
                f"{self.run_dir}: {name} {what}, but this run wrote {count} there "
                f"({self.file}): {count - lines} removed since; records removed from a run "
                "are refused, not judged again — restore the file, or move the run directory "
                "aside and run its config again"
            )
        for line in ahead:
            prefix.add(mac_of(line) or b"")
        if bad or prefix.value() != (count, digest):
            raise RunError(
                f"{self.run_dir}: the records of {name} are not the {count} this run wrote "
                f"there ({self.file}): records were removed, moved or copied in since; "
                "records removed from a run are refused, not judged again — restore the file, "
                "or move the run directory aside and run its config again"
            )
        missing = pending[lines - before :] if lines < count else []
        for line in missing:
            tally.add(mac_of(line.encode()) or b"")
        return tally, missing


def _lines_digest(lines: list[bytes]) -> str:
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line + b"\n")
    return digest.hexdigest()


def whole_lines(path: Path) -> Iterator[bytes]:
    """The lines of ``path`` that end in a newline (without it), as they are read: a torn last
    line is not one (the next read or append cuts it off). A missing file has none."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 (closed below)
    except FileNotFoundError:
        return
    with fh:
        for raw in fh:
            if raw.endswith(b"\n"):
                yield raw[:-1]


def tally_file(path: Path) -> Tally:
    """The tally of the records in ``path`` as it stands (a file its heads do not name yet)."""
    tally = Tally()
    for line in whole_lines(path):
        mac = mac_of(line)
        if mac is not None:  # not a record: the reader refuses it, or cuts it off
            tally.add(mac)
    return tally
