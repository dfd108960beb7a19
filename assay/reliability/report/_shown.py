"""Which probes report.html lists: each test's first share of :data:`PROBE_ROWS`, in the order
the harness wrote them. A page of every probe grew with the seeds (13 MB at 300 HarmBench seeds,
and the memory of building it with it); every probe stays in ``probes.jsonl`` and in
``assay review``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

PROBE_ROWS = 1000  # as many rows as an evaluate report lists

T = TypeVar("T")


def rows_per_test(tests: int) -> int:
    """How many of each test's probes the page lists when the run has ``tests`` tests."""
    return max(1, PROBE_ROWS // max(1, tests))


def keeper(test_of: Callable[[T], str], tests: int) -> Callable[[T], bool]:
    """Asked of each probe (or view of one) in order: does the page list it — is it among its
    test's first :func:`rows_per_test`?"""
    share = rows_per_test(tests)
    seen: dict[str, int] = {}

    def keep(x: T) -> bool:
        t = test_of(x)
        n = seen.get(t, 0)
        if n >= share:
            return False
        seen[t] = n + 1
        return True

    return keep


def shown(things: Iterable[T], test_of: Callable[[T], str], tests: int) -> list[T]:
    """``things`` (probes, or views of them) the page lists, in their order."""
    keep = keeper(test_of, tests)
    return [x for x in things if keep(x)]
