"""Typed result of ``assay compare`` (``comparison.json``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")


class Group(_Model):
    """What the compared runs were measured on: ``items`` is the fingerprint of the exact item
    set (or, for runs logged without one, a label starting ``no item fingerprint``)."""

    kind: str
    items: str
    scale: str
    threshold: str = "None"  # an evaluate run's failure threshold ("None": none, or no param)
    measured_on: str  # "60 items", "15 of 60 items (test split)", "24 probes of 6 source items"
    data: str
    probes: str


class LeaderboardRow(_Model):
    run_id: str
    name: str
    judge: str
    command: str
    experiment_id: str
    metric: str
    value: float | None
    worst_of: str | None  # worst_test_rate: the test metric that is the minimum
    n: int | None  # what the metric is over, as the run recorded it (failure precision: the
    # flagged failures; κ: the pairs scored on both sides); None where it recorded none
    n_items: int | None = None  # the items it was given (harness: probes)
    n_paired: int | None = None  # an evaluate run's items scored on both sides
    measured_on: str
    items: str
    ci_low: float | None
    ci_high: float | None
    ci_level: float | None = None  # the interval's confidence level (None: not recorded)
    accuracy: float | None
    cost_usd: float | None
    cost_per_accuracy_point_usd: float | None
    # the judge's cost of the work as the Pareto front counts it (answers from the LM cache
    # priced as first served): USD, else tokens, else LM answers (local or unpriced models
    # cost 0 USD); the same unit on every row of a comparison
    paid: float | None = None
    paid_in: str = "usd"
    model: str
    program: str
    adapter: str
    temperature: str
    rubric: str
    optimized: bool
    config_hash: str
    data: str
    scale: str
    probes: str
    start_time: str
    rank: int
    pareto: bool | None


class Differences(_Model):
    """The judge params whose values differ, one column per run."""

    runs: list[str]
    columns: list[str]
    rows: dict[str, list[str]]


class LeftOut(_Model):
    run_id: str
    name: str
    reason: str


class Comparison(_Model):
    """A leaderboard of judge runs, what differs between them, and what was left out (why)."""

    tracking_uri: str
    metric: str
    forced: bool
    group: Group | None
    # whether every run's figure is over the same items (each scored every item it was given,
    # the same n): what the header may claim
    same_items: bool = True
    # the confidence level of every interval shown, when they share one (None: they do not,
    # or one is not recorded — each row has its own ``ci_level``)
    ci_level: float | None = None
    leaderboard: list[LeaderboardRow]
    differences: Differences
    left_out: list[LeftOut]
    notes: list[str] = []  # what the ranking cannot show (see compare._select.notes)
    plots: dict[str, str]
    comparison_run_id: str | None
