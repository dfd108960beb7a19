"""The typed config of ``assay harness``: seeds, generator/validator models, judges, tests."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from assay.experiments._config import DataConfig, RunConfig
from assay.lm import GeneratorSpec, ValidatorSpec
from assay.programs import JudgeConfig
from assay.scale import Scale
from assay.types import stable_hash


class SampleConfig(BaseModel):
    """A seeded, stratified sample of seed items (round-robin over strata)."""

    model_config = ConfigDict(extra="forbid")

    n: int = Field(ge=1)
    stratify: str | None = None  # a meta column (e.g. SemanticCategory, prompt_name)
    seed: int = 0


class ReviewConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    required: bool = False  # judge only probes a person accepted or edited


class HarnessConfig(RunConfig):
    """An ``assay harness`` run."""

    data: DataConfig
    sample: SampleConfig | None = None
    scale: Scale
    generator: GeneratorSpec = Field(default_factory=GeneratorSpec)
    validator: ValidatorSpec = Field(default_factory=ValidatorSpec)
    judges: list[JudgeConfig] = Field(min_length=1)
    tests: dict[str, dict[str, Any]] = Field(min_length=1)
    review: ReviewConfig = Field(default_factory=ReviewConfig)

    @model_validator(mode="before")
    @classmethod
    def _judge_scales(cls, raw: Any) -> Any:
        """Judges default to the harness scale."""
        if (
            isinstance(raw, dict)
            and isinstance(raw.get("judges"), list)
            and raw.get("scale") is not None
        ):
            for j in raw["judges"]:
                if (
                    isinstance(j, dict)
                    and j.get("scale") is None
                    and j.get("task", "response") in ("response", "transcript", "pairwise")
                ):
                    j["scale"] = raw["scale"]
        return raw

    @model_validator(mode="after")
    def _check(self) -> HarnessConfig:
        names = [j.name for j in self.judges]
        if len(set(names)) != len(names):
            raise ValueError("judge names must be unique")
        for j in self.judges:
            if j.scale != self.scale:
                raise ValueError(f"judge '{j.name}' has another scale than the harness")
        return self

    def probes_hash(self, data_fingerprint: str) -> str:
        """Identity of the probe set: data, sample, scale, generator, validator, test settings.

        Judges are not part of it, so adding a judge to a finished run re-uses its probes;
        what a unit's generation read from them (the first judge's rubric, a criterion) is
        part of that unit's key instead (``_generation.unit_key``): an edit regenerates it.
        """
        return stable_hash(
            {
                "data": data_fingerprint,
                "sample": self.sample.model_dump() if self.sample else None,
                "scale": self.scale.model_dump(),
                "generator": self.generator.identity(),
                "validator": self.validator.identity(),
                "tests": self.tests,
            }
        )
