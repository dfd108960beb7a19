"""What ``assay toolemu agreement`` measures, typed: the files read, the human majorities, each
evaluator against them, the annotators among themselves, the emulations' quality and the
safety evaluator's failures. ``--json`` prints :meth:`ToolEmuAgreement.model_dump` (a figure
that does not apply is left out, as its note says)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_serializer

from assay.evaluation import AnnotatorsReport
from assay.metrics import InterAnnotatorKappa, MetricValue, Tie


def _absent(value: object) -> bool:
    return value is None


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FilesRead(_Model):
    """The files read: trajectories, each evaluator's scores (None: no such evaluator) and the
    annotations."""

    trajectories: str
    safety: str | None
    helpfulness: str | None
    annotations: str


class TrajectoryCount(_Model):
    total: int
    annotated: int


class AnnotationsRead(_Model):
    """The annotation file: its rows, its annotators, and how many ``true_failure`` values were
    derived from the safety score because the row left them out."""

    file: str
    rows: int
    annotators: list[str]
    true_failure_derived: int


class MajoritySummary(_Model):
    """How the human majorities were taken: the tie rule and every tie it broke."""

    seed: int
    tie_rule: str
    ties: dict[str, int]
    tie_count: int
    tie_details: list[Tie]


class EvaluatorVsHuman(_Model):
    """An evaluator's κ against the human majority on the ``n`` trajectories both scored;
    ``unscored``: evaluator output that did not parse; ``not_evaluated``: annotated
    trajectories the evaluator file has no line for; the confusion matrix's rows are the human
    majority 0–3, its columns the evaluator."""

    n: int
    unscored: int
    not_evaluated: int
    metrics: dict[str, MetricValue]
    confusion_matrix: list[list[int]] | None
    note: str | None = Field(default=None, exclude_if=_absent)


class NoEvaluator(_Model):
    """No file of this evaluator was given or found."""

    note: str


class AnnotatorsAgreement(InterAnnotatorKappa):
    """The annotators pair by pair, and all at once (Fleiss' κ, Krippendorff's α, the Alt-Test
    of the evaluator against them)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    all_annotators: AnnotatorsReport

    @field_serializer("all_annotators")
    def _as_json(self, report: AnnotatorsReport) -> dict[str, Any]:
        return report.model_dump(mode="json")


class EmulationQuality(_Model):
    """How many emulations the human majority calls critical, and the share free of them."""

    n: int
    critical: int
    free_of_critical_issues: MetricValue


class FailureFigures(_Model):
    """The safety evaluator's flags against the true failures (emulations with critical issues
    excluded): the counts, identified-failure precision and true-failure incidence; only the
    rules and a note without a safety evaluator."""

    flagged_rule: str
    true_failure_rule: str
    note: str | None = Field(default=None, exclude_if=_absent)
    n: int | None = Field(default=None, exclude_if=_absent)
    flagged: int | None = Field(default=None, exclude_if=_absent)
    true_failures: int | None = Field(default=None, exclude_if=_absent)
    excluded_critical: int | None = Field(default=None, exclude_if=_absent)
    true_and_flagged: int | None = Field(default=None, exclude_if=_absent)
    # annotated trajectories with no safety score (unscored or not evaluated): in neither rate
    without_score: int | None = Field(default=None, exclude_if=_absent)
    identified_failure_precision: MetricValue | None = Field(default=None, exclude_if=_absent)
    true_failure_incidence: MetricValue | None = Field(default=None, exclude_if=_absent)


class ToolEmuAgreement(_Model):
    """ToolEmu's validation figures; ``files`` is None (and left out) when the report was
    computed from annotations and scores in memory (:func:`agreement_report`). Evaluators and
    annotators are keyed by field: ``safety``, ``helpfulness``."""

    files: FilesRead | None = Field(default=None, exclude_if=_absent)
    seed: int
    n_resamples: int
    confidence: float
    trajectories: TrajectoryCount
    annotations: AnnotationsRead
    majority: MajoritySummary
    evaluator_vs_human: dict[str, EvaluatorVsHuman | NoEvaluator]
    inter_annotator: dict[str, AnnotatorsAgreement]
    emulation: EmulationQuality
    failures: FailureFigures
