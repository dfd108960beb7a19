"""Typed results of the comparisons that pair two runs item by item: ``compare --paired A B``
(``paired.json``) and ``drift OLD NEW`` (``drift.json``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from assay.metrics import DriftTest, PairedComparison, Stability


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
