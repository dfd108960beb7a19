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


def _check_seed(seed: int) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def _tie_rng(seed: int, field: str, key: str) -> np.random.Generator:
    """One random stream per (seed, field, key): neither the order the keys come in nor another
    key's or field's votes moves a tie."""
    crc = [zlib.crc32(str(text).encode("utf-8")) for text in (field, key)]
    return np.random.default_rng([seed, *crc])


def majority_vote(votes: Mapping[str, Sequence[Hashable]], *, field: str, seed: int) -> Majority:
    """The most frequent value per key; a tie is broken uniformly at random among the tied values.

    Tied values are sorted before the draw (never list order decides), and each key's draw
    comes from ``numpy.random.default_rng([seed, crc32(field), crc32(key)])``, so the same seed
    and votes give the same majority whatever the order of ``votes`` (a shuffled annotation
    file). Keys without votes are left out.
    """
    seed = _check_seed(seed)
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
        chosen = candidates[int(_tie_rng(seed, field, key).integers(len(candidates)))]
        values[key] = chosen
        ties.append(Tie(key, field, candidates, chosen))
    return Majority(field, values, tuple(ties))
