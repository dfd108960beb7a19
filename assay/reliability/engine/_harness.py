"""``assay harness``: generate → validate → review → judge → score → report, every stage
resumable. Data flows one way: seeds → probes (+ dropped, counted) → reviewed probes →
judgments per judge → metrics → report, plots and MLflow.

Generation is logged one unit per line in ``units.jsonl`` (a unit's probes, dropped attempts
and LM usage in one atomic append; ``_generation.py``), so a killed run repeats no finished
unit; judgments are appended per judge in ``judgments/<judge>-<hash>.jsonl`` (``_judging.py``);
the metrics are ``_harness_metrics.py``.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import dspy

from assay.data import check_limit
from assay.errors import ConfigError
from assay.inputs import (
    ItemStream,
    StoredItems,
    data_fingerprint,
    stratified_sample,
    stream_items,
)
from assay.programs import (
    JudgeConfig,
    build_judge,
    judge_lm_factory,
    load_program_state,
    save_program,
)
from assay.reliability._config import HarnessConfig
from assay.reliability._probe import Probe
from assay.reliability._registry import ReliabilityTest, get_test, plugin_call
from assay.reliability._results import HarnessResult, HarnessSummary
from assay.reliability.engine._generation import (
    GenerationTotals,
    RoleLM,
    UnitRecord,
    generate_units,
    role_lm,
)
from assay.reliability.engine._judging import JudgePlan, judgment_file
from assay.reliability.engine._run_files import JudgmentFile, RunProbes
from assay.reliability.report import keeper, shown
from assay.reliability.review import PROBES, SEEDS, read_reviews
from assay.runs import JudgeTask, Run, TrackedRun, run_pool, run_tasks
from assay.types import Item, Usage

SEALED = ("config.yaml", "metrics.json", SEEDS, PROBES, "judgments/*.jsonl")
"""What a harness run's seal covers: what its figures stand on (not the review decisions
people add, which a re-run folds in and seals then)."""


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
) -> tuple[StoredItems, StoredItems, list[ReliabilityTest]]:
    """The seed pool, the seeds to perturb (the first ``limit`` of the pool) and the test
    instances, validated before anything is written (``notes``: what loading counted). The
    pool and seeds are :class:`~assay.inputs.StoredItems`: read from the items cache or spool
    file by position, none of them held."""
    check_limit(limit)  # before anything is read: 0 is not "every seed"
    items = stream_items(
        config.data, config.scale, cache_dir=workdir / ".assay" / "hf", notes=notes
    )
    pool = StoredItems.read(items)
    if config.sample:
        pool = stratified_sample(
            pool, config.sample.n, stratify=config.sample.stratify, seed=config.sample.seed
        )
    seeds = pool[:limit] if limit else pool
    reader = next((j for j in config.judges if j.task == "transcript"), None)
    if reader is not None:  # refused now rather than stopping mid-run
        missing = [s.id for s in seeds if not s.transcript]
        if missing:
            raise ConfigError(
                f"judge '{reader.name}' reads agent transcripts, but {len(missing)} seed items "
                f"have none (e.g. {missing[0]}): use data.format inspect or toolemu"
            )
    names = select(tests, list(config.tests), "test(s)")
    instances = [get_test(n, config.tests[n]) for n in names]
    for t in instances:
        plugin_call(t, "check_judges", lambda t=t: t.check_judges(config.judges))
        plugin_call(t, "check", lambda t=t: t.check(pool if t.pool_based else seeds, config.scale))
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
    gen_lm = role_lm(config.generator, config_dir, config.retries)
    val_lm = role_lm(config.validator, config_dir, config.retries)
    if any(t.uses_llm for t in instances):  # fail on a missing key before writing anything
        gen_lm("generator")
        val_lm("validator")

    run_hash = config.probes_hash(data_fingerprint(pool) + f"|limit={limit}")
    deadline = config.deadline(started)
    # the reports (plots, word diffs, report.html) may be drawn away from the LM calls, tracked
    # or not; the warm-ups, MLflow's too, wait for the first LM call to end (run.call_slots)
    where = {"workdir": workdir, "tracking_uri": tracking_uri}
    where |= {"reports_aside": True, "after_first_answer": True}
    with Run.open(config, run_hash, command="harness", **where) as run:
        store = run.store
        from assay.reliability.engine._rerun import finish_key, finished_summary

        selected = {"tests": instances, "judges": judge_names}
        done = finished_summary(run, finish_key(config, store.path, **selected))
        if done is not None:  # re-read: no LM call, no new report or MLflow run
            return _result(store.path, done, run.mlflow_run_id)
        store.write_config(config.model_dump(mode="json"))  # judges' edits: same directory
        # matplotlib's first import takes ~1 s: do it while the LM calls wait on the network
        run.ahead("assay.reliability.report:preload_plotting")
        # the probes, units and judgments are in the run's files, read back a test at a time
        summary, tracked, reused = _work(
            config,
            instances,
            pool,
            seeds,
            run,
            _Roles(gen_lm, val_lm, judge_cfgs, base_programs),
            config_dir=config_dir,
            progress=progress,
            deadline=deadline,
            notes=notes,
        )
        del pool, seeds
        run_id = run.finish(  # MLflow logs the rest while the reports are written
            tracked,
            meanwhile=lambda: run.at_end(  # after the warm-ups, where they ran
                "assay.reliability.report:write_reports", run_dir=str(run.dir)
            ),
            sealed=SEALED,
            finish_key=finish_key(config, store.path, **selected),
        )
        return _result(store.path, summary, run_id, reused)


class _Roles(NamedTuple):
    """The run's LMs and judges: the generator's, the validator's, the judges' configs and
    programs."""

    gen_lm: RoleLM
    val_lm: RoleLM
    judge_cfgs: list[JudgeConfig]
    base_programs: dict[str, dspy.Module]


def _work(
    config: HarnessConfig,
    instances: list[ReliabilityTest],
    pool: Sequence[Item],
    seeds: Sequence[Item],
    run: Run,
    roles: _Roles,
    *,
    config_dir: Path | None,
    progress: bool,
    deadline: float | None,
    notes: dict[str, Any],
) -> tuple[HarnessSummary, TrackedRun, dict[str, int]]:
    """Generate, review, judge and score; ``metrics.json`` written. Returns the summary, what
    MLflow logs and the probes reused per test — small: the probes, units and judgments are
    not held past their writing (a few bytes an item are: where each line starts, what to
    judge again), and a test's are read back from the files when they are used."""
    store = run.store
    scoring = run.preload("assay.reliability.engine._harness_metrics")  # NumPy
    # the intervals' exact quantiles and tails are scipy.special's (~0.25 s to import;
    # scipy.stats, which no score needs, ~0.9 s): imported meanwhile, too
    special = run.preload("scipy.special")
    # which seeds are one item — an Inspect sample's epochs, a text written again under another
    # id: the text keys' tables take ~0.05 s to build on first use, built meanwhile too
    clusters = run.meanwhile(lambda: scoring.join().repeated_sample_of(seeds))
    if not (store.path / "seeds.jsonl").exists():
        store.write_text("seeds.jsonl", (s.model_dump_json() + "\n" for s in seeds))

    # -- generate + validate (+ judge sources, and probes as their unit is committed) ---------
    slots = run.call_slots(config.concurrency)
    judging = JudgePlan(
        config, roles.judge_cfgs, roles.base_programs, store, config_dir, slots, seeds
    )
    diffs = _Diffs(run, judging.seed, len(instances))
    generated = _generate_probes(
        config, instances, pool, seeds, run, roles.gen_lm, roles.val_lm, progress, deadline,
        judging, diffs,
    )  # fmt: skip
    # -- review, then judge (report.html's source/probe diffs computed meanwhile) --------------
    # the probes are read back from probes.jsonl a test at a time, the review applied
    tests = [t.name for t in instances]
    probes = RunProbes(
        store,
        generated.probes,
        read_reviews(store.path, config.scale),
        required=config.review.required,
    )
    diffs.rest(p for t in tests for p in probes.of(t))
    _judge(config, judging, tests, probes, progress, deadline)
    reviewed = probes.counts(tests)

    # -- score ---------------------------------------------------------------------------------
    special.join()
    reused = dict.fromkeys(tests, 0)

    def judged(test: str) -> list[Probe]:
        out = probes.judged(test)
        reused[test] = sum(p.id in generated.reused for p in out)
        return out

    judgments = {cfg.name: JudgmentFile(store, judgment_file(cfg)) for cfg in roles.judge_cfgs}
    summary = scoring.join().harness_metrics(
        config,
        instances,
        roles.judge_cfgs,
        seeds,
        judged,
        judgments,
        generated,
        reviewed,
        data_fingerprint=data_fingerprint(seeds),
        samples=clusters.join(),
        pairs=notes.get("pairs"),  # the pairs built from a score column, and those skipped
    )
    del judgments
    used = [*summary.generation_usage.values(), *(r.usage for r in summary.judges.values())]
    summary = summary.model_copy(update={"spend": run.spend(Usage.total(used))})
    if notes.get("left_out"):  # an Inspect log's errored samples (data.errored_samples: skip)
        from assay.inputs import left_out_line

        summary.notes.append(left_out_line(notes["left_out"], notes.get("errored_samples")))
    store.write_json("metrics.json", summary.model_dump(mode="json"))
    from assay.reliability.engine._tracking import harness_tracked

    items = ItemStream(lambda: (p.as_item() for t in tests for p in probes.judged(t)))
    tracked = harness_tracked(store.path, config, roles.judge_cfgs, summary, reused, judged=items)
    return summary, tracked, reused


def _result(
    run_dir: Path, summary: HarnessSummary, run_id: str | None, reused: dict[str, int] | None = None
) -> HarnessResult:
    """What the run returns; ``reused`` None: a finished run re-read, every probe reused."""
    if reused is None:
        return HarnessResult.reread(run_dir, summary, run_id)
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
    pool: Sequence[Item],
    seeds: Sequence[Item],
    run: Run,
    gen_lm: RoleLM,
    val_lm: RoleLM,
    progress: bool,
    deadline: float | None,
    judging: JudgePlan,
    diffs: _Diffs,
) -> GenerationTotals:
    """Every unit generated (or reused), the programs saved and ``probes.jsonl`` written from
    the units' records read back in unit order; returns what they add up to.

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
        on_unit=diffs.unit,
    )
    _save_programs(instances, store.path / "programs")
    totals = GenerationTotals()
    store.write_text(PROBES, totals.probe_lines(generated))  # as made
    return totals


class _Diffs:
    """The source/probe word diffs report.html shows (tens of ms each, pure-Python CPU), made
    while the run works and away from its LM calls: each committed unit's as it comes when the
    run can take work aside; the rest once generation (and review) is done, while the judges
    run — aside, or else in a helper of their own (``assay.report.warm_diffs``). Only those of
    the probes the page lists (each test's first ones), their sources read from the seeds
    (``seed``: a seed by its id) then."""

    def __init__(self, run: Run, seed: Callable[[str], Item | None], tests: int):
        self._run = run
        self._seed = seed
        self._sent: set[tuple[str, str]] = set()
        self._aside = True  # until the run says it cannot
        self._tests = tests
        self._first = keeper(lambda p: p.test, tests)  # each test's first, as units commit

    def unit(self, record: UnitRecord) -> None:
        listed = [p for p in record.probes if self._first(p)] if self._aside else []
        if listed:
            pairs = self._pairs(listed)
            self._aside = self._run.aside("assay.report:remember_diffs", pairs=pairs)
            if self._aside:
                self._sent.update(pairs)

    def rest(self, probes: Iterable[Probe]) -> None:
        listed = shown(probes, lambda p: p.test, self._tests)
        pairs = [pair for pair in self._pairs(listed) if pair not in self._sent]
        if not pairs or self._run.aside("assay.report:remember_diffs", pairs=pairs):
            return
        self._run.ahead("assay.report:warm_diffs", pairs=pairs)

    def _pairs(self, probes: list[Probe]) -> list[tuple[str, str]]:
        """(source response, probe response) of each probe: the texts report.html diffs."""
        return [(self._response(p.source_id), p.response or "") for p in probes]

    def _response(self, source_id: str) -> str:
        source = self._seed(source_id)
        return "" if source is None else source.response


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
    tests: list[str],
    probes: RunProbes,
    progress: bool,
    deadline: float | None = None,
) -> None:
    """What is left to judge after generation (reviewed, edited or retried items; everything
    when review is required), its tasks made a test at a time as the pool takes them, then the
    untouched agent probes' copies of their source's verdict."""

    def tasks() -> Iterator[JudgeTask]:
        yield from judging.source_tasks()
        for t in tests:
            yield from judging.probe_tasks(probes.judged(t))

    if config.execution.engine == "ray":  # judged by Ray actors, persisted here
        listed = list(tasks())
        if listed:
            run_tasks(
                listed,
                concurrency=config.concurrency,
                on_judgment=judging.persist,
                progress=progress,
                desc="judge",
                deadline=deadline,
                execution=config.execution,
                keep=False,
            )
    elif (first := next(work := tasks(), None)) is not None:
        run_pool(
            itertools.chain([first], work),
            judging.run,
            concurrency=config.concurrency,
            on_result=judging.persist,
            progress=progress,
            desc="judge",
            deadline=deadline,
            keep=False,
        )
    for t in tests:
        judging.copy_untouched(probes.judged(t))
