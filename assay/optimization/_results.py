"""Typed result of ``assay optimize`` (``result.json``)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict

from assay.evaluation import EvaluateSummary
from assay.metrics import Undefinable
from assay.types import Spend, Usage, all_unscored


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")


class ObjectiveParts(_Model):
    """The optimised objective on dev, and its parts (label agreement, format consistency)."""

    metric: str
    n: int
    label_agreement: Undefinable | None
    consistency: Undefinable | None
    with_variants: int
    weight: Undefinable
    value: Undefinable | None


class Measurement(_Model):
    """A program measured on dev and test, with the objective on dev and the calls it took."""

    dev: EvaluateSummary
    test: EvaluateSummary
    objective: ObjectiveParts
    usage: Usage
    reused: bool = False

    def measured_nothing(self) -> str | None:
        """Why this measurement measured nothing: every judgment on dev and test unscored
        (the reasons counted), or None."""
        reasons = Counter(self.dev.counts.unscored_reasons)
        reasons.update(self.test.counts.unscored_reasons)
        return all_unscored(self.dev.counts.judged + self.test.counts.judged, reasons)


class OptimizeUsage(_Model):
    baseline: Usage
    optimization: Usage
    optimization_by_model: dict[str, Usage]
    after: Usage
    total: Usage


class OptimizeResult(_Model):
    """Before and after on held-out splits, the compiled program and what everything cost."""

    name: str
    run_dir: str
    optimizer: dict[str, Any]
    metric: str
    invariance: dict[str, Any]
    split: dict[str, Any]
    before: Measurement
    after: Measurement
    objective: dict[str, ObjectiveParts]
    demos: int
    compile_seconds: Undefinable
    usage: OptimizeUsage
    program: str
    mlflow_run_id: str | None = None
    mlflow_model: str | None = None
    use: dict[str, dict[str, Any]] | None = None
    reused: bool = False
    spend: Spend | None = None  # every call the server answered (the run's call ledger)

    def measured_nothing(self) -> str | None:
        """Why the run failed when the judge before or after optimizing measured nothing (every
        judgment unscored), or None."""
        why = [
            f"{when}: {w}"
            for when, m in (("before optimizing", self.before), ("after", self.after))
            if (w := m.measured_nothing())
        ]
        return "; ".join(why) or None
