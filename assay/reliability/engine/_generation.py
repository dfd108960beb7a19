"""Generation in the harness: every unfinished unit of every test, in one pool with the judging
that does not wait for the rest (:mod:`._judging`).

A unit's probes, dropped attempts and LM usage are appended as one line of ``units.jsonl`` when
the unit finishes — the commit point of a resumed run, which repeats no finished unit.

A stored unit is reused only while everything it was generated from is unchanged: its record
carries the unit's key (:func:`unit_key`: its sources and payload, the test's settings and
program states, the generator and validator, and the run's inputs it read — the first judge's
rubric), and its probes' ids are bound to that key. Edit a rubric the generation read and its
units are made again, under new probe ids (no judgment or review of the old text is reused);
the others are reused and counted (:class:`Generated`).

A unit's record also says the prices its usage was costed at (``priced``: the generator's and
validator's) and the code of the test that made it (``code``). At another price, or by other
code (an assay release, an edited plug-in), the unit is made again — through the LM cache where
its prompts are the same: no call, the cost at the config's price —; its probes keep their ids
when they are the same probes (the judgments and review decisions made on them stand), and get
ids of their own when they are not (:func:`_settled`).
"""

from __future__ import annotations

import functools
import hashlib
import sys
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dspy
from pydantic import BaseModel, Field
from pydantic_core import to_jsonable_python

from assay._registry import plugin_code_of, plugin_where
from assay.errors import quoted
from assay.lm import ModelSpec, error_text, make_lm
from assay.reliability._config import HarnessConfig
from assay.reliability._files import UNITS
from assay.reliability._probe import Dropped, DropReason, Probe
from assay.reliability._registry import (
    CallMemo,
    GenerationContext,
    ReliabilityTest,
    Unit,
    plugin_call,
)
from assay.reliability.engine._judging import JudgePlan
from assay.runs import JudgeTask, RunStore, now, run_pool
from assay.types import Item, Usage, stable_hash

RoleLM = Callable[..., dspy.LM]  # (role, temperature=None, rollout=None) -> the role's LM


def role_lm(role: ModelSpec, base: Path | None, retries: int) -> RoleLM:
    """The LM of a generator or validator spec, at the temperature and rollout asked."""

    def lm(name: str, temperature: float | None = None, rollout: int | None = None) -> dspy.LM:
        return make_lm(role, retries=retries, base=base, temperature=temperature, rollout=rollout)

    return lm


class UnitRecord(BaseModel):
    """Everything one generation unit produced, appended as one line (the commit point)."""

    unit_id: str
    test: str
    probes: list[Probe] = Field(default_factory=list)
    dropped: list[Dropped] = Field(default_factory=list)
    usage: dict[str, Usage] = Field(default_factory=dict)
    finished: str = ""
    key: str = ""  # unit_key: what the unit was generated from ("": unknown, made again)
    read: list[str] = Field(default_factory=list)  # the context's inputs generation read
    priced: str = ""  # _prices: what its usage is costed at ("": LiteLLM's price map, no LM)
    code: str = ""  # _test_code: the code of the test that made it ("": unknown, made again)


@dataclass
class Generated:
    """Where each unit's record is in ``units.jsonl`` (its latest line, in unit order), and the
    ids of the units reused from an earlier run (their key unchanged) rather than generated
    now. The records are read back from the file (:meth:`records`): a unit's probes are not
    held once it is committed and its probes' judging begun."""

    store: RunStore
    offsets: array  # array("q"): a byte offset in units.jsonl per unit
    reused: set[str]

    def records(self) -> Iterator[UnitRecord]:
        """Every unit's record, in unit order, one at a time."""
        return self.store.records_at(UNITS, self.offsets, UnitRecord)


@dataclass
class GenerationTotals:
    """What generation made, summed over the units' records in unit order: the LM usage by
    ``<stage>:<test>``, the dropped attempts by test and reason, the probes per test (the byte
    offset of each one's line in ``probes.jsonl``), and the ids of the probes taken unchanged
    from an earlier run."""

    usage: dict[str, Usage] = field(default_factory=dict)
    dropped: dict[str, dict[str, int]] = field(default_factory=dict)
    probes: dict[str, array] = field(default_factory=dict)
    reused: set[str] = field(default_factory=set)

    def probe_lines(self, generated: Generated) -> Iterator[str]:
        """The lines of ``probes.jsonl`` (every probe as made, in unit order), counting each
        unit's record as it goes."""
        offset = 0
        for r in generated.records():
            for stage, u in r.usage.items():
                key = f"{stage}:{r.test}"
                self.usage[key] = self.usage[key] + u if key in self.usage else u
            for d in r.dropped:
                by_reason = self.dropped.setdefault(d.test, {})
                by_reason[d.reason] = by_reason.get(d.reason, 0) + 1
            at = self.probes.setdefault(r.test, array("q"))
            for p in r.probes:
                line = p.model_dump_json() + "\n"
                at.append(offset)
                offset += len(line.encode("utf-8"))
                if r.unit_id in generated.reused:
                    self.reused.add(p.id)
                yield line


def generate_units(
    config: HarnessConfig,
    instances: list[ReliabilityTest],
    pool: Sequence[Item],
    seeds: Sequence[Item],
    store: RunStore,
    gen_lm: RoleLM,
    val_lm: RoleLM,
    progress: bool,
    deadline: float | None = None,
    *,
    judging: JudgePlan,
    early: bool = True,
    on_unit: Callable[[UnitRecord], None] | None = None,
) -> Generated:
    """Every generation unit not stored with its current key, in one pool with the judging that
    does not wait for the rest: the sources at once and, with ``early``, each unit's probes when
    it is committed. A unit's record is appended when it finishes (the commit point of a resumed
    run), then given to ``on_unit``.

    No list of the units is held (each holds its seeds): a built-in test's are made again from
    the seeds each time they are gone through — the same units, made from the seeds alone —
    and taken by the pool as it goes; a plug-in test's are asked for once, and kept as it gave
    them (a sequence — the default ``units``' makes each unit as it is read —, else a list).
    What is kept of each unit is its id. A pool-based test (each of its units has the whole
    pool as its sources) is given the pool read once, as a list its units share."""

    def items(test: ReliabilityTest) -> Sequence[Item]:
        return list(pool) if test.pool_based else seeds

    def kept(units: Iterable[Unit]) -> Iterable[Unit]:
        return units if isinstance(units, Sequence) else list(units)  # a generator: once

    given = {
        t.name: plugin_call(t, "units", lambda t=t: kept(t.units(items(t))))
        for t in instances
        if plugin_where(type(t)) is not None
    }

    def units() -> Iterator[tuple[ReliabilityTest, Unit]]:
        for t in instances:
            for u in given[t.name] if t.name in given else t.units(items(t)):
                yield t, u

    inputs = run_inputs(config)
    keys = {t.name: _test_identity(config, t) for t in instances}
    priced = {t.name: _prices(config, t) for t in instances}
    code = {t.name: _test_code(t) for t in instances}

    def key_of(test: ReliabilityTest, unit: Unit, read: list[str]) -> str:
        return unit_key(keys[test.name], unit, {n: inputs.get(n, "") for n in read})

    # what is kept of each stored unit: where its latest record is and whether it is reused;
    # a record is read again only for a unit made again at another price or by other code
    stored = _stored_units(store)
    ray = config.execution.engine == "ray"  # the LLM's units on the Ray actors, the rest here
    reused: set[str] = set()
    ids: list[str] = []  # every unit's, in order
    local = 0  # the units made here
    for t, u in units():
        ids.append(u.id)
        at = stored.get(u.id)
        if at is not None and at[1] == (key_of(t, u, list(at[2])), priced[t.name], code[t.name]):
            reused.add(u.id)
        elif not (ray and t.uses_llm):
            local += 1

    def before(unit: Unit) -> UnitRecord | None:
        at = stored.get(unit.id)
        return None if at is None else next(store.records_at(UNITS, [at[0]], UnitRecord))

    def settled(test: ReliabilityTest, unit: Unit, record: UnitRecord) -> UnitRecord:
        old = before(unit) if unit.id in stored and stored[unit.id][1][0] == record.key else None
        return _settled(record, priced[test.name], code[test.name], old)

    remote: list[tuple[ReliabilityTest, Unit]] = []
    if ray:
        remote = [(t, u) for t, u in units() if u.id not in reused and t.uses_llm]

    def work() -> Iterator[Any]:
        for t, u in units():
            if u.id not in reused and not (ray and t.uses_llm):
                yield t, u
        if early:
            yield from judging.source_tasks()

    memo = CallMemo()

    def lm(role: str, temperature: float | None = None, rollout: int | None = None) -> dspy.LM:
        return (gen_lm if role == "generator" else val_lm)(role, temperature, rollout)

    def run(w: Any) -> Any:
        if isinstance(w, JudgeTask):
            return judging.run(w)
        test, unit = w
        ctx = _context(config, lm, memo, judging.slots.hold, inputs)
        record = _generate_unit(test, unit, ctx, lambda read: key_of(test, unit, read))
        return settled(test, unit, record)

    def commit(w: Any, result: Any) -> None:
        if isinstance(w, JudgeTask):
            judging.persist(w, result)
        else:
            store.append_record(UNITS, result)
            if on_unit is not None:
                on_unit(result)

    def follow_up(w: Any, result: Any) -> list[JudgeTask]:
        if early and isinstance(result, UnitRecord):
            return judging.probe_tasks(result.probes)
        return []

    run_pool(
        work(),
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
        keep=False,  # each unit's record and judgment is in its file: none is held here
        total=local + (judging.sources_left() if early else 0),
    )
    if remote:
        from assay.reliability.engine._remote import generate_on_ray

        generate_on_ray(
            config,
            remote,
            keys,
            inputs,
            base=judging.config_dir,
            commit=lambda unit, record: commit(unit, settled(*unit, record)),
            progress=progress,
            deadline=deadline,
        )
    latest = _stored_units(store)
    offsets = array("q", (latest[u][0] for u in ids if u in latest))
    return Generated(store, offsets, reused)


def _stored_units(store: RunStore) -> dict[str, tuple[int, tuple[str, str, str], tuple[str, ...]]]:
    """Each unit's latest record in ``units.jsonl``: its line's byte offset, its (key, prices,
    code) and the inputs it read — what deciding whether to reuse it reads."""
    out: dict[str, tuple[int, tuple[str, str, str], tuple[str, ...]]] = {}
    for offset, r in store.placed_records(UNITS, UnitRecord):
        out[r.unit_id] = (offset, (r.key, r.priced, r.code), tuple(r.read))
    return out


def run_inputs(config: HarnessConfig) -> dict[str, str]:
    """The run's texts a test may read while it generates (:attr:`GenerationContext.inputs`)."""
    j = config.judges[0]
    rubric = "\n\n".join(x for x in (j.instruction, j.rubric) if x) or "(no rubric given)"
    return {"rubric": rubric}


def _test_identity(config: HarnessConfig, test: ReliabilityTest) -> dict[str, Any]:
    """What every unit of ``test`` is generated from besides the unit itself and the test's
    code (:func:`_test_code`, kept beside the key): the test, its settings, its programs' state
    as loaded (a ``*_state`` file's content, not its path), the generator and validator, the
    scale and the sample seed."""
    return {
        "test": test.name,
        "settings": test.settings.model_dump(mode="json"),
        "programs": {role: p.dump_state() for role, p in test.programs().items()},
        "generator": config.generator.identity(),
        "validator": config.validator.identity(),
        "scale": config.scale.model_dump(mode="json"),
        "seed": config.sample.seed if config.sample else 0,
    }


PROBES_PACKAGE = "assay.reliability.probes"


def _test_code(test: ReliabilityTest) -> str:
    """The code a test makes its probes with: a plug-in's
    (:func:`~assay._registry.plugin_code_of`: an installed plug-in is no part of the run's
    identity, so without it an edit of its ``generate`` reused the old code's probes), or a
    built-in test's own modules (:func:`_builtin_code`: an assay release that changes how a
    test makes its probes makes that test's probes again, and only that test's). Other code
    makes a unit again over its stored record, keeping the probes' ids (and the review
    decisions on them) where the probes come out the same (:func:`_settled`)."""
    return stable_hash(plugin_code_of(type(test)) or _builtin_code(type(test)))


@functools.cache
def _builtin_code(cls: type) -> list[list[str]]:
    """A built-in test's code: the source of the modules of the probes package it is made
    of — those defining it and its bases, and, transitively, those whose functions, classes or
    constants they use — each by content. An edit elsewhere in assay (the engine, the CLI) or in
    another test's module leaves its probes' keys as they were."""
    inside = [c.__module__ for c in cls.__mro__ if c.__module__.startswith(PROBES_PACKAGE)]
    seen: dict[str, None] = {}
    while inside:
        name = inside.pop()
        module = sys.modules.get(name)
        if name in seen or module is None or not getattr(module, "__file__", None):
            continue
        seen[name] = None
        for value in vars(module).values():
            used = (
                value.__name__ if isinstance(value, type(sys)) else getattr(value, "__module__", "")
            )
            if isinstance(used, str) and used.startswith(PROBES_PACKAGE) and used not in seen:
                inside.append(used)
    digest = hashlib.sha256()
    for name in sorted(seen):
        source = Path(sys.modules[name].__file__).read_bytes()
        digest.update(name.encode() + b"\0" + hashlib.sha256(source).digest())
    return [["assay", digest.hexdigest()]] if seen else []


def _prices(config: HarnessConfig, test: ReliabilityTest) -> str:
    """What the usage of ``test``'s units is costed at: the generator's and validator's prices
    — "" when neither has one (LiteLLM's price map), or when the test calls no LM."""
    prices = [config.generator.price_identity(), config.validator.price_identity()]
    if not test.uses_llm or prices == [None, None]:
        return ""
    return stable_hash(prices)


def _settled(record: UnitRecord, priced: str, code: str, before: UnitRecord | None) -> UnitRecord:
    """A unit's new ``record``, with the prices it was costed at and the test's code. Made
    again only because they changed (``before``, the unit's stored record, has the same key),
    it keeps ``before``'s probe ids when its probes are the same (through the LM cache they
    are when the prompts are: the judgments and review decisions made on them stand);
    otherwise — another code's probes, the cache lost the answers, the server sampled anew —
    its probes get ids bound to their content, so that nothing decided on the old text carries
    over to the new."""
    record = record.model_copy(update={"priced": priced, "code": code})
    if before is None or before.key != record.key:
        return record
    new, old = [_content(p) for p in record.probes], [_content(p) for p in before.probes]
    if new == old:
        pairs = zip(record.probes, before.probes, strict=True)
        probes = [p.model_copy(update={"id": b.id}) for p, b in pairs]
    else:
        bound = stable_hash([record.key, new], 8)
        probes = [
            p.model_copy(update={"id": f"{p.id.rsplit('.', 1)[0]}.{bound}"}) for p in record.probes
        ]
    return record.model_copy(update={"probes": probes})


def _content(probe: Probe) -> dict[str, Any]:
    """What a probe is, apart from its id, its review and the usage its making cost."""
    dump = probe.model_dump(mode="json", exclude={"id", "review"})
    for part in ("generation", "validation"):
        if dump.get(part):
            dump[part].pop("usage", None)
    return dump


def unit_key(test_identity: dict[str, Any], unit: Unit, read: dict[str, str]) -> str:
    """The identity of one unit's generation: its test's (:func:`_test_identity`), its id,
    sources and payload, and the run's inputs it read (``read``: name → text)."""
    return stable_hash(
        to_jsonable_python(
            {
                **test_identity,
                "unit": unit.id,
                "sources": unit.sources,
                "payload": unit.payload,
                "read": read,
            },
            fallback=repr,
        ),
        32,
    )


def _generate_unit(
    test: ReliabilityTest,
    unit: Unit,
    ctx: GenerationContext,
    key_of: Callable[[list[str]], str],
) -> UnitRecord:
    """One unit's probes and dropped attempts, with the LM usage its context counted; its key
    (``key_of`` the inputs it read) recorded, and its probes' ids bound to it. A plug-in test's
    output is checked (:func:`_plugin_results`)."""
    if plugin_where(type(test)) is None:
        results = test.generate(unit, ctx)
    else:
        results = _plugin_results(test, unit, ctx)
    read = sorted(ctx.read)
    key = key_of(read)
    return UnitRecord(
        unit_id=unit.id,
        test=test.name,
        probes=[
            r.model_copy(update={"id": f"{r.id}.{key[:8]}"})
            for r in results
            if isinstance(r, Probe)
        ],
        dropped=[r for r in results if isinstance(r, Dropped)],
        usage=ctx.usage,
        finished=now(),
        key=key,
        read=read,
    )


_ALL_RIGHT = object()


def _plugin_results(
    test: ReliabilityTest, unit: Unit, ctx: GenerationContext
) -> list[Probe | Dropped]:
    """What a plug-in test's ``generate`` gave for ``unit``, as the harness can judge it: when
    it raises (or returns what is no list of probes and dropped attempts), the unit's sources
    dropped as ``plugin_error`` with the error naming the plug-in — ``generation_failed`` for
    an LM failure it let through, as a built-in test's —, the run going on; a probe whose
    ``target`` is not on the harness scale — or is a bool, no score — dropped as
    ``off_scale_target`` (its verdicts would be scored against a reference no verdict can
    equal, or ``True`` as the score 1)."""
    where = f"plugin {plugin_where(type(test))}: test '{test.name}'"

    def failed(reason: DropReason, detail: str) -> list[Probe | Dropped]:
        sources = [s.id for s in unit.sources] or [unit.id]
        return [Dropped(test=test.name, source_id=s, reason=reason, detail=detail) for s in sources]

    try:
        results = test.generate(unit, ctx)
    except Exception as exc:
        from assay.programs import unscored_reason

        reason: DropReason = (
            "generation_failed" if unscored_reason(exc) is not None else "plugin_error"
        )
        return failed(reason, f"{where} generate raised {error_text(exc, 500)}")
    if not isinstance(results, list | tuple):
        wrong: object = results
    else:
        wrong = next((r for r in results if not isinstance(r, Probe | Dropped)), _ALL_RIGHT)
    if wrong is not _ALL_RIGHT:
        return failed(
            "plugin_error",
            f"{where} generate gave {quoted(wrong)}: a list of Probe and Dropped is what it returns",
        )
    checked: list[Probe | Dropped] = []
    for r in results:
        if (
            isinstance(r, Probe)
            and r.target is not None
            and (isinstance(r.target, bool) or r.target not in ctx.scale.values)
        ):
            kind = " (a bool, not a score)" if isinstance(r.target, bool) else ""
            r = Dropped(
                test=test.name,
                source_id=r.source_id,
                variant=r.id,
                reason="off_scale_target",
                detail=f"{where} gave the target {r.target}{kind}, not on the "
                f"{ctx.scale.describe()} scale",
            )
        checked.append(r)
    return checked


def _context(
    config: HarnessConfig,
    lm: RoleLM,
    memo: CallMemo,
    slots: Callable[[], Any] | None,
    inputs: dict[str, str],
) -> GenerationContext:
    """A fresh context for one unit (its own usage and reads), sharing the run's call memo and
    slots (None: the calls in flight are bounded elsewhere, a Ray actor's threads)."""
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
        identities={r: c.identity() for r, c in roles.items()},
        inputs=inputs,
        seed=config.sample.seed if config.sample else 0,
        memo=memo,
        slots=slots,
    )
