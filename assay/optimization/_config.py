"""The typed config of ``assay optimize``: data, judge, split, optimizer, objective."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from assay.inputs import DataConfig, RunConfig, without_write_back
from assay.programs import JudgeConfig
from assay.programs.kinds import get_kind
from assay.types import stable_hash

# config name → DSPy optimizer class (looked up on ``dspy`` when used)
OPTIMIZERS = {
    "bootstrap_few_shot": "BootstrapFewShot",
    "random_search": "BootstrapFewShotWithRandomSearch",
    "mipro": "MIPROv2",
    "simba": "SIMBA",
    "gepa": "GEPA",
}
USES_VALSET = {"random_search", "mipro", "gepa"}
"""Optimizers that select among candidates on a validation set (dev)."""


class SplitConfig(BaseModel):
    """Fractions of the labelled items; stratified by label and seeded."""

    model_config = ConfigDict(extra="forbid")

    train: float = Field(
        default=0.5, gt=0, lt=1, description="share of the labelled items the optimizer trains on"
    )
    dev: float = Field(
        default=0.25,
        gt=0,
        lt=1,
        description="share it selects on (the optimizers that select) and measures on",
    )
    test: float = Field(
        default=0.25, gt=0, lt=1, description="share held out until the final measurement"
    )
    seed: int = Field(default=0, description="the seed of the split")
    stratify: bool = Field(default=True, description="keep each label's share in every split")

    @model_validator(mode="after")
    def _sum(self) -> SplitConfig:
        if abs(self.train + self.dev + self.test - 1) > 1e-9:
            raise ValueError("split fractions train + dev + test must sum to 1")
        return self


class OptimizerConfig(BaseModel):
    """A DSPy optimizer: ``options`` go to its constructor, ``compile_options`` to ``compile``.

    ``prompt_model`` / ``task_model`` / ``reflection_lm`` options may be a model string or a
    mapping like a harness role (``{model, temperature, max_tokens, seed, api_base, api_key_env,
    price}``); their calls are counted and costed with the optimizer's.
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        description=("the DSPy optimizer: bootstrap_few_shot, random_search, mipro, simba or gepa")
    )
    options: dict[str, Any] = Field(default_factory=dict, description="its constructor's options")
    compile_options: dict[str, Any] = Field(
        default_factory=dict, description="its compile()'s options"
    )

    @field_validator("name")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer '{v}'; known optimizers: {', '.join(OPTIMIZERS)}")
        return v


class InvarianceConfig(BaseModel):
    """The reliability-aware objective: agreement with the label and across format variants."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(
        default=False,
        description=("score agreement across format variants too (a reliability-aware objective)"),
    )
    weight: float = Field(
        default=0.5, ge=0, le=1, description="the consistency part's weight, 0 to 1"
    )
    variants: list[str] = Field(
        default_factory=lambda: ["format_vertical", "format_intraline", "format_indent"],
        min_length=1,
        description="the format tests whose variants are judged",
    )

    @field_validator("variants")
    @classmethod
    def _format_tests(cls, v: list[str]) -> list[str]:
        from assay.reliability import FormatTest, get_test

        for name in v:
            if not isinstance(get_test(name), FormatTest):
                raise ValueError(f"'{name}' is not a deterministic format test (format_*)")
        return v


class OptimizeConfig(RunConfig):
    """An ``assay optimize`` run: data, judge, split, optimizer, objective, and recording."""

    data: DataConfig = Field(description="the labelled items")
    judge: JudgeConfig = Field(description="the judge to optimize")
    split: SplitConfig = Field(
        default_factory=SplitConfig, description="train, dev and test shares"
    )
    optimizer: OptimizerConfig = Field(description="the DSPy optimizer and its options")
    _no_write_back = field_validator("data")(without_write_back)
    metric: Literal["exact", "absolute", "quadratic", "within_one", "log_loss"] = Field(
        default="exact",
        description=(
            "the per-example objective: exact, absolute, quadratic (the surrogate "
            "of quadratic κ), within_one or log_loss"
        ),
    )
    invariance: InvarianceConfig = Field(
        default_factory=InvarianceConfig, description="the reliability-aware objective"
    )
    log_mlflow_model: bool = Field(
        default=False,
        description="also log the program with mlflow.dspy (a cloudpickle: loading it runs "
        "code); program.json, the JSON state, is always logged",
    )

    @model_validator(mode="after")
    def _check(self) -> OptimizeConfig:
        if self.judge.program == "panel":
            raise ValueError("optimize compiles one judge program; a panel cannot be optimized")
        if get_kind(self.judge.task).own_prompt:
            raise ValueError(
                f"task '{self.judge.task}': the judge writes its own prompt, which a DSPy "
                "optimizer cannot tune"
            )
        scale = self.judge.scale
        if scale and self.metric != "exact" and scale.kind == "categorical" and not scale.scores:
            raise ValueError(f"metric '{self.metric}' needs ordered scores; use metric: exact")
        if self.metric == "log_loss" and (
            scale is None or scale.kind != "binary" or self.judge.score_mode != "expected"
        ):
            raise ValueError(
                "metric 'log_loss' needs a binary judge with score_mode: expected "
                "(it scores the probability given to the right verdict)"
            )
        return self

    def run_hash(self, data_fingerprint: str) -> str:
        dump = self.model_dump(
            mode="json",
            exclude={
                "name",
                "output_dir",
                "tracking",
                "judge",
                "deadline_s",
                "retry",
                "log_mlflow_model",
            },
        )
        # the judge with the prices its cost is counted at (its config hash when unpriced)
        return stable_hash({"judge": self.judge.results_hash(), "data": data_fingerprint, **dump})
