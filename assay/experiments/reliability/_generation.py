"""Generation in the harness: every unfinished unit of every test, in one pool with the judging
that does not wait for the rest (:mod:`._judging`).

A unit's probes, dropped attempts and LM usage are appended as one line of ``units.jsonl`` when
the unit finishes — the commit point of a resumed run, which repeats no finished unit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dspy
from pydantic import BaseModel, Field

from assay.experiments.reliability._config import HarnessConfig
from assay.experiments.reliability._judging import JudgePlan
from assay.experiments.reliability._probe import Dropped, Probe
from assay.experiments.reliability._registry import (
    CallMemo,
    GenerationContext,
    ReliabilityTest,
    Unit,
)
from assay.experiments.runs import JudgeTask, RunStore, now, run_pool
from assay.types import Item, Usage

RoleLM = Callable[..., dspy.LM]  # (role, temperature=None, rollout=None) -> the role's LM


class UnitRecord(BaseModel):
    """Everything one generation unit produced, appended as one line (the commit point)."""

    unit_id: str
    test: str
    probes: list[Probe] = Field(default_factory=list)
    dropped: list[Dropped] = Field(default_factory=list)
    usage: dict[str, Usage] = Field(default_factory=dict)
    finished: str = ""


def generate_units(
    config: HarnessConfig,
    instances: list[ReliabilityTest],
    pool: list[Item],
    seeds: list[Item],
    store: RunStore,
    gen_lm: RoleLM,
    val_lm: RoleLM,
    progress: bool,
    deadline: float | None = None,
    *,
    judging: JudgePlan,
    early: bool = True,
    on_unit: Callable[[UnitRecord], None] | None = None,
) -> list[UnitRecord]:
    """Every unfinished generation unit, in one pool with the judging that does not wait for
    the rest: the sources at once and, with ``early``, each unit's probes when it is committed.
    A unit's record is appended when it finishes (the commit point of a resumed run), then
    given to ``on_unit``."""
    done = {r.unit_id: r for r in store.records("units.jsonl", UnitRecord)}
    units = [(t, u) for t in instances for u in t.units(pool if t.pool_based else seeds)]
    work: list[Any] = [(t, u) for t, u in units if u.id not in done]
    if early:
        work += judging.source_tasks(seeds)
    memo = CallMemo()

    def lm(role: str, temperature: float | None = None, rollout: int | None = None) -> dspy.LM:
        return (gen_lm if role == "generator" else val_lm)(role, temperature, rollout)

    def run(w: Any) -> Any:
        if isinstance(w, JudgeTask):
            return judging.run(w)
        test, unit = w
        return _generate_unit(test, unit, _context(config, lm, memo, judging))

    def commit(w: Any, result: Any) -> None:
        if isinstance(w, JudgeTask):
            judging.persist(w, result)
        else:
            store.append_record("units.jsonl", result)
            done[result.unit_id] = result
            if on_unit is not None:
                on_unit(result)

    def follow_up(w: Any, result: Any) -> list[JudgeTask]:
        if early and isinstance(result, UnitRecord):
            return judging.probe_tasks(result.probes)
        return []

    run_pool(
        work,
        run,
        # LM calls in flight are bounded by the slots; more workers keep them all busy while
        # units wait on their own earlier calls
        concurrency=2 * config.concurrency,
        on_result=commit,
        follow_up=follow_up,
        progress=progress,
        desc="generate+judge",
        unit="task",
        deadline=deadline,
    )
    order = {u.id: i for i, (_, u) in enumerate(units)}
    return sorted((r for r in done.values() if r.unit_id in order), key=lambda r: order[r.unit_id])


def _generate_unit(test: ReliabilityTest, unit: Unit, ctx: GenerationContext) -> UnitRecord:
    """One unit's probes and dropped attempts, with the LM usage its context counted."""
    results = test.generate(unit, ctx)
    return UnitRecord(
        unit_id=unit.id,
        test=test.name,
        probes=[r for r in results if isinstance(r, Probe)],
        dropped=[r for r in results if isinstance(r, Dropped)],
        usage=ctx.usage,
        finished=now(),
    )


def _context(
    config: HarnessConfig, lm: RoleLM, memo: CallMemo, judging: JudgePlan
) -> GenerationContext:
    """A fresh context for one unit (its own usage), sharing the run's call memo and slots."""
    roles = {"generator": config.generator, "validator": config.validator}
    return GenerationContext(
        scale=config.scale,
        lm=lm,
        models={r: c.model for r, c in roles.items()},
        prices={
            r: (c.price.input_per_mtok, c.price.output_per_mtok)
            for r, c in roles.items()
            if c.price
        },
        adapters={r: c.adapter for r, c in roles.items()},
        temperatures={r: c.temperature for r, c in roles.items()},
        rubric=_rubric(config),
        seed=config.sample.seed if config.sample else 0,
        memo=memo,
        slots=judging.slots.hold,
    )


def _rubric(config: HarnessConfig) -> str:
    """The benchmark's rubric for generators/validators: the first judge's rubric and instruction."""
    j = config.judges[0]
    return "\n\n".join(x for x in (j.instruction, j.rubric) if x) or "(no rubric given)"
