"""Rows sorted by a key without holding them: an external merge sort.

The rows are read once into sorted runs — at most ``run_rows`` rows or about ``run_bytes``
bytes of them, whichever comes first, pickled to a file of their own in a folder the caller
owns — and every iteration merges the runs in key order (``heapq.merge``). Memory is one run
while the rows are read and one row per run while they are merged; the rows can be read in
order any number of times while the folder lives. The sort is stable: rows with equal keys
come in the order they were read.
"""

from __future__ import annotations

import heapq
import pickle
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any, Generic, TypeVar

T = TypeVar("T")

RUN_ROWS = 100_000
RUN_BYTES = 32 * 2**20


class SortedRuns(Generic[T]):
    """``rows`` sorted by ``key`` on disk, in ``folder`` (see the module's text); ``len`` is
    how many were read."""

    def __init__(
        self,
        rows: Iterable[T],
        *,
        key: Callable[[T], Any],
        folder: Path,
        run_rows: int = RUN_ROWS,
        run_bytes: int = RUN_BYTES,
    ):
        self._key = key
        self._runs: list[Path] = []
        self._count = 0
        run: list[tuple[Any, bytes]] = []
        size = 0
        for row in rows:
            data = pickle.dumps(row, protocol=pickle.HIGHEST_PROTOCOL)
            run.append((key(row), data))
            size += len(data)
            if len(run) >= run_rows or size >= run_bytes:
                self._write(run, folder)
                run, size = [], 0
        if run:
            self._write(run, folder)

    def _write(self, run: list[tuple[Any, bytes]], folder: Path) -> None:
        run.sort(key=lambda kept: kept[0])  # stable: equal keys stay in reading order
        with tempfile.NamedTemporaryFile("wb", dir=folder, suffix=".run", delete=False) as f:
            f.writelines(data for _, data in run)
        self._runs.append(Path(f.name))
        self._count += len(run)

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[T]:
        files = [run.open("rb") for run in self._runs]
        try:
            yield from heapq.merge(*map(_unpickled, files), key=self._key)
        finally:
            for f in files:
                f.close()


def _unpickled(f: IO[bytes]) -> Iterator[Any]:
    """The rows pickled one after another in ``f``."""
    while True:
        try:
            yield pickle.load(f)
        except EOFError:
            return
