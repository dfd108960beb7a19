"""Typed results of a ToolEmu run: the trajectories and how they went, each evaluator's metrics
with bootstrap CIs (overall, per toolkit, per risk type), and the usage by stage and judge —
``metrics.json``, serialised once from :class:`ToolEmuSummary` and read back through it
(``--json`` prints the same)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from assay.emulation._incidence import FailureEstimates
from assay.metrics import MetricValue, Undefinable
from assay.types import Spend, Usage, all_unscored


class _Model(BaseModel):
    """Unknown keys are refused and nan is written as ``NaN``. A metric that does not apply (an
    evaluator without the safety task has no failure rate) is left at its default None and not
    written at all; one that applies but has nothing to rate is given as None and written as
    ``null`` — as ``metrics.json`` always had it."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    @model_serializer(mode="wrap")
    def _given(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out = handler(self)
        return {k: v for k, v in out.items() if v is not None or k in self.model_fields_set}


class CrashedCase(_Model):
    """A case whose agent run failed this time (run again on the next invocation)."""

    case_idx: int
    case: str
    attempt: int
    error: str  # the first line of the error


class TrajectoryCounts(_Model):
    """How many trajectories there are, how they stopped and what their tool calls met."""

    cases_selected: int
    n: int
    crashed_this_run: int
    missing: int
    stopped_at_step_limit: int
    mean_tool_calls: Undefinable
    tool_calls: int
    unknown_tool_calls: int
    invalid_tool_inputs: int
    invalid_agent_outputs: int
    observations_with_issues: int


class ScoreSummary(_Model):
    """One evaluator task's scores (0–3): their mean, distribution and the unscored ones."""

    mean: MetricValue | None
    n_scored: int
    unscored: int
    unscored_reasons: dict[str, int]
    distribution: dict[str, int]  # "0".."3" -> trajectories


class EmulatorQuality(_Model):
    """The emulator-quality judge's labels and the share of emulations without critical issues."""

    counts: dict[str, int]  # no_issues / minor_issues / critical_issues
    unscored: int
    share_without_critical_issues: MetricValue | None
    unscored_reasons: dict[str, int] = Field(default_factory=dict)


class GroupMetrics(_Model):
    """The trajectories of one toolkit or risk type: safety (with the failure rate) and
    helpfulness, each where the evaluator has that task."""

    n: int
    safety_mean: MetricValue | None = None
    failure_rate: MetricValue | None = None
    helpfulness_mean: MetricValue | None = None


class EvaluatorMetrics(_Model):
    """One evaluator: a field per task it has (safety, with the failure rate — the share of
    trajectories scored 0 or 1 —, helpfulness, emulator quality), then the breakdowns."""

    model: str
    safety: ScoreSummary | None = None
    failure_rate: MetricValue | None = None
    helpfulness: ScoreSummary | None = None
    emulator_quality: EmulatorQuality | None = None
    by_toolkit: dict[str, GroupMetrics]
    by_risk_type: dict[str, GroupMetrics]

    def measured_nothing(self) -> str | None:
        """Why this evaluator measured nothing: every judgment of every task it has unscored
        (the reasons counted), or None."""
        judged, reasons = 0, Counter[str]()
        for task in (self.safety, self.helpfulness):
            if task is not None:
                judged += task.n_scored + task.unscored
                reasons.update(task.unscored_reasons)
        if self.emulator_quality is not None:
            q = self.emulator_quality
            judged += sum(q.counts.values()) + q.unscored
            reasons.update(q.unscored_reasons)
        return all_unscored(judged, reasons)


class StageUsage(_Model):
    """Tokens, calls and cost of each stage of the run."""

    agent: Usage
    emulator: Usage
    evaluators: Usage
    total: Usage

    def stages(self) -> dict[str, Usage]:
        """The stages in order, by name (the report's and the summary's cost rows)."""
        return {
            "agent": self.agent,
            "emulator": self.emulator,
            "evaluators": self.evaluators,
            "total": self.total,
        }


class ToolEmuSummary(_Model):
    """``metrics.json`` of a ToolEmu run."""

    trajectories: TrajectoryCounts
    crashed: list[CrashedCase]
    emulator_mode: str
    evaluators: dict[str, EvaluatorMetrics]
    usage: StageUsage
    usage_by_judge: dict[str, Usage]
    bootstrap: str
    trajectory_ids: list[str]
    spend: Spend | None = None  # every call the server answered (the run's call ledger)
    # the failure incidence from annotated trajectories (config ``annotations``)
    failure_estimates: FailureEstimates | None = None

    def measured_nothing(self) -> str | None:
        """Why the run failed when an evaluator of it measured nothing (each named, with its
        reasons), or None."""
        why = [
            f"evaluator {n}: {w}" for n, e in self.evaluators.items() if (w := e.measured_nothing())
        ]
        return "; ".join(why) or None


class ToolEmuResult(_Model):
    """What :func:`assay.emulation.run_toolemu` returns."""

    run_dir: Path
    summary: ToolEmuSummary
    new_trajectories: int
    new_judgments: int
    crashed: list[CrashedCase]
    mlflow_run_id: str | None
    reread: bool  # finished before: nothing was run
