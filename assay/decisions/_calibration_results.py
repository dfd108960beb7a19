"""``calibration.json`` of ``assay calibrate``: the threshold and the maps, each fitted on one
split and measured on the other."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from assay.metrics import CalibrationMap, MetricValue, Undefinable


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")


class CalibrationFit(_Model):
    n: int
    kappa: Undefinable


class CalibrationEvaluation(_Model):
    n: int
    auc: Undefinable
    argmax: dict[str, MetricValue]
    calibrated: dict[str, MetricValue]


class MapOutcome(_Model):
    """A calibration map fitted on the calibration split, measured on the evaluation split:
    agreement of its verdicts and (isotonic, Platt) the calibration of its probabilities."""

    map: CalibrationMap
    verdicts: dict[str, MetricValue]
    probabilities: dict[str, MetricValue] | None = None


class CalibrationResult(_Model):
    """``calibration.json`` of ``assay calibrate``: the κ-optimal threshold and the isotonic and
    Platt maps, each fitted on one split and measured on the other."""

    threshold: Undefinable
    calibration: CalibrationFit
    evaluation: CalibrationEvaluation
    raw_probabilities: dict[str, MetricValue] = Field(default_factory=dict)
    maps: dict[str, MapOutcome] = Field(default_factory=dict)
    method: str = "threshold"
    excluded: dict[str, int]
    split: dict[str, object]
    run_dir: str
    use: dict[str, dict[str, object]]
    # the ledger's record of the fit as a tuning on the calibration split (none before it was)
    tuning_record: str | None = None
