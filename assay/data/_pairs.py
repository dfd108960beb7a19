"""Labelled pairs from any table with a score column: two responses to the same prompt with
different human scores make a pair, and the higher-scored one is preferred.

A pair item has response A in ``response``, response B in ``meta["response_b"]`` and the
reference preference in ``expected`` (0 = A, 1 = B: the pairwise scale's label positions).
Which response of a pair is A is a seeded coin, so the reference is A about half the time and a
judge that always picks one position cannot look accurate. Pairs with equal scores, identical
responses (after collapsing whitespace) or different requests are skipped and counted, as are
rows without a score and pairs left out by the cap.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from itertools import combinations
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

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
    ``data.pairs`` when no pair is left."""
    counts = {
        "candidates": 0,
        "skipped_missing_score": 0,
        "skipped_equal_scores": 0,
        "skipped_identical_responses": 0,
        "skipped_different_requests": 0,
        "left_out_by_cap": 0,
        "pairs": 0,
    }
    groups: dict[str, list[tuple[Item, float]]] = defaultdict(list)
    for it in items:
        score = _score(it, config.score, path)
        if score is None:
            counts["skipped_missing_score"] += 1
            continue
        if config.group_by is None:
            key = it.request
        elif config.group_by not in it.meta:
            raise DataError(
                f"no column '{config.group_by}' (data.pairs.group_by)",
                path=path,
                field="pairs.group_by",
            )
        else:
            key = str(it.meta[config.group_by])
        groups[key].append((it, score))

    by_group: dict[str, list[Item]] = {}
    for key in sorted(groups):
        members = sorted(groups[key], key=lambda m: m[0].id)
        kept: list[Item] = []
        for (a, sa), (b, sb) in combinations(members, 2):
            counts["candidates"] += 1
            if sa == sb:
                counts["skipped_equal_scores"] += 1
            elif " ".join(a.response.split()) == " ".join(b.response.split()):
                counts["skipped_identical_responses"] += 1
            elif a.request != b.request:
                counts["skipped_different_requests"] += 1
            else:
                kept.append(_pair(a, sa, b, sb, key, config.seed))
        if kept:
            by_group[key] = kept

    pairs = _cap(by_group, config.max_pairs, config.seed)
    counts["left_out_by_cap"] = sum(len(v) for v in by_group.values()) - len(pairs)
    counts["pairs"] = len(pairs)
    if not pairs:
        skipped = ", ".join(f"{k} {v}" for k, v in counts.items() if k.startswith("skipped") and v)
        raise DataError(
            f"no pair left to judge ({counts['candidates']} candidate pairs; {skipped or 'none'})",
            path=path,
            field="pairs",
        )
    return pairs, counts


def _pair(a: Item, sa: float, b: Item, sb: float, group: str, seed: int) -> Item:
    """One pair; a seeded coin decides which response is A."""
    if random.Random(stable_hash([seed, a.id, b.id])).random() < 0.5:
        (a, sa), (b, sb) = (b, sb), (a, sa)
    shared = {k: v for k, v in a.meta.items() if b.meta.get(k) == v}
    return Item(
        id=f"{a.id}~{b.id}",
        request=a.request,
        response=a.response,
        expected=PREFER_A if sa > sb else PREFER_B,
        meta={
            **shared,
            "response_b": b.response,
            "pair": {"a": a.id, "b": b.id, "score_a": sa, "score_b": sb, "group": group},
        },
    )


def _cap(by_group: dict[str, list[Item]], cap: int | None, seed: int) -> list[Item]:
    """At most ``cap`` pairs, drawn round-robin over the groups (each shuffled with ``seed``), so
    every prompt is represented; all pairs when there is no cap. Sorted by id."""
    if cap is None:
        return sorted((p for ps in by_group.values() for p in ps), key=lambda p: p.id)
    rng = random.Random(seed)
    queues: list[list[Any]] = []
    for key in sorted(by_group):
        q = list(by_group[key])
        rng.shuffle(q)
        queues.append(q)
    out: list[Item] = []
    while len(out) < cap and any(queues):
        for q in queues:
            if q and len(out) < cap:
                out.append(q.pop())
    return sorted(out, key=lambda p: p.id)
