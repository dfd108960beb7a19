"""Typed results of the comparisons that pair two runs item by item: ``compare --paired A B``
(``paired.json``) and ``drift OLD NEW`` (``drift.json``), with drift's two other modes, a score
change split on anchors (``--anchors``) and a control chart over a series of runs
(``--series``), in ``drift.json`` too (:class:`DriftSummary` reads any of the three)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, RootModel, Tag

from assay.metrics import (
    DriftTest,
    EwmaChart,
    PairedComparison,
    ShiftDecomposition,
    Stability,
    Undefinable,
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")


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


class UnscoredShift(_Model):
    """Items of both runs the NEW judge left unscored where the OLD one scored them (``lost``)
    and the other way round (``gained``), and the one-sided exact sign test that NEW fails more
    often (``p_value``; None with no such item), at ``level``: a judge that stops answering is a
    judge that changed, whatever its verdicts on the items it still scores."""

    lost: int
    gained: int
    p_value: float | None
    level: float
    moved: bool

    def said(self) -> str:
        if not self.lost and not self.gained:
            return ""
        head = (
            f"NEW left {self.lost} item{'s' if self.lost != 1 else ''} unscored that OLD scored "
            f"({self.gained} the other way; exact sign test p = {self.p_value:.3g}"
        )
        return head + (f" < {self.level:g})" if self.moved else f", not below {self.level:g})")


class DriftResult(_Model):
    """``drift OLD NEW`` (``drift.json``): the same judge config on the same anchors, twice."""

    mode: Literal["verdicts"] = "verdicts"
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
    unscored: UnscoredShift | None = None  # None: read from a drift.json written before it
    out_dir: str | None = None
    comparison_run_id: str | None = None


class ShiftResult(_Model):
    """``drift OLD NEW --anchors FILE`` (``drift.json``): a system's score change split into
    the judge's shift, on anchor items byte-identical in both runs, and the system's change."""

    mode: Literal["anchors"] = "anchors"
    old: PairedSide
    new: PairedSide
    anchors_file: str
    scale: str
    score: str  # what the score is: "mean score" or "rate of <positive label>"
    left_out: list[LeftOutItem]  # anchors not scored by both judges, other items unscored
    decomposition: ShiftDecomposition
    verdict: str
    unscored: UnscoredShift | None = None  # on the anchors; None: an older drift.json
    out_dir: str | None = None
    comparison_run_id: str | None = None


class SeriesPoint(_Model):
    """One run of a series: its score over the items it scored."""

    run: PairedSide
    score: Undefinable
    scored: int


class SeriesResult(_Model):
    """``drift RUN1 RUN2 ... --series`` (``drift.json``): each run's score, in the order given,
    on an EWMA control chart."""

    mode: Literal["series"] = "series"
    scale: str
    score: str
    points: list[SeriesPoint]
    chart: EwmaChart
    verdict: str
    out_dir: str | None = None
    comparison_run_id: str | None = None


def _mode(value: Any) -> str:
    found = value.get("mode") if isinstance(value, dict) else getattr(value, "mode", None)
    return found or "verdicts"  # a drift.json written before drift had other modes


class DriftSummary(
    RootModel[
        Annotated[
            Annotated[DriftResult, Tag("verdicts")]
            | Annotated[ShiftResult, Tag("anchors")]
            | Annotated[SeriesResult, Tag("series")],
            Discriminator(_mode),
        ]
    ]
):
    """Any ``drift.json``: the verdict check, the anchor decomposition or the series chart."""
