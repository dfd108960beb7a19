"""One estimate of a mean from few human labels and many judge predictions, as a report shows it:
the estimator's name, the value, its interval, the labels it used and the labels it is worth.

Human-only, Rogan–Gladen, PPI, PPI++, stratified PPI++ and active PPI++ all return a
:class:`MeanEstimate`, so one table can put them side by side (:func:`estimates_table`). Plain
data, no NumPy: a run's summary can hold and load it without the statistics.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist
from typing import Any, Literal

from pydantic import ConfigDict
from pydantic.dataclasses import dataclass

from assay.metrics._format import fmt
from assay.metrics._value import MetricValue, Undefinable
from assay.report import Table

EstimateMethod = Literal[
    "human_only", "rogan_gladen", "ppi", "ppi++", "stratified_ppi++", "active_ppi", "active_ppi++"
]
Bound = Literal["two-sided", "lower", "upper"]  # "lower": [low, ∞); "upper": (−∞, high]

METHOD_NAMES: dict[str, str] = {
    "human_only": "human labels only",
    "rogan_gladen": "Rogan–Gladen",
    "ppi": "PPI",
    "ppi++": "PPI++",
    "stratified_ppi++": "stratified PPI++",
    "active_ppi": "active PPI",
    "active_ppi++": "active PPI++",
}

_CONFIG = ConfigDict(ser_json_inf_nan="constants")


@dataclass(frozen=True, config=_CONFIG)
class StratumEstimate:
    """One stratum of a stratified estimate: its weight (its share of the items estimated), its
    labelled and unlabelled items, its own PPI++ estimate, standard error and λ."""

    stratum: str
    weight: Undefinable
    n_labelled: int
    n_unlabelled: int
    value: Undefinable
    std_error: Undefinable
    lam: Undefinable


@dataclass(frozen=True, config=_CONFIG)
class MeanEstimate:
    """The mean of the human label (a failure incidence, a harmful-compliance rate, a mean score)
    as one estimator puts it.

    ``ci_low``/``ci_high`` bound the mean at level ``1 − alpha``; a one-sided ``bound`` leaves
    the other end infinite. ``std_error`` is the normal (CLT) interval's standard error (None for
    a bootstrap interval). ``effective_labels`` is the number of human labels a human-only
    interval would need to be as narrow: ``n · (half-width of human-only / half-width)²``
    (None when undefined). ``lam`` is PPI's weight on the predictions (0: human labels only,
    1: classical PPI). ``prediction`` says what the judge's prediction was (``verdict``,
    ``probability``, ``score``; ``none`` for human-only), ``interval`` how the interval was
    built, ``sampling`` what it assumes about which items were labelled,
    ``rarer_class_labels`` how many 0/1 labels are of the rarer class (None for other labels).
    """

    method: EstimateMethod
    value: Undefinable
    ci_low: Undefinable
    ci_high: Undefinable
    alpha: Undefinable
    bound: Bound
    std_error: Undefinable | None
    n_labelled: int
    n_unlabelled: int
    effective_labels: Undefinable | None
    lam: Undefinable | None
    prediction: str
    interval: str
    sampling: str
    strata: tuple[StratumEstimate, ...] = ()
    # of 0/1 labels, how many are of the rarer class (None for other labels): under 10 the
    # normal interval is rough however many labels there are
    rarer_class_labels: int | None = None
    note: str | None = None
    # how many independent units the labels are when some are one item (an Inspect sample's
    # epochs, one text under several ids): the clusters among the labelled items; None: each
    # label its own
    labelled_units: int | None = None

    @property
    def name(self) -> str:
        """The estimator's name as a report prints it."""
        return METHOD_NAMES[self.method]

    @property
    def half_width(self) -> float:
        """The interval's half-width: ``z · std_error`` for a normal interval — as computed,
        before a rate's interval is cut to [0, 1] (a cut end says where no rate lies, not how
        precise the estimate is) —, else half the interval's width, or the distance to its one
        bound when one-sided."""
        if self.std_error is not None and math.isfinite(self.std_error):
            level = 1 - self.alpha / 2 if self.bound == "two-sided" else 1 - self.alpha
            return NormalDist().inv_cdf(level) * self.std_error
        if self.bound == "lower":
            return self.value - self.ci_low
        if self.bound == "upper":
            return self.ci_high - self.value
        return (self.ci_high - self.ci_low) / 2

    def metric_value(self) -> MetricValue:
        """The value, interval, labelled items and note as a :class:`MetricValue`."""
        defined = not math.isnan(self.ci_low) and not math.isnan(self.ci_high)
        return MetricValue(
            value=self.value,
            ci_low=self.ci_low if defined else None,
            ci_high=self.ci_high if defined else None,
            n=self.n_labelled,
            note=self.note,
        )


def effective_labels(n_labelled: int, human_half_width: float, half_width: float) -> float | None:
    """``n · (human_half_width / half_width)²``: the human labels a human-only interval would need
    to be ``half_width`` wide (its half-width shrinks as ``1/√n``); None when either width is
    zero or not finite."""
    if not (0 < half_width < math.inf and 0 < human_half_width < math.inf):
        return None
    return n_labelled * (human_half_width / half_width) ** 2


def estimates_table(
    title: str, estimates: Sequence[MeanEstimate], *, digits: int = 3, **more: Any
) -> Table:
    """A report's table of several estimates of the same mean, one row per estimator: value,
    interval, human labels used, effective labels, λ, the prediction used and the note."""
    rows = []
    for e in estimates:
        rows.append(
            [
                e.name,
                fmt(e.value, digits),
                f"[{fmt(e.ci_low, digits)}, {fmt(e.ci_high, digits)}]",
                e.n_labelled,
                "—" if e.effective_labels is None else f"{e.effective_labels:.0f}",
                fmt(e.lam, 2),
                e.prediction,
                e.note or "",
            ]
        )
    levels = {round(100 * (1 - e.alpha), 6) for e in estimates}
    ci = f"{levels.pop():g}% CI" if len(levels) == 1 else "CI"
    columns = ["estimator", "mean", ci, "human labels", "effective labels", "λ", "prediction"]
    return Table(title, [*columns, "note"], rows, **more)
