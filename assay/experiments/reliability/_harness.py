"""``assay harness``: generate → validate → review → judge → score → report, every stage
resumable. Data flows one way: seeds → probes (+ dropped, counted) → reviewed probes →
judgments per judge → metrics → report, plots and MLflow.

Generation is logged one unit per line in ``units.jsonl`` (a unit's probes, dropped attempts
and LM usage in one atomic append), so a killed run repeats no finished unit; judgments are
appended per judge in ``judgments/<judge>-<hash>.jsonl``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dspy
from pydantic import BaseModel, Field

from assay.data import check_limit
from assay.errors import ConfigError
from assay.experiments._evaluate import data_fingerprint
from assay.experiments._items import load_items
from assay.experiments._sample import stratified_sample
from assay.experiments.reliability._config import HarnessConfig
from assay.experiments.reliability._judging import JudgePlan, judged_id
from assay.experiments.reliability._probe import Dropped, Probe
from assay.experiments.reliability._registry import (
    CallMemo,
    GenerationContext,
    ReliabilityTest,
    Unit,
    get_test,
)
from assay.experiments.reliability._review import read_reviews
from assay.experiments.reliability._scoring import score_test
from assay.experiments.runs import (
    Background,
    CallSlots,
    JudgeTask,
    Run,
    RunStore,
    now,
    run_pool,
    run_tasks,
    write_html,
)
from assay.lm import ModelSpec, make_lm
from assay.programs import (
    build_judge,
    judge_lm_factory,
    load_program_state,
    save_program,
)
from assay.types import Item, Usage


class UnitRecord(BaseModel):
    """Everything one generation unit produced, appended as one line (the commit point)."""

    unit_id: str
    test: str
    probes: list[Probe] = Field(default_factory=list)
    dropped: list[Dropped] = Field(default_factory=list)
    usage: dict[str, Usage] = Field(default_factory=dict)
    finished: str = ""


@dataclass
class HarnessResult:
    run_dir: Path
    metrics: dict[str, Any]
    lm_calls: dict[str, int]
    mlflow_run_id: str | None


def _role_lm(role: ModelSpec, base: Path | None, retries: int):
    def lm(name: str, temperature: float | None = None, rollout: int | None = None) -> dspy.LM:
        return make_lm(role, retries=retries, base=base, temperature=temperature, rollout=rollout)

    return lm


def select(names: list[str] | None, available: list[str], what: str) -> list[str]:
    if not names:
        return available
    unknown = [n for n in names if n not in available]
    if unknown:
        raise ConfigError(
            f"unknown {what} {', '.join(unknown)}; this config has: {', '.join(available)}"
        )
    return [n for n in available if n in names]


def prepare(
    config: HarnessConfig,
    *,
    workdir: Path,
    limit: int | None,
    tests: list[str] | None,
    notes: dict | None = None,
):
    """The seed pool, the seeds to perturb (the first ``limit`` of the pool) and the test
    instances, validated before anything is written (``notes``: what loading counted)."""
    check_limit(limit)  # before anything is read: 0 is not "every seed"
    pool = load_items(config.data, config.scale, cache_dir=workdir / ".assay" / "hf", notes=notes)
    if config.sample:
        pool = stratified_sample(
            pool, config.sample.n, stratify=config.sample.stratify, seed=config.sample.seed
        )
    seeds = pool[:limit] if limit else pool
    for j in config.judges:  # refused now rather than stopping mid-run
        missing = [s.id for s in seeds if j.task == "transcript" and not s.transcript]
        if missing:
            raise ConfigError(
                f"judge '{j.name}' reads agent transcripts, but {len(missing)} seed items have "
                f"none (e.g. {missing[0]}): use data.format inspect or toolemu"
            )
    names = select(tests, list(config.tests), "test(s)")
    instances = [get_test(n, config.tests[n]) for n in names]
    for t in instances:
        t.check_judges(config.judges)
        t.check(pool if t.pool_based else seeds, config.scale)
    return pool, seeds, instances


def run_harness(
    config: HarnessConfig,
    *,
    workdir: Path,
    config_dir: Path | None = None,
    limit: int | None = None,
    tests: list[str] | None = None,
    judges: list[str] | None = None,
    tracking_uri: str | None = None,
    progress: bool = True,
) -> HarnessResult:
    started = time.monotonic()
    notes: dict[str, Any] = {}
    pool, seeds, instances = prepare(config, workdir=workdir, limit=limit, tests=tests, notes=notes)
    _load_programs(instances, config_dir, tracking_uri or config.tracking.uri)
    judge_names = select(judges, [j.name for j in config.judges], "judge(s)")
    judge_cfgs = [j for j in config.judges if j.name in judge_names]
    for t in instances:
        t.check_judges(judge_cfgs)
    base_programs = {
        j.name: build_judge(j, judge_lm_factory(retries=config.retries, base=config_dir))
        for j in judge_cfgs
    }
    gen_lm = _role_lm(config.generator, config_dir, config.retries)
    val_lm = _role_lm(config.validator, config_dir, config.retries)
    if any(t.uses_llm for t in instances):  # fail on a missing key before writing anything
        gen_lm("generator")
        val_lm("validator")

    run_hash = config.probes_hash(data_fingerprint(pool) + f"|limit={limit}")
    deadline = config.deadline(started)
    with Run.open(
        config, run_hash, command="harness", workdir=workdir, tracking_uri=tracking_uri
    ) as run:
        store = run.store
        from assay.experiments.reliability._rerun import finish_key, finished_unchanged

        key = finish_key(config, store.path, tests=[t.name for t in instances], judges=judge_names)
        if finished_unchanged(run, key):  # re-read: no LM call, no new report or MLflow run
            metrics = store.read_json("metrics.json")
            return HarnessResult(store.path, metrics, metrics["lm_calls"], run.mlflow_run_id)
        # matplotlib's first import takes ~1 s: do it while the LM calls wait on the network
        from assay.experiments.reliability._report import preload_plotting

        plotting = Background(preload_plotting, name="assay-plotting")
        if not (store.path / "seeds.jsonl").exists():
            store.write_text("seeds.jsonl", "".join(s.model_dump_json() + "\n" for s in seeds))

        # -- generate + validate (+ judge sources, and probes as their unit is committed) -----
        slots = CallSlots(config.concurrency)
        judging = JudgePlan(config, judge_cfgs, base_programs, store, config_dir, slots)
        records = _generate(
            config,
            instances,
            pool,
            seeds,
            store,
            gen_lm,
            val_lm,
            progress,
            deadline,
            judging=judging,
            # on Ray, everything is judged after generation by the actors
            early=not config.review.required
            and not read_reviews(store.path)
            and config.execution.engine != "ray",
        )
        _save_programs(instances, store.path / "programs")
        wanted = {t.name for t in instances}
        probes = [p for r in records if r.test in wanted for p in r.probes]
        dropped = [d for r in records if r.test in wanted for d in r.dropped]
        store.write_text("probes.jsonl", "".join(p.model_dump_json() + "\n" for p in probes))

        # -- review ----------------------------------------------------------------------------
        from assay.experiments.reliability._review import apply_reviews, review_counts

        probes = apply_reviews(probes, read_reviews(store.path))
        reviewed = review_counts(probes)
        if config.review.required:
            to_judge = [p for p in probes if p.review.status in ("accepted", "edited")]
        else:
            to_judge = [p for p in probes if p.review.status != "rejected"]

        # -- judge (report.html's source/probe diffs computed meanwhile) ------------------------
        diffs = Background(lambda: _warm_diffs(seeds, probes), delay=0.0, name="assay-diffs")
        judgments = _judge(config, judging, seeds, to_judge, progress, deadline)

        # -- score -----------------------------------------------------------------------------
        metrics = _score(
            config, instances, judge_cfgs, seeds, to_judge, judgments, records, dropped, reviewed
        )
        metrics["data_fingerprint"] = data_fingerprint(seeds)
        metrics.update(notes)  # e.g. the pairs built from a score column, and those skipped
        store.write_json("metrics.json", metrics)
        from assay.experiments.reliability._report import write_report

        plotting.join()
        write_report(store.path, config, metrics)
        diffs.join()
        write_html(store.path)
        from assay.experiments.reliability._tracking import harness_tracked

        run_id = run.finish(
            harness_tracked(store.path, config, judge_cfgs, metrics),
            finish_key=finish_key(
                config, store.path, tests=[t.name for t in instances], judges=judge_names
            ),
        )
        return HarnessResult(store.path, metrics, metrics["lm_calls"], run_id)


def _warm_diffs(seeds: list[Item], probes: list[Probe]) -> None:
    """The word diffs report.html shows (tens of ms each), computed while the judges run."""
    from assay.web import warm_diffs

    responses = {s.id: s.response for s in seeds}
    warm_diffs([(responses.get(p.source_id, ""), p.response) for p in probes])


def _load_programs(
    instances: list[ReliabilityTest], base: Path | None, tracking_uri: str | None
) -> None:
    """Load each test's generator / validator state named in its settings (before any work)."""
    for test in instances:
        for role, program in test.programs().items():
            ref = getattr(test.settings, f"{role}_state", None)
            if ref:
                load_program_state(program, ref, tracking_uri=tracking_uri, base=base)


def _save_programs(instances: list[ReliabilityTest], folder: Path) -> None:
    """Every test's programs as DSPy JSON state: ``programs/<test>.<role>.json``."""
    for test in instances:
        for role, program in test.programs().items():
            folder.mkdir(parents=True, exist_ok=True)
            save_program(program, folder / f"{test.name}.{role}.json")


def _generate(
    config,
    instances: list[ReliabilityTest],
    pool: list[Item],
    seeds: list[Item],
    store: RunStore,
    gen_lm,
    val_lm,
    progress,
    deadline: float | None = None,
    *,
    judging: JudgePlan,
    early: bool = True,
):
    """Every unfinished generation unit, in one pool with the judging that does not wait for
    the rest: the sources at once and, with ``early``, each unit's probes when it is committed.
    A unit's record is appended when it finishes (the commit point of a resumed run)."""
    done = {r.unit_id: r for r in store.records("units.jsonl", UnitRecord)}
    units = [(t, u) for t in instances for u in t.units(pool if t.pool_based else seeds)]
    work: list[Any] = [(t, u) for t, u in units if u.id not in done]
    if early:
        work += judging.source_tasks(seeds)
    memo = CallMemo()

    def lm(role: str, temperature: float | None = None, rollout: int | None = None) -> dspy.LM:
        return (gen_lm if role == "generator" else val_lm)(role, temperature, rollout)

    def one(test: ReliabilityTest, unit: Unit) -> UnitRecord:
        ctx = GenerationContext(
            scale=config.scale,
            lm=lm,
            models={"generator": config.generator.model, "validator": config.validator.model},
            prices={
                r: (c.price.input_per_mtok, c.price.output_per_mtok)
                for r, c in (("generator", config.generator), ("validator", config.validator))
                if c.price
            },
            adapters={"generator": config.generator.adapter, "validator": config.validator.adapter},
            temperatures={
                "generator": config.generator.temperature,
                "validator": config.validator.temperature,
            },
            rubric=_rubric(config),
            seed=config.sample.seed if config.sample else 0,
            memo=memo,
            slots=judging.slots.hold,
        )
        results = test.generate(unit, ctx)
        return UnitRecord(
            unit_id=unit.id,
            test=test.name,
            probes=[r for r in results if isinstance(r, Probe)],
            dropped=[r for r in results if isinstance(r, Dropped)],
            usage=ctx.usage,
            finished=now(),
        )

    def run(w: Any) -> Any:
        return judging.run(w) if isinstance(w, JudgeTask) else one(*w)

    def commit(w: Any, result: Any) -> None:
        if isinstance(w, JudgeTask):
            judging.persist(w, result)
        else:
            store.append_record("units.jsonl", result)
            done[result.unit_id] = result

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


def _rubric(config: HarnessConfig) -> str:
    """The benchmark's rubric for generators/validators: the first judge's rubric and instruction."""
    j = config.judges[0]
    return "\n\n".join(x for x in (j.instruction, j.rubric) if x) or "(no rubric given)"


def _judge(config, judging: JudgePlan, seeds, probes, progress, deadline: float | None = None):
    """What is left to judge after generation (reviewed, edited or retried items; everything
    when review is required), then the untouched agent probes' copies of their source's
    verdict. Returns each judge's judgments by item id."""
    tasks = judging.source_tasks(seeds) + judging.probe_tasks(probes)
    if tasks and config.execution.engine == "ray":  # judged by Ray actors, persisted here
        run_tasks(
            tasks,
            concurrency=config.concurrency,
            on_judgment=judging.persist,
            progress=progress,
            desc="judge",
            deadline=deadline,
            execution=config.execution,
        )
    elif tasks:
        run_pool(
            tasks,
            judging.run,
            concurrency=config.concurrency,
            on_result=judging.persist,
            progress=progress,
            desc="judge",
            deadline=deadline,
        )
    judging.copy_untouched(probes)
    return judging.done


def _score(
    config, instances, judge_cfgs, seeds, probes, judgments, records, dropped, reviewed
) -> dict[str, Any]:
    b = config.bootstrap
    by_test: dict[str, list[Probe]] = {}
    for p in probes:
        by_test.setdefault(p.test, []).append(p)
    results: dict[str, Any] = {}
    for cfg in judge_cfgs:
        js = judgments[cfg.name]
        sources = {
            s.id: js[f"source:{s.id}"].score if f"source:{s.id}" in js else None for s in seeds
        }
        source_criteria = {
            s.id: js[f"source:{s.id}"].criteria or {} for s in seeds if f"source:{s.id}" in js
        }
        verdicts = {p.id: js[judged_id(p)] for p in probes if judged_id(p) in js}
        per_test = {}
        for t in instances:
            per_test[t.name] = score_test(
                t.scoring,
                by_test.get(t.name, []),
                verdicts,
                sources,
                config.scale,
                source_criteria=source_criteria,
                n_resamples=b.n_resamples,
                confidence=b.confidence,
                seed=b.seed,
            )
        judge_usage = sum((j.usage for j in js.values()), Usage())
        pass_values = [m["pass_rate"]["value"] for m in per_test.values() if m.get("pass_rate")]
        mean_pass = sum(pass_values) / len(pass_values) if pass_values else None
        results[cfg.name] = {
            "model": cfg.model,
            "config_hash": cfg.config_hash(),
            "tests": per_test,
            "source_unscored": sum(v is None for v in sources.values()),
            "usage": judge_usage.model_dump(),
            "mean_pass_rate": mean_pass,
            "cost_per_accuracy_point_usd": (judge_usage.cost_usd / (mean_pass * 100))
            if mean_pass
            else None,
        }
    gen_usage: dict[str, dict[str, Any]] = {}
    for r in records:
        for stage, u in r.usage.items():
            key = f"{stage}:{r.test}"
            gen_usage[key] = (
                (Usage.model_validate(gen_usage[key]) + u).model_dump()
                if key in gen_usage
                else u.model_dump()
            )
    drop_counts: dict[str, dict[str, int]] = {}
    for d in dropped:
        drop_counts.setdefault(d.test, {}).setdefault(d.reason, 0)
        drop_counts[d.test][d.reason] += 1
    lm_calls = {k: v["calls"] for k, v in gen_usage.items()}
    for name, r in results.items():
        lm_calls[f"judge:{name}"] = r["usage"]["calls"]
    return {
        "seeds": len(seeds),
        "notes": [n for t in instances for n in t.notes()],
        "probes": {t.name: len(by_test.get(t.name, [])) for t in instances},
        "dropped": drop_counts,
        "review": {**reviewed, "required": config.review.required},
        "judges": results,
        "generation_usage": gen_usage,
        "lm_calls": lm_calls,
        "bootstrap": f"{b.n_resamples} percentile resamples over source items, each with all "
        f"its probes (pass rates, consistency, the bias and agent tests, the samples-needed "
        f"curve; synthetic_ordinal, whose probes are independent generations: over probes), "
        f"seed {b.seed}, {b.confidence:.0%} intervals",
    }
