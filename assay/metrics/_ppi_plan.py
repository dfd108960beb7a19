"""How many human labels: from a pilot (a few labelled items and the judge's predictions on the
rest), the labels each estimator needs to reach a target half-width, and the half-width a
budget of labels buys.

The pilot gives the moments the variances are made of: ``Var(Y)``, ``Cov(Y, f)`` and the
residual ``Var(Y − λf)`` from the labelled items, ``Var(f)`` over every prediction and, for 0/1
labels and verdicts, the judge's sensitivity and specificity. The labels are drawn from the
pool's ``N`` items, so ``n`` labels leave ``N − n`` predictions unlabelled (``n_unlabelled``
fixes that number instead, for labels drawn from another sample of the same population). At
the two-sided level ``1 − alpha`` the half-width is ``z_{1−α/2} · √V`` with

- human labels only: ``V = Var(Y) / n``;
- PPI++: ``V = λ² Var(f) / (N − n) + Var(Y − λf) / n`` at the ``λ = Cov(Y, f) / ((1 + n/(N −
  n)) Var(f))`` PPI++ will use, clipped to [0, 1] — the variance of ``ppi_py``'s interval;
- Rogan–Gladen (delta method, prevalence ``θ``, flagged share ``p``, Youden's ``J = TPR + TNR −
  1``): ``V = [p(1 − p) / (N − n) + θ TPR(1 − TPR) / n + (1 − θ) TNR(1 − TNR) / n] / J²`` — of
  ``n`` uniform labels about ``nθ`` are positive, and TPR's variance ``TPR(1 − TPR)/(nθ)`` is
  weighed by ``(∂θ/∂TPR)² = θ²/J²``; TNR's likewise.

Items in clusters (an Inspect log's epochs of one sample: the same input and reference, judged
again) are not independent, and the estimators' standard errors take the clusters as the unit.
A pilot given its clusters plans with the variances those standard errors show: each moment a
variance term is made of is replaced by its clustered counterpart, ``G/(G − 1) · Σ_c S_c(a) S_c(b)
/ n`` over the ``G`` clusters (``S_c`` the sum of a cluster's centred values) — the sample
variance when every cluster holds one item, ``m`` times it for ``m`` identical epochs of each
sample — so that ``V`` at the pilot's own ``n`` is the clustered standard error's square (its
small-sample factor ``G/(G − 1)`` as the sample variance's ``n/(n − 1)``). The labels to come are
taken to fall into clusters as the pilot's did; ``λ`` stays the one PPI++ computes from the plain
moments.

A target that no number of labels short of labelling every item reaches is out of reach, and
the plan's note gives the narrowest half-width labelling can buy. A pilot whose labels are all
alike has a sample variance of 0, which is no evidence of none: a rate is planned with a
stand-in, the variance at the pilot's rule-of-three upper bound on the rare class (at most ½),
and the note says so; a score with no spread in the pilot cannot be planned from.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from pydantic import ConfigDict
from pydantic.dataclasses import dataclass

from assay.metrics._cluster import effective_trials
from assay.metrics._paired import _z
from assay.metrics._ppi import _codes, _weights, check_alpha, labels, predictions_of_kind
from assay.metrics._prevalence import rogan_gladen
from assay.metrics._validate import _same_length, as_scores
from assay.metrics._value import Undefinable

PlanMethod = Literal["human_only", "ppi++", "rogan_gladen"]
_MAX_LABELS = 10**12


@dataclass(frozen=True, config=ConfigDict(ser_json_inf_nan="constants"))
class ClusteredMoments:
    """A pilot's moments with its items in clusters, each per item: ``G/(G − 1) · Σ_c S_c(a)
    S_c(b) / n`` over its ``G`` clusters (``S_c``: the sum of cluster ``c``'s centred values), the
    sample (co)variance when no cluster holds two items. ``var_y``, ``cov_yf`` and
    ``var_f_labelled`` over the labelled items, ``var_f_unlabelled`` over the unlabelled ones.
    The design effects — each clustered variance over the plain one — of the labels
    (``design_effect_labelled``), of the unlabelled predictions (``design_effect_unlabelled``,
    which also scales Rogan–Gladen's flagged-rate term) and, for 0/1 labels and verdicts, of
    the verdicts about their class's rate (``design_effect_errors``: ``f − TPR·y − (1 − TNR)(1
    − y)``, which scales Rogan–Gladen's label term; nan otherwise)."""

    clusters_labelled: int
    clusters_unlabelled: int
    var_y: Undefinable
    cov_yf: Undefinable
    var_f_labelled: Undefinable
    var_f_unlabelled: Undefinable
    design_effect_labelled: Undefinable
    design_effect_unlabelled: Undefinable
    design_effect_errors: Undefinable = math.nan


@dataclass(frozen=True, config=ConfigDict(ser_json_inf_nan="constants"))
class PilotMoments:
    """What a pilot says about the labels and the judge's predictions (sample variances).

    ``var_f`` is over every prediction, ``var_f_labelled`` over the labelled items' (the
    residual ``Var(Y − λf)`` is the pilot's own, never negative; nan: ``var_f`` stands in).
    ``sensitivity``, ``specificity``, ``prevalence`` (the share of positive labels) and
    ``flagged`` (the share of positive verdicts among the unlabelled items) are nan unless the
    labels and predictions are 0/1. ``note`` says when ``var_y`` is a stand-in (labels all
    alike). ``clustered``: the variances with the items in clusters (:class:`ClusteredMoments`),
    None when no cluster holds two items.
    """

    n_labelled: int
    n_unlabelled: int
    var_y: Undefinable
    var_f: Undefinable
    cov_yf: Undefinable
    sensitivity: Undefinable = math.nan
    specificity: Undefinable = math.nan
    prevalence: Undefinable = math.nan
    flagged: Undefinable = math.nan
    var_f_labelled: Undefinable = math.nan
    note: str | None = None
    clustered: ClusteredMoments | None = None

    @property
    def binary(self) -> bool:
        return not math.isnan(self.sensitivity + self.specificity)


@dataclass(frozen=True, config=ConfigDict(ser_json_inf_nan="constants"))
class LabelPlan:
    """One estimator's plan: ``n_labels`` human labels give the two-sided ``half_width`` at level
    ``1 − alpha`` next to ``n_unlabelled`` predictions. ``n_labels`` is None when no number of
    labels reaches the target (the note says why)."""

    method: PlanMethod
    n_labels: int | None
    half_width: Undefinable
    alpha: Undefinable
    n_unlabelled: int
    lam: Undefinable | None = None
    note: str | None = None


RULE_OF_THREE_LEVEL = 0.05
"""The one-sided level of the upper bound on a rate none of a pilot's labels shows."""


def pilot_moments(
    y: ArrayLike,
    predictions: ArrayLike,
    predictions_unlabelled: ArrayLike,
    *,
    weights: ArrayLike | None = None,
    weights_unlabelled: ArrayLike | None = None,
    clusters: ArrayLike | None = None,
    clusters_unlabelled: ArrayLike | None = None,
) -> PilotMoments:
    """The moments of a pilot: the labelled items' ``y`` and ``predictions`` and the judge's
    ``predictions_unlabelled``. ``Var(f)`` is taken over all predictions, labelled or not.

    ``clusters`` and ``clusters_unlabelled`` (one id per labelled and unlabelled item, as the
    estimators take them): where a cluster holds two items, the pilot's ``clustered`` moments
    are computed too (:class:`ClusteredMoments`), and the plans use them.

    With observation ``weights`` (and ``weights_unlabelled``), the moments are those of the
    weighted terms the estimators average — ``w·y`` and ``w·f``, the weights normalised to mean 1
    among the labelled and among the unlabelled items, as ``ppi_py`` weighs —, so the plan's
    half-widths are the weighted estimators'; Rogan–Gladen, which takes no weights, is left out
    (its moments are nan).

    0/1 labels all alike (12 zeros; 30 labels of a rare event, none positive) plan with the
    variance ``b(1 − b)`` at ``b = 1 − 0.05^(1/n)``, the one-sided 95% upper bound on the rate
    of the class the pilot did not see (the rule of three, ≈ 3/n), at most ½ — not the sample's
    0, which would plan a half-width of 0 from one label. Scores all alike are refused."""
    y_arr = labels(y)
    f = as_scores(predictions, "predictions")
    _same_length(y_arr, f, ("y", "predictions"))
    f_u = as_scores(predictions_unlabelled, "predictions_unlabelled")
    n = int(y_arr.size)
    weighted = weights is not None or weights_unlabelled is not None
    w = _weights(weights, n, "weights")
    w_u = _weights(weights_unlabelled, f_u.size, "weights_unlabelled")
    wy, wf, wf_u = w * y_arr, w * f, w_u * f_u
    moments: dict = {
        "n_labelled": n,
        "n_unlabelled": int(f_u.size),
        "var_y": float(np.var(wy, ddof=1)),
        "var_f": float(np.var(np.concatenate([wf, wf_u]), ddof=1)),
        "cov_yf": float(np.cov(wy, wf)[0, 1]),
        "var_f_labelled": float(np.var(wf, ddof=1)),
    }
    if not np.var(y_arr) > 0:
        value = float(y_arr[0])
        if value not in (0.0, 1.0):
            raise ValueError(
                f"the pilot's {n} labels are all {value:g}: a variance of 0 from them is no "
                "evidence of none, and a score has no stand-in for it: label more items"
            )
        bound = min(0.5, 1 - RULE_OF_THREE_LEVEL ** (1 / n))
        # Var(w·Y) for a Y of rate r apart from the weights (mean 1): E[w²] r − r², which is
        # b(1 − b) unweighted, whichever class is the rare one
        rate = bound if value == 0 else 1 - bound
        stand_in = float(np.mean(w**2)) * rate - rate**2
        moments["var_y"], moments["cov_yf"] = stand_in, 0.0
        moments["note"] = (
            f"the pilot's {n} labels are all {value:g}: planned with Var(Y) = {stand_in:.3g}"
            f", a rate of {bound:.3g} (the {100 * (1 - RULE_OF_THREE_LEVEL):g}% upper bound when "
            f"none of {n} labels is {1 - value:g}, at most ½), not the pilot's 0"
        )
    grouped = _codes(clusters, clusters_unlabelled, n, f_u.size)
    terms = (wy, wf, wf_u)
    if weighted:  # Rogan–Gladen takes no weights: its moments stay nan
        return _with_clusters(PilotMoments(**moments), terms, grouped)
    named = [(y_arr, "y"), (f, "predictions"), (f_u, "predictions_unlabelled")]
    binary = predictions_of_kind(named, None)
    errors = None
    if binary == "verdict":
        positives, negatives = y_arr == 1, y_arr == 0
        moments |= {
            "sensitivity": float(f[positives].mean()) if positives.any() else math.nan,
            "specificity": float(1 - f[negatives].mean()) if negatives.any() else math.nan,
            "prevalence": float(y_arr.mean()),
            "flagged": float(f_u.mean()),
        }
        # each verdict about its class's rate: Rogan–Gladen's label term (nan rates: 0 of it)
        tpr, tnr = np.nan_to_num(moments["sensitivity"]), np.nan_to_num(moments["specificity"])
        errors = f - tpr * y_arr - (1 - tnr) * (1 - y_arr)
    return _with_clusters(PilotMoments(**moments), terms, grouped, errors)


def _with_clusters(
    pilot: PilotMoments,
    terms: tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]],
    grouped: tuple[NDArray[np.intp], NDArray[np.intp], int] | None,
    errors: NDArray[np.float64] | None = None,
) -> PilotMoments:
    """``pilot`` with its :class:`ClusteredMoments` (``terms``: the weighted labels, labelled
    and unlabelled predictions the moments were taken of); as it is when ``grouped`` is None
    (no cluster holds two items)."""
    if grouped is None:
        return pilot
    wy, wf, wf_u = terms
    lab, unl, _ = grouped
    for codes, which in ((lab, "labelled"), (unl, "unlabelled")):
        if np.unique(codes).size < 2:
            raise ValueError(
                f"the pilot's {which} items are all in one cluster (the epochs of one sample): "
                "their variance over clusters is undefined; the pilot needs items of at least two"
            )
    var_y, cov_yf = _over_clusters(wy, wy, lab), _over_clusters(wy, wf, lab)
    var_f_u = _over_clusters(wf_u, wf_u, unl)
    if pilot.note:  # labels all alike: the stand-in, as if a cluster's were one label
        var_y, cov_yf = pilot.var_y * wy.size / effective_trials(lab), 0.0
    plain_f_u = float(np.var(wf_u, ddof=1)) if wf_u.size > 1 else math.nan
    design_errors = math.nan
    if errors is not None:
        plain = float(np.var(errors, ddof=1))
        design_errors = _over_clusters(errors, errors, lab) / plain if plain > 0 else 1.0
    clustered = ClusteredMoments(
        clusters_labelled=int(np.unique(lab).size),
        clusters_unlabelled=int(np.unique(unl).size),
        var_y=var_y,
        cov_yf=cov_yf,
        var_f_labelled=_over_clusters(wf, wf, lab),
        var_f_unlabelled=var_f_u,
        design_effect_labelled=var_y / pilot.var_y if pilot.var_y > 0 else math.nan,
        design_effect_unlabelled=var_f_u / plain_f_u if plain_f_u > 0 else math.nan,
        design_effect_errors=design_errors,
    )
    return dataclasses.replace(pilot, clustered=clustered)


def _over_clusters(
    a: NDArray[np.float64], b: NDArray[np.float64], codes: NDArray[np.intp]
) -> float:
    """The per-item covariance of ``a`` and ``b`` over the clusters ``codes``: ``G/(G − 1) ·
    Σ_c S_c(a) S_c(b) / n`` (``S_c`` the sum of cluster ``c``'s centred values; ``G`` the
    clusters present) — ``n`` times the square of :func:`~assay.metrics._ppi.clustered_se`'s
    standard error of the mean for ``a = b``, with the small-sample factor the sample variance
    has; the sample covariance when every cluster holds one item."""
    present, inverse = np.unique(codes, return_inverse=True)
    g = present.size
    sums_a = np.bincount(inverse, weights=a - a.mean(), minlength=g)
    sums_b = np.bincount(inverse, weights=b - b.mean(), minlength=g)
    return g / (g - 1) * float(np.sum(sums_a * sums_b)) / a.size


class _Pool:
    """How many predictions stay unlabelled when ``n`` items are labelled: ``N − n`` of the
    ``n_items`` items (the labels are drawn from them), or a fixed ``n_unlabelled``."""

    def __init__(self, n_items: int | None, n_unlabelled: int | None) -> None:
        self.n_items, self.fixed = n_items, n_unlabelled

    def unlabelled(self, n: float) -> float:
        return self.fixed if self.fixed is not None else self.n_items - n  # type: ignore[operator]

    @property
    def most(self) -> int:
        """The most labels that leave a prediction unlabelled."""
        return _MAX_LABELS if self.fixed is not None else self.n_items - 1  # type: ignore[operator]

    def left(self, n: int) -> int:
        return max(0, int(self.unlabelled(n)))


def _ppi_variance(m: PilotMoments, n: float, n_unlabelled: float) -> tuple[float, float]:
    """PPI++'s variance with ``n`` labels and ``n_unlabelled`` predictions at the clipped ``λ``
    PPI++ will use (``ppi_py``'s), and that ``λ``. The residual ``Var(Y − λf)`` is the pilot's
    own (its labelled predictions' variance): never negative, as ``Var(f)`` over every item
    with the pilot's ``Cov(Y, f)`` can make it."""
    lam = 0.0
    if m.var_f > 0:
        lam = min(1.0, max(0.0, m.cov_yf / ((1 + n / n_unlabelled) * m.var_f)))
    c = m.clustered
    if c is not None:  # the variances over the clusters, λ as PPI++ computes it
        residual = max(0.0, c.var_y - 2 * lam * c.cov_yf + lam**2 * c.var_f_labelled)
        return lam**2 * c.var_f_unlabelled / n_unlabelled + residual / n, lam
    var_f_labelled = m.var_f if math.isnan(m.var_f_labelled) else m.var_f_labelled
    residual = max(0.0, m.var_y - 2 * lam * m.cov_yf + lam**2 * var_f_labelled)
    return lam**2 * m.var_f / n_unlabelled + residual / n, lam


def _var_y(m: PilotMoments) -> float:
    """The labels' variance the human-only estimate has: over the clusters, if any."""
    return m.var_y if m.clustered is None else m.clustered.var_y


def _rogan_gladen_terms(m: PilotMoments) -> tuple[float, float] | None:
    """``(A, B)`` with Rogan–Gladen's variance ``A / n_unlabelled + B / n``; None when
    undefined."""
    se, sp, prev = m.sensitivity, m.specificity, m.prevalence
    youden = se + sp - 1
    if not youden > 0 or not 0 < prev < 1:
        return None
    theta = min(1.0, max(0.0, float(rogan_gladen(m.flagged, se, sp))))
    a = m.flagged * (1 - m.flagged) / youden**2
    b = (theta * se * (1 - se) + (1 - theta) * sp * (1 - sp)) / youden**2
    c = m.clustered
    if c is not None:  # each term times its design effect over the clusters
        a *= 1.0 if math.isnan(c.design_effect_unlabelled) else c.design_effect_unlabelled
        b *= 1.0 if math.isnan(c.design_effect_errors) else c.design_effect_errors
    return a, b


def _check_pilot(pilot: PilotMoments, n_unlabelled: int | None, n_items: int | None) -> _Pool:
    if not isinstance(pilot, PilotMoments):
        raise ValueError(
            f"pilot must be the PilotMoments of a pilot (pilot_moments), got {pilot!r}"
        )
    if n_unlabelled is not None and n_items is not None:
        raise ValueError(
            "n_unlabelled and n_items: give one (a fixed number of unlabelled predictions, or "
            "the items the labels are drawn from)"
        )
    for name, value, least in (("n_unlabelled", n_unlabelled, 1), ("n_items", n_items, 2)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int | np.integer) or value < least
        ):
            raise ValueError(f"{name} must be an integer of at least {least}, got {value!r}")
    var_f_labelled = pilot.var_f if math.isnan(pilot.var_f_labelled) else pilot.var_f_labelled
    if pilot.cov_yf**2 > pilot.var_y * var_f_labelled * (1 + 1e-9) + 1e-15:
        raise ValueError(
            f"the pilot's moments are inconsistent: Cov(Y, f)² = {pilot.cov_yf**2:.3g} exceeds "
            f"Var(Y) · Var(f) = {pilot.var_y * var_f_labelled:.3g} on the labelled items"
        )
    if n_unlabelled is not None:
        return _Pool(None, int(n_unlabelled))
    return _Pool(
        int(n_items) if n_items is not None else pilot.n_labelled + pilot.n_unlabelled, None
    )


_UNDEFINED_RG = (
    "Rogan–Gladen is undefined: the pilot's judge is no better than chance (TPR + TNR ≤ 1) or "
    "its labels are all one class"
)


def _fewest(variance: Callable[[int], float], target: float, high: int) -> int | None:
    """The fewest labels in [1, ``high``] whose ``variance(n)`` reaches ``target``, the
    variance falling with n on that range; None when even ``high`` does not."""
    if variance(high) > target:
        return None
    low = 0
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if variance(mid) <= target else (mid, high)
    return high


def _rg_best(a: float, b: float, pool: _Pool) -> int:
    """The labels at which Rogan–Gladen's variance ``a/(N − n) + b/n`` is least: more labels
    shrink ``b/n`` but leave fewer unlabelled verdicts for the flagged rate."""
    if pool.fixed is not None:
        return _MAX_LABELS
    big_n = pool.n_items
    assert big_n is not None
    root = big_n * math.sqrt(b) / (math.sqrt(a) + math.sqrt(b)) if a + b > 0 else big_n - 1
    near = {min(big_n - 1, max(1, math.floor(root))), min(big_n - 1, max(1, math.ceil(root)))}
    return min(near, key=lambda n: a / (big_n - n) + b / n)


def labels_needed(
    pilot: PilotMoments,
    half_width: float,
    *,
    alpha: float = 0.05,
    n_unlabelled: int | None = None,
    n_items: int | None = None,
) -> tuple[LabelPlan, ...]:
    """The human labels each estimator needs for a two-sided interval of ``half_width`` at level
    ``1 − alpha`` (human-only, PPI++ and, for 0/1 labels and verdicts, Rogan–Gladen). The labels
    are drawn from ``n_items`` items (default: the pilot's, labelled and not), each one labelled
    leaving one prediction fewer; ``n_unlabelled`` instead fixes the predictions' number (labels
    from another sample)."""
    alpha = check_alpha(alpha)
    pool = _check_pilot(pilot, n_unlabelled, n_items)
    if not 0 < half_width < math.inf:
        raise ValueError(f"half_width must be a positive number, got {half_width!r}")
    z = _z(1 - alpha / 2)
    target = (half_width / z) ** 2  # the variance to reach
    n_human = max(1, math.ceil(_var_y(pilot) / target))
    plans = [LabelPlan("human_only", n_human, half_width, alpha, pool.left(n_human), 0.0)]

    def ppi(n: float) -> float:
        return _ppi_variance(pilot, n, pool.unlabelled(n))[0]

    high = pool.most if pool.fixed is None else n_human
    while pool.fixed is not None and ppi(high) > target and high < _MAX_LABELS:
        high = min(_MAX_LABELS, 2 * high)  # the pilot's λ may leave PPI++ a hair over human
    n_ppi = _fewest(ppi, target, high)
    if n_ppi is None:
        plans.append(
            LabelPlan(
                "ppi++",
                None,
                half_width,
                alpha,
                pool.left(high),
                note=_out_of_reach(pool, high, z * math.sqrt(ppi(high))),
            )
        )
    else:
        lam = _ppi_variance(pilot, n_ppi, pool.unlabelled(n_ppi))[1]
        plans.append(LabelPlan("ppi++", n_ppi, half_width, alpha, pool.left(n_ppi), lam))
    if pilot.binary:
        plans.append(_rogan_gladen_needed(pilot, pool, target, half_width, alpha, z))
    return _with_pilot_notes(plans, pilot)


def _out_of_reach(pool: _Pool, n: int, half_width: float) -> str:
    if pool.fixed is not None:
        return f"out of reach: {n} labels leave a half-width of {half_width:.4f}"
    return (
        f"out of reach short of labelling every item: {n} of the {pool.n_items} labelled leave "
        f"± {half_width:.4f}"
    )


def _rogan_gladen_needed(
    pilot: PilotMoments, pool: _Pool, target: float, half_width: float, alpha: float, z: float
) -> LabelPlan:
    terms = _rogan_gladen_terms(pilot)
    if terms is None:
        return LabelPlan("rogan_gladen", None, half_width, alpha, pool.left(1), note=_UNDEFINED_RG)
    a, b = terms
    if pool.fixed is not None:
        floor = a / pool.fixed
        if floor >= target:
            note = (
                f"out of reach: the {pool.fixed} unlabelled verdicts alone leave a half-width of "
                f"{z * math.sqrt(floor):.4f}"
            )
            return LabelPlan("rogan_gladen", None, half_width, alpha, pool.fixed, note=note)
        n_rg = min(_MAX_LABELS, max(1, math.ceil(b / (target - floor))))
        return LabelPlan("rogan_gladen", n_rg, half_width, alpha, pool.fixed)
    best = _rg_best(a, b, pool)
    n_rg = _fewest(lambda n: a / pool.unlabelled(n) + b / n, target, best)
    if n_rg is None:
        hw = z * math.sqrt(a / pool.unlabelled(best) + b / best)
        note = (
            f"out of reach: at best, {best} of the {pool.n_items} labelled, ± {hw:.4f} (each "
            "label takes a verdict from the flagged rate)"
        )
        return LabelPlan("rogan_gladen", None, half_width, alpha, pool.left(best), note=note)
    return LabelPlan("rogan_gladen", n_rg, half_width, alpha, pool.left(n_rg))


def _with_note(plan: LabelPlan, note: str) -> LabelPlan:
    return dataclasses.replace(plan, note="; ".join(x for x in (plan.note, note) if x))


def _with_pilot_notes(plans: list[LabelPlan], pilot: PilotMoments) -> tuple[LabelPlan, ...]:
    """``plans`` with what the pilot says of itself: its stand-in variance, its clusters."""
    for note in (pilot.note, _clusters_note(pilot.clustered)):
        if note:
            plans = [_with_note(p, note) for p in plans]
    return tuple(plans)


def _clusters_note(c: ClusteredMoments | None) -> str | None:
    """What a plan over clusters says: how many, their design effects, and that the labels to
    come are taken to fall into clusters as the pilot's did."""
    if c is None:
        return None
    effects = [
        f"{name} {value:.2f}"
        for name, value in (
            ("on the labels", c.design_effect_labelled),
            ("on the predictions", c.design_effect_unlabelled),
        )
        if not math.isnan(value)
    ]
    return (
        f"the pilot's items are in clusters ({c.clusters_labelled} labelled, "
        f"{c.clusters_unlabelled} unlabelled, not independent): planned with the variances over "
        f"the clusters (design effect {', '.join(effects) or 'undefined'}), for labels to come "
        "that fall into clusters as the pilot's did"
    )


def half_width_for_labels(
    pilot: PilotMoments,
    n_labels: int,
    *,
    alpha: float = 0.05,
    n_unlabelled: int | None = None,
    n_items: int | None = None,
) -> tuple[LabelPlan, ...]:
    """The two-sided half-width at level ``1 − alpha`` that ``n_labels`` human labels buy with
    each estimator (human-only, PPI++ and, for 0/1 labels and verdicts, Rogan–Gladen), drawn
    from ``n_items`` items or next to a fixed ``n_unlabelled`` (see :func:`labels_needed`).
    ``n_labels`` of ``n_items`` or more leave no prediction: PPI++ and Rogan–Gladen are nan,
    the note says why."""
    alpha = check_alpha(alpha)
    pool = _check_pilot(pilot, n_unlabelled, n_items)
    if isinstance(n_labels, bool) or not isinstance(n_labels, int | np.integer) or n_labels < 1:
        raise ValueError(f"n_labels must be a positive integer, got {n_labels!r}")
    n_labels = int(n_labels)
    z = _z(1 - alpha / 2)
    human = z * math.sqrt(_var_y(pilot) / n_labels)
    if pool.fixed is None and n_labels >= pool.n_items:  # type: ignore[operator]
        every = (
            f"{n_labels} labels label every one of the {pool.n_items} items: no prediction is "
            "left to add, the labels alone are the answer"
        )
        plans = [
            LabelPlan("human_only", n_labels, human, alpha, 0, 0.0),
            LabelPlan("ppi++", n_labels, math.nan, alpha, 0, note=every),
        ]
        if pilot.binary:
            plans.append(LabelPlan("rogan_gladen", n_labels, math.nan, alpha, 0, note=every))
    else:
        n_u = pool.left(n_labels)
        v_ppi, lam = _ppi_variance(pilot, n_labels, n_u)
        plans = [
            LabelPlan("human_only", n_labels, human, alpha, n_u, 0.0),
            LabelPlan("ppi++", n_labels, z * math.sqrt(v_ppi), alpha, n_u, lam),
        ]
        if pilot.binary:
            terms = _rogan_gladen_terms(pilot)
            if terms is None:
                plans.append(
                    LabelPlan("rogan_gladen", n_labels, math.nan, alpha, n_u, note=_UNDEFINED_RG)
                )
            else:
                hw = z * math.sqrt(terms[0] / n_u + terms[1] / n_labels)
                plans.append(LabelPlan("rogan_gladen", n_labels, hw, alpha, n_u))
    return _with_pilot_notes(plans, pilot)
