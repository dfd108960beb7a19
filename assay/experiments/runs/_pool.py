"""The worker pool every runner uses: bounded concurrency, a progress bar, results persisted as
they finish, and an exit that never waits on a hung request."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
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
) -> list[R]:
    """``fn`` over ``work`` with up to ``concurrency`` in flight, results in ``work`` order.

    ``on_result`` sees each result as it finishes (so the caller persists it before the next).
    An exception — a bug, Ctrl-C, or the ``deadline`` (a ``time.monotonic()`` value) passing —
    stops the pool at once: pending work is cancelled, finished work is kept, and calls still
    in flight are abandoned rather than waited for (a hung server cannot hold the run).
    """
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
        clean = True
    finally:
        # on success every future is done; on failure do not wait for calls in flight
        pool.shutdown(wait=clean, cancel_futures=True)
        bar.close()
    return [r for r in out if r is not None]
