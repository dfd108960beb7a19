"""Typed result of ``assay compare`` (``comparison.json``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from assay.metrics import DriftTest, PairedComparison, Stability


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")


class Group(_Model):
    """What the compared runs were measured on: ``items`` is the fingerprint of the exact item
    set (or, for runs logged without one, a label starting ``no item fingerprint``)."""

    kind: str
    items: str
    scale: str
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
    n: int | None  # items (harness: probes) the judge was measured on
    measured_on: str
    items: str
    ci_low: float | None
    ci_high: float | None
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
    leaderboard: list[LeaderboardRow]
    differences: Differences
    left_out: list[LeftOut]
    notes: list[str] = []  # what the ranking cannot show (see compare._select.notes)
    plots: dict[str, str]
    comparison_run_id: str | None


class PairedSide(_Model):
    """One of the two judge runs of a paired comparison or a drift check."""

    named: str  # the run directory or MLflow run id given
    mlflow_run_id: str | None
    run_name: str
    judge: str
    model: str
    config_hash: str
    items: int
    unscored: int


class LeftOutItem(_Model):
    """An item of both runs not compared, and why (unscored, with the reason; no reference)."""

    item_id: str
    why: str


class PairedResult(_Model):
    """``compare --paired A B`` (``paired.json``): judge B against judge A on the same items."""

    a: PairedSide
    b: PairedSide
    items: str  # the items fingerprint both runs share (assay.items)
    scale: str
    n_items: int
    n_paired: int
    left_out: list[LeftOutItem]
    comparison: PairedComparison
    verdict: str
    out_dir: str | None = None
    comparison_run_id: str | None = None


class ItemChange(_Model):
    item_id: str
    old: str
    new: str


class DriftResult(_Model):
    """``drift OLD NEW`` (``drift.json``): the same judge config on the same anchors, twice."""

    old: PairedSide
    new: PairedSide
    items: str
    n_items: int
    left_out: list[LeftOutItem]
    stability: str  # where the predicted change rate came from, in words
    measured: Stability | None  # None: no stability measured
    test: DriftTest
    changes: list[ItemChange]
    verdict: str
    out_dir: str | None = None
    comparison_run_id: str | None = None
