"""The worker pool every runner uses: bounded concurrency, a progress bar, results persisted as
they finish (one fsync per batch), work that depends on a result started as soon as it is in,
and an exit that never waits on a hung request."""

from __future__ import annotations

import contextvars
import heapq
import itertools
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sized
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
    work: Iterable[W],
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
    total: int | None = None,
    keep: bool = True,
) -> list[R]:
    """``fn`` over ``work`` with up to ``concurrency`` in flight, results in ``work`` order.

    ``work`` is read as the pool goes: at most ``concurrency`` more than are in flight are
    taken from it and submitted ahead (:func:`window`), so an iterator of a million tasks
    holds a few dozen at a time; ``total`` sizes the progress bar when ``work`` has no length.
    ``keep=False`` keeps no result (an empty list is returned): ``on_result`` has seen each.

    ``on_result`` sees each result as it finishes, in this thread; the records it appends
    (:func:`~assay.runs.append_lines`) are committed together for every batch of
    results that finished meanwhile — one fsync per batch, before the next result is looked at.
    ``follow_up`` may then return more work that depends on a result, run in the same pool
    ahead of the rest of ``work`` (its results after those of ``work``).
    An exception — a bug, Ctrl-C, or the ``deadline`` (a ``time.monotonic()`` value) passing —
    stops the pool at once: pending work is cancelled, finished work is kept, and calls still
    in flight are abandoned rather than waited for (a hung server cannot hold the run).
    """
    if total is None and isinstance(work, Sized):
        total = len(work)
    source = iter(work)
    firsts: list[R | None] = []  # results of ``work``, by position
    mores: list[R | None] = []  # results of follow-up work, by position
    submitted: dict[tuple[bool, int], W] = {}  # (follow-up?, position) of what has not finished
    extra: deque[W] = deque()  # follow-up work, submitted before more of ``work``
    ahead = window(concurrency)
    done = 0
    bar = tqdm(total=total, desc=desc, unit=unit, disable=not progress, dynamic_ncols=True)
    pool = ThreadPoolExecutor(max_workers=max(1, concurrency))
    finished: queue.SimpleQueue[tuple[tuple[bool, int], Future[R]]] = queue.SimpleQueue()
    clean = False

    def submit() -> None:
        """Work up to the window: follow-ups first, then the next of ``work``."""
        while len(submitted) < ahead:
            if extra:
                w, results = extra.popleft(), mores
            else:
                w = next(source, _END)
                if w is _END:
                    return
                results = firsts
            key = (results is mores, len(results))
            results.append(None)
            submitted[key] = w
            # in a copy of this thread's context: the call ledger knows the run a call is for
            # (a call after that run closed is refused, not made unrecorded); a completion
            # queue: O(1) per result (waiting on a set of futures is O(pending))
            future = pool.submit(contextvars.copy_context().run, fn, w)
            future.add_done_callback(lambda f, key=key: finished.put((key, f)))

    try:
        submit()
        while submitted:
            batch = [_next(finished, deadline, total, done, unit)]
            while True:  # everything else that has finished meanwhile joins the batch
                try:
                    batch.append(finished.get_nowait())
                except queue.Empty:
                    break
            with group_commit():
                for key, fut in batch:
                    r = fut.result()
                    w = submitted.pop(key)
                    if on_result is not None:
                        on_result(w, r)
                    if keep:
                        (mores if key[0] else firsts)[key[1]] = r
                    done += 1
                    if postfix is not None:
                        bar.set_postfix(**postfix(r), refresh=False)
                    for more in follow_up(w, r) if follow_up is not None else ():
                        extra.append(more)
                        if bar.total is not None:
                            bar.total += 1
            bar.update(len(batch))
            submit()
        clean = True
    finally:
        # on success every future is done; on failure do not wait for calls in flight
        pool.shutdown(wait=clean, cancel_futures=True)
        bar.close()
    return [r for r in firsts + mores if r is not None] if keep else []


_END: Any = object()


def window(concurrency: int) -> int:
    """How many tasks the pool has submitted and not seen finish, at most: ``concurrency`` in
    flight and as many queued behind them, so a worker that finishes finds its next task
    waiting while the rest of the work is still unread."""
    return 2 * max(1, concurrency)


def _next(
    finished: queue.SimpleQueue, deadline: float | None, total: int | None, done: int, unit: str
):
    """The next finished ``(key, future)``, waking every tick for Ctrl-C; RunError once the
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
                unfinished = f"{total - done} of {total}" if total is not None else "some"
                raise RunError(
                    f"deadline reached with {unfinished} {unit}s unfinished; everything "
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
