"""Which score bucket ``synthetic_ordinal`` works on next, and at which temperature (pure logic).

The manager aims for an even spread over the scale: it always picks the bucket with the fewest
kept probes that is neither full (``per_bucket`` kept) nor exhausted, ties going to the lowest
score. A bucket is exhausted after ``max_consecutive_failures`` misses in a row (validator
disagreed, near-duplicate, or failed generation); a kept probe resets its run of misses, and so
its temperature, which ramps up by ``step`` per consecutive miss up to a cap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class TemperatureRamp:
    """``initial`` after a success, ``+ step`` per consecutive miss, never above ``cap``."""

    initial: float
    step: float
    cap: float

    def __post_init__(self) -> None:
        if self.initial < 0 or self.step < 0:
            raise ValueError("temperatures and the step must be non-negative")
        if self.cap < self.initial:
            raise ValueError("the temperature cap must be at least the initial temperature")

    def at(self, misses: int) -> float:
        """The temperature after ``misses`` consecutive misses (rounded to 6 decimals)."""
        return round(min(self.initial + misses * self.step, self.cap), 6)


@dataclass
class Bucket:
    """Progress on one score: kept probes, attempts made, the current run of misses."""

    score: int
    kept: int = 0
    attempts: int = 0
    misses: int = 0  # consecutive
    exhausted: bool = False


@dataclass
class BucketManager:
    """Even spread of kept probes over ``values`` (the scores to generate for)."""

    values: Sequence[int]
    per_bucket: int
    max_consecutive_failures: int
    ramp: TemperatureRamp
    buckets: dict[int, Bucket] = field(init=False)

    def __post_init__(self) -> None:
        if self.per_bucket < 1 or self.max_consecutive_failures < 1:
            raise ValueError("per_bucket and max_consecutive_failures must be at least 1")
        if len(set(self.values)) != len(self.values):
            raise ValueError("bucket scores must be distinct")
        self.buckets = {s: Bucket(s) for s in sorted(self.values)}

    def open(self, score: int) -> bool:
        b = self.buckets[score]
        return not b.exhausted and b.kept < self.per_bucket

    def next_bucket(self) -> int | None:
        """The open bucket with the fewest kept probes (ties: lowest score); None when done."""
        candidates = [b for b in self.buckets.values() if self.open(b.score)]
        if not candidates:
            return None
        return min(candidates, key=lambda b: (b.kept, b.score)).score

    def start_attempt(self, score: int) -> tuple[int, float]:
        """Count an attempt on ``score``: its number (from 1) and the temperature to use."""
        if not self.open(score):
            raise ValueError(f"bucket {score} is full or exhausted")
        b = self.buckets[score]
        b.attempts += 1
        return b.attempts, self.ramp.at(b.misses)

    def temperature(self, score: int) -> float:
        return self.ramp.at(self.buckets[score].misses)

    def record(self, score: int, kept: bool) -> None:
        """A success resets the bucket's run of misses; a miss extends it, and may exhaust it."""
        b = self.buckets[score]
        if kept:
            b.kept += 1
            b.misses = 0
            return
        b.misses += 1
        if b.misses >= self.max_consecutive_failures:
            b.exhausted = True

    @property
    def done(self) -> bool:
        return self.next_bucket() is None

    @property
    def exhausted(self) -> list[int]:
        """Scores given up on before reaching ``per_bucket``."""
        return [b.score for b in self.buckets.values() if b.exhausted]

    def kept(self) -> dict[int, int]:
        return {s: b.kept for s, b in self.buckets.items()}


def example_indices(target: int, seed_scores: Sequence[int], k: int) -> list[int]:
    """Indices of up to ``k`` seeds to show as few-shot examples for ``target``.

    Seeds of the bucket itself when it has any; otherwise the nearest neighbouring buckets
    (closest score first, the lower score first on a tie), in seed order within a score.
    """
    if k <= 0:
        return []
    own = [i for i, s in enumerate(seed_scores) if s == target]
    if own:
        return own[:k]
    order = sorted(
        range(len(seed_scores)), key=lambda i: (abs(seed_scores[i] - target), seed_scores[i], i)
    )
    return order[:k]
