"""Seeded, stratified sampling of items (stable: the same seed gives the same sample)."""

from __future__ import annotations

import random
from array import array
from collections.abc import Sequence
from typing import overload

from assay.errors import DataError
from assay.inputs._stored import StoredItems
from assay.types import Item


@overload
def stratified_sample(
    items: StoredItems, n: int, *, stratify: str | None = None, seed: int = 0
) -> StoredItems: ...


@overload
def stratified_sample(
    items: Sequence[Item], n: int, *, stratify: str | None = None, seed: int = 0
) -> list[Item]: ...


def stratified_sample(
    items: Sequence[Item], n: int, *, stratify: str | None = None, seed: int = 0
) -> list[Item] | StoredItems:
    """``n`` items, spread round-robin over the strata of meta column ``stratify`` (sorted by
    name), each stratum shuffled with ``seed``. Without ``stratify``, a seeded random sample.
    The items are picked by position, read once (for their strata) and not held: a
    :class:`StoredItems` gives the sample as one (the same file), any other sequence a list."""
    if n >= len(items):
        return _picked(items, range(len(items)))
    rng = random.Random(seed)
    if stratify is None:
        return _picked(items, rng.sample(range(len(items)), n))
    groups: dict[str, array] = {}
    for k, it in enumerate(items):
        if stratify not in it.meta:
            raise DataError(
                f"item '{it.id}' has no column '{stratify}' to stratify by", field=stratify
            )
        groups.setdefault(str(it.meta[stratify]), array("q")).append(k)
    for key in sorted(groups):
        rng.shuffle(groups[key])  # type: ignore[arg-type]  # an array is a mutable sequence
    out: list[int] = []
    while len(out) < n:
        for key in sorted(groups):
            if groups[key] and len(out) < n:
                out.append(groups[key].pop())
    return _picked(items, out)


def _picked(items: Sequence[Item], positions: Sequence[int]) -> list[Item] | StoredItems:
    if isinstance(items, StoredItems):
        return items.take(positions)
    return [items[k] for k in positions]
