"""``assay harness``: generate → validate → review → judge → score → report, every stage
resumable. Data flows one way: seeds → probes (+ dropped, counted) → reviewed probes →
judgments per judge → metrics → report, plots and MLflow.

Generation is logged one unit per line in ``units.jsonl`` (a unit's probes, dropped attempts
and LM usage in one atomic append), so a killed run repeats no finished unit; judgments are
appended per judge in ``judgments/<judge>-<hash>.jsonl``.
"""

from __future__ import annotations

import threading
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
from assay.experiments.reliability._probe import Dropped, Probe
from assay.experiments.reliability._registry import (
    GenerationContext,
    ReliabilityTest,
    Unit,
    get_test,
)
from assay.experiments.reliability._scoring import score_test
from assay.experiments.runs import (
    JudgeTask,
    Run,
    RunStore,
    now,
    run_pool,
    run_tasks,
    to_judge,
    write_html,
)
from assay.lm import ModelSpec, make_lm
from assay.programs import (
    JudgeConfig,
    build_judge,
    judge_lm_factory,
    load_program_state,
    save_program,
)
from assay.types import Item, Judgment, Usage, stable_hash


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


def judged_id(probe: Probe) -> str:
    """The id a probe's judgment is stored under; an edited probe gets a new one."""
    if probe.review.status == "edited":
        return f"{probe.id}@{stable_hash([probe.response, probe.target], 8)}"
    return probe.id


def select(names: list[str] | None, available: list[str], what: str) -> list[str]:
    if not names:
        return available
    unknown = [n for n in names if n not in available]
    if unknown:
        raise ConfigError(
            f"unknown {what} {', '.join(unknown)}; this config has: {', '.join(available)}"
        )
    return [n for n in available if n in names]


def prepare(config: HarnessConfig, *, workdir: Path, limit: int | None, tests: list[str] | None):
    """The seed pool, the seeds to perturb (the first ``limit`` of the pool) and the test
    instances, validated before anything is written."""
    check_limit(limit)  # before anything is read: 0 is not "every seed"
    pool = load_items(config.data, config.scale, cache_dir=workdir / ".assay" / "hf")
    if config.sample:
        pool = stratified_sample(
            pool, config.sample.n, stratify=config.sample.stratify, seed=config.sample.seed
        )
    seeds = pool[:limit] if limit else pool
    names = select(tests, list(config.tests), "test(s)")
    instances = [get_test(n, config.tests[n]) for n in names]
    for t in instances:
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
    pool, seeds, instances = prepare(config, workdir=workdir, limit=limit, tests=tests)
    _load_programs(instances, config_dir, tracking_uri or config.tracking.uri)
    # matplotlib's first import takes ~1 s: do it while the LM calls wait on the network
    from assay.experiments.reliability._report import preload_plotting

    plotting = threading.Thread(target=preload_plotting, daemon=True)
    plotting.start()
    judge_names = select(judges, [j.name for j in config.judges], "judge(s)")
    judge_cfgs = [j for j in config.judges if j.name in judge_names]
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
        if not (store.path / "seeds.jsonl").exists():
            store.write_text("seeds.jsonl", "".join(s.model_dump_json() + "\n" for s in seeds))

        # -- generate + validate -------------------------------------------------------------
        records = _generate(
            config, instances, pool, seeds, store, gen_lm, val_lm, progress, deadline
        )
        _save_programs(instances, store.path / "programs")
        wanted = {t.name for t in instances}
        probes = [p for r in records if r.test in wanted for p in r.probes]
        dropped = [d for r in records if r.test in wanted for d in r.dropped]
        store.write_text("probes.jsonl", "".join(p.model_dump_json() + "\n" for p in probes))

        # -- review ----------------------------------------------------------------------------
        from assay.experiments.reliability._review import (
            apply_reviews,
            read_reviews,
            review_counts,
        )

        probes = apply_reviews(probes, read_reviews(store.path))
        reviewed = review_counts(probes)
        if config.review.required:
            to_judge = [p for p in probes if p.review.status in ("accepted", "edited")]
        else:
            to_judge = [p for p in probes if p.review.status != "rejected"]

        # -- judge -----------------------------------------------------------------------------
        judgments = _judge(
            config,
            judge_cfgs,
            base_programs,
            seeds,
            to_judge,
            store,
            config_dir,
            progress,
            deadline,
        )

        # -- score -----------------------------------------------------------------------------
        metrics = _score(
            config, instances, judge_cfgs, seeds, to_judge, judgments, records, dropped, reviewed
        )
        metrics["data_fingerprint"] = data_fingerprint(seeds)
        store.write_json("metrics.json", metrics)
        from assay.experiments.reliability._report import write_report

        plotting.join()
        write_report(store.path, config, metrics)
        write_html(store.path)
        from assay.experiments.reliability._tracking import harness_tracked

        run_id = run.finish(harness_tracked(store.path, config, judge_cfgs, metrics))
        return HarnessResult(store.path, metrics, metrics["lm_calls"], run_id)


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
):
    done = {r.unit_id: r for r in store.records("units.jsonl", UnitRecord)}
    units = [(t, u) for t in instances for u in t.units(pool if t.pool_based else seeds)]
    work = [(t, u) for t, u in units if u.id not in done]

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

    def commit(_: Any, rec: UnitRecord) -> None:
        store.append_record("units.jsonl", rec)
        done[rec.unit_id] = rec

    run_pool(
        work,
        lambda w: one(*w),
        concurrency=config.concurrency,
        on_result=commit,
        progress=progress,
        desc="generate+validate",
        unit="unit",
        deadline=deadline,
    )
    order = {u.id: i for i, (_, u) in enumerate(units)}
    return sorted((r for r in done.values() if r.unit_id in order), key=lambda r: order[r.unit_id])


def _rubric(config: HarnessConfig) -> str:
    """The benchmark's rubric for generators/validators: the first judge's rubric and instruction."""
    j = config.judges[0]
    return "\n\n".join(x for x in (j.instruction, j.rubric) if x) or "(no rubric given)"


def _judgment_file(cfg: JudgeConfig) -> str:
    return f"judgments/{cfg.name}-{cfg.config_hash()[:8]}.jsonl"


def _judge(
    config,
    judge_cfgs,
    base_programs,
    seeds,
    probes,
    store: RunStore,
    config_dir,
    progress,
    deadline: float | None = None,
):
    """Sources and probes for every judge, in one pool. Stability probes use the test's
    temperature and a distinct rollout id each (the LM cache is bypassed); a retried unscored
    judgment (``retry.unscored``) is a fresh sample too."""
    tasks: list[JudgeTask] = []
    done: dict[str, dict[str, Judgment]] = {}
    programs: dict[tuple, dspy.Module] = {}

    def program_for(cfg: JudgeConfig, temperature: float | None, rollout: int | None):
        if temperature is None and rollout is None:
            return base_programs[cfg.name]
        key = (cfg.name, temperature, rollout)
        if key not in programs:
            run_cfg = (
                cfg if temperature is None else cfg.model_copy(update={"temperature": temperature})
            )
            programs[key] = build_judge(
                run_cfg,
                judge_lm_factory(retries=config.retries, base=config_dir, rollout=rollout),
            )
        return programs[key]

    for cfg in judge_cfgs:
        name = _judgment_file(cfg)
        done[cfg.name] = store.judgments(name)
        items = {f"source:{it.id}": it.model_copy(update={"id": f"source:{it.id}"}) for it in seeds}
        sampled: dict[str, tuple[float, int]] = {}
        for p in probes:
            pid = judged_id(p)
            items[pid] = p.as_item().model_copy(update={"id": pid})
            if "rollout" in p.meta:
                sampled[pid] = (p.meta["temperature"], p.meta["rollout"])
        work, _ = to_judge(items, done[cfg.name], config.retry.unscored)
        for item_id, attempt in work:
            temperature, rollout = sampled.get(item_id, (None, None))
            if attempt > 1:  # a fresh sample: a rollout id of its own (stability ones stay apart)
                rollout = (rollout or 0) + 1000 * attempt
            tasks.append(
                JudgeTask(
                    program_for(cfg, temperature, rollout), items[item_id], cfg, name, attempt
                )
            )

    def persist(task: JudgeTask, j: Judgment) -> None:
        store.append(j, task.key)
        done[task.config.name][j.item_id] = j

    if tasks:
        run_tasks(
            tasks,
            concurrency=config.concurrency,
            on_judgment=persist,
            progress=progress,
            desc="judge",
            deadline=deadline,
        )
    return done


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
        verdicts = {p.id: js[judged_id(p)] for p in probes if judged_id(p) in js}
        per_test = {}
        for t in instances:
            per_test[t.name] = score_test(
                t.scoring,
                by_test.get(t.name, []),
                verdicts,
                sources,
                config.scale,
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
        "probes": {t.name: len(by_test.get(t.name, [])) for t in instances},
        "dropped": drop_counts,
        "review": {**reviewed, "required": config.review.required},
        "judges": results,
        "generation_usage": gen_usage,
        "lm_calls": lm_calls,
        "bootstrap": f"{b.n_resamples} percentile resamples over probes, seed {b.seed}, {b.confidence:.0%} intervals",
    }
