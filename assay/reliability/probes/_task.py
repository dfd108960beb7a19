"""The judges' own task (instruction and rubric), for the tests that ask it another way
(``polarity``, ``prompt_paraphrase``, ``scale_granularity``): :class:`AsksTask` reads the task
the judges share as the config is checked and makes one unit of every source, so that the
other way of asking is made once and carried by each probe in ``meta["judge_task"]``."""

from __future__ import annotations

from typing import Any, ClassVar

import dspy

from assay.errors import ConfigError
from assay.programs.kinds import get_kind
from assay.reliability._probe import Dropped, Generation, Validation
from assay.reliability._registry import GenerationContext, ReliabilityTest, TestSettings, Unit
from assay.reliability.probes._rewrite import Failed, guarded_call
from assay.types import Item, Usage, stable_hash


def shared_task(test: str, judges: list[Any], asked: str) -> tuple[str | None, str | None]:
    """The ``(instruction, rubric)`` every judge (and panel member) shares; a judge that writes
    its own prompt, or judges with different tasks, are a one-line :class:`ConfigError`
    (``asked``: what the test asks of the judge, for the message)."""
    leaves = [c for j in judges for c in _leaves(j)]
    own = [c for c in leaves if get_kind(c.task).own_prompt]
    if own:
        raise ConfigError(
            f"tests.{test}: judge {own[0].name} (task: {own[0].task}) writes its own "
            f"prompt, so {asked} cannot be asked of it; leave {test} out"
        )
    tasks = {(c.instruction, c.rubric) for c in leaves}
    if len(tasks) > 1:
        raise ConfigError(
            f"tests.{test}: the judges (and panel members) must share one instruction and "
            f"rubric — {asked} is written once per rubric; run {test} for judges with another "
            "rubric in a config of their own"
        )
    return next(iter(tasks))


class AsksTask(ReliabilityTest):
    """A test that asks the judges their own task another way. ``asked`` says what it asks (for
    the messages); its ``generator`` and ``validator``, where it writes with them, are its
    programs while ``uses_llm``."""

    asked: ClassVar[str]
    generator: dspy.Module | None = None
    validator: dspy.Module | None = None

    def __init__(self, settings: TestSettings | None = None):
        super().__init__(settings)
        self.task: tuple[str | None, str | None] | None = None  # the judges' (instruction, rubric)

    def programs(self) -> dict[str, dspy.Module]:
        if not self.uses_llm or self.generator is None or self.validator is None:
            return {}
        return {"generator": self.generator, "validator": self.validator}

    def check_judges(self, judges: list[Any]) -> None:
        self.task = shared_task(self.name, judges, self.asked)

    def units(self, items: list[Item]) -> list[Unit]:
        """One unit: the other way of asking is made once, then every source gets its probes."""
        return [Unit(id=f"{self.name}:{stable_hash(self.task, 10)}", sources=list(items))]

    def judges_task(self, ctx: GenerationContext) -> tuple[str | None, str | None]:
        """The judges' instruction and rubric (the context's rubric when no judge was checked)."""
        return self.task or (None, ctx.rubric)


def _leaves(judge: Any) -> list[Any]:
    """A judge config, or a panel's members (recursively): the configs that see a rubric."""
    if getattr(judge, "members", None):
        return [leaf for m in judge.members for leaf in _leaves(m)]
    return [judge]


class Rejected(Exception):
    """A rewrite of the task that cannot be used: its generation failed, or the validator
    said no (``reason`` a :class:`Dropped` reason; ``usage`` what it spent)."""

    def __init__(self, reason: str, detail: str | None, usage: Usage):
        super().__init__(detail)
        self.reason, self.detail, self.usage = reason, detail, usage


def joined(task: dict[str, str | None] | tuple[str | None, str | None]) -> str:
    """An instruction and rubric as one text (the one given, or both)."""
    parts = task.values() if isinstance(task, dict) else task
    return "\n\n".join(x for x in parts if x)


def write_task(
    ctx: GenerationContext,
    generator: dspy.Module,
    validator: dspy.Module,
    task: tuple[str | None, str | None],
    *,
    validate: bool,
    shown_as: str,
    generator_inputs: dict[str, Any],
    validator_inputs: dict[str, Any],
    attempt: int = 1,
) -> tuple[dict[str, str | None], Generation, Validation | None]:
    """The judges' ``task`` rewritten by ``generator`` (which returns ``instruction`` and
    ``rubric``) and, with ``validate``, confirmed by ``validator`` (which reads the original as
    ``original`` and the rewrite as ``shown_as``): the rewrite, how it was made and the
    validator's verdict. :class:`Rejected` when either call fails or the validator says no.
    Attempts after the first are fresh samples (a rollout id each)."""
    instruction, rubric = task
    rollout = None if attempt == 1 else attempt
    try:
        pred, gen_usage = guarded_call(
            ctx,
            "generator",
            generator,
            stage="generate",
            rollout=rollout,
            instruction=instruction or "",
            rubric=rubric or "",
            **generator_inputs,
        )
    except Failed as f:
        raise Rejected("generation_failed", str(f), f.usage) from None
    if not pred.rubric or (instruction and not pred.instruction):
        raise Rejected("generation_failed", "empty rubric or instruction written", gen_usage)
    written = {"instruction": pred.instruction if instruction else None, "rubric": pred.rubric}
    generation = Generation(
        model=ctx.model_of("generator"),
        temperature=ctx.temperatures.get("generator"),
        prompt=generator.instruction,
        attempt=attempt,
        usage=gen_usage,
    )
    if not validate:
        return written, generation, None
    try:
        ok, val_usage = guarded_call(
            ctx,
            "validator",
            validator,
            stage="validate",
            original=joined(task),
            **{shown_as: joined(written)},
            **validator_inputs,
        )
    except Failed as f:
        raise Rejected("generation_failed", f"validator: {f}", gen_usage + f.usage) from None
    if not ok.ok:
        raise Rejected("validator_rejected", ok.reason, gen_usage + val_usage)
    validation = Validation(
        model=ctx.model_of("validator"), verdict=True, reason=ok.reason, usage=val_usage
    )
    return written, generation, validation


def dropped_all(test: str, sources: list[Item], r: Rejected, variant: Any = None) -> list[Dropped]:
    """Every source's probe of a rejected rewrite, dropped and counted (its usage on the
    first)."""
    return [
        Dropped(
            test=test,
            source_id=src.id,
            variant=variant,
            reason=r.reason,  # type: ignore[arg-type]
            detail=r.detail,
            usage=r.usage if i == 0 else Usage(),
        )
        for i, src in enumerate(sources)
    ]
