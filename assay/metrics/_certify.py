"""Certification: one-sided confidence bounds of a judge's metrics against stated bars.

A policy names metrics and bars ("TPR ≥ 0.8 and TNR ≥ 0.8 at 95%"); the judge is admitted when
every bound clears its bar. Rates (TPR, TNR, accuracy, precision, ...) get the exact
Clopper–Pearson bound, the other metrics (κ, CCC, MAE, ...) a one-sided percentile bootstrap
bound over items (:func:`assay.metrics.bootstrap_ci`). All bars are required, so the error
budget δ = 1 − confidence is split evenly across them (Bonferroni): each bound is taken at level
1 − δ/m, and the joint statement "every metric clears its bar" holds with probability ≥ 1 − δ.

An unscored judgment is never dropped: it counts as the worst verdict for the metric — the
other side of the event (a missed positive, a false alarm) for rates on the event, and the
category farthest from the reference on the full scale — so a judge cannot pass by failing to
answer the hard items.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    WithJsonSchema,
    field_validator,
    model_serializer,
    model_validator,
)

from assay.metrics._cluster import effective_trials, shared_clusters
from assay.metrics._intervals import (
    bootstrap_replicates,
    effective_clopper_pearson_interval,
)
from assay.metrics._kappa import _kappa_batched
from assay.metrics._ordinal import _ccc_batched, _mae_batched, _pearson_batched, _spearman_batched
from assay.metrics._validate import category_ranks
from assay.metrics._value import Resamples, Undefinable
from assay.types import Seed

Side = Literal["at_least", "at_most"]


# -- the bounds ----------------------------------------------------------------------------


def _check_counts(successes: int, trials: int) -> None:
    for value, name in ((successes, "successes"), (trials, "trials")):
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise ValueError(f"{name} must be an integer, got {value!r}")
    if trials < 1:
        raise ValueError(f"trials must be at least 1, got {trials}")
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must be between 0 and trials={trials}, got {successes}")


def _check_delta(delta: float) -> float:
    if not 0.0 < delta < 0.5:
        raise ValueError(f"delta (1 - confidence) must be in (0, 0.5), got {delta!r}")
    return float(delta)


def clopper_pearson_lower(successes: int, trials: int, delta: float) -> float:
    """The exact one-sided lower confidence bound at level 1 − ``delta`` of a binomial
    proportion: the p with P(X ≥ successes | p) = δ, i.e. the δ quantile of
    Beta(successes, trials − successes + 1); 0 when there is no success."""
    _check_counts(successes, trials)
    delta = _check_delta(delta)
    if successes == 0:
        return 0.0
    from scipy.stats import beta  # scipy.stats takes a second to import: on first use

    return float(beta.ppf(delta, successes, trials - successes + 1))


def clopper_pearson_upper(successes: int, trials: int, delta: float) -> float:
    """The exact one-sided upper confidence bound at level 1 − ``delta`` (1 when every trial
    succeeded): the 1 − δ quantile of Beta(successes + 1, trials − successes)."""
    _check_counts(successes, trials)
    delta = _check_delta(delta)
    if successes == trials:
        return 1.0
    from scipy.stats import beta

    return float(beta.ppf(1.0 - delta, successes + 1, trials - successes))


def bootstrap_bound(
    statistic: Callable[..., NDArray[np.float64]],
    *arrays: Any,
    delta: float,
    side: Side,
    n_resamples: int = 2000,
    seed: int = 0,
    clusters: ArrayLike | None = None,
) -> tuple[float, int]:
    """A one-sided percentile bootstrap bound at level 1 − ``delta`` of a batched statistic
    over items: the δ quantile of the replicates (``at_least``: a lower bound) or the 1 − δ
    quantile (``at_most``: an upper bound) — the matching end of the two-sided percentile
    interval at level 1 − 2δ that :func:`bootstrap_ci` draws, where every replicate is defined.
    Returns the bound and the number of replicates undefined; the bound is nan where the
    bootstrap cannot give one (:func:`percentile_bound`: no variation, or too many replicates
    undefined). ``clusters`` (one id per item): the clusters are resampled with all their items
    (:func:`~assay.metrics.cluster_replicates`)."""
    delta = _check_delta(delta)
    replicates = bootstrap_replicates(
        statistic, *arrays, n_resamples=n_resamples, seed=seed, clusters=clusters
    )
    bound, dropped, _ = percentile_bound(replicates, delta, side)
    return bound, dropped


def percentile_bound(
    replicates: NDArray[np.float64], delta: float, side: Side
) -> tuple[float, int, str | None]:
    """The one-sided bound at level 1 − ``delta`` from bootstrap ``replicates`` (nan where
    undefined): the bound, how many replicates were undefined, and why there is no bound
    (None when there is one). A bound that decides a certificate must not rest on what the
    bootstrap cannot see:

    - a replicate undefined (a resample with one class, where κ is 0 / 0) counts as failing —
      below every other for a lower bound, above for an upper one — not dropped: two items
      in perfect agreement gave κ's lower bound 1.000 from the half of the replicates that were
      defined, and a certificate "κ ≥ 0.99 at 95 %". Where more than δ of them are undefined,
      there is no bound;
    - replicates that never vary (every one the same value) bound nothing: the resamples
      cannot show how far the metric may be from what the items show (a judge right on every
      item of a handful). A rate's exact (Clopper–Pearson) bound is the one to certify there.

    With every replicate defined, the bound is the percentile :func:`bootstrap_ci` takes."""
    defined = replicates[~np.isnan(replicates)]
    total, dropped = int(replicates.size), int(replicates.size - defined.size)
    if defined.size == 0:
        return math.nan, dropped, "no bootstrap replicate was defined"
    if defined.min() == defined.max():
        return (
            math.nan,
            dropped,
            f"every defined bootstrap replicate is {float(defined[0]):.3f}: no variation, which "
            "bounds nothing (too few items, or every item agreeing; a rate's exact bound can "
            "be certified instead)",
        )
    if dropped == 0:  # the end of bootstrap_ci's interval at 1 − 2δ, to the last digit
        alpha = 1.0 - (1.0 - 2.0 * delta)
        q = 100 * alpha / 2 if side == "at_least" else 100 * (1 - alpha / 2)
        return float(np.percentile(defined, q)), 0, None
    # numpy's linear percentile of all replicates, the undefined ones at the failing end: its
    # position among them, then among the defined ones
    position = (total - 1) * (delta if side == "at_least" else 1.0 - delta)
    if side == "at_least":
        position -= dropped
    if position < 0 or position > defined.size - 1:
        return (
            math.nan,
            dropped,
            f"{dropped} of {total} bootstrap replicates undefined, each counted as failing: "
            f"more than the {delta:g} the bound may leave out",
        )
    share = position / (defined.size - 1) if defined.size > 1 else 0.0
    return float(np.quantile(defined, share)), dropped, None


# -- the metrics a policy may name ---------------------------------------------------------


@dataclass(frozen=True)
class _Rate:
    """A proportion on the event (or on exact agreement): which items are trials, which are
    successes, given the reference and verdict arrays (full scale) and event flags."""

    trials: Callable[[NDArray, NDArray, NDArray, NDArray], NDArray[np.bool_]]
    successes: Callable[[NDArray, NDArray, NDArray, NDArray], NDArray[np.bool_]]
    better: Side  # the direction a bare number in a policy means
    on_event: bool  # needs the event (a positive class)
    about: str


def _all(r: NDArray, c: NDArray, re: NDArray, ce: NDArray) -> NDArray[np.bool_]:
    return np.ones(r.shape, dtype=bool)


RATES: dict[str, _Rate] = {
    "accuracy": _Rate(_all, lambda r, c, re, ce: r == c, "at_least", False, "verdict = reference"),
    "error_rate": _Rate(_all, lambda r, c, re, ce: r != c, "at_most", False, "verdict ≠ reference"),
    "tpr": _Rate(
        lambda r, c, re, ce: re, lambda r, c, re, ce: re & ce, "at_least", True, "TP / (TP + FN)"
    ),
    "tnr": _Rate(
        lambda r, c, re, ce: ~re, lambda r, c, re, ce: ~re & ~ce, "at_least", True, "TN / (TN + FP)"
    ),
    "fpr": _Rate(
        lambda r, c, re, ce: ~re, lambda r, c, re, ce: ~re & ce, "at_most", True, "FP / (FP + TN)"
    ),
    "fnr": _Rate(
        lambda r, c, re, ce: re, lambda r, c, re, ce: re & ~ce, "at_most", True, "FN / (FN + TP)"
    ),
    "precision": _Rate(
        lambda r, c, re, ce: ce, lambda r, c, re, ce: re & ce, "at_least", True, "TP / (TP + FP)"
    ),
    "npv": _Rate(
        lambda r, c, re, ce: ~ce, lambda r, c, re, ce: ~re & ~ce, "at_least", True, "TN / (TN + FN)"
    ),
}
RATES |= {  # the names the evaluate report uses for the same rates
    "false_positive_rate": RATES["fpr"],
    "false_negative_rate": RATES["fnr"],
    "failure_precision": RATES["precision"],  # with the failure as the event
    "failure_incidence": RATES["tpr"],
}
"""Rates bounded exactly (Clopper–Pearson). TPR/TNR/FPR/FNR/precision/NPV are on the event
(the positive class: a binary scale's second label, a named label, or a failure below the run's
threshold); accuracy and error rate on the full scale. ``failure_precision`` and
``failure_incidence`` are precision and TPR with the failure (score below the threshold) as
the event."""


@dataclass(frozen=True)
class _Statistic:
    """A metric that is not a proportion: bounded by the bootstrap over items."""

    statistic: Callable[..., NDArray[np.float64]]  # batched, on (reference, verdict) indices
    better: Side
    on_event: bool  # computed on the event flags (k = 2), not the full scale
    ordinal_only: bool = False
    takes_k: bool = False  # κ: the statistic needs the number of categories


STATISTICS: dict[str, _Statistic] = {
    "kappa_categorical": _Statistic(_kappa_batched, "at_least", False, takes_k=True),
    "kappa_linear": _Statistic(
        partial(_kappa_batched, weights="linear"), "at_least", False, True, True
    ),
    "kappa_quadratic": _Statistic(
        partial(_kappa_batched, weights="quadratic"), "at_least", False, True, True
    ),
    "kappa_binary": _Statistic(partial(_kappa_batched, k=2), "at_least", True),
    "ccc": _Statistic(_ccc_batched, "at_least", False, True),
    "pearson": _Statistic(_pearson_batched, "at_least", False, True),
    "spearman": _Statistic(_spearman_batched, "at_least", False, True),
    "mae": _Statistic(_mae_batched, "at_most", False, True),
}
"""Metrics bounded by the one-sided percentile bootstrap (the same batched statistics as the
run's report: κ on 0-based category indices, MAE in index steps)."""

METRICS = (*RATES, *STATISTICS)


def better_side(metric: str) -> Side:
    """Which way a bare bar of ``metric`` points: ``at_least`` (higher is better) or
    ``at_most`` (error rates, FPR, FNR, MAE)."""
    known = RATES.get(metric) or STATISTICS.get(metric)
    if known is None:
        raise ValueError(f"unknown metric {metric!r}; known: {', '.join(METRICS)}")
    return known.better


def value_range(metric: str) -> tuple[float, float, str]:
    """``(low, high, what)``: the values ``metric`` can take — a rate 0 to 1, MAE from 0 (in
    scale steps), κ and the correlations −1 to 1 — so a bar outside them (``tpr: 7``) can
    never be met and is refused."""
    better_side(metric)  # an unknown name is refused there
    if metric in RATES:
        return 0.0, 1.0, "a rate"
    if metric == "mae":
        return 0.0, math.inf, "an error in scale steps"
    return -1.0, 1.0, "a coefficient"


def needs_event(metric: str) -> bool:
    """Whether ``metric`` is computed on the event (needs a positive class)."""
    known = RATES.get(metric) or STATISTICS.get(metric)
    return bool(known and known.on_event)


# -- the policy ----------------------------------------------------------------------------


class Bar(BaseModel):
    """One bar: the bound of the metric must be at least (or at most) this value. Written (and
    read) as ``{at_least: x}`` or ``{at_most: x}``."""

    model_config = ConfigDict(extra="forbid")

    side: Side
    value: float

    @model_validator(mode="before")
    @classmethod
    def _from_mapping(cls, data: Any) -> Any:
        if isinstance(data, dict) and len(data) == 1 and set(data) <= {"at_least", "at_most"}:
            ((side, value),) = data.items()
            return {"side": side, "value": value}
        return data

    @model_serializer
    def _as_mapping(self) -> dict[str, float]:
        return {self.side: self.value}

    def describe(self) -> str:
        return f"{'≥' if self.side == 'at_least' else '≤'} {self.value:g}"


_BAR_SCHEMA = {
    "anyOf": [
        {"type": "number", "description": "the metric's better direction"},
        *(
            {
                "type": "object",
                "properties": {side: {"type": "number"}},
                "required": [side],
                "additionalProperties": False,
            }
            for side in ("at_least", "at_most")
        ),
    ]
}


class Policy(BaseModel):
    """What a use of a judge requires: metrics with bars, the confidence of the joint
    statement, and (optionally) the positive class of TPR/TNR/precision. A bar is a number
    (the metric's better direction: at least for κ, TPR, accuracy; at most for FPR, FNR, error
    rate, MAE) or ``{at_least: x}`` / ``{at_most: x}``. Every bar is required.

    ``attempts``: how many certificates one judge may be given under this policy. Each takes
    δ / attempts of the error budget (Bonferroni over the attempts as over the bars), so that
    certifying again after a refusal, until one passes, still holds at the stated confidence."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        default="policy",
        description="the policy's name (attempts are counted per judge and policy)",
    )
    confidence: float = Field(
        0.95, gt=0.5, lt=1.0, description="the joint confidence of all the bars' bounds"
    )
    positive: str | int | None = Field(
        default=None,
        description="the positive class of TPR/TNR/precision: a label or score of the scale",
    )
    bars: Annotated[
        dict[str, Bar],
        WithJsonSchema(
            {"type": "object", "minProperties": 1, "additionalProperties": _BAR_SCHEMA},
            mode="validation",
        ),
    ] = Field(min_length=1, description=f"metric: bar; metrics: {', '.join(METRICS)}")
    n_resamples: Resamples = Field(
        default=2000, description="bootstrap replicates of the bootstrap bounds"
    )
    seed: Seed = Field(default=0, description="the seed of the bootstrap bounds")
    attempts: int = Field(1, ge=1, description="certificates one judge may get under it")

    @field_validator("bars", mode="before")
    @classmethod
    def _bars(cls, value: Any) -> Any:
        """A bare number is a bar in the metric's better direction; every name is known."""
        if not isinstance(value, dict):
            return value
        out = {}
        for metric, bar in value.items():
            side = better_side(str(metric))
            if isinstance(bar, int | float) and not isinstance(bar, bool):
                bar = {"side": side, "value": bar}
            out[str(metric)] = bar
        return out

    @model_validator(mode="after")
    def _check(self) -> Policy:
        for metric, bar in self.bars.items():
            if not math.isfinite(bar.value):
                raise ValueError(f"bar of {metric} must be a finite number, got {bar.value}")
            low, high, what = value_range(metric)
            if not low <= bar.value <= high:
                within = f"at least {low:g}" if high == math.inf else f"from {low:g} to {high:g}"
                raise ValueError(f"bar of {metric} ({what}) must be {within}, got {bar.value:g}")
        return self

    @property
    def delta(self) -> float:
        """The error budget of the joint statement, 1 − confidence."""
        return 1.0 - self.confidence

    @property
    def delta_per_attempt(self) -> float:
        """The share of δ one certificate takes: δ / attempts."""
        return self.delta / self.attempts

    @property
    def delta_per_bar(self) -> float:
        """Bonferroni over the bars and the attempts: δ / (bars × attempts), the level each
        bound is taken at."""
        return self.delta_per_attempt / len(self.bars)

    def falls_short_of(
        self, use: Policy, *, event: str | None = None, use_event: str | None = None
    ) -> str | None:
        """Why a judge admitted under this policy is not admitted for ``use`` (``None``: it
        is): every bar of ``use`` must be here, as strict or stricter, at a confidence as high,
        on the same positive class, with as many bootstrap resamples. A judge that clears
        stricter bars jointly at a higher confidence clears ``use``'s bars at ``use``'s.

        ``event`` is the positive class this policy's bounds were counted on (a certificate's
        ``event``: a label, or a failure below its run's threshold) and ``use_event`` the use's:
        a bar of ``use`` that counts on the positive class (TPR, FNR, precision,
        ``failure_incidence`` …) needs the same one — ``failure_incidence ≥ 0.8`` of failures
        below 1 says nothing of failures below 3, with the same ``positive`` (none)."""
        if str(self.positive) != str(use.positive):
            return f"its positive class is {self.positive!r}, {use.name}'s {use.positive!r}"
        counted = [m for m in use.bars if needs_event(m)]
        if counted and event != use_event:
            return (
                f"its bounds counted {event or 'no positive class'} as positive, where "
                f"{use.name}'s {counted[0]} counts {use_event or 'none'}"
            )
        if self.confidence < use.confidence:
            return f"its confidence {self.confidence:g} is below {use.name}'s {use.confidence:g}"
        for metric, bar in use.bars.items():
            mine = self.bars.get(metric)
            if mine is None:
                return f"it has no bar on {metric} ({use.name}: {bar.describe()})"
            as_strict = (
                mine.value >= bar.value if bar.side == "at_least" else mine.value <= bar.value
            )
            if mine.side != bar.side or not as_strict:
                return f"its {metric} bar {mine.describe()} is laxer than {use.name}'s {bar.describe()}"
        if self.n_resamples < use.n_resamples:
            return f"its {self.n_resamples} bootstrap resamples are fewer than {use.name}'s"
        return None


# -- the decision --------------------------------------------------------------------------


class MetricBound(BaseModel):
    """One metric's certification: its point value, its one-sided bound, the bar, passed."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    metric: str
    point: float  # on every item, unscored ones counted as the worst verdict
    bound: float  # the one-sided bound at level 1 − δ/m (nan: undefined, the bar fails)
    side: Side
    bar: Undefinable
    passed: bool
    # over clusters (an Inspect log's epochs of one sample): "clopper-pearson-clusters" at the
    # trials' effective number, "cluster-bootstrap" resampling the samples
    method: Literal["clopper-pearson", "bootstrap", "clopper-pearson-clusters", "cluster-bootstrap"]
    n: int  # the trials (rates) or items (bootstrap)
    successes: int | None = None  # rates only
    note: str | None = None


class Certification(BaseModel):
    """Every bar's result and the decision: admitted when every bound clears its bar."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    admitted: bool
    confidence: Undefinable
    delta_per_bar: Undefinable
    results: list[MetricBound]
    n_items: int
    n_unscored: int
    unscored_rule: str = (
        "an unscored item counts as the worst verdict for each metric (a miss or a false alarm "
        "on the event; the category farthest from the reference on the full scale)"
    )


def worst_verdicts(reference: NDArray[np.int64], k: int) -> NDArray[np.int64]:
    """For each reference index, the category farthest from it on a scale of ``k`` (the
    other label of a binary scale): the verdict an unscored item counts as."""
    return np.where(reference >= (k - 1) / 2, 0, k - 1).astype(np.int64)


def certify(
    reference: Sequence[int],
    verdicts: Sequence[int | None],
    policy: Policy,
    *,
    k: int,
    event: Sequence[int] | None = None,
    ordered: bool = True,
    labels: Sequence[str] | None = None,
    clusters: Sequence[str] | None = None,
) -> Certification:
    """Certify a judge against ``policy`` on labelled items.

    ``reference`` and ``verdicts`` are 0-based category indices on a scale of ``k`` (``None``
    in ``verdicts``: unscored, counted as the worst verdict); ``event`` the indices that count
    as the positive class for TPR/TNR/FPR/FNR/precision/NPV and ``kappa_binary``; ``ordered``:
    the scale is ordinal (κ weights, CCC, MAE make sense). A metric that is undefined on these
    items (no reference positive for TPR, κ of one category) fails its bar. ``labels``: the
    categories' names; on an unordered scale the indices are recoded in
    :func:`category_ranks`' order first, so neither a bootstrap bound nor the verdict an
    unscored item counts as depends on the order the scale lists its labels in.

    ``clusters`` (one id per item) groups items that are not independent — the epochs of one
    Inspect sample, which share its input and reference. Where a cluster holds more than one
    item, a rate's bound is Clopper–Pearson's at the effective number of trials the worst
    correlation within a cluster leaves — Kish's ``(Σ m)² / Σ m²`` over the clusters' trials
    ``m`` (the number of clusters, when each holds as many), the successes in proportion (Korn
    and Graubard's effective-size interval with the largest design effect: valid whatever the
    epochs' correlation) — and a statistic's is a cluster bootstrap's.
    """
    ref = np.asarray(reference, dtype=np.int64)
    if ref.ndim != 1 or ref.size == 0:
        raise ValueError("reference must be a non-empty 1-D sequence of category indices")
    if len(verdicts) != ref.size:
        raise ValueError(
            f"reference and verdicts must have the same length, got {ref.size} and {len(verdicts)}"
        )
    if ((ref < 0) | (ref >= k)).any():
        raise ValueError(f"reference indices must lie in 0..{k - 1}")
    unscored = np.array([v is None for v in verdicts], dtype=bool)
    given = np.array([-1 if v is None else int(v) for v in verdicts], dtype=np.int64)
    if ((given[~unscored] < 0) | (given[~unscored] >= k)).any():
        raise ValueError(f"verdict indices must lie in 0..{k - 1}")
    if not ordered and labels is not None:  # the scale's order means nothing
        rank = category_ranks(labels, ref[~unscored], given[~unscored])
        ref, given = rank[ref], np.where(unscored, -1, rank[np.maximum(given, 0)])
        event = None if event is None else [int(rank[e]) for e in event]
    cand = np.where(unscored, worst_verdicts(ref, k), given)
    ref_event = cand_event = None
    if event is not None:
        positive = np.isin(np.arange(k), list(event))
        ref_event = positive[ref]
        cand_event = np.where(unscored, ~ref_event, positive[np.maximum(given, 0)])
    delta = policy.delta_per_bar
    grouped = None if clusters is None else shared_clusters(clusters, np.arange(ref.size))
    results = []
    for metric, bar in policy.bars.items():
        if needs_event(metric) and ref_event is None:
            raise ValueError(
                f"{metric} needs a positive class: give the policy's positive (a label), or "
                "judge on a binary scale"
            )
        if metric in STATISTICS and STATISTICS[metric].ordinal_only and not ordered:
            raise ValueError(f"{metric} needs an ordinal scale")
        if metric in RATES:
            bound = _rate_bound(metric, bar, ref, cand, ref_event, cand_event, delta, grouped)
        else:
            bound = _statistic_bound(
                metric, bar, ref, cand, ref_event, cand_event, k, delta, policy, grouped
            )
        results.append(bound)
    return Certification(
        admitted=all(r.passed for r in results),
        confidence=policy.confidence,
        delta_per_bar=delta,
        results=results,
        n_items=int(ref.size),
        n_unscored=int(unscored.sum()),
    )


def _passes(bound: float, bar: Bar) -> bool:
    if math.isnan(bound):
        return False
    return bound >= bar.value if bar.side == "at_least" else bound <= bar.value


def inconsistency(results: list[MetricBound], bars: dict[str, Bar], admitted: bool) -> str | None:
    """What makes a certification's results disagree with themselves or with its policy's
    bars (``None``: nothing) — each ``passed`` is its bound against its bar, each bar the
    policy's, the decision every bar passed: an edited certificate fails at least one."""
    for r in results:
        bar = bars.get(r.metric)
        if bar is None or (bar.side, bar.value) != (r.side, r.bar):
            return f"{r.metric}'s bar is not its policy's"
        if r.passed != _passes(r.bound, bar):
            return f"{r.metric} is marked {'passed' if r.passed else 'failed'} against its bound"
    if {r.metric for r in results} != set(bars):
        return "its results are not its policy's bars"
    if admitted != all(r.passed for r in results):
        return f"the decision is {'admitted' if admitted else 'refused'} against its results"
    return None


def _rate_bound(metric, bar, ref, cand, ref_event, cand_event, delta, grouped) -> MetricBound:
    spec = RATES[metric]
    if ref_event is None:  # accuracy / error rate: the event flags are not used
        ref_event = cand_event = np.zeros(ref.shape, dtype=bool)
    trials = spec.trials(ref, cand, ref_event, cand_event)
    hits = spec.successes(ref, cand, ref_event, cand_event) & trials
    n, x = int(trials.sum()), int(hits.sum())
    method = "clopper-pearson"
    if n == 0:
        bound, point, note = math.nan, math.nan, f"undefined: no trial ({spec.about} has no item)"
    elif grouped is not None:
        point, method = x / n, "clopper-pearson-clusters"
        n_eff = effective_trials(grouped[trials])
        # a one-sided bound at δ is the matching end of the two-sided interval at 1 − 2δ
        low, high = effective_clopper_pearson_interval(point * n_eff, n_eff, 1.0 - 2.0 * delta)
        bound = low if bar.side == "at_least" else high
        note = (
            f"{x} of {n} trials in {np.unique(grouped[trials]).size} clusters (items that are one "
            f"item: an Inspect sample's epochs, one text under several ids): bounded at "
            f"{n_eff:.1f} effective trials, as if each cluster's trials had one outcome"
        )
    else:
        point, note = x / n, None
        side_fn = clopper_pearson_lower if bar.side == "at_least" else clopper_pearson_upper
        bound = side_fn(x, n, delta)
    return MetricBound(
        metric=metric,
        point=point,
        bound=bound,
        side=bar.side,
        bar=bar.value,
        passed=_passes(bound, bar),
        method=method,
        n=n,
        successes=x,
        note=note,
    )


def _statistic_bound(
    metric, bar, ref, cand, ref_event, cand_event, k, delta, policy, grouped
) -> MetricBound:
    spec = STATISTICS[metric]
    if spec.on_event:
        arrays = (ref_event.astype(np.int64), cand_event.astype(np.int64))
    else:
        arrays = (ref, cand)
    statistic = partial(spec.statistic, k=k) if spec.takes_k else spec.statistic
    point = float(statistic(*(a[None, :] for a in arrays))[0])
    replicates = bootstrap_replicates(
        statistic, *arrays, n_resamples=policy.n_resamples, seed=policy.seed, clusters=grouped
    )
    bound, dropped, why = percentile_bound(replicates, delta, bar.side)
    notes = []
    if grouped is not None:
        notes.append(
            f"bootstrap resampled {np.unique(grouped).size} clusters (items that are one item: "
            "an Inspect sample's epochs, one text under several ids) with all their items"
        )
    if why is not None:
        notes.append(f"undefined: {why}")
    elif dropped:
        notes.append(f"{dropped} of {policy.n_resamples} replicates undefined, counted as failing")
    note = "; ".join(notes) or None
    return MetricBound(
        metric=metric,
        point=point,
        bound=bound,
        side=bar.side,
        bar=bar.value,
        passed=_passes(bound, bar),
        method="bootstrap" if grouped is None else "cluster-bootstrap",
        n=int(ref.size),
        note=note,
    )
