"""The typed config of ``assay harness``: seeds, generator/validator models, judges, tests."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from assay.errors import ConfigError
from assay.inputs import DataConfig, RunConfig, without_write_back
from assay.lm import GeneratorSpec, ValidatorSpec
from assay.programs import RUN_LEVEL_AGGREGATES, JudgeConfig, get_kind
from assay.scale import Scale
from assay.types import Seed, Share, StrictInt, stable_hash


def _takes_the_scale(judge: dict[str, Any]) -> bool:
    """A judge (as written) with no scale, of a kind whose scale is its config's."""
    task = judge.get("task", "response")
    if judge.get("scale") is not None or not isinstance(task, str):
        return False
    try:
        kind = get_kind(task)
    except ConfigError:  # the judge's own validation names the unknown task
        return False
    return kind.fixed_scale is None and not kind.own_prompt


class SampleConfig(BaseModel):
    """A seeded, stratified sample of seed items (round-robin over strata)."""

    model_config = ConfigDict(extra="forbid")

    n: StrictInt = Field(ge=1, description="items drawn from the data")
    stratify: str | None = Field(
        default=None, description="a data column to stratify the draw by (e.g. SemanticCategory)"
    )
    seed: Seed = Field(default=0, description="the seed of the draw")


class ReviewConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    required: bool = Field(
        default=False,
        description="judge only the probes a person accepted or edited (assay review)",
    )


class _RegisteredTests:
    """The JSON schema of ``tests``: one property per registered reliability test, its
    ``Settings`` model (built-in and plug-in tests alike, as registered when the schema is
    made). The value stays a plain mapping — test name → settings —, checked against each
    test's own model when the config is read (:meth:`HarnessConfig._settings`), validated by
    :func:`get_test` into it, and hashed as written into the probes' key."""

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        from assay.reliability._registry import known_tests, registered_test

        return {
            "type": "object",
            "description": "The reliability tests to run, by name, each with its settings.",
            "properties": {
                name: handler(registered_test(name).Settings.__pydantic_core_schema__)
                for name in known_tests()
            },
            "additionalProperties": False,
            "minProperties": 1,
        }


class HarnessConfig(RunConfig):
    """An ``assay harness`` run."""

    data: DataConfig = Field(description="the source items the probes are made from")
    sample: SampleConfig | None = Field(
        default=None, description="a seeded draw of the items (default: all)"
    )
    scale: Scale = Field(description="the judges' verdict space")
    generator: GeneratorSpec = Field(
        default_factory=GeneratorSpec, description="the model that writes probes"
    )
    validator: ValidatorSpec = Field(
        default_factory=ValidatorSpec,
        description="the model that checks probes before they are judged",
    )
    judges: list[JudgeConfig] = Field(min_length=1, description="the judges measured")
    tests: Annotated[dict[str, dict[str, Any]], _RegisteredTests()] = Field(min_length=1)
    review: ReviewConfig = Field(
        default_factory=ReviewConfig, description="human review of the probes"
    )
    fdr: Share = Field(
        default=0.05,
        description="the false discovery rate at which a bias test's effect against its "
        "placebo is flagged (Benjamini–Hochberg over the run's bias tests × judges), strictly "
        "between 0 and 1",
    )
    _no_write_back = field_validator("data")(without_write_back)

    @field_validator("judges", mode="before")
    @classmethod
    def _judge_scales(cls, judges: Any, info: ValidationInfo) -> Any:
        """Judges default to the harness scale, of whatever kind — built in or a plug-in (the
        config's plug-ins are imported by now: a base field, validated first) — unless the kind
        has a scale of its own: a fixed one, or the one an MLflow judge's own prompt sets."""
        scale = info.data.get("scale")
        if scale is None or not isinstance(judges, list):
            return judges
        return [
            {**j, "scale": scale} if isinstance(j, dict) and _takes_the_scale(j) else j
            for j in judges
        ]

    @field_validator("tests")
    @classmethod
    def _settings(cls, tests: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Each test's settings checked by its ``Settings`` model as the config is read, so a
        bad value is named with the file and its field (``tests.<test>.<setting>``)."""
        from assay.reliability._registry import registered_test

        for name, settings in tests.items():
            try:
                test = registered_test(name)
            except ConfigError:  # an unknown name: refused where the run looks its tests up
                continue  # (after a plug-in that failed to import, named with the file)
            try:
                test.Settings.model_validate(settings or {})
            except ValidationError as exc:
                errors = [
                    {k: v for k, v in e.items() if k not in ("msg", "url")}
                    | {"loc": (name, *e["loc"])}
                    for e in exc.errors()
                ]
                raise ValidationError.from_exception_data(cls.__name__, errors) from None
        return tests

    @model_validator(mode="after")
    def _check(self) -> HarnessConfig:
        names = [j.name for j in self.judges]
        if len(set(names)) != len(names):
            raise ValueError("judge names must be unique")
        for j in self.judges:
            if j.scale != self.scale:
                raise ValueError(f"judge '{j.name}' has another scale than the harness")
            if j.program == "panel" and j.aggregate in RUN_LEVEL_AGGREGATES:
                raise ValueError(
                    f"judge '{j.name}': aggregate '{j.aggregate}' weighs the members over a "
                    "run's items, and the harness compares each probe's verdict with its "
                    "source's one at a time; use majority, mean, median, min or trimmed_mean"
                )
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
