"""What a judge kind reads of its judge config and of the judge it runs in. The config
(:class:`assay.programs.JudgeConfig`) and the judge (:class:`assay.programs.Judge`) are built on
the kinds — the config checks its ``task`` against them, the judge asks its kind for the
signature — so a kind names them by the fields it reads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

import dspy

from assay.scale import Scale


class CriterionSettings(Protocol):
    """One criterion of a transcript judge's rubric (``assay.programs.Criterion``)."""

    @property
    def id(self) -> str: ...

    def scores(self) -> list[int]: ...

    def text(self) -> str: ...


class MlflowSettings(Protocol):
    """An MLflow judge's own spec (``assay.programs.MlflowJudgeSpec``)."""

    @property
    def instructions(self) -> str | None: ...

    @property
    def feedback_value_type(self) -> Literal["bool", "int", "float", "str"] | None: ...

    @property
    def builtin(self) -> Literal["Safety", "Guidelines", "RelevanceToQuery"] | None: ...

    @property
    def guidelines(self) -> list[str] | None: ...


class JudgeSettings(Protocol):
    """A judge config as its kind reads it: its model, sampling and task, and the fields that
    say what it judges (scale, instruction, rubric, criteria, an MLflow judge's spec)."""

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def api_base(self) -> str | None: ...

    @property
    def api_key_env(self) -> str | None: ...

    @property
    def temperature(self) -> float: ...

    @property
    def task(self) -> str: ...

    @property
    def program(self) -> str: ...

    @property
    def score_mode(self) -> str: ...

    @property
    def scale(self) -> Scale | None: ...

    @property
    def instruction(self) -> str | None: ...

    @property
    def rubric(self) -> str | None: ...

    @property
    def criteria(self) -> Sequence[CriterionSettings] | None: ...

    @property
    def mlflow(self) -> MlflowSettings | None: ...

    @property
    def price_pair(self) -> tuple[float, float] | None: ...

    def config_hash(self) -> str: ...


class JudgeProgram(Protocol):
    """The judge a kind's :meth:`~JudgeKind.forward` runs in (``assay.programs.Judge``): its
    config, its predictor, and how a predictor's output becomes a verdict."""

    @property
    def config(self) -> JudgeSettings: ...

    @property
    def predict(self) -> dspy.Module: ...

    def prediction(self, pred: dspy.Prediction) -> dspy.Prediction: ...
