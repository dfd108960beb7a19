"""What a selective run writes: the calibrated thresholds, the counts per stage and per part,
the summary and the statement of its guarantee."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from assay.metrics import Undefinable
from assay.types import PlainName, Spend, Usage, all_unscored, with_work


class StageThreshold(BaseModel):
    """One stage's calibrated threshold (``calibration.json``): keep an item when the judge's
    confidence is ≥ ``threshold``; None: it keeps nothing (nothing certified)."""

    model_config = ConfigDict(extra="forbid")

    judge: str
    config_hash: str
    confidence_source: str
    threshold: Undefinable | None
    delta: Undefinable
    n: int
    kept: int
    disagreements: int
    p_value: Undefinable | None
    note: str = ""


class Calibration(BaseModel):
    """``calibration.json``: the thresholds of a cascade, bound to each stage's judge config
    hash, to the labelled items they were calibrated on and to the calibrate run that holds
    it, signed by the signing key."""

    model_config = ConfigDict(extra="forbid")

    alpha: Undefinable
    delta: Undefinable
    guarantee: str
    data: str  # the calibration items' fingerprint
    n_calibration: int
    stages: list[StageThreshold]
    run: PlainName | None = None  # the calibrate run's directory, in its runs folder
    signature: str = ""  # HMAC-SHA256 of every other field (canonical JSON), by the key

    def signed_part(self) -> dict[str, Any]:
        """Every field but the signature, as the signature covers them."""
        return self.model_dump(mode="json", exclude={"signature"})


class StageCount(BaseModel):
    """What one stage did on one part of the items: how many reached it, were judged (an
    unscored judgment is never kept), kept, escalated onward; what its calls cost."""

    model_config = ConfigDict(extra="forbid")

    judge: str
    threshold: Undefinable | None
    reached: int
    judged: int
    unscored: int
    kept: int
    escalated: int
    unscored_reasons: dict[str, int] = Field(default_factory=dict)
    disagreements_kept: int | None = None  # where the items have references
    usage: Usage = Field(default_factory=Usage)


class PartSummary(BaseModel):
    """A part of the items (calibration, holdout, or the unlabelled items ``apply`` judged)
    through the cascade: per stage, and in all — kept, abstained, coverage and, where the items
    have references, the agreement on kept items with its exact (Clopper–Pearson) interval."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    part: Literal["calibration", "holdout", "items"]
    items: int
    kept: int
    abstained: int
    coverage: Undefinable | None
    stages: list[StageCount]
    labelled: int = 0
    labelled_kept: int | None = None  # the kept items with a reference: the agreement's n
    agreement_kept: Undefinable | None = None
    agreement_ci: tuple[float, float] | None = None


class SelectiveSummary(BaseModel):
    """``metrics.json`` of a selective run (``mode``: calibrate or apply)."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    mode: Literal["calibrate", "apply"]
    alpha: Undefinable
    delta: Undefinable
    guarantee: str
    thresholds: list[StageThreshold]
    parts: list[PartSummary]
    usage: Usage  # the answers the judgments hold: served (paid) and from the LM cache
    work: Usage  # the cost of the work: usage.work(), every answer priced as a call
    spend: Spend | None = None  # every call the server answered (the run's call ledger)
    without_reference: int = 0
    run_hash: str = ""

    @model_validator(mode="before")
    @classmethod
    def _work(cls, data: Any) -> Any:
        return with_work(data)  # a metrics.json written before the cost of the work was kept

    def measured_nothing(self) -> str | None:
        """Why the run failed when every judgment of every stage is unscored (the reasons
        counted), or None."""
        stages = [c for part in self.parts for c in part.stages]
        reasons: Counter[str] = Counter()
        for c in stages:
            reasons.update(c.unscored_reasons)
        return all_unscored(sum(c.judged for c in stages), reasons)


class SelectiveResult(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    run_dir: Path
    summary: SelectiveSummary
    new_judgments: int
    mlflow_run_id: str | None = None
    calibration_file: Path | None = None
    human_verdicts: int | None = None  # apply: abstained items a person has given a verdict


def guarantee(alpha: float, delta: float, m: int) -> str:
    split = f"; δ split as δ/{m} per stage (union bound)" if m > 1 else ""
    return (
        f"agreement with humans ≥ {1 - alpha:g} on kept items with probability ≥ {1 - delta:g} "
        f"(α = {alpha:g}, δ = {delta:g}{split}), for items exchangeable with the calibration items"
    )
