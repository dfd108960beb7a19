"""The majority vote of several annotators, with ties broken at random from a recorded seed
(never by list order)."""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Tie:
    """A majority vote with several most frequent values, broken at random (seeded)."""

    trajectory: str
    field: str
    candidates: tuple[Any, ...]
    chosen: Any


@dataclass(frozen=True)
class Majority:
    """The majority value of one field per trajectory, and the ties that had to be broken."""

    field: str
    values: dict[str, Any]
    ties: tuple[Tie, ...]


def _tie_rng(seed: int, field: str) -> np.random.Generator:
    """One random stream per (seed, field): changing one field's votes never moves another's ties."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.default_rng([int(seed), zlib.crc32(field.encode("utf-8"))])


def majority_vote(votes: Mapping[str, Sequence[Hashable]], *, field: str, seed: int) -> Majority:
    """The most frequent value per key; a tie is broken uniformly at random among the tied values.

    Tied values are sorted before the draw (never list order decides), and the draws come from
    ``numpy.random.default_rng([seed, crc32(field)])`` in the order of ``votes``, so the same seed
    and votes give the same majority. Keys without votes are left out.
    """
    rng = _tie_rng(seed, field)
    values: dict[str, Any] = {}
    ties: list[Tie] = []
    for key, vs in votes.items():
        if not vs:
            continue
        counts = Counter(vs)
        top = max(counts.values())
        candidates = tuple(sorted(v for v, c in counts.items() if c == top))
        if len(candidates) == 1:
            values[key] = candidates[0]
            continue
        chosen = candidates[int(rng.integers(len(candidates)))]
        values[key] = chosen
        ties.append(Tie(key, field, candidates, chosen))
    return Majority(field, values, tuple(ties))
