"""Typed results of the agreement runners (evaluate, agreement): what a run measured,
serialised once (``metrics.json``, ``--json``) and read back from the same models."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from assay.metrics import (
    ItemQuality,
    MetricValue,
    RaterParameters,
    ScaleCompression,
    SelfPreference,
    Undefinable,
)
from assay.types import Item, Judgment, Spend, Usage, with_work


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")


class ConfusionMatrix(_Model):
    """Counts of (reference, judge) pairs; rows are the reference's scale values."""

    labels: list[int]
    rows_reference: list[list[int]]


class Agreement(_Model):
    """Every agreement metric of the scale on the scored pairs, each with its interval."""

    metrics: dict[str, MetricValue] = Field(default_factory=dict)
    confusion_matrix: ConfusionMatrix | None = None
    note: str | None = None


class Counts(_Model):
    """What happened to the items: judged, scored, unscored (by reason), paired with a reference."""

    items: int
    judged: int
    scored: int
    unscored: int
    unscored_reasons: dict[str, int]
    without_reference: int
    paired: int


class RunUsage(Usage):
    """Tokens and cost of a run's judge calls, with cache hits, latency and cost per point (of
    the cost of the work: the same whether the answers were paid now or taken from the cache)."""

    model_config = ConfigDict(extra="forbid")

    cached_judgments: int = 0
    mean_latency_s: Undefinable = 0.0
    cost_per_accuracy_point_usd: Undefinable | None = None


class ReliabilityBinRecord(_Model):
    lower: Undefinable
    upper: Undefinable
    mean_predicted: Undefinable
    observed: Undefinable
    count: int


class CalibrationReport(_Model):
    """How well a judge's probabilities are calibrated (``score_mode: expected``), on the items
    with both a probability and a reference; items without a probability are counted, never
    imputed."""

    n: int
    without_probability: int
    probability: str
    bins: int
    strategy: str
    metrics: dict[str, MetricValue]
    reliability: list[ReliabilityBinRecord]
    calibrated: dict[str, MetricValue] | None = None  # after the judge's calibration map


class DisagreementRecord(_Model):
    """An item where judge and reference differ, by its distance on the scale; evaluate runs
    keep the texts and the judge's reasoning so a person can read why."""

    id: str
    reference: int
    judge: int
    distance: Undefinable
    reference_label: str | None = None
    judge_label: str | None = None
    request: str | None = None
    response: str | None = None
    reasoning: str | None = None


class SelfPreferenceReport(_Model):
    """The judge's preference for its own model family's outputs: its family, where each
    item's generator came from (``source``), the scored items per generator family, the items
    without a generator (left out), the figures (None when they cannot be computed: ``note``
    says why) and ``flagged`` when Δ's interval lies above 0."""

    judge_family: str
    source: str
    families: dict[str, int]
    without_generator: int = 0
    figures: SelfPreference | None = None
    flagged: bool = False
    note: str | None = None


class ItemQualitySpread(_Model):
    """The judged items' latent quality over every fitted item: the ``mean`` and ``sd`` of their
    posterior means (θ has a standard normal prior, so the mean sits near 0 and an sd well
    below 1 says the raters place the items little apart), the ``reliability`` of those
    placements (the sd's square over itself plus the mean posterior variance: the share of
    what the items look apart that is theirs, not the fit's uncertainty) and the ``lowest``
    quality (the hardest item's)."""

    mean: Undefinable
    sd: Undefinable
    reliability: Undefinable
    lowest: Undefinable


class RaterModelReport(_Model):
    """The item response view of the raters (:func:`assay.metrics.rater_model`): each rater's
    discrimination, severity and reading, the scale's thresholds (over the 0-based scale
    positions in ``levels``), the judged items of the lowest latent quality (``hardest``:
    those hardest to score high on) and the spread of every item's (``item_quality``; None in
    a run written before it was kept)."""

    raters: list[RaterParameters]
    levels: list[float]
    thresholds: list[float]
    n_items: int
    n_items_dropped: int
    sampled_from: int | None = None  # items the fit's seeded sample was drawn from
    log_likelihood: Undefinable
    converged: bool
    model: str
    hardest: list[ItemQuality]
    item_quality: ItemQualitySpread | None = None
    note: str | None = None


class ScaleUseReport(_Model):
    """How an ordinal judge uses the scale against the humans: scale compression against the
    reference and the raters' item response model (the judge and the humans as raters), each
    None where it was not computed, with the reasons in ``notes``."""

    raters: list[str]
    compression: ScaleCompression | None = None
    rater_model: RaterModelReport | None = None
    notes: list[str] = Field(default_factory=list)


class EvaluateSummary(Agreement):
    """``metrics.json`` of an evaluate run."""

    counts: Counts
    usage: RunUsage  # the answers the judgments hold: served (paid) and from the LM cache
    work: Usage  # the cost of the work: usage.work(), every answer priced as a call
    spend: Spend | None = None  # every call the server answered (the run's call ledger)
    calibration: CalibrationReport | None = None
    disagreements: int = 0  # pairs where judge and reference differ (disagreements.jsonl)
    pairs: dict[str, int] | None = None  # data.pairs: labelled pairs built and skipped
    # what the source held and the items left out: an Inspect log's errored samples
    # (data.errored_samples: skip), {"errored_samples": n}
    left_out: dict[str, int] | None = None
    errored_samples: list[str] | None = None  # the first five of those, each with its error
    expected_scores: int = 0
    retried: int = 0
    config_hash: str = ""
    run_hash: str = ""
    bootstrap: str = ""
    panel: PanelReport | None = None  # a panel judge: its members combined over the run
    self_preference: SelfPreferenceReport | None = None  # with a generator per item
    scale_use: ScaleUseReport | None = None  # an ordinal scale with references

    @model_validator(mode="before")
    @classmethod
    def _work(cls, data: Any) -> Any:
        return with_work(data)  # a metrics.json written before the cost of the work was kept


class EvaluateResult(_Model):
    """What :func:`assay.evaluation.evaluate` returns. ``judgments`` and ``items`` are read
    back on first access (from the run's ``judgments.jsonl`` and the run's data), so a caller
    that does not touch them holds neither."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    run_dir: Path
    summary: EvaluateSummary
    new_judgments: int
    mlflow_run_id: str | None
    resumed: bool
    retried: int = 0
    read_back: bool = False  # a finished run's metrics.json read back as it is (its seal holds)
    # data.write_back: Feedback written, updated and already there on the traces
    feedback: dict[str, int] | None = None
    _items: Iterable[Item] | Callable[[], Iterable[Item]] = PrivateAttr(default=())
    _ids: list[str] | None = PrivateAttr(default=None)

    @classmethod
    def lazy(
        cls,
        *,
        items: Iterable[Item] | Callable[[], Iterable[Item]],
        ids: list[str] | None = None,
        **fields: Any,
    ) -> EvaluateResult:
        """The result of a run over ``items`` (re-iterable: read again on access; or a function
        returning them, called on first access), ``ids`` their ids in order (else read from
        them when the judgments are)."""
        result = cls(**fields)
        result._items, result._ids = items, ids
        return result

    @classmethod
    def reread(
        cls,
        run_dir: Path,
        mlflow_run_id: str | None,
        *,
        items: Iterable[Item] | Callable[[], Iterable[Item]],
        ids: list[str] | None = None,
    ) -> EvaluateResult:
        """A finished run read back from its ``metrics.json``: no new judgment."""
        metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
        return cls.lazy(
            run_dir=run_dir,
            summary=EvaluateSummary.model_validate(metrics),
            new_judgments=0,
            mlflow_run_id=mlflow_run_id,
            resumed=True,
            read_back=True,
            items=items,
            ids=ids,
        )

    @cached_property
    def judgments(self) -> list[Judgment]:
        """Each item's latest judgment, in the items' order (read on first access)."""
        from assay.runs import RunStore

        store = RunStore(self.run_dir, run_hash=self.summary.run_hash)
        latest = {j.item_id: j for j in store.iter_records("judgments.jsonl", Judgment)}
        ids = self._ids if self._ids is not None else [it.id for it in self._source()]
        return [latest[i] for i in ids]

    @cached_property
    def items(self) -> list[Item]:
        """The run's items, in order (read again from the run's data on first access)."""
        return list(self._source())

    def _source(self) -> Iterable[Item]:
        if callable(self._items):
            self._items = self._items()
        return self._items


class AltTestOutcome(_Model):
    """The Alternative Annotator Test (Calderon et al. 2025): can the judge replace an annotator?"""

    winning_rate: Undefinable
    advantage_probability: Undefinable
    passed: bool
    epsilon: Undefinable
    q: Undefinable
    fdr: str
    scoring: str
    n_items: int
    n_items_dropped: int
    n_items_few_labels: int
    min_annotators_per_item: int
    min_items_per_annotator: int
    comparisons: list[dict[str, object]]
    skipped_annotators: list[str]
    note: str | None = None  # a result that is no evidence of agreement (one verdict)


class JudgeFigures(_Model):
    """One annotator or panel member under Dawid–Skene: its expected accuracy, the recall of
    every class (by label) and, on a binary scale, its sensitivity and specificity."""

    judge: str
    n: int
    accuracy: MetricValue
    sensitivity: MetricValue | None = None
    specificity: MetricValue | None = None
    recall: dict[str, MetricValue]


class PairExcess(_Model):
    """Two judges' agreement on the items both judged, what Dawid–Skene predicts for it, and
    the excess with its interval; ``flagged`` when it shows their errors are not independent."""

    judges: list[str]
    n: int
    observed: Undefinable
    predicted: Undefinable
    excess: MetricValue
    p_value: float  # one-sided (excess ≤ 0), bootstrap, Holm-adjusted over the pairs
    flagged: bool


class DawidSkeneReport(_Model):
    """Dawid–Skene over several judges' verdicts with no reference: each judge's figures, the
    classes' shares, every pair's excess agreement, how many items its verdict gives another
    label than the majority, and the warning when its independence assumption visibly fails."""

    judges: list[JudgeFigures]
    priors: dict[str, float]
    pairs: list[PairExcess]
    items: int
    differs_from_majority: int
    iterations: int
    converged: bool
    warning: str | None = None
    bootstrap: str


class PanelReport(_Model):
    """A panel's members combined over the run: its aggregate, how many verdicts a run-level
    aggregate (``dawid_skene``, ``weighted``) changed from the members' majority, and the
    members under Dawid–Skene (or why it was not fitted)."""

    aggregate: str
    members: list[str]
    changed: int = 0
    weights: dict[str, float] | None = None  # aggregate: weighted — each member's capped share
    dawid_skene: DawidSkeneReport | None = None
    note: str | None = None


class AnnotatorsReport(_Model):
    """Agreement among several annotators, the majority the judge was compared with, and the
    Alt-Test of the judge against them."""

    annotators: list[str]
    items: int
    labels: int
    single_label_items: int = 0  # their reference is their one label
    agreement: dict[str, MetricValue]
    majority_ties: int
    majority_seed: int
    alt_test: AltTestOutcome | None = None
    dawid_skene: DawidSkeneReport | None = None
    note: str | None = None


class AgreementResult(Agreement):
    """What ``assay agreement`` measures between two sets of verdicts."""

    n: int
    unscored: dict[str, int]
    unpaired: dict[str, int]
    paired_by: Literal["id", "eval_id", "line"]
    scale: str
    # where the scale came from: "--scale", the run's (its config.yaml), or inferred from the
    # scores
    scale_origin: str = "--scale"
    threshold: int | None = None
    disagreements: list[DisagreementRecord] = Field(default_factory=list)
    annotators: AnnotatorsReport | None = None
    scale_use: ScaleUseReport | None = None  # an ordinal scale
