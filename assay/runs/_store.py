"""The files of one run directory: resolved config, state, append-only records, metrics.

Records (judgments, generation units) are appended one JSON line at a time, flushed and
fsynced, so a killed run keeps every finished record; a torn last line is dropped on the next
read and its work done again. Each record is signed as it is written and checked when it is read
back (:mod:`assay.runs._signed`): an edited record is refused, not resumed from. How many records
each file holds is kept beside the signing key as they are committed
(:mod:`assay.runs._record_heads`): a run whose records were removed is refused before it goes on,
not judged again.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from assay._json import Line, placed_lines, read_lines
from assay.errors import DataError, RunError
from assay.runs._files import append_lines, cannot_write, write_atomic, write_json
from assay.runs._record_heads import Heads, RecordHeads, Tally, tally_file
from assay.runs._seal import RunState
from assay.runs._signed import RecordSeal, new_instance, signature_of
from assay.types import Judgment

T = TypeVar("T", bound=BaseModel)
JUDGMENTS = "judgments.jsonl"
STATE = "run.json"
CALLS = "calls.jsonl"  # the call ledger: every answer the server gave, as it gave it
_LEDGER_FSYNC_S = 0.5  # the ledger's fsyncs, at most this often (and when the run closes)


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class RunStore:
    """Files of one run. Created only after the config and data have been validated."""

    def __init__(self, path: Path, run_hash: str):
        self.path = path
        self.run_hash = run_hash
        self._lock = threading.RLock()  # reentrant: an append outside a group writes the heads
        self._seals: dict[bool, RecordSeal] = {}
        # each records file's tally as this process writes it (:mod:`._record_heads`); None
        # until the files the head names were checked
        self._tallies: dict[str, Tally] | None = None
        self._heads: RecordHeads | None = None
        self._pending: dict[str, list[str]] = {}  # lines appended since the heads were written
        self._unsettled = False  # the heads as recorded hold pending lines

    def _seal(self, *, create: bool) -> RecordSeal:
        """The run's record signer, bound to its instance (``run.json``'s); the key is read
        once (made only by a writer)."""
        seal = self._seals.get(create) or self._seals.get(True)
        if seal is None:
            instance = self.state().get("instance")
            seal = RecordSeal(self.path, self.run_hash, instance, create=create)
            self._seals[create] = seal
        return seal

    # -- state ------------------------------------------------------------------------------
    def open(self, resolved_config: dict[str, Any], kind: str | None = None) -> RunState:
        """Create or reopen the run; refuses a directory that belongs to another run. ``kind``
        (the runner's name) is written in ``run.json``: the report dispatch reads it there. A
        run created here draws its instance (:mod:`~._signed`), which its records are signed
        with; a run reopened keeps the one it has (none: created before instances existed)."""
        self.path.mkdir(parents=True, exist_ok=True)
        state = self.state()
        if state and state.get("run_hash") != self.run_hash:
            raise RunError(
                f"{self.path}: belongs to another run (hash {state.get('run_hash')}); choose another output_dir"
            )
        if not state:
            state = RunState(
                run_hash=self.run_hash, instance=new_instance(), status="running", created=now()
            )
            if kind:
                state["kind"] = kind
            self.write_config(resolved_config)  # first: a run.json is a run with its config
            self.write_json(STATE, state)
            self._seals.clear()  # a signer made before run.json was: bound to no instance
            self._tallies = {}  # a new instance: no record written yet, none to check
            self._heads = RecordHeads(self.path, self.run_hash, state["instance"])
        elif kind and "kind" not in state:  # a run written before runs named their kind
            state["kind"] = kind
            self.write_json(STATE, state)
        return state

    def write_config(self, resolved_config: dict[str, Any]) -> None:
        """``config.yaml``: the resolved config (``@file`` texts read) the run's results come
        from — written on first open, and again by a runner whose run directory outlives a
        config edit (the harness: a judge's rubric is not part of its directory)."""
        import yaml

        self.write_text(
            "config.yaml", yaml.safe_dump(resolved_config, sort_keys=False, allow_unicode=True)
        )

    def state(self) -> RunState:
        """``run.json`` (empty before the run is opened)."""
        p = self.path / STATE
        return json.loads(p.read_text()) if p.exists() else {}

    def update_state(self, **changes: Any) -> None:
        state = self.state()
        state.update(changes)
        self.write_json(STATE, state)

    def write_json(self, name: str, obj: object) -> Path:
        """Write atomically (temp file + rename): a kill never leaves half a file."""
        return write_json(self.path / name, obj)

    def write_text(self, name: str, text: str | Iterable[str]) -> Path:
        return write_atomic(self.path / name, text)

    def read_json(self, name: str) -> Any:
        p = self.path / name
        return json.loads(p.read_text(encoding="utf-8")) if p.exists() else None

    # -- append-only records ------------------------------------------------------------------
    def records(self, name: str, model: type[T], *, signed: bool = True) -> list[T]:
        """Records of an append-only JSONL file (:meth:`iter_records`), as a list."""
        return list(self.iter_records(name, model, signed=signed))

    def iter_records(self, name: str, model: type[T], *, signed: bool = True) -> Iterator[T]:
        """Records of an append-only JSONL file, read as they are used, each checked against
        its signature (unless ``signed`` is False: the call ledger); a torn final line (the run
        was killed while writing it) is discarded and removed from the file once read to it."""
        for _, record in self.placed_records(name, model, signed=signed):
            yield record

    def placed_records(
        self, name: str, model: type[T], *, signed: bool = True
    ) -> Iterator[tuple[int, T]]:
        """:meth:`iter_records` with the byte offset of each record's line: what a reader keeps
        to read one record again (:meth:`records_at`) rather than the record."""
        p = self.path / name
        if not p.exists():
            return
        seal = None
        lines = placed_lines(p)
        placed = next(lines, None)
        while placed is not None:
            offset, line = placed
            after = next(lines, None)
            if after is None and not line.complete:  # torn: cut off, with nothing after it
                self._keep_lines(name, lambda ln: ln.complete)
                return
            if seal is None and signed:
                seal = self._seal(create=False)
            try:
                text = seal.open(name, line.text, line.number) if seal else line.text
                record = model.model_validate_json(text)
            except ValueError:
                if after is None:  # a last line that is complete JSON-wise but not a record
                    self._keep_lines(name, lambda ln, bad=line.number: ln.number < bad)
                    return
                raise DataError("malformed record", path=p, row=line.number) from None
            yield offset, record
            placed = after

    def records_at(
        self, name: str, offsets: Iterable[int], model: type[T], *, signed: bool = True
    ) -> Iterator[T]:
        """The records whose lines start at ``offsets`` of ``name`` (from
        :meth:`placed_records`), in that order, each checked against its signature again
        (unless ``signed`` is False: a file written whole, not appended to)."""
        p = self.path / name
        seal = self._seal(create=False) if signed else None
        try:
            with open(p, "rb") as fh:
                for offset in offsets:
                    fh.seek(offset)
                    text = fh.readline().rstrip(b"\n").decode("utf-8")
                    try:
                        body = seal.open(name, text, 0) if seal else text
                        yield model.model_validate_json(body)
                    except ValueError:
                        raise DataError(f"malformed record at byte {offset}", path=p) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise DataError(f"cannot read: {exc}", path=p) from None

    def _keep_lines(self, name: str, keep: Callable[[Line], bool]) -> None:
        """Rewrite a records file with the lines ``keep`` keeps (one line at a time)."""
        lines = read_lines(self.path / name)
        self.write_text(name, (ln.text + "\n" for ln in lines if keep(ln)))

    def append_record(self, name: str, record: BaseModel) -> None:
        """Append one record as a signed JSON line, flushed and fsynced (thread-safe), counted
        in the run's heads beside the key before it is written (:mod:`._record_heads`: once
        for a group commit)."""
        signed = self._seal(create=True).sign(name, record.model_dump_json())
        with self._lock:
            tallies = self.check_records()
            if self._heads is None:  # a run with no instance: no heads
                append_lines(self.path / name, signed + "\n")
                return
            tally = tallies.get(name)
            if tally is None:  # a file its heads do not name yet: as it stands
                tally = tallies[name] = tally_file(self.path / name)
            tally.add(signature_of(signed))
            self._pending.setdefault(name, []).append(signed)
            append_lines(self.path / name, signed + "\n", self._write_ahead)

    # -- how many records each file holds (_record_heads.py) ---------------------------------
    def check_records(self) -> dict[str, Tally]:
        """Refuse, in one line naming the run folder, a run whose records files hold fewer
        records than its heads beside the key count, or others (records removed); write the
        lines its last commit counted that a kill kept from their files. Once per store, before
        the run goes on; returns the files' tallies."""
        with self._lock:
            if self._tallies is not None:
                return self._tallies
            tallies: dict[str, Tally] = {}
            heads = self.recorded_heads() or Heads()
            for name, head in sorted(heads.records.items()):
                assert self._heads is not None  # heads recorded: the run has an instance
                try:
                    tallies[name], missing = self._heads.check(
                        name, head, heads.pending.get(name, [])
                    )
                except RunError:
                    self._check_signatures(name)  # a line edited or taken: named as such
                    raise
                if missing:  # counted, then the kill came before they were written
                    text = "".join(ln + "\n" for ln in missing)
                    append_lines(self.path / name, text, now=True)  # before any new record
            self._tallies = tallies
            self._unsettled = bool(heads.pending)
            return tallies

    def recorded_heads(self) -> Heads | None:
        """The run's heads as recorded beside the key (None: a run with no instance, or none
        recorded on this machine)."""
        instance = self.state().get("instance")
        if instance is None:
            return None
        if self._heads is None:
            self._heads = RecordHeads(self.path, self.run_hash, instance)
        return self._heads.read()

    def settle_records(self) -> None:
        """The run is being sealed, every record in its file: its heads keep no pending lines."""
        with self._lock:
            if self._unsettled and self._heads is not None and self._tallies is not None:
                self._write_heads(Heads(self._values(), {}), compact=True)
                self._unsettled = False

    def _check_signatures(self, name: str) -> None:
        """Each whole line of the records file ``name`` checked against its signature: the
        first that is not this run's record is a one-line :class:`RunError` naming it."""
        path = self.path / name
        if path.exists():
            seal = self._seal(create=False)
            for line in read_lines(path):
                if line.complete:
                    seal.open(name, line.text, line.number)

    def _write_ahead(self) -> None:
        """The heads counting the records appended since the last commit, with their lines,
        recorded beside the key before those lines are written."""
        with self._lock:
            pending, self._pending = self._pending, {}
            self._write_heads(Heads(self._values(), pending))
            self._unsettled = True

    def _values(self) -> dict[str, tuple[int, str]]:
        assert self._tallies is not None
        return {name: t.value() for name, t in sorted(self._tallies.items())}

    def _write_heads(self, heads: Heads, *, compact: bool = False) -> None:
        assert self._heads is not None
        self._heads.write(self._seal(create=True).key, heads, compact=compact)

    # -- judgments --------------------------------------------------------------------------
    def judgments(self, name: str = JUDGMENTS) -> dict[str, Judgment]:
        """Judgments by item id; a retried item's latest judgment wins."""
        return {j.item_id: j for j in self.records(name, Judgment)}

    def append(self, judgment: Judgment, name: str = JUDGMENTS) -> None:
        self.append_record(name, judgment)

    # -- the call ledger --------------------------------------------------------------------
    def open_ledger(self) -> CallLedger:
        """``calls.jsonl`` opened for appending (a torn last line, left by a kill, cut off)."""
        from assay.lm import CallRecord

        for _ in self.iter_records(CALLS, CallRecord, signed=False):
            pass  # read to the end, holding none: that cuts a torn last line
        return CallLedger(self.path / CALLS)

    def calls(self) -> Iterator[Any]:
        """The call ledger's records (:class:`~assay.lm._ledger.CallRecord`), read as they are
        used and without touching the file: calls abandoned in flight may still be writing to
        it, so a torn last line is left out, not cut."""
        from assay.lm import CallRecord

        path = self.path / CALLS
        if path.exists():
            for line in read_lines(path):
                if line.complete:  # only a file's last line may be torn
                    yield CallRecord.model_validate_json(line.text)


class CallLedger:
    """The writer of ``calls.jsonl``: each record goes out at once in one ``write`` to a file
    opened for appending — a killed process loses none of them — and is fsynced (as the
    other records are) at most every half second, and when the run closes."""

    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()
        self._synced = time.monotonic()

    def write(self, record: BaseModel) -> None:
        data = (record.model_dump_json() + "\n").encode()
        with self._lock:
            if self._fd is None:  # record_calls stops sending before the ledger closes
                raise RuntimeError(f"{self.path}: a call noted after the ledger was closed")
            try:
                os.write(self._fd, data)
                if time.monotonic() - self._synced >= _LEDGER_FSYNC_S:
                    os.fsync(self._fd)
                    self._synced = time.monotonic()
            except OSError as exc:
                raise cannot_write(self.path, exc) from None

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                fd, self._fd = self._fd, None
                try:
                    os.fsync(fd)
                except OSError as exc:
                    raise cannot_write(self.path, exc) from None
                finally:
                    os.close(fd)
