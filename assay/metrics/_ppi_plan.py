"""How many human labels: from a pilot (a few labelled items and the judge's predictions on the
rest), the labels each estimator needs to reach a target half-width, and the half-width a
budget of labels buys.

The pilot gives the moments the variances are made of: ``Var(Y)``, ``Var(f)``, ``Cov(Y, f)``
and, for 0/1 labels and verdicts, the judge's sensitivity and specificity. For ``n`` labels and
``N`` unlabelled predictions, at the two-sided level ``1 − alpha``, the half-width is
``z_{1−α/2} · √V`` with

- human labels only: ``V = Var(Y) / n``;
- PPI++: ``V = λ² Var(f) / N + (Var(Y) − 2λ Cov(Y, f) + λ² Var(f)) / n`` at its best
  ``λ = Cov(Y, f) / ((1 + n/N) Var(f))``, clipped to [0, 1] (so never above human-only);
- Rogan–Gladen (delta method, prevalence ``θ``, flagged share ``p``, Youden's ``J = TPR + TNR −
  1``): ``V = [p(1 − p) / N + θ² TPR(1 − TPR) / (n θ) + (1 − θ)² TNR(1 − TNR) / (n (1 − θ))]
  / J²``, whose first term more labels never remove: a target below it is out of reach.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from pydantic import ConfigDict
from pydantic.dataclasses import dataclass

from assay.metrics._paired import _z
from assay.metrics._ppi import check_alpha, labels, predictions_of_kind
from assay.metrics._prevalence import rogan_gladen
from assay.metrics._validate import _same_length, as_scores
from assay.metrics._value import Undefinable

PlanMethod = Literal["human_only", "ppi++", "rogan_gladen"]
_MAX_LABELS = 10**12


@dataclass(frozen=True, config=ConfigDict(ser_json_inf_nan="constants"))
class PilotMoments:
    """What a pilot says about the labels and the judge's predictions (sample variances).

    ``sensitivity``, ``specificity``, ``prevalence`` (the share of positive labels) and
    ``flagged`` (the share of positive verdicts among the unlabelled items) are nan unless the
    labels and predictions are 0/1.
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


def pilot_moments(
    y: ArrayLike, predictions: ArrayLike, predictions_unlabelled: ArrayLike
) -> PilotMoments:
    """The moments of a pilot: the labelled items' ``y`` and ``predictions`` and the judge's
    ``predictions_unlabelled``. ``Var(f)`` is taken over all predictions, labelled or not."""
    y_arr = labels(y)
    f = as_scores(predictions, "predictions")
    _same_length(y_arr, f, ("y", "predictions"))
    f_u = as_scores(predictions_unlabelled, "predictions_unlabelled")
    moments = {
        "n_labelled": int(y_arr.size),
        "n_unlabelled": int(f_u.size),
        "var_y": float(np.var(y_arr, ddof=1)),
        "var_f": float(np.var(np.concatenate([f, f_u]), ddof=1)),
        "cov_yf": float(np.cov(y_arr, f)[0, 1]),
    }
    named = [(y_arr, "y"), (f, "predictions"), (f_u, "predictions_unlabelled")]
    binary = predictions_of_kind(named, None)
    if binary == "verdict":
        positives, negatives = y_arr == 1, y_arr == 0
        moments |= {
            "sensitivity": float(f[positives].mean()) if positives.any() else math.nan,
            "specificity": float(1 - f[negatives].mean()) if negatives.any() else math.nan,
            "prevalence": float(y_arr.mean()),
            "flagged": float(f_u.mean()),
        }
    return PilotMoments(**moments)


def _ppi_variance(m: PilotMoments, n: float, n_unlabelled: int) -> tuple[float, float]:
    """PPI++'s variance with ``n`` labels at its best clipped ``λ``, and that ``λ``."""
    lam = 0.0
    if m.var_f > 0:
        lam = min(1.0, max(0.0, m.cov_yf / ((1 + n / n_unlabelled) * m.var_f)))
    v = lam**2 * m.var_f / n_unlabelled + (m.var_y - 2 * lam * m.cov_yf + lam**2 * m.var_f) / n
    return v, lam


def _rogan_gladen_terms(m: PilotMoments, n_unlabelled: int) -> tuple[float, float] | None:
    """``(A, B)`` with Rogan–Gladen's variance ``A + B / n``; None when undefined."""
    se, sp, prev = m.sensitivity, m.specificity, m.prevalence
    youden = se + sp - 1
    if not youden > 0 or not 0 < prev < 1:
        return None
    theta = min(1.0, max(0.0, float(rogan_gladen(m.flagged, se, sp))))
    a = m.flagged * (1 - m.flagged) / n_unlabelled / youden**2
    b = (
        theta**2 * se * (1 - se) / prev + (1 - theta) ** 2 * sp * (1 - sp) / (1 - prev)
    ) / youden**2
    return a, b


def _check_pilot(pilot: PilotMoments, n_unlabelled: int | None) -> int:
    if not isinstance(pilot, PilotMoments):
        raise ValueError(
            f"pilot must be the PilotMoments of a pilot (pilot_moments), got {pilot!r}"
        )
    n_unlabelled = pilot.n_unlabelled if n_unlabelled is None else n_unlabelled
    if (
        isinstance(n_unlabelled, bool)
        or not isinstance(n_unlabelled, int | np.integer)
        or n_unlabelled < 1
    ):
        raise ValueError(f"n_unlabelled must be a positive integer, got {n_unlabelled!r}")
    return int(n_unlabelled)


_UNDEFINED_RG = (
    "Rogan–Gladen is undefined: the pilot's judge is no better than chance (TPR + TNR ≤ 1) or "
    "its labels are all one class"
)


def labels_needed(
    pilot: PilotMoments,
    half_width: float,
    *,
    alpha: float = 0.05,
    n_unlabelled: int | None = None,
) -> tuple[LabelPlan, ...]:
    """The human labels each estimator needs for a two-sided interval of ``half_width`` at level
    ``1 − alpha`` (human-only, PPI++ and, for 0/1 labels and verdicts, Rogan–Gladen), next to
    ``n_unlabelled`` predictions (default: the pilot's)."""
    alpha = check_alpha(alpha)
    n_u = _check_pilot(pilot, n_unlabelled)
    if not 0 < half_width < math.inf:
        raise ValueError(f"half_width must be a positive number, got {half_width!r}")
    target = (half_width / _z(1 - alpha / 2)) ** 2  # the variance to reach
    n_human = max(1, math.ceil(pilot.var_y / target))
    # PPI++'s variance falls with n and never exceeds human-only's: bisect on [1, n_human].
    low, high = 0, n_human
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if _ppi_variance(pilot, mid, n_u)[0] <= target else (mid, high)
    plans = [
        LabelPlan("human_only", n_human, half_width, alpha, n_u, 0.0),
        LabelPlan("ppi++", high, half_width, alpha, n_u, _ppi_variance(pilot, high, n_u)[1]),
    ]
    if pilot.binary:
        terms = _rogan_gladen_terms(pilot, n_u)
        if terms is None:
            plans.append(
                LabelPlan("rogan_gladen", None, half_width, alpha, n_u, note=_UNDEFINED_RG)
            )
        elif terms[0] >= target:
            note = (
                f"out of reach: the {n_u} unlabelled verdicts alone leave a half-width of "
                f"{_z(1 - alpha / 2) * math.sqrt(terms[0]):.4f}"
            )
            plans.append(LabelPlan("rogan_gladen", None, half_width, alpha, n_u, note=note))
        else:
            n_rg = min(_MAX_LABELS, max(1, math.ceil(terms[1] / (target - terms[0]))))
            plans.append(LabelPlan("rogan_gladen", n_rg, half_width, alpha, n_u))
    return tuple(plans)


def half_width_for_labels(
    pilot: PilotMoments,
    n_labels: int,
    *,
    alpha: float = 0.05,
    n_unlabelled: int | None = None,
) -> tuple[LabelPlan, ...]:
    """The two-sided half-width at level ``1 − alpha`` that ``n_labels`` human labels buy with
    each estimator (human-only, PPI++ and, for 0/1 labels and verdicts, Rogan–Gladen)."""
    alpha = check_alpha(alpha)
    n_u = _check_pilot(pilot, n_unlabelled)
    if isinstance(n_labels, bool) or not isinstance(n_labels, int | np.integer) or n_labels < 1:
        raise ValueError(f"n_labels must be a positive integer, got {n_labels!r}")
    n_labels = int(n_labels)
    z = _z(1 - alpha / 2)
    v_ppi, lam = _ppi_variance(pilot, n_labels, n_u)
    plans = [
        LabelPlan("human_only", n_labels, z * math.sqrt(pilot.var_y / n_labels), alpha, n_u, 0.0),
        LabelPlan("ppi++", n_labels, z * math.sqrt(v_ppi), alpha, n_u, lam),
    ]
    if pilot.binary:
        terms = _rogan_gladen_terms(pilot, n_u)
        if terms is None:
            plans.append(
                LabelPlan("rogan_gladen", n_labels, math.nan, alpha, n_u, note=_UNDEFINED_RG)
            )
        else:
            hw = z * math.sqrt(terms[0] + terms[1] / n_labels)
            plans.append(LabelPlan("rogan_gladen", n_labels, hw, alpha, n_u))
    return tuple(plans)
