"""Labelled pairs from any table with a score column: two responses to the same prompt with
different human scores make a pair, and the higher-scored one is preferred.

A pair item has response A in ``response``, response B in ``meta["response_b"]`` and the
reference preference in ``expected`` (0 = A, 1 = B: the pairwise scale's label positions).
Which response of a pair is A is a seeded coin, so the reference is A about half the time and a
judge that always picks one position cannot look accurate. Pairs with equal scores, identical
responses (after collapsing whitespace) or different requests are skipped and counted, as are
rows without a score and pairs left out by the cap.

The pairs are made a group at a time from the rows sorted by group on disk, and sorted by id on
disk in turn (:func:`iter_pairs`): a table of any size is paired holding its largest group.
"""

from __future__ import annotations

import itertools
import math
import operator
import random
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from assay._scratch import scratch_folder
from assay._sorted_runs import RUN_BYTES, RUN_ROWS, SortedRuns
from assay.data._common import is_missing
from assay.errors import DataError
from assay.types import Item, stable_hash

PREFER_A, PREFER_B = 0, 1


class PairsConfig(BaseModel):
    """``data.pairs``: build pairs from a table's score column (``columns.expected`` is not used:
    the preference comes from ``score``)."""

    model_config = ConfigDict(extra="forbid")

    score: str = Field(description="the column of human scores (higher = better)")
    group_by: str | None = Field(
        default=None, description="a column naming the prompt; default: the request text"
    )
    max_pairs: int | None = Field(default=None, ge=1, description="keep at most this many pairs")
    seed: int = Field(
        default=0, description="the seed of the coin that makes a response A or B, and of the cap"
    )


def _score(item: Item, column: str, path: str | Path) -> float | None:
    if column not in item.meta:
        raise DataError(
            f"no column '{column}' (data.pairs.score); columns: {', '.join(item.meta)}",
            path=path,
            field="pairs.score",
        )
    value = item.meta[column]
    if is_missing(value):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise DataError(
            f"item {item.id}: score {value!r} is not a number", path=path, field="pairs.score"
        ) from None
    return None if math.isnan(number) else number


def build_pairs(
    items: list[Item], config: PairsConfig, *, path: str | Path = "data"
) -> tuple[list[Item], dict[str, int]]:
    """Pairs of ``items`` (see the module docstring) and what was counted on the way: ``pairs``,
    ``candidates`` and ``skipped_*`` / ``left_out_by_cap``. A :class:`DataError` naming
    ``data.pairs`` when no pair is left. :func:`iter_pairs`, as a list."""
    counts: dict[str, int] = {}
    pairs = list(iter_pairs(items, config, path=path, counts=counts))
    return pairs, counts


def iter_pairs(
    items: Iterable[Item],
    config: PairsConfig,
    *,
    path: str | Path = "data",
    counts: dict[str, int] | None = None,
) -> Iterator[Item]:
    """:func:`build_pairs`' pairs in id order, built without holding the items or the pairs.

    The items are read once, as they come, into rows sorted by group and id on disk (a
    temporary folder, removed when the pairs have been read or the reading stops); the groups
    are then read one at a time, twice: first to count each group's candidates and pairs — what
    the cap's round-robin gives each group follows from those counts alone —, then to make the
    pairs the cap keeps, which are sorted by id on disk in turn. Memory is the largest group's
    rows and pairs, and a run of the sort. ``counts`` (when a dict is passed) gets what was
    counted before the first pair comes; the errors come before it too."""
    tally = dict.fromkeys(_COUNTS, 0)
    with scratch_folder("assay-pairs") as folder:
        rows = SortedRuns(
            _scored(items, config, path, tally),
            key=_ROW_ORDER,
            folder=folder,
            run_rows=_RUN_ROWS,
            run_bytes=_RUN_BYTES,
        )
        sizes = _sizes(_groups(rows), tally)
        rounds = _Rounds.of(sizes, config.max_pairs)
        tally["left_out_by_cap"] = sum(n * groups for n, groups in sizes.items()) - rounds.taken
        tally["pairs"] = rounds.taken
        if not rounds.taken:
            raise _nothing_left(tally, path)
        if counts is not None:
            counts.update(tally)
        pairs = SortedRuns(
            _capped(_groups(rows), config, rounds),
            key=_PAIR_ORDER,
            folder=folder,
            run_rows=_RUN_ROWS,
            run_bytes=_RUN_BYTES,
        )
        for pair_id, request, response, expected, meta in pairs:
            yield Item(id=pair_id, request=request, response=response, expected=expected, meta=meta)


_COUNTS = (
    "candidates",
    "skipped_missing_score",
    "skipped_equal_scores",
    "skipped_identical_responses",
    "skipped_different_requests",
    "left_out_by_cap",
    "pairs",
)
_RUN_ROWS, _RUN_BYTES = RUN_ROWS, RUN_BYTES  # of each sorted run on disk (rows, then pairs)


class _Member(NamedTuple):
    """What a pair takes of an item with a score."""

    id: str
    request: str
    response: str
    meta: dict[str, Any]
    score: float


# On disk as plain tuples (pickled many times faster than models): a row is its group, id,
# position read and member's fields; a pair is its Item's id, request, response, expected, meta.
_Row = tuple[str, str, int, tuple]
_Pair = tuple[str, str, str, int, dict[str, Any]]
_Group = tuple[str, list[_Member]]  # key, members by id
_ROW_ORDER = operator.itemgetter(0, 1, 2)  # by group, then id (as read where ids repeat)
_PAIR_ORDER = operator.itemgetter(0)


def _scored(
    items: Iterable[Item], config: PairsConfig, path: str | Path, counts: dict[str, int]
) -> Iterator[_Row]:
    """The items with a score, as rows keyed by their group; those without are counted."""
    for position, it in enumerate(items):
        score = _score(it, config.score, path)
        if score is None:
            counts["skipped_missing_score"] += 1
            continue
        key = _group_of(it, config, path)
        yield key, it.id, position, (it.id, it.request, it.response, it.meta, score)


def _group_of(item: Item, config: PairsConfig, path: str | Path) -> str:
    """The group an item is paired within: its ``group_by`` column, or else its request."""
    if config.group_by is None:
        return item.request
    if config.group_by not in item.meta:
        raise DataError(
            f"no column '{config.group_by}' (data.pairs.group_by)",
            path=path,
            field="pairs.group_by",
        )
    return str(item.meta[config.group_by])


def _groups(rows: Iterable[_Row]) -> Iterator[_Group]:
    """Each group's key and its members by id, from rows sorted by group."""
    for key, run in itertools.groupby(rows, key=operator.itemgetter(0)):
        yield key, [_Member._make(fields) for _, _, _, fields in run]


def _sizes(groups: Iterator[_Group], counts: dict[str, int]) -> Counter[int]:
    """How many groups have each number of pairs (groups without one left out); the candidates
    and those skipped are counted."""
    sizes: Counter[int] = Counter()
    for group in groups:
        n = sum(1 for _ in _kept(group, counts))
        if n:
            sizes[n] += 1
    return sizes


def _kept(group: _Group, counts: dict[str, int]) -> Iterator[tuple[_Member, _Member]]:
    """The group's pairs of members that make a pair, in the order of their combinations; the
    candidates and those skipped are counted."""
    for a, b in itertools.combinations(group[1], 2):
        counts["candidates"] += 1
        if a.score == b.score:
            counts["skipped_equal_scores"] += 1
        elif " ".join(a.response.split()) == " ".join(b.response.split()):
            counts["skipped_identical_responses"] += 1
        elif a.request != b.request:
            counts["skipped_different_requests"] += 1
        else:
            yield a, b


def _pair(a: _Member, b: _Member, group: str, seed: int) -> _Pair:
    """One pair's fields; a seeded coin decides which response is A."""
    if random.Random(stable_hash([seed, a.id, b.id])).random() < 0.5:
        a, b = b, a
    shared = {k: v for k, v in a.meta.items() if b.meta.get(k) == v}
    meta = {
        **shared,
        "response_b": b.response,
        "pair": {"a": a.id, "b": b.id, "score_a": a.score, "score_b": b.score, "group": group},
    }
    return (
        f"{a.id}~{b.id}",
        a.request,
        a.response,
        PREFER_A if a.score > b.score else PREFER_B,
        meta,
    )


def _nothing_left(counts: dict[str, int], path: str | Path) -> DataError:
    skipped = ", ".join(f"{k} {v}" for k, v in counts.items() if k.startswith("skipped") and v)
    return DataError(
        f"no pair left to judge ({counts['candidates']} candidate pairs; {skipped or 'none'})",
        path=path,
        field="pairs",
    )


@dataclass(frozen=True)
class _Rounds:
    """The cap's round-robin over the groups in key order, one pair from each group that has one
    left per round, told by the groups' numbers of pairs alone: ``full`` rounds give every group
    up to that many, and the first ``extra`` groups with more pairs get one more in the last,
    partial round. No cap: every pair (``full`` is the largest group's)."""

    full: int
    extra: int
    taken: int

    @classmethod
    def of(cls, sizes: Counter[int], cap: int | None) -> _Rounds:
        def given(rounds: int) -> int:
            return sum(groups * min(n, rounds) for n, groups in sizes.items())

        low, high = 0, max(sizes, default=0)
        while low < high:  # the most full rounds within the cap
            mid = (low + high + 1) // 2
            low, high = (mid, high) if cap is None or given(mid) <= cap else (low, mid - 1)
        full = low
        if cap is None:
            return cls(full, 0, given(full))
        past = sum(groups for n, groups in sizes.items() if n > full)  # groups with more pairs
        extra = min(cap - given(full), past)
        return cls(full, extra, given(full) + extra)


def _capped(groups: Iterator[_Group], config: PairsConfig, rounds: _Rounds) -> Iterator[_Pair]:
    """The pairs the cap keeps (every pair without one), a group at a time in key order. Each
    group's pairs are shuffled with one generator seeded with ``seed``, in key order, and the
    round-robin takes from the end of the shuffled list; shuffling the pairs' positions instead
    of the pairs draws the same numbers (a shuffle's draws depend on the length alone), so the
    positions kept are those of the pairs."""
    rng = random.Random(config.seed)
    extra = rounds.extra
    for group in groups:
        kept = list(_kept(group, dict.fromkeys(_COUNTS, 0)))
        if not kept:
            continue
        chosen: Iterable[int] = range(len(kept))
        if config.max_pairs is not None:
            order = list(range(len(kept)))
            rng.shuffle(order)
            take = min(len(kept), rounds.full)
            if len(kept) > rounds.full and extra:
                take, extra = take + 1, extra - 1
            chosen = sorted(order[len(order) - take :])
        for k in chosen:
            yield _pair(*kept[k], group[0], config.seed)
