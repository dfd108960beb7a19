"""``assay toolemu run``: cases → agent with emulated tools → trajectories → evaluators → metrics.

Stages, each resumable:

1. **agent + emulation** — one unit per case, run concurrently; a unit is committed as one
   append to ``units.jsonl`` (the ToolEmu record, assay's per-step records, usage), so a kill
   never leaves half a trajectory. A case that crashes is recorded with its error and the
   steps it made, and run again on the next invocation; no trajectory is ever dropped.
2. **trajectories.jsonl** — the committed trajectories of the selected cases in ToolEmu's
   format, rewritten atomically; the evaluators read it back through the shared loader.
3. **evaluation** — ToolEmu's safety and helpfulness evaluators and the emulator-quality judge
   for each evaluator model; judgments are appended per judge as they finish, and written
   again as ToolEmu evaluator JSONL (line *i* scores trajectory line *i*).
4. **metrics, report, MLflow**.

The run directory is keyed by what makes the trajectories (agent, emulator, data); adding
cases or evaluators reuses what is there. Re-running a finished config makes no LM call.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import dspy
from pydantic import BaseModel, Field

from assay.data import check_file, check_limit, load_toolemu_trajectories
from assay.emulation._agent import AgentRun, StepRecord, ToolAgent
from assay.emulation._config import EvaluatorConfig, ToolEmuRunConfig
from assay.emulation._emulator import Emulator, Sandbox
from assay.emulation._incidence import failure_estimates
from assay.emulation._metrics import flat_metrics
from assay.emulation._models import Case, Toolkit, load_cases, load_toolkits, parse_selection
from assay.emulation._render import evaluator_tool_descriptions
from assay.emulation._report import render_report
from assay.emulation._results import ToolEmuResult, ToolEmuSummary
from assay.emulation._summary import (
    Judgments,
    config_yaml,
    crashed_cases,
    params,
    stored_summary,
    summarize,
    write_eval_files,
)
from assay.emulation._trajectory import toolemu_jsonl, toolemu_record
from assay.lm import ModelSpec, make_lm, redact
from assay.programs import JudgeConfig, build_judge, judge_lm_factory, save_program
from assay.runs import (
    JudgeTask,
    ProgramsByAttempt,
    Run,
    RunStore,
    TrackedRun,
    now,
    run_pool,
    run_tasks,
    to_judge,
)
from assay.types import Item, Usage, stable_hash

UNITS = "units.jsonl"
TRAJECTORIES = "trajectories.jsonl"


class CaseRecord(BaseModel):
    """One case's agent run, appended as one line: the commit point of its trajectory."""

    case_idx: int
    case_name: str
    status: Literal["ok", "error"]
    attempt: int = 1
    trajectory: dict[str, Any] | None = None  # the ToolEmu record (status ok)
    steps: list[StepRecord] = Field(default_factory=list)
    stopped: str | None = None  # final_answer / step_limit
    error: str | None = None
    emulator_mode: str = ""
    usage: dict[str, Usage] = Field(default_factory=dict)  # agent / emulator
    latency_s: float = 0.0
    finished: str = ""


def _role_lm(role: ModelSpec, retries: int, base: Path | None) -> dspy.LM:
    return make_lm(role, retries=retries, base=base)


def build_agent(config: ToolEmuRunConfig, base: Path | None = None) -> ToolAgent:
    """The agent program with its emulator, each predictor on its role's LM."""
    emulator = Emulator(config.emulator.mode, critique=config.emulator.critique)
    emulator.set_lm(_role_lm(config.emulator, config.retries, base))
    agent = ToolAgent(
        emulator,
        max_steps=config.agent.max_steps,
        agent_adapter=config.agent.adapter,
        emulator_adapter=config.emulator.adapter,
        agent_price=config.agent.price_pair,
        emulator_price=config.emulator.price_pair,
    )
    agent.step.lm = _role_lm(config.agent, config.retries, base)
    return agent


def run_case(
    agent: ToolAgent, case: Case, toolkits: dict[str, Toolkit], attempt: int
) -> CaseRecord:
    """Run the agent on one case. Any failure becomes an ``error`` record keeping its steps."""
    start = time.perf_counter()
    steps: list[StepRecord] = []
    base = {"case_idx": case.index, "case_name": case.name, "attempt": attempt}
    try:
        run: AgentRun = agent.run(Sandbox(case, toolkits), steps)
    except Exception as exc:
        status: dict[str, Any] = {
            "status": "error",
            "error": redact(f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}")[:8000],
        }
    else:
        status = {"status": "ok", "trajectory": toolemu_record(case, run), "stopped": run.stopped}
    return CaseRecord(
        **base,
        **status,
        steps=steps,
        emulator_mode=agent.emulator.mode,
        usage={
            "agent": Usage.total(s.agent_usage for s in steps),
            "emulator": Usage.total(s.emulator_usage for s in steps),
        },
        latency_s=round(time.perf_counter() - start, 4),
        finished=now(),
    )


def _committed(records: list[CaseRecord]) -> tuple[dict[int, CaseRecord], dict[int, int]]:
    """The first ``ok`` record per case, and how many attempts each case has had."""
    ok: dict[int, CaseRecord] = {}
    attempts: dict[int, int] = {}
    for r in records:
        attempts[r.case_idx] = attempts.get(r.case_idx, 0) + 1
        if r.status == "ok":
            ok.setdefault(r.case_idx, r)
    return ok, attempts


def _run_agents(
    agent: ToolAgent,
    cases: list[Case],
    toolkits: dict[str, Toolkit],
    attempts: dict[int, int],
    store: RunStore,
    concurrency: int,
    progress: bool,
    deadline: float | None = None,
) -> list[CaseRecord]:
    """Every case's agent run, each committed to ``units.jsonl`` as it finishes."""
    return run_pool(
        cases,
        lambda c: run_case(agent, c, toolkits, attempts.get(c.index, 0) + 1),
        concurrency=concurrency,
        on_result=lambda _c, rec: store.append_record(UNITS, rec),  # the commit point
        progress=progress,
        desc="trajectories",
        unit="case",
        deadline=deadline,
    )


def judgments_file(cfg: JudgeConfig) -> str:
    """Judgments of one judge config; another config (model, sampling...) or another price gets
    another file (:meth:`~assay.programs.JudgeConfig.results_hash`)."""
    return f"judgments/{cfg.name}-{cfg.results_hash()[:8]}.jsonl"


def _items(store: RunStore, cases: dict[int, Case], toolkits: dict[str, Toolkit]) -> list[Item]:
    """The written trajectories read back through the shared ToolEmu loader."""
    items = load_toolemu_trajectories(store.path / TRAJECTORIES)
    for it in items:
        case = cases[int(it.meta["case_idx"])]
        it.meta["tool_descriptions"] = evaluator_tool_descriptions(
            [toolkits[n] for n in case.toolkits]
        )
    return items


@dataclass
class _Plan:
    """What a run will do, validated (and its LMs built) before the run directory is touched."""

    toolkits: dict[str, Toolkit]
    all_cases: list[Case]
    chosen: list[int]  # indices of the selected cases
    cases: list[Case]  # the selected cases
    judges: list[tuple[EvaluatorConfig, JudgeConfig]]
    agent: ToolAgent
    programs: dict[str, ProgramsByAttempt]  # judge name -> its programs
    run_hash: str
    finish_key: str  # what a finished run did: re-running the same makes no LM call


def _plan(
    config: ToolEmuRunConfig,
    config_dir: Path | None,
    select: str | list[int] | None,
    limit: int | None,
) -> _Plan:
    toolkits = load_toolkits(config.toolkits)
    all_cases = load_cases(config.cases, toolkits)
    chosen = parse_selection(select if select is not None else config.select, len(all_cases))
    chosen = chosen[: check_limit(limit) or config.limit or len(chosen)]
    fingerprint = stable_hash(
        {
            "cases": [c.to_toolemu() for c in all_cases],
            "toolkits": {k: v.model_dump(mode="json") for k, v in toolkits.items()},
        }
    )
    judges = config.judge_configs()
    # LMs are built (API keys checked) before the run directory is touched.
    agent = build_agent(config, config_dir)
    programs = {jc.name: _judge_programs(jc, config, config_dir) for _, jc in judges}
    finish_key = stable_hash(
        {
            "cases": chosen,
            "judges": [jc.results_hash() for _, jc in judges],
            "names": [jc.name for _, jc in judges],
            "bootstrap": config.bootstrap.model_dump(),
            # annotations added or edited: the summary is made again (no LM call)
            "annotations": _file_digest(config.annotations),
        }
    )
    return _Plan(
        toolkits,
        all_cases,
        chosen,
        [all_cases[i] for i in chosen],
        judges,
        agent,
        programs,
        config.trajectory_hash(fingerprint),
        finish_key,
    )


def _file_digest(path: str | None) -> str | None:
    """The SHA-256 of a file's bytes (None for no file); a file that is not there is refused
    before anything runs."""
    if path is None:
        return None
    from assay._files import sha256_file

    return sha256_file(check_file(path))


def _judge_programs(
    jc: JudgeConfig, config: ToolEmuRunConfig, config_dir: Path | None
) -> ProgramsByAttempt:
    """The judge's program per attempt; the first is built now (its LM and key checked)."""

    def make(rollout: int | None) -> dspy.Module:
        return build_judge(
            jc, judge_lm_factory(retries=config.retries, base=config_dir, rollout=rollout)
        )

    programs = ProgramsByAttempt(jc, make)
    programs(1)
    return programs


def run_toolemu(
    config: ToolEmuRunConfig,
    *,
    workdir: Path,
    config_dir: Path | None = None,
    select: str | list[int] | None = None,
    limit: int | None = None,
    tracking_uri: str | None = None,
    progress: bool = True,
) -> ToolEmuResult:
    """Run (or resume, or re-read) a ToolEmu run. Input is validated before anything is written."""
    started = time.monotonic()
    plan = _plan(config, config_dir, select, limit)
    deadline = config.deadline(started)
    with Run.open(
        config,
        plan.run_hash,
        command="toolemu run",
        kind="toolemu",
        workdir=workdir,
        tracking_uri=tracking_uri,
    ) as run:
        store = run.store
        done, attempts = _committed(store.records(UNITS, CaseRecord))
        todo = [c for c in plan.cases if c.index not in done]
        existing = {jc.name: store.judgments(judgments_file(jc)) for _, jc in plan.judges}
        finished = not todo and _finished(run, plan, existing, config.retry.unscored)
        stored = stored_summary(store) if finished else None
        if stored is not None:  # re-read: no LM call, no new report or MLflow run
            return ToolEmuResult(
                run_dir=store.path,
                summary=stored,
                new_trajectories=0,
                new_judgments=0,
                crashed=[],
                mlflow_run_id=run.mlflow_run_id,
                reread=True,
            )
        store.write_text("config.yaml", config_yaml(config))

        # -- 1. agent + emulation --------------------------------------------------------------
        new = _run_agents(
            plan.agent, todo, plan.toolkits, attempts, store, config.concurrency, progress, deadline
        )
        for rec in new:
            if rec.status == "ok":
                done.setdefault(rec.case_idx, rec)
        crashed = crashed_cases(new)
        ready = [c for c in plan.cases if c.index in done]

        # -- 2. trajectories in ToolEmu's format ---------------------------------------------------
        store.write_text(
            TRAJECTORIES, toolemu_jsonl([done[c.index].trajectory or {} for c in ready])
        )
        by_idx = {c.index: c for c in plan.all_cases}
        items = _items(store, by_idx, plan.toolkits) if ready else []

        # -- 3. evaluation -----------------------------------------------------------------------
        fresh = _evaluate(plan, items, existing, store, config, progress, deadline)
        write_eval_files(store, config.evaluators, existing, items)

        # -- 4. metrics, report, MLflow --------------------------------------------------------
        summary = summarize(config, plan.cases, done, items, plan.judges, existing, crashed)
        estimates = failure_estimates(config, items, existing, str(store.path))
        summary = summary.model_copy(
            update={"spend": run.spend(summary.usage.total), "failure_estimates": estimates}
        )
        store.write_json("metrics.json", summary.model_dump(mode="json"))
        store.write_text("report.md", render_report(config, summary))
        from assay.emulation._html_report import build_report
        from assay.report import write_html  # the page's renderer, loaded on first use

        write_html(build_report(store.path), store.path)
        save_program(plan.agent, store.path / "agent_program.json")
        complete = not crashed and len(ready) == len(plan.cases)
        run_id = _log(run, config, plan, summary, complete=complete)
        return ToolEmuResult(
            run_dir=store.path,
            summary=summary,
            new_trajectories=len(new),
            new_judgments=fresh,
            crashed=crashed,
            mlflow_run_id=run_id,
            reread=False,
        )


def _finished(run: Run, plan: _Plan, existing: Judgments, retry: Iterable[str]) -> bool:
    """Whether the run already did all this: finished with the same cases, judges and
    bootstrap, and no judgment left to (re)do."""
    return (
        run.finished
        and run.state.get("finish_key") == plan.finish_key
        and not any(
            to_judge(existing[jc.name], existing[jc.name], retry)[0] for _, jc in plan.judges
        )
    )


def _evaluate(
    plan: _Plan,
    items: list[Item],
    existing: Judgments,
    store: RunStore,
    config: ToolEmuRunConfig,
    progress: bool,
    deadline: float | None,
) -> int:
    """Every evaluator judgment still to do, appended as it finishes and added to
    ``existing``; returns how many were made."""
    tasks = []
    for _, jc in plan.judges:
        work, _ = to_judge((it.id for it in items), existing[jc.name], config.retry.unscored)
        by_id = {it.id: it for it in items}
        tasks += [
            JudgeTask(plan.programs[jc.name](a), by_id[i], jc, judgments_file(jc), a)
            for i, a in work
        ]
    fresh = run_tasks(
        tasks,
        concurrency=config.concurrency,
        on_judgment=lambda t, j: store.append(j, t.key),
        progress=progress,
        desc="evaluating",
        deadline=deadline,
    )
    for t, j in zip(tasks, fresh, strict=True):
        existing[t.config.name][j.item_id] = j
    return len(fresh)


def _log(
    run: Run, config: ToolEmuRunConfig, plan: _Plan, summary: ToolEmuSummary, *, complete: bool
) -> str | None:
    """Log to MLflow; a run with every selected case done is finished, any other incomplete
    (the next invocation resumes it)."""
    tracked = TrackedRun(
        name=config.name,
        params=params(config, plan.chosen, run.run_hash),
        metrics=flat_metrics(summary),
        tags={"assay.emulator_mode": config.emulator.mode, "assay.agent": config.agent.model},
    )
    n_cases = len(plan.cases)
    if complete:
        return run.finish(tracked, finish_key=plan.finish_key, n_cases=n_cases)
    run_id = run.log(tracked)
    run.update(
        status="incomplete", finish_key=None, finished=now(), mlflow_run_id=run_id, n_cases=n_cases
    )
    return run_id
