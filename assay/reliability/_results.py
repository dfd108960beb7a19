"""Typed results of a harness run: each judge's scores on every reliability test, its usage and
cost, what generation spent and dropped, and the review — ``metrics.json``, serialised once
from :class:`HarnessSummary` and read back through it (``--json`` prints the same)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from assay.metrics import MetricValue, PlaceboEffect
from assay.types import Spend, Usage, all_unscored, with_work


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")


class CriterionScores(_Model):
    """Agent tests: one rubric criterion's probes, scored on the judge's verdict for it."""

    probes: int
    pass_rate: MetricValue | None
    consistency: MetricValue | None  # the verdict moved toward the target
    consistency_undefined: int  # already at the target, or the untouched transcript


class TargetScores(_Model):
    """Agent tests, ordinal criteria: the probes of one target score."""

    probes: int
    exact: MetricValue | None
    within_one: MetricValue | None
    mae: MetricValue | None


class AskedScores(_Model):
    """One way of asking the judge its task (a paraphrase of its instruction and rubric, the
    rubric on a coarser or finer scale), or its own task (``original``): the verdicts mapped
    back onto the judge's scale, how often they changed from its own source verdict, and
    their agreement with the reference (:func:`assay.evaluation.agreement_summary`, the
    metrics ``assay evaluate`` reports) where the sources have one."""

    probes: int  # scored verdicts (with a scored source verdict, for ``changed``)
    instruction: str | None = None  # a paraphrase's texts
    rubric: str | None = None
    points: int | None = None  # a granularity: the scale asked, 1..points
    maps_back: dict[str, int] | None = None  # its score → the judge's scale
    changed: MetricValue | None = None  # not for the original
    agreement: dict[str, MetricValue] = Field(default_factory=dict)
    agreement_n: int = 0  # the labelled sources it is over
    agreement_note: str | None = None
    verdicts: dict[str, int] = Field(default_factory=dict)  # as answered, per score
    mapped: dict[str, int] | None = None  # mapped back, per score of the judge's scale


class PlaceboScores(_Model):
    """A bias test's effect against its placebo, for one judge: the placebo judgments (one per
    source: the source unchanged, judged again with the LM cache bypassed), and per cue cell —
    one probe per source, e.g. a template at a position, an injection variant at a position —
    the cue's effect (:func:`assay.metrics.placebo_effect`). ``left_out`` counts the cue
    verdicts without a scored baseline, cue or placebo verdict. ``flagged`` (per cell, and for
    the test: any cell) is set over the run's family of effects: Benjamini–Hochberg adjusted
    p-value at most the run's ``fdr`` and the interval above 0."""

    probes: int
    judged: int
    unscored: int
    unscored_reasons: dict[str, int]
    left_out: int
    effects: dict[str, PlaceboEffect]
    flagged: bool | None = None


# What a scoring kind adds to the envelope: a metric with its interval, a count or a bare rate,
# a metric per group (samples needed per m, injection success per variant / position), per
# rubric criterion or target score (agent tests), the inverted task's texts (polarity), per
# way of asking the task (prompt_paraphrase, scale_granularity) and the name of one of them.
ScoringValue = (
    MetricValue
    | int
    | float
    | None
    | str
    | dict[str, MetricValue | None]
    | dict[str, CriterionScores]
    | dict[str, TargetScores]
    | dict[str, AskedScores]
    | dict[str, str | None]
)


class ReliabilityScores(_Model):
    """One judge on one reliability test. Every scoring kind reports the envelope —
    probes, how many were judged and unscored, the pass rate against the probes' targets and
    the consistency with the judge's own source verdict (over the cue probes: a placebo is
    counted in ``placebo``); what the kind adds (flip rate, samples needed, the bias measures,
    per-criterion tables, ``source_unscored``...: each kind's ``Metrics`` model in
    ``scoring/``) is in ``scoring_metrics``. Written flat, as one object."""

    probes: int
    judged: int
    unscored: int
    unscored_reasons: dict[str, int]
    pass_rate: MetricValue | None
    consistency: MetricValue | None
    # a bias test's effect against its placebo (absent for the other tests)
    placebo: PlaceboScores | None = Field(default=None, exclude_if=lambda v: v is None)
    scoring_metrics: dict[str, ScoringValue] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _gather(cls, data: Any) -> Any:
        """A flat object (``metrics.json``, the scoring functions): the keys past the envelope
        are the scoring kind's."""
        if not isinstance(data, dict) or "scoring_metrics" in data:
            return data
        envelope = {k: v for k, v in data.items() if k in cls.model_fields}
        return {**envelope, "scoring_metrics": {k: v for k, v in data.items() if k not in envelope}}

    @model_serializer(mode="wrap")
    def _flat(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out = handler(self)
        scoring = out.pop("scoring_metrics")
        return {**out, **scoring}


class JudgeReliability(_Model):
    """One judge of a harness run: its scores per test, the cost of its work and what of it
    was paid, its mean pass rate."""

    model: str
    config_hash: str
    tests: dict[str, ReliabilityScores]
    judgments: str = ""  # its judgments file in the run directory ("": written before it was kept)
    source_unscored: int  # sources the judge left unscored (their probes have no consistency)
    usage: Usage  # the answers its judgments hold: served (paid) and from the LM cache
    work: Usage  # the cost of the work: usage.work(), every answer priced as a call
    mean_pass_rate: float | None
    cost_per_accuracy_point_usd: float | None  # of the work

    @model_validator(mode="before")
    @classmethod
    def _work(cls, data: Any) -> Any:
        return with_work(data)  # a metrics.json written before the cost of the work was kept

    def measured_nothing(self) -> str | None:
        """Why this judge measured nothing — every probe it judged is unscored, with the
        reasons counted — or None."""
        reasons: Counter[str] = Counter()
        for t in self.tests.values():
            reasons.update(t.unscored_reasons)
        return all_unscored(sum(t.judged for t in self.tests.values()), reasons, "probe verdicts")


class ReviewCounts(_Model):
    """How many probes each review status has, and whether review was required to judge."""

    pending: int
    accepted: int
    edited: int
    rejected: int
    required: bool


class HarnessSummary(_Model):
    """``metrics.json`` of a harness run."""

    seeds: int
    notes: list[str]  # what the tests say about how they treated the items
    probes: dict[str, int]  # test -> probes made
    dropped: dict[str, dict[str, int]]  # test -> reason -> attempts dropped (never judged)
    review: ReviewCounts
    judges: dict[str, JudgeReliability]
    generation_usage: dict[str, Usage]  # "<stage>:<test>" -> usage
    lm_calls: dict[str, int]  # "<stage>:<test>" and "judge:<name>" -> calls
    spend: Spend | None = None  # every call the server answered (the run's call ledger)
    bootstrap: str
    # the false discovery rate the bias tests' effects against their placebo are flagged at
    fdr: float | None = Field(default=None, exclude_if=lambda v: v is None)
    data_fingerprint: str
    # data.pairs: the labelled pairs built from a score column, and those skipped (absent else)
    pairs: dict[str, int] | None = Field(default=None, exclude_if=lambda v: v is None)

    def measured_nothing(self) -> str | None:
        """Why the run failed when a judge of it measured nothing (each such judge named,
        with its reasons), or None."""
        why = [f"judge {n}: {w}" for n, r in self.judges.items() if (w := r.measured_nothing())]
        return "; ".join(why) or None

    @classmethod
    def stored(cls, run_dir: Path) -> HarnessSummary | None:
        """The summary a finished run wrote in its ``metrics.json``; None when this version
        cannot read it (written by an older one: the run is scored again from its files)."""
        try:
            return cls.model_validate(json.loads((run_dir / "metrics.json").read_text("utf-8")))
        except (OSError, ValueError):  # a ValidationError is a ValueError
            return None


class HarnessResult(_Model):
    """What :func:`assay.reliability.run_harness` returns."""

    run_dir: Path
    summary: HarnessSummary
    mlflow_run_id: str | None
    # this invocation, per test: of the summary's probes, those taken unchanged from an earlier
    # run of the directory (the same inputs: sources, settings, programs, models, the rubric
    # text they read) — all of them when a finished run is re-read; the rest were made now.
    # Not in metrics.json, which stays a function of the run's files.
    probes_reused: dict[str, int] = Field(default_factory=dict)

    @classmethod
    def reread(cls, run_dir: Path, summary: HarnessSummary, run_id: str | None) -> HarnessResult:
        """A finished run read back: every probe reused, its MLflow run the one it logged."""
        return cls(
            run_dir=run_dir,
            summary=summary,
            mlflow_run_id=run_id,
            probes_reused=dict(summary.probes),
        )
