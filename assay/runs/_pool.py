"""The worker pool every runner uses: bounded concurrency, a progress bar, results persisted as
they finish (one fsync per batch), work that depends on a result started as soon as it is in,
and an exit that never waits on a hung request."""

from __future__ import annotations

import heapq
import itertools
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

from tqdm import tqdm

from assay.errors import RunError
from assay.runs._files import group_commit

W = TypeVar("W")
R = TypeVar("R")
_TICK_S = 0.5  # the longest the pool waits without looking at Ctrl-C and the deadline


def run_pool(
    work: list[W],
    fn: Callable[[W], R],
    *,
    concurrency: int,
    on_result: Callable[[W, R], None] | None = None,
    progress: bool = True,
    desc: str = "",
    unit: str = "call",
    postfix: Callable[[R], dict[str, Any]] | None = None,
    deadline: float | None = None,
    follow_up: Callable[[W, R], Iterable[W]] | None = None,
) -> list[R]:
    """``fn`` over ``work`` with up to ``concurrency`` in flight, results in ``work`` order.

    ``on_result`` sees each result as it finishes, in this thread; the records it appends
    (:func:`~assay.runs.append_lines`) are committed together for every batch of
    results that finished meanwhile — one fsync per batch, before the next result is looked at.
    ``follow_up`` may then return more work that depends on a result, run in the same pool
    (and appended to the results).
    An exception — a bug, Ctrl-C, or the ``deadline`` (a ``time.monotonic()`` value) passing —
    stops the pool at once: pending work is cancelled, finished work is kept, and calls still
    in flight are abandoned rather than waited for (a hung server cannot hold the run).
    """
    work = list(work)
    out: list[R | None] = [None] * len(work)
    bar = tqdm(total=len(work), desc=desc, unit=unit, disable=not progress, dynamic_ncols=True)
    pool = ThreadPoolExecutor(max_workers=max(1, concurrency))
    finished: queue.SimpleQueue[tuple[int, Future[R]]] = queue.SimpleQueue()
    clean = False

    def submit(i: int) -> None:
        # a completion queue: O(1) per result (waiting on a set of futures is O(pending))
        pool.submit(fn, work[i]).add_done_callback(lambda f, i=i: finished.put((i, f)))

    try:
        for i in range(len(work)):
            submit(i)
        left = len(work)
        while left:
            batch = [_next(finished, deadline, len(work), left, unit)]
            while True:  # everything else that has finished meanwhile joins the batch
                try:
                    batch.append(finished.get_nowait())
                except queue.Empty:
                    break
            with group_commit():
                for i, fut in batch:
                    r = fut.result()
                    if on_result is not None:
                        on_result(work[i], r)
                    out[i] = r
                    left -= 1
                    if postfix is not None:
                        bar.set_postfix(**postfix(r), refresh=False)
                    for more in follow_up(work[i], r) if follow_up is not None else ():
                        work.append(more)
                        out.append(None)
                        bar.total += 1
                        left += 1
                        submit(len(work) - 1)
            bar.update(len(batch))
        clean = True
    finally:
        # on success every future is done; on failure do not wait for calls in flight
        pool.shutdown(wait=clean, cancel_futures=True)
        bar.close()
    return [r for r in out if r is not None]


def _next(finished: queue.SimpleQueue, deadline: float | None, total: int, left: int, unit: str):
    """The next finished ``(index, future)``, waking every tick for Ctrl-C; RunError once the
    deadline has passed."""
    while True:
        try:  # what has finished is kept, even past the deadline
            return finished.get_nowait()
        except queue.Empty:
            pass
        wait = _TICK_S
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RunError(
                    f"deadline reached with {left} of {total} {unit}s unfinished; everything "
                    "finished is saved: re-run to resume"
                )
            wait = min(wait, remaining)
        try:
            return finished.get(timeout=wait)
        except queue.Empty:
            continue


class CallSlots:
    """At most ``n`` LM calls in flight across the threads of a run. A freed slot goes straight
    to the waiting caller of the highest priority (the lowest number; first come, first served
    within a priority) — so calls on a dependency chain (generation) go before leaves (judging),
    and a release wakes one thread, not all of them.

    ``after_first_call`` runs once, in the thread whose call ended first: by then the first
    wave of requests has left and the run is waiting on the network (the run's sidecars start
    their warm-ups then, not while this process is still busy sending)."""

    def __init__(self, n: int, after_first_call: Callable[[], None] | None = None):
        self._lock = threading.Lock()
        self._free = max(1, n)
        self._waiting: list[tuple[int, int, threading.Event]] = []  # a heap
        self._order = itertools.count()
        self._after_first_call = after_first_call

    @contextmanager
    def hold(self, priority: int = 0) -> Iterator[None]:
        with self._lock:
            if self._free and not self._waiting:
                self._free -= 1
                granted = None
            else:
                granted = threading.Event()
                heapq.heappush(self._waiting, (priority, next(self._order), granted))
        if granted is not None:
            granted.wait()  # the releasing thread has handed this caller its slot
        try:
            yield
        finally:
            with self._lock:
                if self._waiting:
                    heapq.heappop(self._waiting)[2].set()
                else:
                    self._free += 1
                first, self._after_first_call = self._after_first_call, None
            if first is not None:
                first()
