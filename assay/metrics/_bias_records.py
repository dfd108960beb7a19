"""The results of the judge-bias statistics — self-preference, scale compression, the raters'
item response model — as plain records (no NumPy: a run's results load without it, before its
first LM call)."""

from __future__ import annotations

from collections.abc import Hashable

from pydantic import ConfigDict
from pydantic.dataclasses import dataclass

from assay.metrics._value import MetricValue, Undefinable

RATER_MODEL = "graded response model with a rater facet (shared thresholds), marginal ML"
_CONFIG = ConfigDict(ser_json_inf_nan="constants", arbitrary_types_allowed=True)


@dataclass(frozen=True, config=ConfigDict(ser_json_inf_nan="constants"))
class SelfPreference:
    """A judge's preference for its own family's outputs.

    ``difference`` is Δ with its Welch interval at ``confidence`` and the one-sided p-value of
    ``Δ ≤ 0``; ``adjusted`` says whether Δ compares the judge's errors against the human
    reference (True) or its raw scores (False, see ``note``). ``judge_own`` / ``judge_other``
    are the judge's mean scores on the items compared, ``reference_own`` /
    ``reference_other`` the humans' (None without references). ``n_without_reference``
    counts the items left out because they had no reference score."""

    judge_family: str
    adjusted: bool
    difference: Undefinable
    ci_low: Undefinable
    ci_high: Undefinable
    confidence: Undefinable
    interval: str
    p_value: Undefinable
    test: str
    df: Undefinable
    n_own: int
    n_other: int
    judge_own: Undefinable
    judge_other: Undefinable
    reference_own: Undefinable | None
    reference_other: Undefinable | None
    n_without_reference: int = 0
    note: str | None = None


@dataclass(frozen=True, config=ConfigDict(ser_json_inf_nan="constants"))
class ScaleCompression:
    """How much of the scale the judge uses against the humans on ``n`` items of ``k``
    categories. ``sd_ratio``, ``middle_share_difference`` and ``slope`` carry bootstrap
    intervals; the two middle shares carry exact (Clopper–Pearson) ones. ``middle`` lists the
    middle categories (0-based). ``mean_difference`` is judge − human in categories (below 0:
    the judge is stricter), with a bootstrap interval. ``judge_sd`` and ``human_sd`` are None
    with fewer than two items, ``intercept`` (of the judge's scores on the humans') where the
    human scores do not vary."""

    n: int
    k: int
    judge_sd: Undefinable | None
    human_sd: Undefinable | None
    sd_ratio: MetricValue
    middle: tuple[int, ...]
    judge_middle_share: MetricValue
    human_middle_share: MetricValue
    middle_share_difference: MetricValue
    slope: MetricValue
    intercept: Undefinable | None
    mean_difference: MetricValue


@dataclass(frozen=True, config=_CONFIG)
class RaterParameters:
    """One rater's discrimination and severity with their intervals, its number of scores and
    mean score, and ``reading``: ``cannot tell items apart`` (the discrimination's interval
    holds 0), ``reverses the scale`` (entirely below 0), else ``strict`` / ``lenient`` (the
    severity's interval above / below 0) or ``typical``. A rater who gave one score everywhere
    is said so in ``note``: its severity is then set by the prior, not by the data."""

    rater: Hashable
    n: int
    mean_score: Undefinable
    discrimination: MetricValue
    severity: MetricValue
    reading: str
    note: str | None = None


@dataclass(frozen=True, config=_CONFIG)
class ItemQuality:
    """One judged item's latent quality: posterior mean and standard deviation of θ."""

    item: Hashable
    n: int
    quality: Undefinable
    sd: Undefinable


@dataclass(frozen=True, config=_CONFIG)
class RaterModel:
    """The fitted model: every rater, every item that has a score, the thresholds τ between
    consecutive ``levels`` (the score values some rater used, in order), the fit's log
    likelihood, whether the optimizer converged, and how many items had no score."""

    raters: tuple[RaterParameters, ...]
    items: tuple[ItemQuality, ...]
    levels: tuple[float, ...]
    thresholds: tuple[float, ...]
    log_likelihood: Undefinable
    converged: bool
    confidence: Undefinable
    n_items_dropped: int = 0
    model: str = RATER_MODEL
    note: str | None = None
