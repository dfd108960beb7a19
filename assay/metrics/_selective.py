"""Selective evaluation with a human-agreement guarantee, and cascades of judges (Jung, Brahman &
Choi, "Trust or Escalate", ICLR 2025; learn-then-test, Angelopoulos et al. 2021).

A judge keeps an item when its confidence is at least a threshold λ and abstains otherwise. On
labelled calibration items, :func:`selective_threshold` picks λ̂ by *fixed-sequence testing*:
the candidate thresholds are the calibration confidences, scanned from the most confident end
(starting where the kept set is large enough that its null could be rejected at all —
``(1 − α)^n ≤ δ``, e.g. 22 items at α = δ = 0.1: a smaller set fails even with no
disagreement, and would end the scan before it began); at each one the null hypothesis "the disagreement rate on items kept at λ is above α" is tested
with the exact binomial p-value ``P(Binomial(n_kept, α) ≤ disagreements)``, and the scan stops
at the first λ whose null is not rejected at level δ. λ̂ is the last rejected threshold. For
items exchangeable with the calibration items,

    P( disagreement rate on kept items ≤ α ) ≥ 1 − δ.

:func:`calibrate_cascade` calibrates judges J1..Jm in order: stage k on the calibration items
no earlier stage kept, at level δ/m (a union bound: every stage holds its α together with
probability ≥ 1 − δ, and then the kept items of the whole cascade — a mixture of the stages'
kept items — disagree at rate ≤ α). The authors' code calibrates every stage at δ; the union
bound is the conservative choice, and the tests check the cascade's guarantee by simulation.
Items no stage keeps abstain (they go to humans).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import binom


def risk_p_value(disagreements: int, n: int, alpha: float) -> float:
    """The exact binomial p-value of H0 "the disagreement rate is above ``alpha``" after
    ``disagreements`` among ``n`` kept items: ``P(Binomial(n, alpha) ≤ disagreements)`` (what
    ``scipy.stats.binomtest(disagreements, n, alpha, alternative="less")`` gives)."""
    if n <= 0:
        return 1.0
    return float(min(1.0, binom.cdf(disagreements, n, alpha)))


@dataclass(frozen=True)
class SelectiveThreshold:
    """A judge's calibrated threshold: keep an item when its confidence is ≥ ``threshold``.

    ``threshold`` is None when no threshold certifies ``alpha`` at ``delta`` (the judge keeps
    nothing). ``n`` counts the calibration items the stage saw, ``kept`` those at or above the
    threshold, ``risk`` their disagreement rate (None when none is kept) and ``p_value`` the
    binomial p-value at the threshold (at the first candidate tested when none certifies; None
    when too few items had a confidence to test any)."""

    threshold: float | None
    alpha: float
    delta: float
    n: int
    kept: int
    disagreements: int
    p_value: float | None

    @property
    def certified(self) -> bool:
        return self.threshold is not None

    @property
    def coverage(self) -> float | None:
        return self.kept / self.n if self.n else None

    @property
    def risk(self) -> float | None:
        return self.disagreements / self.kept if self.kept else None

    @property
    def note(self) -> str:
        if self.certified:
            return ""
        if self.n == 0:
            return "no calibration item reached this stage"
        if self.p_value is None:
            return (
                f"too few calibration items with a confidence ({self.n} reached this stage; "
                f"certifying α = {self.alpha:g} at δ = {self.delta:.3g} needs at least "
                f"{smallest_testable(self.alpha, self.delta)} kept)"
            )
        return (
            f"no threshold certifies agreement ≥ {1 - self.alpha:g} at δ = {self.delta:.3g} "
            f"(the first kept set tested has p-value {self.p_value:.3g})"
        )


def _validate(confidence: ArrayLike, agrees: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    conf = np.asarray(confidence, dtype=float).ravel()
    ok = np.asarray(agrees).ravel()
    if conf.shape != ok.shape:
        raise ValueError(
            f"confidence and agrees differ in length ({conf.size} vs {ok.size}): one pair per item"
        )
    if not np.isin(ok, (0, 1, True, False)).all():
        raise ValueError("agrees must be 0/1 (does the judge agree with the human label)")
    finite = conf[~np.isnan(conf)]
    if finite.size and (finite.min() < 0 or finite.max() > 1):
        raise ValueError("confidence must lie in [0, 1] (NaN: none — the item is never kept)")
    return conf, ok.astype(int)


def _check_levels(alpha: float, delta: float) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")


def selective_threshold(
    confidence: ArrayLike, agrees: ArrayLike, *, alpha: float, delta: float
) -> SelectiveThreshold:
    """λ̂ by fixed-sequence testing on calibration pairs ``(confidence, agrees)``: ``agrees``
    is 1 where the judge's verdict equals the human label. A NaN confidence (none could be
    read, or the judgment is unscored) is never kept, and counts in ``n``."""
    _check_levels(alpha, delta)
    conf, ok = _validate(confidence, agrees)
    n = int(conf.size)
    have = ~np.isnan(conf)
    c, wrong = conf[have], 1 - ok[have]
    if c.size == 0:
        return SelectiveThreshold(None, alpha, delta, n, 0, 0, None)
    order = np.argsort(-c, kind="stable")
    c, wrong = c[order], wrong[order]
    # the kept set at each distinct confidence: every item at or above it
    last = np.flatnonzero(np.append(c[1:] != c[:-1], True))  # the last index of each value
    last = last[last + 1 >= smallest_testable(alpha, delta)]
    if last.size == 0:  # too few items with a confidence for any threshold to certify
        return SelectiveThreshold(None, alpha, delta, n, 0, 0, None)
    kept = last + 1
    errors = np.cumsum(wrong)[last]
    p = np.minimum(1.0, binom.cdf(errors, kept, alpha))
    fails = np.flatnonzero(p > delta)
    stop = int(fails[0]) if fails.size else len(kept)  # the first null not rejected
    if stop == 0:
        return SelectiveThreshold(None, alpha, delta, n, 0, 0, float(p[0]))
    i = stop - 1
    return SelectiveThreshold(
        float(c[last[i]]), alpha, delta, n, int(kept[i]), int(errors[i]), float(p[i])
    )


def smallest_testable(alpha: float, delta: float) -> int:
    """The fewest kept items whose null "risk > α" can be rejected at level δ: with no
    disagreement at all the p-value is ``(1 − α)^n``, so ``n ≥ log δ / log(1 − α)``."""
    return max(1, math.ceil(math.log(delta) / math.log1p(-alpha) - 1e-12))


def keeps(confidence: ArrayLike, threshold: float | None) -> np.ndarray:
    """Which items a stage with ``threshold`` keeps: confidence ≥ threshold (NaN never; a
    stage without a threshold keeps nothing)."""
    conf = np.asarray(confidence, dtype=float)
    if threshold is None:
        return np.zeros(conf.shape, dtype=bool)
    with np.errstate(invalid="ignore"):
        return np.nan_to_num(conf, nan=-math.inf) >= threshold


def calibrate_cascade(
    confidences: Sequence[ArrayLike],
    agrees: Sequence[ArrayLike],
    *,
    alpha: float,
    delta: float,
) -> list[SelectiveThreshold]:
    """Thresholds for judges J1..Jm in order of cost, on the same ``n`` calibration items:
    ``confidences[k][i]`` / ``agrees[k][i]`` are stage k's on item i (NaN / anything for items
    an earlier stage keeps — stage k never sees them). Stage k is calibrated on the items no
    earlier stage kept, at level ``delta / m`` (the union bound of the module docstring)."""
    _check_levels(alpha, delta)
    if len(confidences) != len(agrees) or not confidences:
        raise ValueError("one confidence array and one agrees array per stage, at least one")
    m = len(confidences)
    reached: np.ndarray | None = None
    out: list[SelectiveThreshold] = []
    for conf_k, ok_k in zip(confidences, agrees, strict=True):
        conf = np.asarray(conf_k, dtype=float)
        ok = np.asarray(ok_k)
        if reached is None:
            reached = np.ones(conf.shape, dtype=bool)
        if conf.shape != reached.shape or ok.shape != reached.shape:
            raise ValueError("every stage's arrays must cover the same calibration items")
        stage = selective_threshold(conf[reached], ok[reached], alpha=alpha, delta=delta / m)
        out.append(stage)
        reached = reached & ~keeps(conf, stage.threshold)
    return out


def cascade_assignment(
    confidences: Sequence[ArrayLike], thresholds: Sequence[float | None]
) -> np.ndarray:
    """The stage (0-based) that keeps each item — the first whose confidence reaches its
    threshold — or -1 where none does (the item abstains)."""
    stage: np.ndarray | None = None
    for k, (conf, lam) in enumerate(zip(confidences, thresholds, strict=True)):
        kept = keeps(conf, lam)
        if stage is None:
            stage = np.full(kept.shape, -1)
        stage[(stage < 0) & kept] = k
    if stage is None:
        raise ValueError("no stage given")
    return stage
