"""``polarity``: the same judgment asked in the opposite direction — the rubric's question
inverted ("does the response follow the instruction?" ↔ "does it violate it?") on the mirrored
scale — with the correct answer unchanged.

The inverted instruction and rubric come from the test's config (``instruction``, ``rubric``)
or are written once per rubric by the generator (a :class:`assay.programs.TaskInverter`, saved
with the run like every test program) and checked by the validator; a rejected inversion drops
every probe of the test (counted). A probe is the source unchanged, carrying the inverted task
in ``meta["judge_task"]``: the harness runs each judge on it with that instruction, rubric and
scale. The judge's answer is mapped back through the mirror (score ``values[i]`` ↔
``values[-1 - i]``) and compared with its own source verdict: the mirrored-verdict agreement
and the contradiction rate (the two verdicts on opposite sides of the scale's middle).

Labels of the inverted scale (``labels``, low to high): by default, names that answer the
question (True/False, yes/no) keep their order — their meaning flips with the question — and
names that describe the response (pass/fail, correct/incorrect) are reversed, so each keeps its
meaning. Unlabelled scales keep their numbers, whose meaning flips.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from assay.errors import ConfigError
from assay.programs import ProbeValidator, TaskInverter, is_pairwise
from assay.reliability._probe import Dropped, Probe
from assay.reliability._registry import (
    GenerationContext,
    ProgramSettings,
    TestSettings,
    Unit,
    reliability_test,
)
from assay.reliability.probes._task import AsksTask, Rejected, dropped_all, write_task
from assay.scale import Scale
from assay.signatures import CheckInversion
from assay.types import Item

_ANSWER_NAMES = {"true", "false", "yes", "no", "0", "1"}


def mirror(score: int, scale: Scale) -> int:
    """The mirrored score: ``values[i]`` ↔ ``values[-1 - i]``."""
    values = scale.values
    return values[len(values) - 1 - values.index(score)]


def inverted_scale(scale: Scale, labels: list[str] | None = None) -> Scale:
    """The scale the inverted task is answered on (see the module docstring)."""
    if labels is None and scale.labels:
        low_to_high = [scale.label_of(v) for v in scale.values] if scale.positive else scale.labels
        keep = {x.strip().lower() for x in scale.labels} <= _ANSWER_NAMES
        labels = list(low_to_high) if keep else list(reversed(low_to_high))  # type: ignore[arg-type]
    return scale.model_copy(update={"labels": labels, "positive": None}) if labels else scale


def _name(score: int, scale: Scale) -> str:
    label = scale.label_of(score)
    return f"'{label}'" if label is not None else str(score)


def verdict_meanings(scale: Scale, inverted: Scale) -> str:
    """What each verdict of the inverted task means in the original one."""
    return "; ".join(
        f"answer {_name(v, inverted)} where the original task's verdict is "
        f"{_name(mirror(v, scale), scale)}"
        for v in scale.values
    )


class PolaritySettings(ProgramSettings):
    instruction: str | None = Field(default=None, description="the inverted instruction")
    rubric: str | None = Field(default=None, description="the inverted rubric")
    labels: list[str] | None = Field(default=None, description="inverted scale labels, low→high")
    validate_inversion: bool = True  # for a generated inversion


@reliability_test("polarity")
class PolarityTest(AsksTask):
    scoring = "polarity"
    asked = "the inverted question"
    needs_labels = False  # agreement with the own source verdict; the pass rate where labelled
    Settings = PolaritySettings
    settings: PolaritySettings

    def __init__(self, settings: TestSettings | None = None):
        super().__init__(settings)
        self.uses_llm = self.settings.rubric is None  # type: ignore[misc]
        self.generator = TaskInverter()
        self.validator = ProbeValidator(CheckInversion, "inverted_ok")

    def check(self, items: list[Item], scale: Scale) -> None:
        super().check(items, scale)
        if scale.kind not in ("binary", "ordinal") or is_pairwise(scale):
            raise ConfigError(
                f"tests.polarity: needs a binary or ordinal scale to mirror, not {scale.describe()}"
            )
        labels = self.settings.labels
        if labels is not None and len(labels) != scale.k:
            raise ConfigError(
                f"tests.polarity.labels: the {scale.describe()} scale needs {scale.k} labels, "
                f"got {len(labels)}"
            )
        if labels is not None and len(set(labels)) != len(labels):
            raise ConfigError("tests.polarity.labels: the labels must be distinct")

    def check_judges(self, judges: list[Any]) -> None:
        super().check_judges(judges)
        s = self.settings
        if s.rubric is None and s.instruction is not None:
            raise ConfigError("tests.polarity.rubric: give the inverted rubric with 'instruction'")
        if s.rubric is not None and self.task and self.task[0] and s.instruction is None:
            raise ConfigError(
                "tests.polarity.instruction: the judges have an instruction; give its inverted "
                "form too (or neither, and the generator writes both)"
            )

    def generate(self, unit: Unit, ctx: GenerationContext) -> list[Probe | Dropped]:
        s = self.settings
        instruction, rubric = self.judges_task(ctx)
        inv_scale = inverted_scale(ctx.scale, s.labels)
        generation = validation = None
        if s.rubric is not None:
            inverted = {"instruction": s.instruction, "rubric": s.rubric}
        else:
            verdicts = {"verdicts": verdict_meanings(ctx.scale, inv_scale)}
            try:
                inverted, generation, validation = write_task(
                    ctx,
                    self.generator,
                    self.validator,
                    (instruction, rubric),
                    validate=s.validate_inversion,
                    shown_as="inverted",
                    generator_inputs=verdicts,
                    validator_inputs=verdicts,
                )
            except Rejected as r:
                return list(dropped_all(self.name, unit.sources, r))
        task = {**inverted, "scale": inv_scale.model_dump(exclude_none=True)}
        probes: list[Probe | Dropped] = []
        for src in unit.sources:
            probes.append(
                Probe.from_source(
                    self.name,
                    src,
                    task,
                    generation=generation,
                    validation=validation,
                    meta={"judge_task": task, "mirror": True},
                )
            )
            probes.append(Probe.placebo_of(self.name, src))  # the original task, asked again
        return probes
