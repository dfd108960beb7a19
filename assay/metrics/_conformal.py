"""Split conformal prediction sets for a judge's verdicts (Vovk, Gammerman & Shafer 2005; the
split form of Lei et al. 2018, JASA; notation of Angelopoulos & Bates, "A Gentle Introduction to
Conformal Prediction", 2021).

Each item has the judge's probability of every verdict on the scale (a row of ``probs``, the
scale's values in order). A *nonconformity score* s(x, y) says how unusual label y is for item x
under the judge's probabilities; on ``n`` labelled calibration items the quantile q̂ is the
k-th smallest true-label score, k = ⌈(n+1)(1−α)⌉; the set of a new item is every label with
s ≤ q̂. For a new item exchangeable with the calibration items, P(its true label ∈ set) ≥ 1 − α
(and ≤ 1 − α + 1/(n+1) when scores do not tie) — whatever the judge's probabilities are worth;
a poor judge gets large sets, not wrong coverage. When k > n (too few items for this α) q̂ is
infinite and every set is the whole scale.

Scores (``method``):

- ``lac`` — 1 − p(y) (least ambiguous set-valued classifier; Sadinle, Lei & Wasserman 2019,
  JASA). Smallest sets on average; a set may be empty (no label probable enough).
- ``aps`` — adaptive prediction sets (Romano, Sesia & Candès 2020, NeurIPS), their score with
  U = 0: the mass of the labels more probable than y (ties by index). Every set holds the most
  probable label and grows as the judge spreads its mass.
- ``ordinal`` — ordinal APS (Lu, Angelopoulos, Bates et al. 2022, "Improving Trustworthiness
  of AI Disease Severity Rating in Medical Imaging with Ordinal Conformal Prediction Sets",
  MICCAI): grow an interval from the most probable score, each step adding the neighbour (one
  below or one above) with more mass; s(y) is the interval's mass just before y joins it. The
  sets are prefixes of that growth, so every set is a contiguous interval of scores holding the
  most probable one, and the coverage argument above holds unchanged.

With U = 0 (the mass *before* y) rather than the mass including y, a set is never empty: with
the inclusive mass the judge's most confident items would get empty sets.

Functions take 0-based label indices and are vectorised over items. Class-conditional (Mondrian)
calibration is not offered: per-class coverage is reported, not guaranteed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

ConformalMethod = Literal["lac", "aps", "ordinal"]
METHODS: tuple[str, ...] = ("lac", "aps", "ordinal")


def _probs(probs: ArrayLike) -> NDArray[np.float64]:
    p = np.asarray(probs, dtype=float)
    if p.ndim != 2 or p.shape[1] < 2:
        raise ValueError(f"probs must be a 2-d array (items × labels, ≥ 2 labels), got {p.shape}")
    if not np.isfinite(p).all() or (p < 0).any():
        raise ValueError("probs must be finite and non-negative")
    if not np.allclose(p.sum(axis=1), 1.0, atol=1e-6):
        raise ValueError("each row of probs must sum to 1")
    return p


def _labels(labels: ArrayLike, n: int, k: int) -> NDArray[np.int64]:
    y = np.asarray(labels)
    if y.shape != (n,) or (y.size and not np.issubdtype(y.dtype, np.integer)):
        raise ValueError(f"labels must be {n} integer label indices, got shape {y.shape}")
    if y.size and (y.min() < 0 or y.max() >= k):
        raise ValueError(f"labels must be indices in 0..{k - 1}")
    return y.astype(np.int64)


def label_scores(probs: ArrayLike, method: ConformalMethod = "lac") -> NDArray[np.float64]:
    """The nonconformity score of every label for every item (same shape as ``probs``)."""
    p = _probs(probs)
    if method == "lac":
        return 1.0 - p
    if method == "aps":
        order = np.argsort(-p, axis=1, kind="stable")  # most probable first, ties by index
        ranked = np.take_along_axis(p, order, axis=1)
        before = np.cumsum(ranked, axis=1) - ranked
        out = np.empty_like(p)
        np.put_along_axis(out, order, before, axis=1)
        return out
    if method == "ordinal":
        return _ordinal_scores(p)
    raise ValueError(f"unknown conformal method {method!r}; known: {', '.join(METHODS)}")


def _ordinal_scores(p: NDArray[np.float64]) -> NDArray[np.float64]:
    """Ordinal APS: the interval around the argmax grows by its more probable neighbour (the
    lower one on a tie); each label's score is the interval's mass just before it joins."""
    n, k = p.shape
    rows = np.arange(n)
    lo = hi = np.argmax(p, axis=1)
    mass = p[rows, lo].copy()
    out = np.empty_like(p)
    out[rows, lo] = 0.0
    padded = np.pad(p, ((0, 0), (1, 1)), constant_values=-1.0)  # -1: no neighbour there
    for _ in range(k - 1):
        below, above = padded[rows, lo], padded[rows, hi + 2]
        down = below >= above
        lo = np.where(down, lo - 1, lo)
        hi = np.where(down, hi, hi + 1)
        added = np.where(down, lo, hi)
        out[rows, added] = mass
        mass = mass + p[rows, added]
    return out


def true_label_scores(
    probs: ArrayLike, labels: ArrayLike, method: ConformalMethod = "lac"
) -> NDArray[np.float64]:
    """The nonconformity score of each item's true label."""
    s = label_scores(probs, method)
    y = _labels(labels, s.shape[0], s.shape[1])
    return s[np.arange(len(y)), y]


def conformal_rank(n: int, alpha: float) -> int:
    """k = ⌈(n+1)(1−α)⌉: which order statistic of ``n`` calibration scores is q̂ (k > n: none
    is, the sets are the whole scale). Rounded to 9 decimals first, so that (n+1)(1−α) =
    55.00000000000001 from binary floating point (n = 99, α = 0.45) counts as 55."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if n < 1:
        raise ValueError("conformal calibration needs at least one labelled item")
    return math.ceil(round((n + 1) * (1 - alpha), 9))


def conformal_quantile(scores: ArrayLike, alpha: float) -> float:
    """q̂: the k-th smallest of the calibration scores, k = ⌈(n+1)(1−α)⌉ — the empirical
    quantile at level k/n with no interpolation (numpy's ``inverted_cdf``); ``inf`` when k > n."""
    s = np.asarray(scores, dtype=float)
    if s.ndim != 1 or not np.isfinite(s).all():
        raise ValueError("scores must be a 1-d array of finite numbers")
    k = conformal_rank(len(s), alpha)
    if k > len(s):
        return math.inf
    return float(np.partition(s, k - 1)[k - 1])


@dataclass(frozen=True)
class ConformalCalibration:
    """What a calibration fixed: the method, α, the number of items, k and q̂ (``inf``: every
    set is the whole scale, too few items for this α)."""

    method: str
    alpha: float
    n: int
    rank: int
    qhat: float

    @property
    def whole_scale(self) -> bool:
        return math.isinf(self.qhat)


def calibrate_conformal(
    probs: ArrayLike, labels: ArrayLike, alpha: float, method: ConformalMethod = "lac"
) -> ConformalCalibration:
    """q̂ from labelled calibration items (their probabilities and true label indices)."""
    scores = true_label_scores(probs, labels, method)
    n = len(scores)
    return ConformalCalibration(
        method=method,
        alpha=float(alpha),
        n=n,
        rank=conformal_rank(n, alpha),
        qhat=conformal_quantile(scores, alpha),
    )


def prediction_sets(probs: ArrayLike, calibration: ConformalCalibration) -> NDArray[np.bool_]:
    """The conformal set of each item as a boolean mask over the labels (items × labels)."""
    s = label_scores(probs, calibration.method)  # type: ignore[arg-type]
    return s <= calibration.qhat


@dataclass(frozen=True)
class ClassCoverage:
    """The sets of the items whose true label is ``label``: how often they hold it, their size."""

    label: int
    n: int
    coverage: float
    mean_size: float


@dataclass(frozen=True)
class SetSummary:
    """Sets against true labels: marginal coverage (``covered`` of ``n``), mean size, how many
    sets had each size (index = size), and per true label."""

    n: int
    covered: int
    coverage: float
    mean_size: float
    size_counts: tuple[int, ...]
    per_class: tuple[ClassCoverage, ...]


def set_coverage(sets: ArrayLike, labels: ArrayLike) -> SetSummary:
    """Coverage and set size of ``sets`` (items × labels, boolean) on items with true
    ``labels``; per class for every label index that occurs."""
    m = np.asarray(sets, dtype=bool)
    if m.ndim != 2:
        raise ValueError(f"sets must be a 2-d boolean array, got shape {m.shape}")
    y = _labels(labels, m.shape[0], m.shape[1])
    if not len(y):
        raise ValueError("coverage needs at least one labelled item")
    hit = m[np.arange(len(y)), y]
    size = m.sum(axis=1)
    per_class = tuple(
        ClassCoverage(
            label=int(c),
            n=int((y == c).sum()),
            coverage=float(hit[y == c].mean()),
            mean_size=float(size[y == c].mean()),
        )
        for c in np.unique(y)
    )
    return SetSummary(
        n=len(y),
        covered=int(hit.sum()),
        coverage=float(hit.mean()),
        mean_size=float(size.mean()),
        size_counts=tuple(int(c) for c in np.bincount(size, minlength=m.shape[1] + 1)),
        per_class=per_class,
    )


def is_contiguous(sets: ArrayLike) -> NDArray[np.bool_]:
    """Whether each set (a boolean row) is one run of adjacent labels (an empty set is)."""
    m = np.asarray(sets, dtype=bool).astype(np.int8)
    starts = np.diff(np.pad(m, ((0, 0), (1, 0))), axis=1) == 1
    return starts.sum(axis=1) <= 1


def probability_matrix(
    rows: Sequence[dict[str, float]], values: Sequence[int]
) -> NDArray[np.float64]:
    """Items × labels from per-item ``{score as text: probability}`` (a judgment's
    ``probabilities``); a score not named has probability 0. ``values``: the scale's scores."""
    index = {str(v): i for i, v in enumerate(values)}
    out = np.zeros((len(rows), len(values)))
    for r, row in enumerate(rows):
        for key, p in row.items():
            if key not in index:
                raise ValueError(f"probability of {key!r}, not a score of the scale {list(values)}")
            out[r, index[key]] = p
    return out
