"""``assay harness``: generate → validate → review → judge → score → report, every stage
resumable. Data flows one way: seeds → probes (+ dropped, counted) → reviewed probes →
judgments per judge → metrics → report, plots and MLflow.

Generation is logged one unit per line in ``units.jsonl`` (a unit's probes, dropped attempts
and LM usage in one atomic append; ``_generation.py``), so a killed run repeats no finished
unit; judgments are appended per judge in ``judgments/<judge>-<hash>.jsonl`` (``_judging.py``);
the metrics are ``_harness_metrics.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dspy

from assay.data import check_limit
from assay.errors import ConfigError
from assay.experiments._items import data_fingerprint, load_items
from assay.experiments._sample import stratified_sample
from assay.experiments.reliability._config import HarnessConfig
from assay.experiments.reliability._probe import Dropped, Probe
from assay.experiments.reliability._registry import ReliabilityTest, get_test
from assay.experiments.reliability._results import HarnessResult, HarnessSummary
from assay.experiments.reliability.engine._generation import (
    Generated,
    RoleLM,
    UnitRecord,
    generate_units,
)
from assay.experiments.reliability.engine._judging import JudgePlan
from assay.experiments.reliability.review import apply_reviews, read_reviews, review_counts
from assay.experiments.runs import (
    Background,
    CallSlots,
    Run,
    preload,
    run_pool,
    run_tasks,
)
from assay.lm import ModelSpec, make_lm
from assay.programs import (
    JudgeConfig,
    build_judge,
    judge_lm_factory,
    load_program_state,
    save_program,
)
from assay.types import Item, Judgment, Usage


def _role_lm(role: ModelSpec, base: Path | None, retries: int) -> RoleLM:
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
    """Generate, review, judge and score ``config``'s tests in a run under ``workdir`` that
    resumes where a killed one stopped (and, finished and unchanged, is only re-read)."""
    started = time.monotonic()
    notes: dict[str, Any] = {}
    pool, seeds, instances = prepare(config, workdir=workdir, limit=limit, tests=tests, notes=notes)
    _load_programs(instances, config_dir, tracking_uri or config.tracking.uri)
    judge_names, judge_cfgs, base_programs = _judges(config, judges, instances, config_dir)
    gen_lm = _role_lm(config.generator, config_dir, config.retries)
    val_lm = _role_lm(config.validator, config_dir, config.retries)
    if any(t.uses_llm for t in instances):  # fail on a missing key before writing anything
        gen_lm("generator")
        val_lm("validator")

    run_hash = config.probes_hash(data_fingerprint(pool) + f"|limit={limit}")
    deadline = config.deadline(started)
    # a sidecar, tracked or not: it writes the reports and report.html
    # (its warm-ups, and MLflow's, wait for the first LM call to end: slots' after_first_call)
    where = {"workdir": workdir, "tracking_uri": tracking_uri, "sidecar": True, "hold": True}
    with Run.open(config, run_hash, command="harness", **where) as run:
        store = run.store
        from assay.experiments.reliability.engine._rerun import finish_key, finished_summary

        selected = {"tests": instances, "judges": judge_names}
        done = finished_summary(run, finish_key(config, store.path, **selected))
        if done is not None:  # re-read: no LM call, no new report or MLflow run
            return _result(store.path, done, run.mlflow_run_id)
        store.write_config(config.model_dump(mode="json"))  # judges' edits: same directory
        # matplotlib's first import takes ~1 s: do it while the LM calls wait on the network
        # (in the sidecar, which writes the reports, or else in a thread here)
        plotting = _preload_plotting(run)
        scoring = preload(
            "assay.experiments.reliability.engine._harness_metrics"
        )  # NumPy, bootstrap
        if not (store.path / "seeds.jsonl").exists():
            store.write_text("seeds.jsonl", "".join(s.model_dump_json() + "\n" for s in seeds))

        # -- generate + validate (+ judge sources, and probes as their unit is committed) -----
        slots = CallSlots(config.concurrency, after_first_call=run.calls_flowing)
        judging = JudgePlan(config, judge_cfgs, base_programs, store, config_dir, slots)
        generated, probes, dropped = _generate_probes(
            config, instances, pool, seeds, run, gen_lm, val_lm, progress, deadline, judging
        )
        # -- review, then judge (report.html's source/probe diffs computed meanwhile) ----------
        probes, reviewed, to_judge = _apply_review(config, store.path, probes)
        diffs = _warm_diffs_here(run, seeds, probes)
        judgments = _judge(config, judging, seeds, to_judge, progress, deadline)

        # -- score and report ------------------------------------------------------------------
        summary = scoring.join().harness_metrics(
            config,
            instances,
            judge_cfgs,
            seeds,
            to_judge,
            judgments,
            generated.records,
            dropped,
            reviewed,
            data_fingerprint=data_fingerprint(seeds),
            pairs=notes.get("pairs"),  # the pairs built from a score column, and those skipped
        )
        used = [*summary.generation_usage.values(), *(r.usage for r in summary.judges.values())]
        summary = summary.model_copy(update={"spend": run.spend(Usage.total(used))})
        store.write_json("metrics.json", summary.model_dump(mode="json"))
        from assay.experiments.reliability.engine._tracking import harness_tracked

        reused = generated.count_reused(to_judge, list(summary.probes))
        run_id = run.finish(  # MLflow logs the rest while the reports are written
            harness_tracked(
                store.path,
                config,
                judge_cfgs,
                summary,
                reused,
                judged=[p.as_item() for p in to_judge],
            ),
            meanwhile=lambda: _write_reports(run, config, summary, plotting, diffs),
            finish_key=finish_key(config, store.path, **selected),
        )
        return _result(store.path, summary, run_id, reused)


def _result(
    run_dir: Path, summary: HarnessSummary, run_id: str | None, reused: dict[str, int] | None = None
) -> HarnessResult:
    """What the run returns; ``reused`` None: a finished run re-read, every probe reused."""
    reused = dict(summary.probes) if reused is None else reused
    return HarnessResult(
        run_dir=run_dir, summary=summary, mlflow_run_id=run_id, probes_reused=reused
    )


def _judges(
    config: HarnessConfig,
    names: list[str] | None,
    instances: list[ReliabilityTest],
    config_dir: Path | None,
) -> tuple[list[str], list[JudgeConfig], dict[str, dspy.Module]]:
    """The judges selected by name (all by default), vetted by every test, and their programs."""
    judge_names = select(names, [j.name for j in config.judges], "judge(s)")
    judge_cfgs = [j for j in config.judges if j.name in judge_names]
    for t in instances:
        t.check_judges(judge_cfgs)
    base_programs: dict[str, dspy.Module] = {
        j.name: build_judge(j, judge_lm_factory(retries=config.retries, base=config_dir))
        for j in judge_cfgs
    }
    return judge_names, judge_cfgs, base_programs


def _generate_probes(
    config: HarnessConfig,
    instances: list[ReliabilityTest],
    pool: list[Item],
    seeds: list[Item],
    run: Run,
    gen_lm: RoleLM,
    val_lm: RoleLM,
    progress: bool,
    deadline: float | None,
    judging: JudgePlan,
) -> tuple[Generated, list[Probe], list[Dropped]]:
    """Every unit generated (or reused), the programs saved and ``probes.jsonl`` written.

    The judging that does not wait for generation runs in the same pool, unless the probes
    must be reviewed first (or were reviewed already), or the judges are Ray actors (which
    judge everything after generation)."""
    store = run.store
    early = (
        not config.review.required
        and not read_reviews(store.path)
        and config.execution.engine != "ray"
    )
    generated = generate_units(
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
        early=early,
        on_unit=_diffs_in(run, seeds),
    )
    _save_programs(instances, store.path / "programs")
    wanted = {t.name for t in instances}
    probes = [p for r in generated.records if r.test in wanted for p in r.probes]
    dropped = [d for r in generated.records if r.test in wanted for d in r.dropped]
    store.write_text("probes.jsonl", "".join(p.model_dump_json() + "\n" for p in probes))
    return generated, probes, dropped


def _apply_review(
    config: HarnessConfig, run_dir: Path, probes: list[Probe]
) -> tuple[list[Probe], dict[str, int], list[Probe]]:
    """The probes with the review decisions applied, their counts by status, and those to judge
    (accepted or edited ones when review is required; else all but the rejected)."""
    probes = apply_reviews(probes, read_reviews(run_dir))
    if config.review.required:
        to_judge = [p for p in probes if p.review.status in ("accepted", "edited")]
    else:
        to_judge = [p for p in probes if p.review.status != "rejected"]
    return probes, review_counts(probes), to_judge


def _preload_plotting(run: Run) -> Background | None:
    """matplotlib loaded ahead of the report: in the sidecar, or else in a thread here."""
    target = "assay.experiments.reliability.report:preload_plotting"
    if run.sidecar is not None:
        run.warm(target)
        return None
    from assay.experiments.reliability.report import preload_plotting

    return Background(preload_plotting, name="assay-plotting")


def _diffs_in(run: Run, seeds: list[Item]) -> Callable[[UnitRecord], None] | None:
    """With a sidecar: each committed unit's source/probe word diffs computed there as the
    run goes (report.html shows them); without one they are warmed after generation."""
    if run.sidecar is None:
        return None

    def send(record: UnitRecord) -> None:
        if record.probes:
            run.warm("assay.report:remember_diffs", pairs=_diff_pairs(seeds, record.probes))

    return send


def _write_reports(
    run: Run,
    config: HarnessConfig,
    summary: HarnessSummary,
    plotting: Background | None,
    diffs: Background | None,
) -> None:
    """``report.md`` with its plots, then ``report.html``, once their warm-ups are done — in
    the sidecar when there is one."""
    if run.sidecar is not None:
        run.offload("assay.experiments.reliability.report:write_reports", run_dir=str(run.dir))
        return
    from assay.experiments.reliability.report import build_report, write_report
    from assay.report import write_html

    if plotting is not None:
        plotting.join()
    write_report(run.dir, config, summary)
    if diffs is not None:
        diffs.join()
    write_html(build_report(run.dir), run.dir)


def _warm_diffs_here(run: Run, seeds: list[Item], probes: list[Probe]) -> Background | None:
    """Without a sidecar: the probes' word diffs computed in a helper interpreter while the
    judges run (with one, they were sent to it as units were committed)."""
    if run.sidecar is not None:
        return None
    return Background(lambda: _warm_diffs(seeds, probes), delay=0.0, name="assay-diffs")


def _warm_diffs(seeds: list[Item], probes: list[Probe]) -> None:
    """The word diffs report.html shows (tens of ms each), computed while the judges run."""
    from assay.report import warm_diffs

    warm_diffs(_diff_pairs(seeds, probes))


def _diff_pairs(seeds: list[Item], probes: list[Probe]) -> list[tuple[str, str]]:
    """(source response, probe response) of each probe: the texts report.html diffs."""
    responses = {s.id: s.response for s in seeds}
    return [(responses.get(p.source_id, ""), p.response) for p in probes]


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


def _judge(
    config: HarnessConfig,
    judging: JudgePlan,
    seeds: list[Item],
    probes: list[Probe],
    progress: bool,
    deadline: float | None = None,
) -> dict[str, dict[str, Judgment]]:
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
