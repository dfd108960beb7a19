"""One writer per run directory: an exclusive ``flock`` on ``<run>/.lock`` holding the writer's
pid. A second process on the same run stops at once with a one-line message instead of judging
every item again beside the first."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from assay.errors import RunError


class RunLock:
    """Held while a run writes its directory; released on close (or when the process dies —
    the kernel drops ``flock`` locks with their file descriptors, so a killed run never leaves
    a stale lock)."""

    def __init__(self, directory: Path):
        self.path = directory / ".lock"
        self._fh: IO[str] | None = None

    def acquire(self) -> None:
        fh = open(self.path, "a+", encoding="utf-8")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "?"
            fh.close()
            raise RunError(
                f"{self.path.parent}: in use by another assay process (pid {holder}); "
                "wait for it to finish, or stop it and re-run to resume"
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        self._fh = fh

    def release(self) -> None:
        if self._fh is not None:
            fcntl.flock(self._fh, fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """A blocking exclusive lock on ``path`` (created if missing), for short critical sections
    shared between processes (creating an MLflow store, appending a review decision)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
