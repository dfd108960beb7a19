"""Dawid–Skene: how good each judge is, and what each item's label likely is, from the judges'
verdicts alone — no reference label.

The model (Dawid & Skene 1979): every item has a true class ``c`` drawn with probability
``π_c``; judge ``j`` gives verdict ``l`` on an item of class ``c`` with probability
``E_j[c, l]`` (its confusion matrix, rows the true class), **independently of the other judges
given the class**. Expectation–maximisation alternates the posterior of each item's class given
its verdicts (E-step) and the confusion matrices and priors that best explain those posteriors
(M-step).

The fit is crowd-kit's ``DawidSkene`` (``crowdkit.aggregation.DawidSkene``), step for step: it
starts from the share of each item's verdicts per class (the soft majority vote), floors
probabilities at 1e-10, and stops after at most 100 iterations or when crowd-kit's per-verdict
objective (the expected log joint, with the prior counted once per verdict, plus the posteriors'
entropy, over the number of verdicts) gains less than 1e-5. A judge's reported **accuracy** is
the expected share of its verdicts equal to the item's class under the fitted posteriors; its
**recall** of class ``c`` is ``E_j[c, c]``. Sensitivity and specificity exist only where the
caller names the positive class (``positive``: a binary scale's score 1): sensitivity is its
recall, specificity the other class's. Two classes alone have none — the two labels of a
nominal scale (``True,False`` as categories, a pairwise judge's A/B) are named, not positive
and negative, and their order is no more than the order they were listed in.

Intervals are a percentile bootstrap over items, refitting the model on every replicate: a
resample with replacement is a weight per item (how often it was drawn), so all replicates run
as one batched EM. The model is fitted, and the items resampled in :func:`canonical_order`,
on the table arranged by :func:`arranged_judges` — the judges and the classes in an order
their verdicts decide —, and the figures given back to the judges and classes as named: no
figure depends on the rows' order, the judges' order or names, or the order the classes are
coded in; permuted, each judge, pair and class keeps its figures to the last digit.

**Conditional independence** is what the model rests on, and what LLM judges sharing a model
family or a prompt break. Two judges that err together agree more often than their confusion
matrices predict: for every pair, on the items both judged, the observed agreement minus the
agreement the model predicts (``Σ_c π_c Σ_l E_a[c, l] E_b[c, l]``, with the classes' shares
among those items) is the pair's **excess agreement**, with its bootstrap interval — exactly 0,
in the estimate and in every replicate, where it is within what the probability floors and the
rounding leave of an excess of 0, or within a tenth of EM's stopping tolerance
(:func:`_zero_band`): no sign, interval or p-value is a residue's. A pair whose excess is at
least :data:`EXCESS_THRESHOLD` (three points of agreement) and significantly above 0 (the
share of bootstrap replicates at or below 0, Holm-adjusted over the pairs, under
1 − confidence) raises the warning. In simulations of five judges on 600 items, independent judges' excess
stayed within about a point and was never flagged; one judge copying another on 70% of the
items was flagged in 9 of 10 panels, on half of them in 7 of 10, and at 200 items rarely: no
warning is no evidence of independence. The
fit absorbs a dependent pair by taking it for the truth — their accuracies rise and the
*other* judges then agree more than predicted — so the flagged pairs show that the assumption
fails, not necessarily which judges are the dependent ones. With three judges on two classes
the model has as many parameters as the table of verdict patterns has cells: it fits any table,
so no dependence can show in the verdicts and the result says the check could not be made.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from assay.metrics._annotators import AnnotationMatrix, _as_matrix
from assay.metrics._cluster import (
    _canonical_clusters,
    _cluster_draws,
    _cluster_index,
    _drawn_times,
    shared_clusters,
)
from assay.metrics._intervals import (
    _CHUNK_ELEMENTS,
    _check_confidence,
    _check_resamples,
    _percentile_ci,
    _resample_indices,
    canonical_order,
)
from assay.metrics._judge_order import JudgeArrangement, arranged_judges
from assay.metrics._validate import check_k
from assay.metrics._value import MIN_RESAMPLES, BootstrapCI, MetricValue, with_ci

FLOOR = 1e-10
"""Probabilities (priors, confusion entries, posteriors) are floored here, as crowd-kit does."""
MAX_ITERATIONS = 100
TOLERANCE = 1e-5
EXCESS_THRESHOLD = 0.03
"""Excess agreement of a pair of judges (observed − predicted share of items they agree on)
from which, significantly above 0, their conditional independence visibly fails."""
EM_RESIDUE = 0.1
"""An excess agreement within this share of EM's stopping tolerance (1e-6 at the default
``tol``) is 0. Where a judge's verdicts are, or nearly are, the classes (a judge right on every
item), the excess EM converges to is 0 but the one it stops at is not: in simulated panels'
bootstrap replicates whose excess converges to 0, EM stopped within 1e-6 of it in 78% (counted
above 0, such residues gave a panel of 119 items with a judge right on every one p = 0.09 for
an excess of 5e-7 [0, 1.4e-6]), further off in the rest. Scaled with ``tol``: EM run to a
tighter tolerance stops nearer. No bound — EM stops where its objective gains less than
``tol``, which can leave the excess further off —: what it leaves is the fit's, as in every
figure of it."""
_EPS = float(np.finfo(np.float64).eps)
MIN_JUDGES = 3


@dataclass(frozen=True)
class JudgeReliability:
    """One judge under the fitted model: its confusion matrix (``confusion[c][l]`` = P(verdict
    ``l`` | class ``c``)), its expected accuracy, the recall of every class and, where the fit
    was told the positive class, its sensitivity (that class's recall) and specificity (the
    other's), each with its bootstrap interval. ``n`` counts the items it judged; a judge with
    none (it abstained on every item) has every figure undefined (nan, with the note saying
    why)."""

    judge: Hashable
    n: int
    confusion: tuple[tuple[float, ...], ...]
    accuracy: MetricValue
    recall: tuple[MetricValue, ...]
    sensitivity: MetricValue | None = None
    specificity: MetricValue | None = None


@dataclass(frozen=True)
class PairDependence:
    """Two judges on the items both judged: how often they agree, how often the model says
    they should if their errors were independent given the class, the excess (observed −
    predicted) with its bootstrap interval, its one-sided bootstrap p-value (excess ≤ 0;
    Holm-adjusted over the pairs), and whether it is ``flagged``: an excess of at least
    :data:`EXCESS_THRESHOLD` with an adjusted p-value below 1 − confidence."""

    judges: tuple[Hashable, Hashable]
    n: int
    observed: float
    predicted: float
    excess: MetricValue
    p_value: float
    flagged: bool


@dataclass(frozen=True)
class DawidSkeneResult:
    """The fitted model. ``labels[i]`` is item ``item_ids[i]``'s most probable class (the
    lowest on a tie) and ``posteriors[i]`` its class probabilities; ``priors`` the classes'
    shares; ``judges`` one :class:`JudgeReliability` per judge in ``annotator_ids`` order;
    ``dependence`` every pair's excess agreement, and ``warning`` the pairs whose excess shows
    the independence the model assumes does not hold (or why it could not be checked)."""

    item_ids: tuple[Hashable, ...]
    labels: NDArray[np.int64]
    posteriors: NDArray[np.float64]
    priors: tuple[float, ...]
    judges: tuple[JudgeReliability, ...]
    dependence: tuple[PairDependence, ...]
    iterations: int
    converged: bool
    objective: float
    k: int
    n_items_dropped: int
    dependence_checkable: bool
    warning: str | None
    confidence: float
    n_resamples: int
    seed: int
    resampled_clusters: int | None = None  # the clusters the bootstrap drew, if it drew them


@dataclass(frozen=True)
class _Fit:
    """Batched EM state: B replicates' posteriors (B, n, K), priors (B, K), confusion (B, J,
    K_true, K_verdict), iterations run and whether each stopped by the tolerance."""

    posteriors: NDArray[np.float64]
    priors: NDArray[np.float64]
    confusion: NDArray[np.float64]
    objective: NDArray[np.float64]
    iterations: NDArray[np.int64]
    converged: NDArray[np.bool_]


def _checked(
    annotations: AnnotationMatrix | ArrayLike, k: int | None
) -> tuple[AnnotationMatrix, NDArray[np.int64], int, NDArray[np.bool_]]:
    """The matrix, its verdicts as class codes (−1: missing), K, and which items had a verdict."""
    m = _as_matrix(annotations)
    values = m.values
    if values.shape[1] < MIN_JUDGES:
        raise ValueError(
            f"annotations must have at least {MIN_JUDGES} judges (columns), got "
            f"{values.shape[1]}: with fewer, the confusion matrices are not identified by the "
            "verdicts"
        )
    present = ~np.isnan(values)
    bad = present & ((values < 0) | (values != np.round(np.where(present, values, 0.0))))
    if bad.any():
        i, j = (int(x[0]) for x in np.nonzero(bad))
        raise ValueError(
            f"annotations must hold 0-based class indices, got {values[i, j]:g} at item "
            f"{m.item_ids[i]!r}, judge {m.annotator_ids[j]!r}"
        )
    if not present.any():
        raise ValueError("annotations hold no verdict")
    top = int(values[present].max())
    k = top + 1 if k is None else check_k(k)
    if top >= k:
        i, j = (int(x[0]) for x in np.nonzero(present & (values >= k)))
        raise ValueError(
            f"annotations must lie in 0..{k - 1} (k={k}), got {values[i, j]:g} at item "
            f"{m.item_ids[i]!r}, judge {m.annotator_ids[j]!r}"
        )
    if k < 2:
        raise ValueError(f"k must be at least 2 classes, got {k}")
    codes = np.where(present, np.nan_to_num(values, nan=-1.0), -1.0).astype(np.int64)
    kept = present.any(axis=1)
    return m, codes, k, kept


def _onehot(codes: NDArray[np.int64], k: int) -> NDArray[np.float64]:
    """(n, J, K): 1 where judge j gave item i verdict l."""
    return (codes[..., None] == np.arange(k)).astype(np.float64)


def _m_step(
    onehot: NDArray[np.float64], posteriors: NDArray[np.float64], weights: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Priors (B, K) and confusion matrices (B, J, K_true, K_verdict) from the posteriors."""
    n, j, k = onehot.shape
    weighted = weights[:, :, None] * posteriors  # (B, n, K)
    priors = weighted.sum(axis=1) / weights.sum(axis=1, keepdims=True)
    counts = np.swapaxes(weighted, 1, 2) @ onehot.reshape(n, j * k)  # (B, K_true, J·K_verdict)
    counts = np.maximum(counts.reshape(-1, k, j, k).transpose(0, 2, 1, 3), FLOOR)
    return priors, counts / counts.sum(axis=3, keepdims=True)


def _log_joint(
    onehot: NDArray[np.float64], priors: NDArray[np.float64], confusion: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per item and class: Σ_j log E_j[c, y_ij] (B, n, K), and log π_c (B, 1, K)."""
    n, j, k = onehot.shape
    log_e = np.log(confusion).transpose(0, 1, 3, 2).reshape(-1, j * k, k)  # (B, J·K_verdict, K)
    return onehot.reshape(n, j * k) @ log_e, np.log(np.maximum(priors, FLOOR))[:, None, :]


def _e_step(log_verdicts: NDArray[np.float64], log_prior: NDArray[np.float64]) -> NDArray:
    z = log_verdicts + log_prior
    z = np.exp(z - z.max(axis=2, keepdims=True))
    return z / z.sum(axis=2, keepdims=True)


def _objective(
    onehot: NDArray[np.float64],
    posteriors: NDArray[np.float64],
    priors: NDArray[np.float64],
    confusion: NDArray[np.float64],
    weights: NDArray[np.float64],
    verdicts: NDArray[np.float64],
) -> NDArray[np.float64]:
    """crowd-kit's stopping quantity per replicate: Σ over verdicts of the posterior-expected
    log(E_j[c, y] π_c), plus the posteriors' entropy, over the number of verdicts."""
    log_verdicts, log_prior = _log_joint(onehot, priors, confusion)
    joint = posteriors * (log_verdicts + verdicts[None, :, None] * log_prior)
    p = np.maximum(posteriors, FLOOR)
    per_item = joint.sum(axis=2) - (p * np.log(p)).sum(axis=2)
    return (weights * per_item).sum(axis=1) / (weights @ verdicts)


def _em(
    onehot: NDArray[np.float64], weights: NDArray[np.float64], max_iterations: int, tol: float
) -> _Fit:
    """EM on every replicate (a row of item weights) at once; a replicate stops changing once
    its objective gains less than ``tol``, as crowd-kit's loop breaks."""
    verdicts = onehot.sum(axis=(1, 2))
    start = onehot.sum(axis=1) / verdicts[:, None]  # the soft majority vote
    b = weights.shape[0]
    posteriors = np.broadcast_to(start, (b, *start.shape)).copy()
    priors, confusion = _m_step(onehot, posteriors, weights)
    objective = np.full(b, -np.inf)
    active = np.ones(b, dtype=bool)
    iterations = np.zeros(b, dtype=np.int64)
    for _ in range(max_iterations):
        if not active.any():
            break
        new_post = _e_step(*_log_joint(onehot, priors, confusion))
        new_priors, new_conf = _m_step(onehot, new_post, weights)
        new_obj = _objective(onehot, new_post, new_priors, new_conf, weights, verdicts)
        posteriors[active] = new_post[active]
        priors[active] = new_priors[active]
        confusion[active] = new_conf[active]
        iterations[active] += 1
        stop = active & (new_obj - objective < tol)
        objective[active] = new_obj[active]
        active &= ~stop
    return _Fit(posteriors, priors, confusion, objective, iterations, ~active)


def _judge_figures(
    fit: _Fit, onehot: NDArray[np.float64], weights: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per replicate and judge: the expected accuracy (B, J) and every class's recall (B, J, K)."""
    judged = onehot.sum(axis=2)  # (n, J)
    hits = np.einsum("ijl,bil->bij", onehot, fit.posteriors)
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = np.einsum("bi,bij->bj", weights, hits) / (weights @ judged)
    recall = np.diagonal(fit.confusion, axis1=2, axis2=3)
    return accuracy, recall


def _pair_figures(
    fit: _Fit, onehot: NDArray[np.float64], weights: NDArray[np.float64], tol: float
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Per replicate and pair of judges: the observed and predicted agreement and the excess
    (observed − predicted; exactly 0 within :func:`_zero_band` of it) (B, P). ``tol``: the
    tolerance EM stopped at."""
    n_patterns, _, k = onehot.shape
    judged = onehot.sum(axis=2)
    pairs = list(combinations(range(onehot.shape[1]), 2))
    observed = np.empty((weights.shape[0], len(pairs)))
    predicted = np.empty_like(observed)
    band = np.empty_like(observed)
    for p, (a, c) in enumerate(pairs):
        both = weights * (judged[:, a] * judged[:, c])  # (B, n)
        total = both.sum(axis=1)
        same = (onehot[:, a, :] * onehot[:, c, :]).sum(axis=1)
        shares = np.einsum("bi,bik->bk", both, fit.posteriors)
        agree_given_class = (fit.confusion[:, a] * fit.confusion[:, c]).sum(axis=2)  # (B, K)
        with np.errstate(invalid="ignore", divide="ignore"):
            observed[:, p] = (both @ same) / total
            predicted[:, p] = (shares * agree_given_class).sum(axis=1) / total
            band[:, p] = _zero_band(total, k, n_patterns, tol)
    excess = observed - predicted
    # nan (no item judged by both in the replicate) is within no band: it stays nan
    return observed, predicted, np.where(np.abs(excess) <= band, 0.0, excess)


def _zero_band(
    total: NDArray[np.float64], k: int, n_patterns: int, tol: float
) -> NDArray[np.float64]:
    """How near 0 an excess agreement on ``total`` items both judged is 0: the wider of what
    the arithmetic leaves of an excess of 0 (:func:`_arithmetic_residue`) and
    :data:`EM_RESIDUE` · ``tol``. The point estimate, every replicate (so the interval) and the
    p-value take an excess within it as 0 alike, so that none of them has the sign of a
    residue."""
    return np.maximum(_arithmetic_residue(total, k, n_patterns), EM_RESIDUE * tol)


def _arithmetic_residue(total: NDArray[np.float64], k: int, n_patterns: int) -> NDArray[np.float64]:
    """The most the floors and the rounding can leave in an excess agreement that is 0 in
    exact arithmetic, on ``total`` items both judged, ``k`` classes and ``n_patterns`` verdict
    patterns. A pair agrees exactly as predicted by construction where one judge gives one
    verdict throughout (its predicted agreement with a judge of the same items, Σ_c π_c
    E_b[c, l], is that judge's share of verdict l) or where all judges agree on every item;
    computed, its excess was ±1e-16 or 1e-13 to 1e-10, of either sign as the table was written
    (a judge of one verdict with another on 60 items: +3.1e-13 as written, −2.7e-13 with the
    judges in reverse order).

    - The floors (:data:`FLOOR`, put under every confusion count before a row is normalised)
      move a judge's confusion row, summed over the verdicts, by at most 2·k·FLOOR / N_c (N_c
      its expected items of class c); the pair's agreement given class c by at most
      2·k·FLOOR · (1/N_ac + 1/N_bc), weighted by the expected items of class c both judged (at
      most N_ac and N_bc): 4·k·FLOOR per class, 4·k²·FLOOR over the classes, over ``total`` as
      a share. (Judges that all agree leave 2·k·(k − 1)·FLOOR / total of it.)
    - The rounding: observed and predicted are shares (at most 1), sums over the patterns and
      the classes, each sum of m terms within m·ε (ε: float64's epsilon) of its exact value;
      4·(patterns + k)·ε covers them and the M-step's sums they rest on.

    A real excess is a share of the items: 1e-3 on a thousand, far above this."""
    return 4.0 * k * k * FLOOR / total + 4.0 * (n_patterns + k) * _EPS


def _replicate_figures(
    onehot: NDArray[np.float64], counts: NDArray[np.float64], max_iterations: int, tol: float
) -> tuple[NDArray, NDArray, NDArray]:
    """Accuracy (B, J), recall (B, J, K) and excess agreement (B, P) refitted on every
    resample (a row of ``counts``: how often each verdict pattern was drawn), in slices that
    keep the (B, patterns, K) posteriors small."""
    n, _, k = onehot.shape
    step = max(1, _CHUNK_ELEMENTS // (n * k))
    parts: list[tuple[NDArray, NDArray, NDArray]] = []
    for start in range(0, counts.shape[0], step):
        weights = counts[start : start + step]
        fit = _em(onehot, weights, max_iterations, tol)
        accuracy, recall = _judge_figures(fit, onehot, weights)
        parts.append((accuracy, recall, _pair_figures(fit, onehot, weights, tol)[2]))
    return tuple(np.concatenate(p) for p in zip(*parts, strict=True))  # type: ignore[return-value]


def dawid_skene(
    annotations: AnnotationMatrix | ArrayLike,
    *,
    k: int | None = None,
    n_resamples: int = MIN_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
    max_iterations: int = MAX_ITERATIONS,
    tol: float = TOLERANCE,
    clusters: Mapping[Hashable, Hashable] | None = None,
    positive: int | None = None,
) -> DawidSkeneResult:
    """Fit Dawid–Skene to an items × judges table of 0-based class indices (nan: the judge did
    not give that item a verdict), with bootstrap intervals over items for every judge's
    accuracy and recall of every class and every pair's excess agreement.

    ``k`` is the number of classes (default: the largest verdict + 1). ``positive`` (two
    classes only): the class that is positive — a binary scale's score 1, class 1 of 0/1
    verdicts —, whose recall is each judge's sensitivity and the other class's its specificity;
    without it there are none (a nominal scale's two labels have no positive class). Items
    without any verdict are left out and counted in ``n_items_dropped``. At least three judges are needed.
    ``clusters`` (item id → its cluster; an item not in it is its own): items that are not
    independent — the epochs of one Inspect sample — are resampled together, each replicate
    drawing as many clusters as there are with all their items (``resampled_clusters`` says
    how many); the fit itself is unchanged.

    The judges' columns and the classes' codes may come in any order: each judge, pair and
    class has the same figures, intervals and p-values to the last digit (computed on the
    table in an order the verdicts decide, :func:`arranged_judges`). Judges whose verdicts
    are one another's mirror image (a permutation of the judges, and of the classes, maps the
    table onto itself) are the same data: each has the value, and an interval that holds
    both their intervals (:class:`_GivenBack`). Only an exact tie of two classes' posteriors
    is decided by their codes (the lowest).
    """
    confidence = _check_confidence(confidence)
    n_resamples = _check_resamples(n_resamples)
    if isinstance(max_iterations, bool) or not isinstance(max_iterations, int):
        raise ValueError(f"max_iterations must be an integer, got {max_iterations!r}")
    if max_iterations < 1:
        raise ValueError(f"max_iterations must be at least 1, got {max_iterations}")
    if not tol > 0:
        raise ValueError(f"tol must be positive, got {tol!r}")
    m, codes, k, kept = _checked(annotations, k)
    if positive is not None and (k != 2 or isinstance(positive, bool) or positive not in (0, 1)):
        raise ValueError(
            f"positive must be class 0 or 1 of two classes, got {positive!r} with k={k}: "
            "sensitivity and specificity are the recalls of a binary scale's two classes"
        )
    codes = codes[kept]
    item_ids = tuple(i for i, keep in zip(m.item_ids, kept, strict=True) if keep)
    n, n_judges = codes.shape
    cluster_of = None
    if clusters is not None:
        cluster_of = [str(clusters.get(i, f"item {i}")) for i in item_ids]
    # fitted with the judges and classes in an order their verdicts decide, every figure then
    # given back to its judge, pair and class: the same however they are ordered or named
    arrangements = arranged_judges(codes, k=k, clusters=cluster_of)
    back = _GivenBack(arrangements)
    table = arrangements[0].codes
    # items with the same verdicts have the same posterior: EM runs on the distinct verdict
    # patterns, each weighted by how many items (in a resample: draws) show it
    patterns, pattern_of = np.unique(table, axis=0, return_inverse=True)
    pattern_of = pattern_of.reshape(-1)
    onehot = _onehot(patterns, k)
    n_patterns = patterns.shape[0]
    counts = np.bincount(pattern_of, minlength=n_patterns).astype(np.float64)[None, :]

    point = _em(onehot, counts, max_iterations, tol)
    accuracy, recall = _judge_figures(point, onehot, counts)
    observed, predicted, point_excess = _pair_figures(point, onehot, counts, tol)

    ids = None if cluster_of is None else shared_clusters(cluster_of, np.arange(n))
    resampled = _replicate_counts(table, pattern_of, n_patterns, ids, n_resamples, seed)
    unit = "item" if ids is None else "cluster"  # the intervals' method: a cluster bootstrap
    acc_b, recall_b, excess_b = _replicate_figures(onehot, resampled, max_iterations, tol)

    judged = (codes >= 0).sum(axis=0)
    # a judge with no verdict in the (re)sample has a confusion matrix of floors alone (1/k
    # each): its recall is undefined there, not 1/k
    recall = np.where((table >= 0).sum(axis=0)[None, :, None] > 0, recall, np.nan)
    judged_b = resampled @ onehot.sum(axis=2)  # (B, J): each judge's verdicts per replicate
    recall_b = np.where(judged_b[:, :, None] > 0, recall_b, np.nan)
    # a recall's n is its own denominator: the items of that class the judge rated, which
    # the model knows only in expectation (the posteriors summed), not the judge's every item
    in_class = back.value(
        np.einsum("i,ij,ik->jk", counts[0], onehot.sum(axis=2), point.posteriors[0]), "jc"
    )
    accuracy, recall = back.value(accuracy[0], "j"), back.value(recall[0], "jc")
    acc_ci = back.interval(_Intervals.of(acc_b, confidence, unit), "j")
    recall_ci = back.interval(_Intervals.of(recall_b, confidence, unit), "jc")
    confusion = back.value(point.confusion[0], "jcc")
    why = "no item judged by this judge in the (re)sample"

    def value(v: float, ci: BootstrapCI, count: int) -> MetricValue:
        return with_ci(float(v), ci, count, why_undefined=why)

    about = "n: the items of this class the judge rated, as the model expects them (its "
    about += "posteriors summed, rounded), not a count"
    judges = []
    for j, name in enumerate(m.annotator_ids):
        recalls = tuple(
            value(recall[j, c], recall_ci[j, c], round(float(in_class[j, c]))).with_notes([about])
            for c in range(k)
        )
        judges.append(
            JudgeReliability(
                judge=name,
                n=int(judged[j]),
                confusion=tuple(
                    tuple(float(x) if judged[j] else np.nan for x in row) for row in confusion[j]
                ),
                accuracy=value(accuracy[j], acc_ci[j], int(judged[j])),
                recall=recalls,
                sensitivity=None if positive is None else recalls[positive],
                specificity=None if positive is None else recalls[1 - positive],
            )
        )
    from assay.metrics._multitest import holm

    # the replicates at or below 0 (an excess within _zero_band of 0 is exactly 0 there, as in
    # the point estimate and the interval); nan ones count on neither side
    tail = (excess_b <= 0.0).sum(axis=0)
    defined = (~np.isnan(excess_b)).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_values = holm(
            back.largest(np.where(defined > 0, (tail + 1) / (defined + 1), np.nan), "p")
        )
    excess = back.value(point_excess[0], "p")  # 0 within _zero_band, as each replicate
    excess_ci = back.interval(_Intervals.of(excess_b, confidence, unit), "p")
    observed, predicted = back.value(observed[0], "p"), back.value(predicted[0], "p")
    dependence = []
    for p, (a, c) in enumerate(combinations(range(n_judges), 2)):
        both = int(((codes[:, a] >= 0) & (codes[:, c] >= 0)).sum())
        pair_excess = with_ci(
            float(excess[p]),
            excess_ci[p],
            both,
            why_undefined="no item judged by both in the (re)sample",
        )
        dependence.append(
            PairDependence(
                judges=(m.annotator_ids[a], m.annotator_ids[c]),
                n=both,
                observed=float(observed[p]),
                predicted=float(predicted[p]),
                excess=pair_excess,
                p_value=float(p_values[p]),
                flagged=bool(
                    pair_excess.value >= EXCESS_THRESHOLD and p_values[p] < 1.0 - confidence
                ),
            )
        )
    posteriors = back.posteriors(point.posteriors[0], patterns)
    checkable = n_judges * k * (k - 1) + (k - 1) < k**n_judges - 1
    return DawidSkeneResult(
        item_ids=item_ids,
        labels=posteriors.argmax(axis=1).astype(np.int64),
        posteriors=posteriors,
        priors=tuple(float(x) for x in back.value(point.priors[0], "c")),
        judges=tuple(judges),
        dependence=tuple(dependence),
        iterations=int(point.iterations[0]),
        converged=bool(point.converged[0]),
        objective=float(point.objective[0]),
        k=k,
        n_items_dropped=int((~kept).sum()),
        dependence_checkable=checkable,
        warning=_warning(dependence, checkable, n_judges, k),
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
        resampled_clusters=None if ids is None else int(np.unique(ids).size),
    )


@dataclass(frozen=True)
class _Intervals:
    """Figures' percentile intervals, one per figure (the replicates' axes after the first):
    their ends and how many replicates were undefined (nan) and dropped."""

    low: NDArray[np.float64]
    high: NDArray[np.float64]
    dropped: NDArray[np.int64]
    n_resamples: int
    unit: str

    @classmethod
    def of(cls, replicates: NDArray[np.float64], confidence: float, unit: str) -> _Intervals:
        shape = replicates.shape[1:]
        flat = replicates.reshape(replicates.shape[0], -1)
        cis = [_percentile_ci(flat[:, f], confidence) for f in range(flat.shape[1])]
        return cls(
            np.array([ci.low for ci in cis]).reshape(shape),
            np.array([ci.high for ci in cis]).reshape(shape),
            np.array([ci.n_dropped for ci in cis], dtype=np.int64).reshape(shape),
            replicates.shape[0],
            unit,
        )

    def __getitem__(self, index: int | tuple[int, ...]) -> BootstrapCI:
        return BootstrapCI(
            float(self.low[index]),
            float(self.high[index]),
            self.n_resamples,
            int(self.dropped[index]),
            self.unit,
        )


@dataclass(frozen=True)
class _GivenBack:
    """Figures computed on the arranged table given back to the judges, pairs and classes as
    given (:meth:`JudgeArrangement.given`). Where other arrangements sort to the same rows —
    a permutation of the judges (and classes) maps the table onto itself —, each gives a
    figure back from another place, and all are equally the data's: a value is the least of
    them (the same value, summed in another order), an interval the narrowest that holds
    them all (as a paired comparison's mirror image is), its dropped replicates and a p-value
    the most of them; so that neither which arrangement is kept nor the order the judges and
    classes came in decides a figure."""

    arrangements: list[JudgeArrangement]

    def _each(self, values: NDArray, axes: str) -> NDArray:
        return np.stack([a.given(values, axes) for a in self.arrangements])

    def value(self, values: NDArray, axes: str) -> NDArray:
        return self._each(values, axes).min(axis=0)

    def largest(self, values: NDArray, axes: str) -> NDArray:
        return self._each(values, axes).max(axis=0)

    def interval(self, ci: _Intervals, axes: str) -> _Intervals:
        return _Intervals(
            self.value(ci.low, axes),
            self.largest(ci.high, axes),
            self.largest(ci.dropped, axes),
            ci.n_resamples,
            ci.unit,
        )

    def posteriors(
        self, posteriors: NDArray[np.float64], patterns: NDArray[np.int64]
    ) -> NDArray[np.float64]:
        """Each item's posteriors (items × classes) from those of the verdict patterns: an
        item's pattern is its row in each arrangement (another row, in another that sorts to
        the same rows)."""
        place = {tuple(p): i for i, p in enumerate(patterns.tolist())}
        return np.stack(
            [
                a.given(posteriors[[place[tuple(row)] for row in a.codes.tolist()]], ".c")
                for a in self.arrangements
            ]
        ).min(axis=0)


def _replicate_counts(
    codes: NDArray,
    pattern_of: NDArray[np.intp],
    n_patterns: int,
    ids: NDArray | None,
    n_resamples: int,
    seed: int,
) -> NDArray[np.float64]:
    """Each bootstrap replicate as counts of the verdict patterns: items drawn with replacement
    in the order of their verdicts, or — ``ids``, where a cluster holds two items — clusters
    drawn with replacement (in the order of their contents), every item of a drawn cluster
    along."""
    n = pattern_of.size
    resampled = np.empty((n_resamples, n_patterns), dtype=np.float64)
    if ids is None:
        order = canonical_order(codes)  # the items sorted by their verdicts
        indices, start = _resample_indices(n, n_resamples, seed), 0
        for rows in indices.slices(indices.step()):
            b = rows.shape[0]
            drawn = pattern_of[order[rows]] + np.arange(b)[:, None] * n_patterns
            counted = np.bincount(drawn.ravel(), minlength=b * n_patterns)
            resampled[start : start + b] = counted.reshape(b, n_patterns)
            start += b
        return resampled
    inverse, n_clusters = _cluster_index(ids, n)
    inverse = _canonical_clusters(inverse, n_clusters, [pattern_of])
    per_cluster = np.zeros((n_clusters, n_patterns))
    np.add.at(per_cluster, (inverse, pattern_of), 1.0)
    for start, rows in _cluster_draws(n_clusters, n, n_resamples, seed):
        resampled[start : start + rows.shape[0]] = _drawn_times(rows, n_clusters) @ per_cluster
    return resampled


def _warning(
    dependence: list[PairDependence], checkable: bool, n_judges: int, k: int
) -> str | None:
    flagged = [d for d in dependence if d.flagged]
    if flagged:
        pairs = ", ".join(
            f"{d.judges[0]} and {d.judges[1]} agree on {d.observed:.0%} of their items where "
            f"the model predicts {d.predicted:.0%} (excess {d.excess.value:+.2f} "
            f"[{d.excess.ci_low:+.2f}, {d.excess.ci_high:+.2f}], p = {d.p_value:.3f})"
            for d in flagged
        )
        return (
            f"the judges' errors are not independent given the class: {pairs}. Dawid–Skene "
            "counts dependent judges as independent evidence, so their accuracies are "
            "overstated and its verdicts lean to them; the pairs named are where the misfit "
            "shows, which need not be the dependent judges"
        )
    if not checkable:
        return (
            f"with {n_judges} judges on {k} classes the model can fit any table of verdicts: "
            "a dependence between judges cannot show in their verdicts, and the figures assume "
            "there is none"
        )
    return None
