"""The value of one aggregate metric as reported: point estimate, interval, size and a note; and
the bootstrap interval it is built from (plain data, no NumPy: configs and results load without it)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict
from dataclasses import dataclass as plain_dataclass
from typing import Annotated, Any, Literal, TypedDict

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    Strict,
)
from pydantic.dataclasses import dataclass

# How an interval was computed, as ``MetricValue.ci_method`` names it.
CLOPPER_PEARSON = "Clopper–Pearson"
WILSON = "Wilson"
MOVER_WILSON = "MOVER–Wilson"
BOOTSTRAP = "percentile bootstrap"
BCA_BOOTSTRAP = "BCa bootstrap"
CLUSTER_BOOTSTRAP = "cluster bootstrap"
CLOPPER_PEARSON_CLUSTERS = "Clopper–Pearson over clusters"

MIN_RESAMPLES = 1000
"""Fewest bootstrap replicates of an interval (the ends of a percentile interval are noisy below 1000)."""
MAX_RESAMPLES = 10_000
"""Most bootstrap replicates a config or an option asks for: beyond it an interval's ends move
by thousandths, while every replicate holds one index per item in memory (a typo of 1e12 asked
for terabytes). The functions themselves take more, for a caller who chooses to."""

Resamples = Annotated[int, Strict(), Field(ge=MIN_RESAMPLES, le=MAX_RESAMPLES)]
"""A number of bootstrap replicates in a config or an option, within :data:`MIN_RESAMPLES` and
:data:`MAX_RESAMPLES`."""


def _nan_from_null(value: Any) -> Any:
    return math.nan if value is None else value


def _null_from_nan(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


Undefinable = Annotated[
    float, BeforeValidator(_nan_from_null), PlainSerializer(_null_from_nan, when_used="json")
]
"""A figure of a result that may be undefined (nan): ``null`` in JSON — ``metrics.json``,
``--json`` — which has no NaN (a strict parser, JavaScript's, refuses the file), and nan again
when the result is read back."""


@plain_dataclass(frozen=True)
class BootstrapCI:
    """A percentile bootstrap interval; ``low``/``high`` are nan when no replicate was defined.
    ``unit`` names what was resampled: ``"item"`` or, for :func:`cluster_bootstrap_ci`,
    ``"cluster"`` (whole source items with all their probes)."""

    low: float
    high: float
    n_resamples: int
    n_dropped: int  # replicates where the statistic was nan (e.g. κ of a one-category resample)
    unit: str = "item"
    bca: bool = False  # the ends are the bias-corrected and accelerated percentiles


class MetricDict(TypedDict):
    """A :class:`MetricValue` as a plain dict (:meth:`MetricValue.to_dict`)."""

    value: float
    ci_low: float | None
    ci_high: float | None
    n: int
    note: str | None
    count: int | None
    ci_method: str | None


@dataclass(frozen=True, config=ConfigDict(ser_json_inf_nan="constants"))
class MetricValue:
    """One reported metric. ``value`` is nan when the metric is undefined (``note`` says why;
    JSON writes it as ``null``); ``ci_low``/``ci_high`` are None when no interval could be
    computed and ``ci_method`` says how they were (:data:`CLOPPER_PEARSON`, :data:`WILSON`,
    :data:`MOVER_WILSON`, :data:`BOOTSTRAP`, :data:`CLUSTER_BOOTSTRAP`,
    :data:`CLOPPER_PEARSON_CLUSTERS`). ``n`` counts what the metric is over: a rate's
    denominator (the reference's negatives for a false positive rate), else the items; a rate
    also has its numerator, ``count`` (``value == count / n``)."""

    value: Undefinable
    ci_low: Undefinable | None
    ci_high: Undefinable | None
    n: int
    note: str | None = None
    count: int | None = None
    ci_method: str | None = None

    def to_dict(self) -> MetricDict:
        """A plain dict with the same fields (nan values stay float nan)."""
        return MetricDict(**asdict(self))

    def with_notes(self, notes: Iterable[str]) -> MetricValue:
        """This metric with ``notes`` after its own note."""
        note = "; ".join([*([self.note] if self.note else []), *notes]) or None
        return MetricValue(**{**self.to_dict(), "note": note})


NO_WIDTH = (
    "every bootstrap replicate gave the same value: an interval of no width, which shows no "
    "variation in the resamples, not certainty"
)


NARROWER_THAN_SHOWN = 5e-4
"""An interval this narrow prints as one value at three decimals ([1.000, 1.000])."""
NARROW = (
    "the bootstrap replicates differ only past the printed digits: an interval that shows "
    "almost no variation in the resamples, not certainty"
)


def _no_width(low: float, high: float) -> bool:
    """Whether an interval's ends are one value: equal, or a floating-point rounding apart (a
    linear κ of exactly 0 in every replicate computes as ±2e-16, a Pearson r of 1 as 1 - 3e-16)."""
    return math.isclose(low, high, rel_tol=1e-12, abs_tol=1e-12)


def with_ci(
    value: float, ci: BootstrapCI, n: int, *, why_undefined: str, notes: Iterable[str] = ()
) -> MetricValue:
    """A :class:`MetricValue` from a point estimate and its bootstrap interval; the note says
    when the value is undefined (then ``notes``), how many replicates were dropped, and when
    the interval has no width."""
    out = list(notes)
    if math.isnan(value):
        out.insert(0, f"undefined: {why_undefined}")
    defined = ci.n_dropped < ci.n_resamples
    if not defined:
        if not math.isnan(value):  # an undefined value says why it has no CI
            out.append("no bootstrap replicate was defined, so there is no CI")
    elif ci.n_dropped:
        out.append(
            f"{ci.n_dropped} of {ci.n_resamples} bootstrap replicates were dropped as "
            f"undefined: {why_undefined}"
        )
    low, high = ci.low, ci.high
    if defined and not math.isnan(value) and _no_width(low, high):
        out.append(NO_WIDTH)
        low = high = (low + high) / 2  # one value, not two a rounding apart ([-0.000, 0.000])
    elif defined and not math.isnan(value) and abs(high - low) < NARROWER_THAN_SHOWN:
        out.append(NARROW)
    return MetricValue(
        value=float(value),
        ci_low=low if defined else None,
        ci_high=high if defined else None,
        n=int(n),
        note="; ".join(out) or None,
        ci_method=_bootstrap_method(ci) if defined else None,
    )


def _bootstrap_method(ci: BootstrapCI) -> str:
    if ci.unit == "cluster":
        return CLUSTER_BOOTSTRAP
    return BCA_BOOTSTRAP if ci.bca else BOOTSTRAP


@dataclass(frozen=True, config=ConfigDict(ser_json_inf_nan="constants"))
class PlaceboEffect:
    """A cue's effect on one judge against its placebo.

    ``n`` counts the items that could flip toward the cue (their baseline verdict is not the
    cue's); ``n_at_cue`` the items left out because it already was. ``cue_only`` and
    ``placebo_only`` are the discordant items the test is built on. ``effect`` (nan when ``n``
    is 0) is ``cue_rate − placebo_rate`` with its interval at ``confidence``; ``p_value`` tests
    ``effect ≤ 0``. ``directional_share`` is ``cue_flips / cue_changes``: of all items whose
    verdict changed under the cue, the share that moved toward it (nan without a change).
    ``p_adjusted`` and ``flagged`` are set by :func:`with_fdr` across a family of effects.

    ``alternative`` is ``greater`` for a cue that points to a verdict (``p_value`` tests
    ``effect ≤ 0``) and ``two-sided`` for a cue with two poles and no direction known in
    advance (:func:`two_sided_placebo_effect`: the effect is signed, ``p_value`` tests
    ``effect = 0`` and ``favoured`` names the pole it points to).

    ``clusters`` and ``design_effect`` are set where the items come in clusters (the epochs of
    one Inspect sample): how many clusters the items form, and how many times fewer
    independent items they count for (:func:`paired_design_effect`); the interval and the test
    then take the paired table's counts divided by it. None where every item is its own."""

    n: int
    n_at_cue: int
    cue_flips: int
    placebo_flips: int
    both_flipped: int
    cue_only: int
    placebo_only: int
    cue_rate: Undefinable
    placebo_rate: Undefinable
    effect: Undefinable
    ci_low: Undefinable
    ci_high: Undefinable
    confidence: Undefinable
    interval: str
    p_value: Undefinable
    test: str
    cue_changes: int
    placebo_changes: int
    directional_share: Undefinable
    placebo_directional_share: Undefinable
    p_adjusted: Undefinable | None = None
    flagged: bool | None = None
    note: str | None = None
    alternative: Literal["greater", "two-sided"] = "greater"
    favoured: str | None = None
    clusters: int | None = None
    design_effect: float | None = None
