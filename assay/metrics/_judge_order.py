"""Several judges' verdicts — an items × judges table of class codes — arranged in an order the
verdicts decide: the judges' columns, and the classes where their order means nothing.

A bootstrap resamples the items in :func:`canonical_order`, the rows sorted by their codes,
the first judge's first: with the judges' columns in the order they were given (their names'
order), or the classes coded in the order a scale lists them, permuting the judges, renaming
them or listing the classes in another order sorted the rows otherwise, the same seed drew
other items, and every interval and p-value moved (Dawid–Skene's ends by up to 0.07 and its
p-values by 0.14, on 60 to 150 items; the mean inter-annotator κ's ends by 0.0025). Sums over
the judges or the classes, taken in another order, moved the values in their last digit.

Computed on :func:`arranged_judges`' table, the figures are the same, to the last digit, in
whatever order the judges and classes come: the judges are ordered by a key of their verdicts
that neither their names nor the other judges' order decide, the classes likewise; judges (or
classes) whose keys tie are tried in every order that tells them apart, and the arrangement
whose rows, sorted, come first is kept (:func:`first_sorted`, as the two raters of an agreement
report are: :func:`~assay.metrics._report._arranged`). Where several sort to the same rows —
the table is its own image with some judges (and classes) exchanged —, each is returned: a
figure of one judge is then as much the figure computed for the other, and the caller gives
each judge what they give it together (:class:`~assay.metrics._dawid_skene._GivenBack`)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from itertools import combinations, groupby, product

import numpy as np
from numpy.typing import ArrayLike, NDArray

from assay.metrics._intervals import canonical_order
from assay.metrics._report import first_sorted

MAX_ARRANGEMENTS = 120
"""Most arrangements tried. Beyond it (judges or classes whose keys tie in more ways than
this), the order they were given in decides between those that tie; their keys — the rows
each judge's verdict is in, the counts of each class — rarely tie on real verdicts."""


@dataclass(frozen=True)
class JudgeArrangement:
    """``codes`` — the table's rows in their given order, −1 where a judge gave no verdict —
    with judge ``judges[c]`` of the given table in column ``c`` and its class ``l`` coded
    ``classes[l]``."""

    judges: NDArray[np.intp]
    classes: NDArray[np.intp]
    codes: NDArray[np.int64]

    def columns(self) -> NDArray[np.intp]:
        """Each given judge's column in ``codes``."""
        out = np.empty_like(self.judges)
        out[self.judges] = np.arange(self.judges.size)
        return out

    def given(self, values: NDArray, axes: str) -> NDArray:
        """``values`` computed on ``codes`` given back to the judges and classes as given: an
        axis ``j`` of ``axes`` is one per judge, ``p`` per pair of judges, ``c`` per class,
        ``.`` left as it is."""
        index = {"j": self.columns(), "p": self.pairs(), "c": self.classes}
        for axis, kind in enumerate(axes):
            if kind != ".":
                values = np.take(values, index[kind], axis=axis)
        return values

    def pairs(self) -> NDArray[np.intp]:
        """Each pair of given judges (``combinations`` of their indices) as its place among
        the pairs of ``codes``' columns (``combinations`` of the columns)."""
        n = self.judges.size
        place = {pair: p for p, pair in enumerate(combinations(range(n), 2))}
        column = self.columns()
        return np.array(
            [place[tuple(sorted((column[a], column[b])))] for a, b in combinations(range(n), 2)],
            dtype=np.intp,
        )


def arranged_judges(
    codes: NDArray[np.int64],
    *,
    k: int | None = None,
    clusters: ArrayLike | None = None,
) -> list[JudgeArrangement]:
    """``codes`` (items × judges, −1: no verdict) arranged in an order of the judges — and,
    given ``k``, of the classes ``0..k-1``, whose order then means nothing — that the verdicts
    decide: permuting the judges' columns, or the classes' codes, gives the same arranged
    table, computed on first. ``clusters`` (one id per item): items resampled together, whose
    clusters then decide between arrangements whose rows are the same.

    Then any other arrangement whose rows, sorted, are the same: a permutation of the judges
    (and classes) that maps the table onto itself — B's verdicts A's in a mirror, say: on as
    many items A says x and B y as A says y and B x. The arranged table is the same data with
    A and B exchanged, so a figure of A's is as much the figure computed in B's column as in
    its own; each arrangement gives a judge's figures back from another column."""
    candidates = []
    for classes in _class_orders(codes, k):
        recoded = np.where(codes >= 0, classes[np.maximum(codes, 0)], -1)
        for judges in _judge_orders(recoded):
            candidates.append(JudgeArrangement(judges, classes, recoded[:, judges]))
            if len(candidates) > MAX_ARRANGEMENTS:
                return candidates[:1]
    kept, _, _, ties = first_sorted([(tuple(c.codes.T), None) for c in candidates], clusters)
    return [candidates[kept], *(candidates[t] for t in ties)]


def _class_orders(codes: NDArray[np.int64], k: int | None) -> list[NDArray[np.intp]]:
    """The codes to try for the classes (each class's code): as given without ``k``, else the
    classes ordered by how often they were given, then by how often each judge gave them
    (the counts sorted), in every order that tells those that tie apart; the classes nobody
    gave are alike."""
    if k is None:
        top = int(codes.max()) + 1 if codes.size else 0
        return [np.arange(max(top, 1), dtype=np.intp)]
    given = codes[:, :, None] == np.arange(k)  # (items, judges, classes)
    per_judge = given.sum(axis=0)  # (judges, classes)
    keys = [(int(per_judge[:, c].sum()), tuple(sorted(per_judge[:, c].tolist()))) for c in range(k)]
    alike = [c if keys[c][0] else -1 for c in range(k)]
    return [_ranks(order) for order in _orders(keys, alike)]


def _judge_orders(codes: NDArray[np.int64]) -> list[NDArray[np.intp]]:
    """The orders of the judges' columns to try: by :func:`_judge_key`, in every order that
    tells the judges whose keys tie apart (judges of the same verdicts on every item are
    alike: exchanging them changes no row)."""
    keys = [_judge_key(codes, j) for j in range(codes.shape[1])]
    seen: dict[bytes, int] = {}
    alike = [seen.setdefault(codes[:, j].tobytes(), j) for j in range(codes.shape[1])]
    return [np.asarray(order, dtype=np.intp) for order in _orders(keys, alike)]


def _judge_key(codes: NDArray[np.int64], judge: int) -> tuple[int, ...]:
    """What ``judge``'s verdicts are among the others', in no order of the items or the other
    judges: each item's row as its verdict followed by the others' verdicts sorted, the rows
    sorted."""
    others = np.sort(np.delete(codes, judge, axis=1), axis=1)
    rows = np.column_stack([codes[:, judge], others])
    return tuple(rows[canonical_order(rows)].ravel().tolist())


def _orders(keys: Sequence[tuple], alike: Sequence[Hashable]) -> list[list[int]]:
    """The orders of ``keys``' indices sorted by them, those whose keys tie in every order
    that tells them apart — indices ``alike`` in the same way keep their given order — or, if
    that is more than :data:`MAX_ARRANGEMENTS`, in their given order alone."""
    ranked = sorted(range(len(keys)), key=keys.__getitem__)
    groups = [list(g) for _, g in groupby(ranked, key=keys.__getitem__)]
    if math.prod(_distinct_orders(g, alike) for g in groups) > MAX_ARRANGEMENTS:
        return [ranked]
    choices = [_every_order(g, alike) for g in groups]
    return [[i for part in combo for i in part] for combo in product(*choices)]


def _distinct_orders(group: list[int], alike: Sequence[Hashable]) -> int:
    """How many orders of ``group`` tell its members apart (a multinomial coefficient)."""
    sizes = [len(list(g)) for _, g in groupby(sorted(alike[i] for i in group))]
    return math.factorial(len(group)) // math.prod(math.factorial(s) for s in sizes)


def _every_order(group: list[int], alike: Sequence[Hashable]) -> list[tuple[int, ...]]:
    """Every order of ``group`` that tells its members apart, members alike in their given
    order among themselves."""
    out = []
    for kinds in _multiset_orders([alike[i] for i in group]):
        members = {kind: [i for i in group if alike[i] == kind] for kind in set(kinds)}
        out.append(tuple(members[kind].pop(0) for kind in kinds))
    return out


def _multiset_orders(kinds: list) -> Iterator[tuple]:
    """Every distinct order of the multiset ``kinds``, in lexicographic order."""
    if not kinds:
        yield ()
        return
    for first in sorted(set(kinds)):
        rest = list(kinds)
        rest.remove(first)
        for tail in _multiset_orders(rest):
            yield (first, *tail)


def _ranks(order: list[int]) -> NDArray[np.intp]:
    """Each index's place in ``order``."""
    ranks = np.empty(len(order), dtype=np.intp)
    ranks[order] = np.arange(len(order))
    return ranks
