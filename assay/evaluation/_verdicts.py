"""The latest judgment of each of a run's items, kept as columns by item position while the
judgments stream past: what the metrics need of a judgment (its score, unscored reason,
latency, probabilities, usage), never the judgment itself."""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Iterator

from assay.inputs import ItemIndex
from assay.runs import Latest, LatestColumns, RunStore
from assay.types import Judgment, Usage


class Seen:
    """Which record of the run's judgments file is each item's latest judgment (a retried
    item's latest wins), and what :func:`~assay.runs.to_judge` reads of it; read from the file
    once, and told of each judgment appended after."""

    def __init__(self, index: ItemIndex, store: RunStore):
        n = len(index)
        self._index = index
        # a few bytes an item, as arrays (NumPy loads with the metrics, after the calls)
        self.last = array("q", [-1]) * n
        self._latest = LatestColumns(n)
        self.records = 0
        for j in store.iter_records("judgments.jsonl", Judgment):
            self.add(j)

    def add(self, j: Judgment) -> None:
        """The next record of the file is ``j``."""
        p = self._index.position.get(j.item_id)
        if p is not None:
            self.last[p] = self.records
            self._latest.put(p, j)
        self.records += 1

    def get(self, item_id: str) -> Latest | None:
        p = self._index.position.get(item_id)
        if p is None or self.last[p] < 0:
            return None
        return self._latest.latest(p)

    @property
    def any(self) -> bool:
        return any(k >= 0 for k in self.last)


class Verdicts:
    """Columns of a run's judgments in one order (the items' for a run; a caller's list for
    :meth:`of`), with each one's reference: the inputs of ``summarize_run``."""

    def __init__(self, n: int):
        import numpy as np

        self.ids: list[str] = [""] * n
        self.scores: list[int | None] = [None] * n
        self.references: list[int | None] = [None] * n
        self.reasons: list[str | None] = [None] * n
        self.judged = np.zeros(n, dtype=bool)
        self.cached = np.zeros(n, dtype=bool)
        self.latency = np.zeros(n, dtype=np.float64)
        self.expected_score = np.full(n, math.nan)
        self.calibrated = np.full(n, math.nan)
        self.usage = Usage()
        self.paired: tuple[list[int], list[int]] = ([], [])
        # the sample each pair repeats (an Inspect log's epochs), or None: independent pairs
        self.paired_samples: list[str] | None = None
        # the sample each judged item repeats, by position (an item of no sample its own)
        self.samples: list[str] | None = None

    def put(self, p: int, j: Judgment, reference: int | None) -> None:
        self.ids[p] = j.item_id
        self.scores[p], self.references[p], self.reasons[p] = j.score, reference, j.unscored
        self.judged[p], self.cached[p], self.latency[p] = True, j.cached, j.latency_s
        if j.expected_score is not None:
            self.expected_score[p] = j.expected_score
        if j.calibrated_probability is not None:
            self.calibrated[p] = j.calibrated_probability

    @classmethod
    def of(cls, judgments: list[Judgment], expected: dict[str, int | None]) -> Verdicts:
        """``judgments`` in their order; the pairs in ``expected``'s (the latest judgment of
        each id)."""
        v = cls(len(judgments))
        for p, j in enumerate(judgments):
            v.put(p, j, expected.get(j.item_id))
        v.usage = Usage.total(j.usage for j in judgments)
        by_id = {j.item_id: j.score for j in judgments}
        v.paired = _pairs((s, by_id[i]) for i, s in expected.items() if i in by_id)
        return v

    @classmethod
    def read(cls, index: ItemIndex, store: RunStore, seen: Seen) -> Verdicts:
        """The latest judgment of every item, in the items' order, from one reading of the
        run's judgments file."""
        import numpy as np

        v = cls(len(index))

        def latest() -> Iterator[Judgment]:
            for k, j in enumerate(store.iter_records("judgments.jsonl", Judgment)):
                p = index.position.get(j.item_id)
                if p is not None and seen.last[p] == k:
                    v.put(p, j, index.expected[p])
                    v.ids[p] = index.ids[p]  # the index's string, not a copy of each id
                    yield j

        v.usage = Usage.total(j.usage for j in latest())
        keep = np.flatnonzero(v.judged)
        v.ids = [v.ids[p] for p in keep]
        v.scores = [v.scores[p] for p in keep]
        v.references = [v.references[p] for p in keep]
        v.reasons = [v.reasons[p] for p in keep]
        for name in ("judged", "cached", "latency", "expected_score", "calibrated"):
            setattr(v, name, getattr(v, name)[keep])
        v.paired = _pairs(zip(v.references, v.scores, strict=True))
        if index.samples is not None:
            samples = [index.samples[p] for p in keep]
            v.samples = [s if s is not None else f"item {k}" for k, s in enumerate(samples)]
            both = zip(v.references, v.scores, samples, strict=True)
            # an item of no sample is one of its own: its position cannot be another's
            v.paired_samples = [
                s if s is not None else f"item {k}"
                for k, (r, c, s) in enumerate(both)
                if r is not None and c is not None
            ]
        return v

    def __len__(self) -> int:
        return len(self.scores)


def _pairs(pairs: Iterable[tuple[int | None, int | None]]) -> tuple[list[int], list[int]]:
    """The (reference, judge) pairs scored on both sides, as two lists."""
    ref: list[int] = []
    cand: list[int] = []
    for r, c in pairs:
        if r is not None and c is not None:
            ref.append(r)
            cand.append(c)
    return ref, cand
