"""A selective run's config: the cascade's judges, α, δ, the holdout, and where the
calibration goes (``calibration.json``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from assay._files import resolve
from assay.inputs import DataConfig, RunConfig, load_config
from assay.lm import Real, StrictInt
from assay.programs import JudgeConfig

CALIBRATION = "calibration.json"


class SelectiveConfig(RunConfig):
    """A cascade of judges and its guarantee: ``judges`` in order of cost, each with a
    ``confidence`` source; agreement ≥ 1 − ``alpha`` on kept items with probability ≥
    1 − ``delta``. ``data`` are the labelled items ``calibrate`` reads (``holdout``: the share
    kept aside, drawn with ``seed``); ``unlabelled`` the items ``apply`` judges."""

    data: DataConfig = Field(description="the labelled items the cascade is calibrated on")
    judges: list[JudgeConfig] = Field(
        min_length=1, description="the judges of the cascade, cheapest first"
    )
    alpha: Real = Field(default=0.1, gt=0, lt=1, description="disagreement allowed on kept items")
    delta: Real = Field(default=0.1, gt=0, lt=1, description="chance the guarantee fails")
    holdout: Real = Field(default=0.0, ge=0, lt=1, description="labelled share kept aside")
    seed: StrictInt = Field(default=0, description="the seed of the holdout split")
    unlabelled: DataConfig | None = Field(
        default=None, description="items to apply the calibrated cascade to"
    )

    @model_validator(mode="after")
    def _check(self) -> SelectiveConfig:
        names = [j.name for j in self.judges]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"judge name {', '.join(repeated)} is used by two stages")
        for k, judge in enumerate(self.judges):
            if judge.confidence is None:
                raise ValueError(
                    f"judges.{k} ({judge.name}) has no 'confidence' "
                    "({source: probability | samples | panel}): a stage keeps an item by it"
                )
            if judge.scale != self.judges[0].scale:
                raise ValueError(f"judges.{k} ({judge.name}): every stage must share one scale")
        return self

    @property
    def scale(self) -> Any:
        return self.judges[0].scale


def load_selective(path: str | Path, overrides: dict | None = None) -> tuple[SelectiveConfig, Path]:
    """A selective config from YAML: the judges' ``@file`` texts and ``data.path`` resolved as
    ``evaluate`` does them, and ``unlabelled.path`` against the config's folder too."""
    config, base = load_config(path, overrides, model=SelectiveConfig)
    if config.unlabelled is not None and not Path(config.unlabelled.path).is_absolute():
        config.unlabelled.path = str(resolve(base / config.unlabelled.path))
    return config, base
