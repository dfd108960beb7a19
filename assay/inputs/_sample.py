"""Seeded, stratified sampling of items (stable: the same seed gives the same sample)."""

from __future__ import annotations

import random
from collections import defaultdict

from assay.errors import DataError
from assay.types import Item


def stratified_sample(
    items: list[Item], n: int, *, stratify: str | None = None, seed: int = 0
) -> list[Item]:
    """``n`` items, spread round-robin over the strata of meta column ``stratify`` (sorted by
    name), each stratum shuffled with ``seed``. Without ``stratify``, a seeded random sample."""
    if n >= len(items):
        return list(items)
    rng = random.Random(seed)
    if stratify is None:
        return rng.sample(items, n)
    groups: dict[str, list[Item]] = defaultdict(list)
    for it in items:
        if stratify not in it.meta:
            raise DataError(
                f"item '{it.id}' has no column '{stratify}' to stratify by", field=stratify
            )
        groups[str(it.meta[stratify])].append(it)
    for key in sorted(groups):
        rng.shuffle(groups[key])
    out: list[Item] = []
    while len(out) < n:
        for key in sorted(groups):
            if groups[key] and len(out) < n:
                out.append(groups[key].pop())
    return out
