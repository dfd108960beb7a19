"""An item response view of raters: how strict each judge (or human) is, how well it tells
items apart, and how good each judged item is, from one matrix of ordinal scores.

The model is a graded response model (Samejima) with a rater facet. In item response theory
the *items* of a test carry discrimination and thresholds and the *persons* carry a latent
trait; here the roles are: a **rater** plays the test item (its discrimination and severity are
what is estimated) and a **judged item** plays the person (its latent quality θ). For rater
``r`` and judged item ``i``, with the scale's categories ``0 < 1 < … < L−1``::

    P(score ≥ c | θᵢ) = σ(a_r · θᵢ − s_r − τ_c),   c = 1 … L−1,   θᵢ ~ N(0, 1)

- ``a_r`` **discrimination**: how much the rater's scores follow the items' quality. Near 0 the
  rater scores every item alike whatever its quality (a rater answering at random, or always
  the same); negative, it ranks items against the rest of the panel.
- ``s_r`` **severity**: how much less likely, in log-odds, the rater is to give an item of
  average quality any higher category than the panel's average rater (the severities sum to
  0). Positive: strict; negative: lenient. It is measured at the average item, so it stays
  defined for a rater that cannot tell items apart.
- ``τ_c`` the scale's thresholds, shared by the raters: one scale, so severities compare.
- ``θᵢ`` an item's **quality**: its posterior mean (EAP) given all its scores, with its
  posterior standard deviation. A low-quality item is one that is hard to score high on.

The shared thresholds (Muraki's rating-scale form of the graded response model) are what make
severities comparable: a per-rater set of thresholds (the plain graded response model,
``girth.grm_mml``) re-codes each rater's own categories, so a strict judge that never gives
the top score loses that category and looks like any other. The fit is marginal maximum
likelihood over θ (Gauss–Hermite quadrature; Bock & Aitkin) with weak normal priors (sd 5) on
``a_r`` and ``s_r``, which keep a rater who gives one score everywhere finite and change
nothing noticeable otherwise. Intervals are Wald intervals from the observed information
(the numerical Hessian of the fitted objective).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Hashable

import numpy as np
from numpy.typing import NDArray

from assay.metrics._annotators import AnnotationMatrix
from assay.metrics._bias_records import ItemQuality, RaterModel, RaterParameters
from assay.metrics._intervals import _check_confidence, _z
from assay.metrics._value import MetricValue

WALD = "Wald (observed information)"
PRIOR_SD = 5.0
QUADRATURE_POINTS = 41
MIN_SCORES_PER_RATER = 2


@dataclasses.dataclass(frozen=True)
class _Data:
    """Scores as category indices (−1: missing), their one-hot form (items, raters, levels),
    and the quadrature nodes and log weights of N(0, 1)."""

    codes: NDArray[np.int64]
    onehot: NDArray[np.float64]
    nodes: NDArray[np.float64]
    log_weights: NDArray[np.float64]

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.onehot.shape  # type: ignore[return-value]


def rater_model(
    annotations: AnnotationMatrix,
    *,
    confidence: float = 0.95,
    quadrature_points: int = QUADRATURE_POINTS,
) -> RaterModel:
    """Fit the rater-facet graded response model to ``annotations`` (items × raters: judges
    and/or humans; integer ordinal scores, nan where a rater did not score an item).

    Every rater needs at least two scores and the panel at least two raters and two distinct
    scores; items without a score are left out and counted."""
    confidence = _check_confidence(confidence)
    if isinstance(quadrature_points, bool) or not isinstance(quadrature_points, int):
        raise ValueError(f"quadrature_points must be an integer, got {quadrature_points!r}")
    if quadrature_points < 11:
        raise ValueError(f"quadrature_points must be at least 11, got {quadrature_points}")
    values, levels, kept = _checked(annotations)
    data = _data(values, levels, quadrature_points)
    n_raters, n_levels = data.shape[1], data.shape[2]

    from scipy.optimize import minimize  # a second to import: on first use

    x0 = _start(data)
    fit = minimize(
        lambda x: _objective(x, data),
        x0,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 2000, "gtol": 1e-6},
    )
    x = fit.x
    a, s, tau = _unpack(x, n_raters, n_levels)
    covariance = _covariance(x, data)
    post = _posterior(a, s, tau, data)
    mean = post @ data.nodes
    sd = np.sqrt(np.maximum(post @ data.nodes**2 - mean**2, 0.0))
    # θ and −θ fit alike with every slope negated: the panel's slopes sum to a positive number
    sign = 1.0 if a.sum() >= 0 else -1.0
    a, quality = sign * a, sign * mean

    observed = data.codes >= 0
    raters = _raters(annotations.annotator_ids, values, observed, a, s, covariance, confidence)
    item_ids = [i for i, k in zip(annotations.item_ids, kept, strict=True) if k]
    items = tuple(
        ItemQuality(item=i, n=int(observed[row].sum()), quality=float(q), sd=float(d))
        for row, (i, q, d) in enumerate(zip(item_ids, quality, sd, strict=True))
    )
    return RaterModel(
        raters=raters,
        items=items,
        levels=tuple(float(v) for v in levels),
        thresholds=tuple(float(t) for t in tau),
        log_likelihood=-float(_objective(x, data, prior=False)[0]),
        converged=bool(fit.success),
        confidence=confidence,
        n_items_dropped=int((~kept).sum()),
        note=None if fit.success else f"the optimizer did not converge: {fit.message}",
    )


def _raters(
    names: tuple[Hashable, ...],
    values: NDArray[np.float64],
    observed: NDArray[np.bool_],
    a: NDArray[np.float64],
    s: NDArray[np.float64],
    covariance: NDArray[np.float64],
    confidence: float,
) -> tuple[RaterParameters, ...]:
    """Each rater's discrimination and severity with their Wald intervals, and its reading."""
    a_se, s_se = _standard_errors(covariance, len(names))
    z = _z(confidence)
    out = []
    for r, rater in enumerate(names):
        scores = values[observed[:, r], r]
        discrimination = _wald(a[r], a_se[r], z, scores.size)
        severity = _wald(s[r], s_se[r], z, scores.size)
        one_score = bool(np.all(scores == scores[0]))
        out.append(
            RaterParameters(
                rater=rater,
                n=int(scores.size),
                mean_score=float(scores.mean()),
                discrimination=discrimination,
                severity=severity,
                reading=_reading(discrimination, severity),
                note=f"gave {scores[0]:g} on every item: its severity is beyond what the scores "
                "can measure (its value is the prior's bound), and its scores carry nothing "
                "about the items"
                if one_score
                else None,
            )
        )
    return tuple(out)


def _checked(
    annotations: AnnotationMatrix,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """The scores of the items that have one, the distinct score values in order, and which
    items were kept."""
    values = annotations.values
    present = ~np.isnan(values)
    fractional = present & (values != np.round(np.where(present, values, 0.0)))
    if fractional.any():
        row, col = (int(x[0]) for x in np.nonzero(fractional))
        raise ValueError(
            f"scores must be integer ordinal categories, got {values[row, col]} for item "
            f"{annotations.item_ids[row]!r} by rater {annotations.annotator_ids[col]!r}"
        )
    if values.shape[1] < 2:
        raise ValueError(f"the rater model needs at least 2 raters, got {values.shape[1]}")
    counts = present.sum(axis=0)
    for col, count in enumerate(counts):
        if count < MIN_SCORES_PER_RATER:
            raise ValueError(
                f"rater {annotations.annotator_ids[col]!r} has {int(count)} score(s): the rater "
                f"model needs at least {MIN_SCORES_PER_RATER} per rater"
            )
    levels = np.unique(values[present])
    if levels.size < 2:
        raise ValueError(
            f"every score is {levels[0]:g}: the rater model needs at least two distinct scores"
        )
    kept = present.any(axis=1)
    return values[kept], levels, kept


def _data(values: NDArray[np.float64], levels: NDArray[np.float64], points: int) -> _Data:
    present = ~np.isnan(values)
    codes = np.full(values.shape, -1, dtype=np.int64)
    codes[present] = np.searchsorted(levels, values[present])
    onehot = np.zeros((*values.shape, levels.size))
    rows, cols = np.nonzero(present)
    onehot[rows, cols, codes[rows, cols]] = 1.0
    nodes, weights = np.polynomial.hermite_e.hermegauss(points)
    return _Data(codes, onehot, nodes, np.log(weights / weights.sum()))


def _unpack(
    x: NDArray[np.float64], n_raters: int, n_levels: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Slopes, severities (the last is minus the sum of the others) and ordered thresholds
    (the first, then the log gaps between consecutive ones)."""
    a = x[:n_raters]
    free = x[n_raters : 2 * n_raters - 1]
    s = np.append(free, -free.sum())
    first, log_gaps = x[2 * n_raters - 1], x[2 * n_raters :]
    tau = first + np.concatenate([[0.0], np.cumsum(np.exp(log_gaps))])
    assert tau.size == n_levels - 1
    return a, s, tau


def _start(data: _Data) -> NDArray[np.float64]:
    """Slopes 1, severities 0, thresholds from the panel's cumulative shares."""
    n_raters = data.shape[1]
    totals = data.onehot.sum(axis=(0, 1))
    at_least = np.clip(totals[::-1].cumsum()[::-1][1:] / totals.sum(), 0.01, 0.99)
    tau = -np.log(at_least / (1 - at_least)) * math.sqrt(1 + math.pi**2 / 3) / 1.7
    gaps = np.log(np.maximum(np.diff(tau), 0.05))
    return np.concatenate([np.ones(n_raters), np.zeros(n_raters - 1), [tau[0]], gaps])


def _category_terms(
    a: NDArray[np.float64], s: NDArray[np.float64], tau: NDArray[np.float64], nodes: NDArray
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Per rater, node and category: P(score = c), and the derivative of P(score ≥ c) in its
    linear predictor ``f_c = F_c (1 − F_c)`` (with ``f_0 = f_L = 0``), shapes (R, Q, L) and
    (R, Q, L + 1)."""
    eta = a[:, None, None] * nodes[None, :, None] - s[:, None, None] - tau[None, None, :]
    from scipy.special import expit

    inner = expit(eta)
    shape = (*eta.shape[:2], 1)
    cumulative = np.concatenate([np.ones(shape), inner, np.zeros(shape)], axis=2)
    slope = np.concatenate([np.zeros(shape), inner * (1 - inner), np.zeros(shape)], axis=2)
    probability = np.maximum(cumulative[..., :-1] - cumulative[..., 1:], 1e-300)
    return probability, slope, cumulative


def _log_joint(probability: NDArray[np.float64], data: _Data) -> NDArray[np.float64]:
    """log P(an item's scores | θ_q) + log weight_q, shape (items, nodes)."""
    return np.einsum("irc,rqc->iq", data.onehot, np.log(probability)) + data.log_weights


def _posterior(
    a: NDArray[np.float64], s: NDArray[np.float64], tau: NDArray[np.float64], data: _Data
) -> NDArray[np.float64]:
    joint = _log_joint(_category_terms(a, s, tau, data.nodes)[0], data)
    joint -= joint.max(axis=1, keepdims=True)
    post = np.exp(joint)
    return post / post.sum(axis=1, keepdims=True)


def _objective(
    x: NDArray[np.float64], data: _Data, prior: bool = True
) -> tuple[float, NDArray[np.float64]]:
    """The negative log marginal likelihood (plus the priors' penalty) and its gradient."""
    n_raters, n_levels = data.shape[1], data.shape[2]
    a, s, tau = _unpack(x, n_raters, n_levels)
    probability, slope, _ = _category_terms(a, s, tau, data.nodes)
    joint = _log_joint(probability, data)
    top = joint.max(axis=1, keepdims=True)
    post = np.exp(joint - top)
    total = post.sum(axis=1, keepdims=True)
    log_likelihood = float((top + np.log(total)).sum())
    post /= total
    # posterior mass of each (rater, node, category) over the items scored so
    mass = np.einsum("iq,irc->rqc", post, data.onehot)
    ratio = mass / probability
    d_eta = ratio * (slope[..., :-1] - slope[..., 1:])  # ∂ log P_c / ∂η, summed over items
    grad_a = (d_eta * data.nodes[None, :, None]).sum(axis=(1, 2))
    grad_s = -d_eta.sum(axis=(1, 2))
    inner = slope[..., 1:-1]
    grad_tau = (-ratio[..., 1:] * inner + ratio[..., :-1] * inner).sum(axis=(0, 1))
    penalty = 0.0
    if prior:
        penalty = float((a**2).sum() + (s**2).sum()) / (2 * PRIOR_SD**2)
        grad_a = grad_a - a / PRIOR_SD**2
        grad_s = grad_s - s / PRIOR_SD**2
    # chain rule to the free parameters: s_R = −Σ others; τ = first + cumulative exp(gaps)
    grad_free_s = grad_s[:-1] - grad_s[-1]
    gaps = np.exp(x[2 * n_raters :])
    tail = grad_tau[::-1].cumsum()[::-1]  # Σ over thresholds from each one on
    grad = np.concatenate([grad_a, grad_free_s, [tail[0]], gaps * tail[1:]])
    return -log_likelihood + penalty, -grad


def _covariance(x: NDArray[np.float64], data: _Data) -> NDArray[np.float64]:
    """The inverse of the numerical Hessian (central differences of the gradient)."""
    step = 1e-5
    hessian = np.empty((x.size, x.size))
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = step
        hessian[j] = (_objective(x + e, data)[1] - _objective(x - e, data)[1]) / (2 * step)
    hessian = (hessian + hessian.T) / 2
    return np.linalg.pinv(hessian)


def _standard_errors(
    covariance: NDArray[np.float64], n_raters: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Standard errors of the slopes and of every severity (the last one's by the delta
    method: it is minus the sum of the others)."""
    a_var = np.diag(covariance)[:n_raters]
    free = covariance[n_raters : 2 * n_raters - 1, n_raters : 2 * n_raters - 1]
    jacobian = np.vstack([np.eye(n_raters - 1), -np.ones(n_raters - 1)])
    s_var = np.diag(jacobian @ free @ jacobian.T)
    return np.sqrt(np.maximum(a_var, 0.0)), np.sqrt(np.maximum(s_var, 0.0))


def _wald(value: float, se: float, z: float, n: int) -> MetricValue:
    return MetricValue(
        value=float(value),
        ci_low=float(value - z * se),
        ci_high=float(value + z * se),
        n=n,
        ci_method=WALD,
    )


def _reading(discrimination: MetricValue, severity: MetricValue) -> str:
    if discrimination.ci_high is not None and discrimination.ci_high < 0:
        return "reverses the scale"
    if discrimination.ci_low is not None and discrimination.ci_low <= 0:
        return "cannot tell items apart"
    if severity.ci_low is not None and severity.ci_low > 0:
        return "strict"
    if severity.ci_high is not None and severity.ci_high < 0:
        return "lenient"
    return "typical"
