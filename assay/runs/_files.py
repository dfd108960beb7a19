"""Crash-safe files: atomic rewrites and fsynced appends.

A kill can leave at most one torn line at the end of an append-only file: reads
(:mod:`assay._json`) ignore it and the next append first cuts it off, so a record is either
whole or absent.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from assay.errors import RunError


def cannot_write(path: Path, exc: OSError) -> RunError:
    """The one line of a write that failed (a full disk, a file size limit, a folder made
    read-only): the file named; what was written before it is kept."""
    return RunError(
        f"{path}: cannot write ({exc.strerror or exc}); everything written before is kept: "
        "make room and run the command again to resume"
    )


def write_atomic(path: Path, text: str | Iterable[str]) -> Path:
    """Write ``text`` (or its pieces, written as they come: a file larger than memory) to
    ``path`` via a temp file and a rename: never half a file. A failed write leaves the file
    as it was and is :func:`cannot_write`'s one line; an error raised by the pieces themselves
    (a row that does not read) is raised as it is. Neither leaves the temp file behind."""
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            if isinstance(text, str):
                fh.write(text)
            else:
                fh.writelines(text)
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise cannot_write(path, exc) from None
        raise
    return path


def write_json(path: Path, obj: object) -> Path:
    return write_atomic(path, json.dumps(obj, indent=2, ensure_ascii=False, default=str))


class _Group:
    """What a :func:`group_commit` block holds: the lines for each file, and what runs before
    they are written (each callable once, in the order first given)."""

    def __init__(self) -> None:
        self.pending: dict[Path, list[str]] = {}
        self.before: dict[Callable[[], None], None] = {}


_group: ContextVar[_Group | None] = ContextVar("assay_group_commit", default=None)


@contextmanager
def group_commit() -> Iterator[None]:
    """Appends made inside the block reach their files together at its end, one write and one
    fsync per file (a group commit): an fsync costs milliseconds, and a pool finishing hundreds
    of calls a second would otherwise wait on one per record. Nothing inside the block counts
    as persisted before it ends; the block always writes what it holds, even on an error —
    once what the appends asked to run first (``before``) has run: when that raises, nothing
    is written."""
    if _group.get() is not None:  # already inside one: the outer block commits
        yield
        return
    group = _Group()
    token = _group.set(group)
    try:
        yield
    finally:
        _group.reset(token)
        for before in group.before:
            before()
        for path, lines in group.pending.items():
            _append(path, "".join(lines))


def append_lines(
    path: Path, text: str, before: Callable[[], None] | None = None, *, now: bool = False
) -> None:
    """Append whole lines (``text`` ends with a newline), flushed and fsynced (at the end of
    the enclosing :func:`group_commit`, if any, unless ``now``). A torn last line left by a
    killed writer is cut off first, so it never glues onto the new record. ``before`` runs
    first — at the end of the group, once for the group however many appends named it; when it
    raises, the lines are not written."""
    group = None if now else _group.get()
    if group is not None:
        group.pending.setdefault(path, []).append(text)
        if before is not None:
            group.before[before] = None
        return
    if before is not None:
        before()
    _append(path, text)


def _append(path: Path, text: str) -> None:
    try:
        _append_synced(path, text)
    except OSError as exc:
        raise cannot_write(path, exc) from None


def _append_synced(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            if size:
                fh.seek(size - 1)
                torn = fh.read(1) != b"\n"
        if size and torn:
            data = path.read_bytes()
            with open(path, "r+b") as fh:
                fh.truncate(data.rfind(b"\n") + 1)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
