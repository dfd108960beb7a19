"""The Alternative Annotator Test (Calderon, Reichart & Dror, ACL 2025, "The Alternative
Annotator Test for LLM-as-a-Judge"; reference implementation ``nitaytech/AltTest``): can a judge
replace the human annotators?

Leave one annotator out at a time. On each item that annotator ``j`` labelled, score how well the
judge and ``j`` each align with the *remaining* annotators' labels of that item (accuracy: share of
them matched; neg_rmse: −root mean squared difference). ``ρ_j`` (judge) is the share of items where
the judge aligns at least as well as ``j``; ``ρ^h_j`` the share where ``j`` aligns at least as well
(ties count for both). The one-sided paired t-test of ``d = 1[j ≥ judge] − 1[judge ≥ j]`` rejects
``H0_j: mean d ≥ ε`` when the judge is at least as good as ``j`` up to the cost-benefit allowance
``ε``. Where ``d`` is the same on every item (the judge and ``j`` tie on each, or one aligns better
on each) the t-test is undefined and the exact bound ``((1 − ε) / (1 − d))^n`` is its p-value
(:func:`_one_sided_p`), never scipy's 0 of infinite evidence. Benjamini–Yekutieli
controls the false discovery rate over the annotators (as the reference does; Benjamini–Hochberg on
request). The winning rate ω is the share of annotators whose ``H0_j`` is rejected; the judge
passes when ω ≥ 0.5. The advantage probability ρ (the mean of ``ρ_j``) compares judges.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from assay.metrics._annotators import AnnotationMatrix

ScoringFunction = Callable[[float, NDArray[np.float64]], float]
MIN_ANNOTATORS = 3


@dataclass(frozen=True)
class AnnotatorComparison:
    """The judge against one left-out annotator."""

    annotator: Hashable
    n_items: int
    judge_advantage: float  # ρ_j: share of items where the judge aligns at least as well
    annotator_advantage: float  # share of items where the annotator aligns at least as well
    # one-sided t-test of H0: annotator_advantage − judge_advantage ≥ ε; where the per-item
    # difference is the same on every item, the exact bound of _one_sided_p
    p_value: float
    judge_wins: bool  # H0 rejected under FDR control


@dataclass(frozen=True)
class AltTestResult:
    """Winning rate ω, advantage probability ρ, the verdict and the per-annotator tests."""

    winning_rate: float
    advantage_probability: float
    passed: bool  # ω ≥ 0.5
    comparisons: tuple[AnnotatorComparison, ...]
    skipped_annotators: tuple[Hashable, ...]  # fewer than min_items_per_annotator usable items
    n_items: int  # items used: enough annotators and a judge label
    n_items_dropped: int
    n_items_few_labels: int  # of the dropped: fewer than min_annotators_per_item labels
    min_annotators_per_item: int
    min_items_per_annotator: int
    epsilon: float
    q: float
    fdr: str
    scoring: str


def _accuracy(target: NDArray, values: NDArray, others: NDArray) -> NDArray[np.float64]:
    """Per row: share of the other annotators' labels equal to ``target``."""
    return ((values == target[:, None]) & others).sum(axis=1) / others.sum(axis=1)


def _neg_rmse(target: NDArray, values: NDArray, others: NDArray) -> NDArray[np.float64]:
    """Per row: −sqrt(mean over the other annotators of (label − target)²)."""
    sq = np.where(others, (np.nan_to_num(values) - target[:, None]) ** 2, 0.0)
    return -np.sqrt(sq.sum(axis=1) / others.sum(axis=1))


_BUILTIN = {"accuracy": _accuracy, "neg_rmse": _neg_rmse}


def _custom(fn: ScoringFunction) -> Callable[[NDArray, NDArray, NDArray], NDArray[np.float64]]:
    def score(target: NDArray, values: NDArray, others: NDArray) -> NDArray[np.float64]:
        return np.array(
            [fn(float(t), v[o]) for t, v, o in zip(target, values, others, strict=True)]
        )

    return score


def _rejected(p_values: NDArray[np.float64], q: float, fdr: str) -> NDArray[np.bool_]:
    """Step-up FDR control: adjusted p-values ≤ q (BY or BH); a nan p-value is never rejected."""
    p = np.where(np.isnan(p_values), 1.0, p_values)
    from scipy.stats import false_discovery_control  # a second to import: on first use

    return false_discovery_control(p, method=fdr) <= q


def alt_test(
    annotations: AnnotationMatrix,
    judge: Mapping[Hashable, float],
    *,
    scoring: Literal["accuracy", "neg_rmse"] | ScoringFunction = "accuracy",
    epsilon: float = 0.2,
    q: float = 0.05,
    fdr: Literal["by", "bh"] = "by",
    min_annotators_per_item: int = 2,
    min_items_per_annotator: int = 30,
) -> AltTestResult:
    """Run the Alt-Test of ``judge`` (item id → label) against the annotators.

    ``scoring``: ``"accuracy"`` for categories, ``"neg_rmse"`` for scores, or a function
    ``(label, other_labels) -> alignment`` (higher is better). ``epsilon`` is the allowance for
    the judge's lower cost (the authors suggest 0.2 for experts, 0.15 for skilled annotators,
    0.1 for crowd workers); ``q`` the FDR level. As in the reference, items with fewer than
    ``min_annotators_per_item`` labels or no judge label are dropped (counted in the result; an
    unscored judgment should be decided by the caller, not silently omitted), and annotators with
    fewer than ``min_items_per_annotator`` usable items (30 keeps the t-test's normal
    approximation reasonable) are skipped. Fewer than 3 annotators raises a ValueError. Against an
    annotator where the per-item difference is the same on every item the t-test is undefined:
    its ``p_value`` is the exact bound of what those items show (:func:`_one_sided_p`).
    """
    _check_options(epsilon, q, fdr, min_annotators_per_item, min_items_per_annotator)
    score, scoring_name = _scoring_function(scoring)
    n_annotators = len(annotations.annotator_ids)
    if n_annotators < MIN_ANNOTATORS:
        raise ValueError(
            f"the Alt-Test needs at least {MIN_ANNOTATORS} annotators (leave-one-out against a "
            f"group), got {n_annotators}"
        )

    judged = np.array([i in judge for i in annotations.item_ids], dtype=bool)
    keep = judged & (annotations.counts >= min_annotators_per_item)
    values = annotations.values[keep]
    judge_labels = _judge_labels(annotations, judge, keep)
    comparisons, skipped = _leave_one_out(
        annotations.annotator_ids, values, judge_labels, score, epsilon, min_items_per_annotator
    )
    if len(comparisons) < MIN_ANNOTATORS:
        raise ValueError(
            f"the Alt-Test needs at least {MIN_ANNOTATORS} annotators with "
            f"{min_items_per_annotator}+ usable items each, got {len(comparisons)} "
            f"(skipped: {', '.join(map(str, skipped))})"
        )
    wins = _rejected(np.array([c[4] for c in comparisons]), q, fdr)
    results = tuple(
        AnnotatorComparison(a, n, rho, rho_h, p, bool(w))
        for (a, n, rho, rho_h, p), w in zip(comparisons, wins, strict=True)
    )
    omega = float(wins.mean())
    return AltTestResult(
        winning_rate=omega,
        # fsum: the exact sum, so the annotators' order does not move the last digit
        advantage_probability=math.fsum(c.judge_advantage for c in results) / len(results),
        passed=omega >= 0.5,
        comparisons=results,
        skipped_annotators=tuple(skipped),
        n_items=int(keep.sum()),
        n_items_dropped=int((~keep).sum()),
        n_items_few_labels=int((annotations.counts < min_annotators_per_item).sum()),
        min_annotators_per_item=min_annotators_per_item,
        min_items_per_annotator=min_items_per_annotator,
        epsilon=float(epsilon),
        q=float(q),
        fdr=fdr,
        scoring=scoring_name,
    )


def _check_options(
    epsilon: float, q: float, fdr: str, min_annotators_per_item: int, min_items_per_annotator: int
) -> None:
    if not 0.0 <= epsilon < 1.0:
        raise ValueError(f"epsilon must be in [0, 1), got {epsilon!r}")
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must be strictly between 0 and 1, got {q!r}")
    if fdr not in ("by", "bh"):
        raise ValueError(f"fdr must be 'by' (Benjamini–Yekutieli) or 'bh', got {fdr!r}")
    if min_annotators_per_item < 2 or min_items_per_annotator < 2:
        raise ValueError("min_annotators_per_item and min_items_per_annotator must be at least 2")


def _scoring_function(
    scoring: str | ScoringFunction,
) -> tuple[Callable[[NDArray, NDArray, NDArray], NDArray[np.float64]], str]:
    """The vectorised alignment function for ``scoring`` and the name the result reports."""
    if callable(scoring):
        return _custom(scoring), getattr(scoring, "__name__", "custom")
    if scoring in _BUILTIN:
        return _BUILTIN[scoring], scoring
    raise ValueError(f"scoring must be 'accuracy', 'neg_rmse' or a function, got {scoring!r}")


def _judge_labels(
    annotations: AnnotationMatrix, judge: Mapping[Hashable, float], keep: NDArray[np.bool_]
) -> NDArray[np.float64]:
    """The judge's labels of the kept items, in their order (each a finite number)."""
    judge_labels = np.empty(int(keep.sum()))
    for n, item in enumerate(i for i, k in zip(annotations.item_ids, keep, strict=True) if k):
        label = judge[item]
        if isinstance(label, bool) or not isinstance(label, int | float | np.number):
            raise ValueError(
                f"the judge's label of item {item!r} must be a number, got {label!r} "
                "(decide what an unscored judgment means before the test)"
            )
        judge_labels[n] = label
    if not np.isfinite(judge_labels).all():
        raise ValueError("the judge's labels must be finite numbers")
    return judge_labels


def _leave_one_out(
    annotator_ids: Sequence[Hashable],
    values: NDArray[np.float64],
    judge_labels: NDArray[np.float64],
    score: Callable[[NDArray, NDArray, NDArray], NDArray[np.float64]],
    epsilon: float,
    min_items: int,
) -> tuple[list[tuple[Hashable, int, float, float, float]], list[Hashable]]:
    """``(annotator, n items, ρ_j, ρ^h_j, p-value)`` of each annotator with at least
    ``min_items`` labels, each left out against the others; and the annotators skipped."""
    labelled = ~np.isnan(values)
    comparisons: list[tuple[Hashable, int, float, float, float]] = []
    skipped = []
    for j, annotator in enumerate(annotator_ids):
        rows = labelled[:, j]
        if rows.sum() < min_items:
            skipped.append(annotator)
            continue
        others = labelled[rows].copy()
        others[:, j] = False
        judge_score = score(judge_labels[rows], values[rows], others)
        human_score = score(values[rows, j], values[rows], others)
        judge_ind = (judge_score >= human_score).astype(np.float64)
        human_ind = (human_score >= judge_score).astype(np.float64)
        p = _one_sided_p(human_ind - judge_ind, epsilon)
        comparisons.append(
            (annotator, int(rows.sum()), float(judge_ind.mean()), float(human_ind.mean()), p)
        )
    return comparisons, skipped


def _one_sided_p(d: NDArray[np.float64], epsilon: float) -> float:
    """The p-value of ``H0: mean d ≥ ε`` against ``mean d < ε``: the one-sided t-test's where
    ``d`` varies; where it does not, the exact bound of what the items show.

    With every ``d`` the same value ``c`` the standard error is 0 and the t statistic ±inf or
    0/0: scipy's p-value is exactly 0 below ``ε`` (infinite evidence from, say, 40 tied items),
    1 above it, nan at it. Those items do carry evidence, and it is exact: each ``d`` lies in
    [−1, 1], so under H0 (a mean of at least ``ε``) a difference is at most ``c`` with chance
    ``P ≤ (1 − ε) / (1 − c)`` (the mean is at most ``c·P + 1·(1 − P)``), and ``n`` independent
    items all at most ``c`` have chance at most ``((1 − ε) / (1 − c))^n`` — the p-value when
    ``c < ε`` (40 ties at ε = 0.2: 0.8^40 = 1.3e-4; a judge better on every one of 40 items:
    0.4^40); 1 when ``c ≥ ε``, where the items are what H0 expects."""
    if np.ptp(d) == 0:
        c, n = float(d[0]), len(d)
        return 1.0 if c >= epsilon else ((1.0 - epsilon) / (1.0 - c)) ** n
    from scipy.stats import ttest_1samp  # a second to import: on first use

    return float(ttest_1samp(d, epsilon, alternative="less").pvalue)
