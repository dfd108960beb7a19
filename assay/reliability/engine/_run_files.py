"""A harness run's probes and judgments read back from its files, a test at a time: what the
run keeps of them meanwhile is where each one's line starts (a byte offset), never the record.

The probes come from ``probes.jsonl`` (as made; :class:`RunProbes` applies the review
decisions as it reads them), each judge's latest judgment of an item from its
``judgments/<judge>-<hash>.jsonl`` (:class:`JudgmentFile`, indexed in one reading of the file).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from typing import Any

from assay.reliability._files import PROBES
from assay.reliability._probe import Probe, is_placebo
from assay.reliability.review import apply_reviews, review_counts
from assay.runs import RunStore
from assay.types import Judgment, Usage


class RunProbes:
    """The run's probes of each test (``at``: their lines' byte offsets in ``probes.jsonl``,
    by test), read back with the run's review decisions applied."""

    def __init__(
        self,
        store: RunStore,
        at: dict[str, array],
        reviews: list[dict[str, Any]],
        *,
        required: bool,
    ):
        self._store = store
        self._at = at
        self._reviews = reviews
        # judged: accepted or edited when review is required; else all but the rejected
        self._judged = ("accepted", "edited") if required else ("pending", "accepted", "edited")

    def of(self, test: str) -> list[Probe]:
        """The probes of ``test``, reviewed, in the order they were made."""
        made = self._store.records_at(PROBES, self._at.get(test, ()), Probe, signed=False)
        return apply_reviews(list(made), self._reviews)

    def judged(self, test: str) -> list[Probe]:
        """Those of ``test``'s probes the judges judge. A placebo is the source unchanged:
        there is nothing in it to review, and it is always judged."""
        return [p for p in self.of(test) if is_placebo(p) or p.review.status in self._judged]

    def counts(self, tests: Iterable[str]) -> dict[str, int]:
        """How many of the probes of ``tests`` are pending, accepted, edited and rejected."""
        return review_counts(p for t in tests for p in self.of(t) if not is_placebo(p))


class JudgmentFile:
    """Where each item's latest judgment is in one judge's judgments file (a retried item's
    latest wins), from one reading of it; the judgments are read again when asked for."""

    def __init__(self, store: RunStore, name: str):
        self._store = store
        self._name = name
        # by item id, in the order the items were first judged (the file's)
        self._latest: dict[str, int] = {}
        for offset, j in store.placed_records(name, Judgment):
            self._latest[j.item_id] = offset

    def __contains__(self, item_id: str) -> bool:
        return item_id in self._latest

    def of(self, ids: Iterable[str]) -> dict[str, Judgment]:
        """The latest judgment of each of ``ids`` that has one, by id (read in file order)."""
        wanted = sorted({(self._latest[i], i) for i in ids if i in self._latest})
        read = self._store.records_at(self._name, (at for at, _ in wanted), Judgment)
        return {i: j for (_, i), j in zip(wanted, read, strict=True)}

    def latest(self) -> Iterator[Judgment]:
        """Every item's latest judgment, one at a time (in file order)."""
        return self._store.records_at(self._name, sorted(self._latest.values()), Judgment)

    def usage(self) -> Usage:
        """The usage of every item's latest judgment, summed."""
        return Usage.total(j.usage for j in self.latest())
