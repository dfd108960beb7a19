"""The worker pool every runner uses: bounded concurrency, a progress bar, results persisted as
they finish, and an exit that never waits on a hung request."""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Any, TypeVar

from tqdm import tqdm

from assay.errors import RunError

W = TypeVar("W")
R = TypeVar("R")


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

    ``on_result`` sees each result as it finishes (so the caller persists it before the next);
    ``follow_up`` may then return more work that depends on it, run in the same pool (and
    appended to the results).
    An exception — a bug, Ctrl-C, or the ``deadline`` (a ``time.monotonic()`` value) passing —
    stops the pool at once: pending work is cancelled, finished work is kept, and calls still
    in flight are abandoned rather than waited for (a hung server cannot hold the run).
    """
    work = list(work)
    out: list[R | None] = [None] * len(work)
    bar = tqdm(total=len(work), desc=desc, unit=unit, disable=not progress, dynamic_ncols=True)
    pool = ThreadPoolExecutor(max_workers=max(1, concurrency))
    clean = False
    try:
        futures: dict[Future[R], int] = {pool.submit(fn, w): i for i, w in enumerate(work)}
        pending = set(futures)
        while pending:
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            done, pending = wait(pending, timeout=timeout, return_when=FIRST_COMPLETED)
            if not done:
                finished = sum(r is not None for r in out)
                raise RunError(
                    f"deadline reached with {len(work) - finished} of {len(work)} {unit}s "
                    "unfinished; everything finished is saved: re-run to resume"
                )
            for fut in done:
                i = futures[fut]
                r = fut.result()
                if on_result is not None:
                    on_result(work[i], r)
                out[i] = r
                if postfix is not None:
                    bar.set_postfix(**postfix(r), refresh=False)
                bar.update(1)
                for more in follow_up(work[i], r) if follow_up is not None else ():
                    work.append(more)
                    out.append(None)
                    bar.total += 1
                    fut_more = pool.submit(fn, more)
                    futures[fut_more] = len(work) - 1
                    pending.add(fut_more)
        clean = True
    finally:
        # on success every future is done; on failure do not wait for calls in flight
        pool.shutdown(wait=clean, cancel_futures=True)
        bar.close()
    return [r for r in out if r is not None]


class CallSlots:
    """At most ``n`` LM calls in flight across the threads of a run. A freed slot goes straight
    to the waiting caller of the highest priority (the lowest number; first come, first served
    within a priority) — so calls on a dependency chain (generation) go before leaves (judging),
    and a release wakes one thread, not all of them."""

    def __init__(self, n: int):
        self._lock = threading.Lock()
        self._free = max(1, n)
        self._waiting: list[tuple[int, int, threading.Event]] = []  # a heap
        self._order = itertools.count()

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
