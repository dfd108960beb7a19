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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import dspy
from pydantic import BaseModel, Field

from assay.data import check_limit, load_toolemu_trajectories
from assay.experiments.runs import (
    JudgeTask,
    ProgramsByAttempt,
    Run,
    RunStore,
    TrackedRun,
    now,
    run_pool,
    run_tasks,
    to_judge,
    write_html,
)
from assay.lm import ModelSpec, make_lm
from assay.programs import JudgeConfig, build_judge, judge_lm_factory, save_program
from assay.toolemu._agent import AgentRun, StepRecord, ToolAgent
from assay.toolemu._config import EvaluatorConfig, ToolEmuRunConfig
from assay.toolemu._emulator import Emulator, Sandbox
from assay.toolemu._metrics import Trajectory, evaluator_metrics, flat_metrics
from assay.toolemu._models import Case, Toolkit, load_cases, load_toolkits, parse_selection
from assay.toolemu._render import evaluator_tool_descriptions
from assay.toolemu._report import render_report
from assay.toolemu._trajectory import toolemu_jsonl, toolemu_record
from assay.types import Item, Judgment, Usage, flatten, stable_hash

UNITS = "units.jsonl"
TRAJECTORIES = "trajectories.jsonl"
EVAL_FILE = {
    "toolemu_safety": ("eval_agent_safe", "ToolCallRisk"),
    "toolemu_helpfulness": ("eval_agent_help_ignore_safety", "Helpfulness"),
}


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


@dataclass
class ToolEmuResult:
    run_dir: Path
    metrics: dict[str, Any]
    new_trajectories: int
    new_judgments: int
    crashed: list[dict[str, Any]]
    mlflow_run_id: str | None
    reread: bool  # finished before: nothing was run


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
            "error": f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}"[:8000],
        }
    else:
        status = {"status": "ok", "trajectory": toolemu_record(case, run), "stopped": run.stopped}
    return CaseRecord(
        **base,
        **status,
        steps=steps,
        emulator_mode=agent.emulator.mode,
        usage={
            "agent": sum((s.agent_usage for s in steps), Usage()),
            "emulator": sum((s.emulator_usage for s in steps), Usage()),
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
    """Judgments of one judge config; another config (model, sampling...) gets another file."""
    return f"judgments/{cfg.name}-{cfg.config_hash()[:8]}.jsonl"


def _verdict_record(j: Judgment | None, task: str, line: int) -> dict[str, Any]:
    """A judgment as a ToolEmu evaluator line; unscored → no score and the reason."""
    _, key = EVAL_FILE[task]
    if j is None or j.score is None:
        return {
            "Evaluator Thought": "",
            "Overall Qualitative Label": None,
            "Overall Quantitative Score": None,
            "Evaluator Log Summary": "",
            "eval_scores": {key: None},
            "eval_id": line,
            "unscored": j.unscored if j is not None else "not_judged",
            "error": j.error if j is not None else None,
        }
    raw = j.raw if isinstance(j.raw, dict) else {}
    return {
        "Evaluator Thought": raw.get("evaluator_thought") or j.reasoning or "",
        "Overall Qualitative Label": f"{j.label} ({j.score})",
        "Overall Quantitative Score": j.score,
        "Evaluator Log Summary": raw.get("evaluator_log_summary") or "",
        "eval_scores": {key: j.score},
        "eval_id": line,
    }


def _items(store: RunStore, cases: dict[int, Case], toolkits: dict[str, Toolkit]) -> list[Item]:
    """The written trajectories read back through the shared ToolEmu loader."""
    items = load_toolemu_trajectories(store.path / TRAJECTORIES)
    for it in items:
        case = cases[int(it.meta["case_idx"])]
        it.meta["tool_descriptions"] = evaluator_tool_descriptions(
            [toolkits[n] for n in case.toolkits]
        )
    return items


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
    toolkits = load_toolkits(config.toolkits)
    all_cases = load_cases(config.cases, toolkits)
    chosen = parse_selection(select if select is not None else config.select, len(all_cases))
    chosen = chosen[: check_limit(limit) or config.limit or len(chosen)]
    cases = [all_cases[i] for i in chosen]
    fingerprint = stable_hash(
        {
            "cases": [c.to_toolemu() for c in all_cases],
            "toolkits": {k: v.model_dump(mode="json") for k, v in toolkits.items()},
        }
    )
    judges = config.judge_configs()
    # LMs are built (API keys checked) before the run directory is touched.
    agent = build_agent(config, config_dir)

    def judge_programs(jc: JudgeConfig) -> ProgramsByAttempt:
        def make(rollout: int | None) -> dspy.Module:
            return build_judge(
                jc, judge_lm_factory(retries=config.retries, base=config_dir, rollout=rollout)
            )

        programs = ProgramsByAttempt(jc, make)
        programs(1)
        return programs

    programs = {jc.name: judge_programs(jc) for _, jc in judges}

    run_hash = config.trajectory_hash(fingerprint)
    deadline = config.deadline(started)
    finish_key = stable_hash(
        {
            "cases": chosen,
            "judges": [jc.config_hash() for _, jc in judges],
            "names": [jc.name for _, jc in judges],
            "bootstrap": config.bootstrap.model_dump(),
        }
    )
    with Run.open(
        config, run_hash, command="toolemu run", workdir=workdir, tracking_uri=tracking_uri
    ) as run:
        store = run.store
        done, attempts = _committed(store.records(UNITS, CaseRecord))
        todo = [c for c in cases if c.index not in done]
        existing = {jc.name: store.judgments(judgments_file(jc)) for _, jc in judges}
        retry = config.retry.unscored
        if (
            not todo
            and run.finished
            and run.state.get("finish_key") == finish_key
            and not any(
                to_judge(existing[jc.name], existing[jc.name], retry)[0] for _, jc in judges
            )
        ):
            metrics = store.read_json("metrics.json")
            return ToolEmuResult(store.path, metrics, 0, 0, [], run.mlflow_run_id, True)
        store.write_text("config.yaml", _yaml(config))

        # -- 1. agent + emulation --------------------------------------------------------------
        new = _run_agents(
            agent, todo, toolkits, attempts, store, config.concurrency, progress, deadline
        )
        for rec in new:
            if rec.status == "ok":
                done.setdefault(rec.case_idx, rec)
        crashed = [
            {
                "case_idx": r.case_idx,
                "case": r.case_name,
                "attempt": r.attempt,
                "error": (r.error or "").split("\n")[0],
            }
            for r in new
            if r.status == "error"
        ]
        ready = [c for c in cases if c.index in done]

        # -- 2. trajectories in ToolEmu's format ---------------------------------------------------
        store.write_text(
            TRAJECTORIES, toolemu_jsonl([done[c.index].trajectory or {} for c in ready])
        )
        by_idx = {c.index: c for c in all_cases}
        items = _items(store, by_idx, toolkits) if ready else []

        # -- 3. evaluation -----------------------------------------------------------------------
        tasks = []
        for _, jc in judges:
            work, _ = to_judge((it.id for it in items), existing[jc.name], retry)
            by_id = {it.id: it for it in items}
            tasks += [
                JudgeTask(programs[jc.name](a), by_id[i], jc, judgments_file(jc), a)
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
        _write_eval_files(store, config.evaluators, existing, items)

        # -- 4. metrics, report, MLflow --------------------------------------------------------
        metrics = _summarize(config, cases, done, items, judges, existing, crashed)
        store.write_json("metrics.json", metrics)
        store.write_text("report.md", render_report(config, metrics))
        write_html(store.path)
        save_program(agent, store.path / "agent_program.json")
        tracked = TrackedRun(
            name=config.name,
            params=_params(config, chosen, run_hash),
            metrics=flat_metrics(metrics),
            tags={"assay.emulator_mode": config.emulator.mode, "assay.agent": config.agent.model},
        )
        complete = not crashed and len(ready) == len(cases)
        if complete:
            run_id = run.finish(tracked, finish_key=finish_key, n_cases=len(cases))
        else:
            run_id = run.log(tracked)
            run.update(
                status="incomplete",
                finish_key=None,
                finished=now(),
                mlflow_run_id=run_id,
                n_cases=len(cases),
            )
        return ToolEmuResult(store.path, metrics, len(new), len(fresh), crashed, run_id, False)


def _yaml(config: ToolEmuRunConfig) -> str:
    import yaml

    return yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False, allow_unicode=True)


def _write_eval_files(store: RunStore, evaluators: list[EvaluatorConfig], existing, items) -> None:
    """ToolEmu evaluator JSONL per evaluator: ``evals/<name>_eval_agent_safe.jsonl`` and
    ``evals/<name>_eval_agent_help_ignore_safety.jsonl``, line *i* for trajectory line *i*."""
    (store.path / "evals").mkdir(exist_ok=True)
    for ev in evaluators:
        for task, (suffix, _) in EVAL_FILE.items():
            if task in ev.tasks:
                by_id = existing[ev.judge_config(task).name]
                lines = [_verdict_record(by_id.get(it.id), task, i) for i, it in enumerate(items)]
                store.write_text(f"evals/{ev.name}_{suffix}.jsonl", toolemu_jsonl(lines))


def _summarize(config, cases, done, items, judges, existing, crashed) -> dict[str, Any]:
    b = config.bootstrap
    recs = {it.id: done[int(it.meta["case_idx"])] for it in items}
    trajectories = [
        Trajectory(
            it.id,
            next(c for c in cases if c.index == int(it.meta["case_idx"])),
            recs[it.id].stopped or "",
            sum(s.kind != "final" for s in recs[it.id].steps),
        )
        for it in items
    ]
    evaluators: dict[str, Any] = {}
    usage_by_judge: dict[str, Usage] = {}
    for ev in config.evaluators:
        per_task = {t: existing[ev.judge_config(t).name] for t in ev.tasks}
        evaluators[ev.name] = {
            "model": ev.model,
            **evaluator_metrics(
                trajectories,
                per_task,
                n_resamples=b.n_resamples,
                confidence=b.confidence,
                seed=b.seed,
            ),
        }
    for _, jc in judges:
        usage_by_judge[jc.name] = sum((j.usage for j in existing[jc.name].values()), Usage())
    selected = [done[c.index] for c in cases if c.index in done]
    steps = [s for r in selected for s in r.steps]
    agent_u = sum((r.usage.get("agent", Usage()) for r in selected), Usage())
    emu_u = sum((r.usage.get("emulator", Usage()) for r in selected), Usage())
    eval_u = sum(usage_by_judge.values(), Usage())
    kinds = [(s.emulator or {}).get("kind") for s in steps if s.kind == "tool"]
    return {
        "trajectories": {
            "cases_selected": len(cases),
            "n": len(trajectories),
            "crashed_this_run": len(crashed),
            "missing": len(cases) - len(trajectories),
            "stopped_at_step_limit": sum(t.stopped == "step_limit" for t in trajectories),
            "mean_tool_calls": (sum(t.n_steps for t in trajectories) / len(trajectories))
            if trajectories
            else 0.0,
            "tool_calls": len(kinds),
            "unknown_tool_calls": kinds.count("unknown_tool"),
            "invalid_tool_inputs": kinds.count("invalid_input"),
            "invalid_agent_outputs": sum(s.kind == "invalid_output" for s in steps),
            "observations_with_issues": sum(
                bool((s.emulator or {}).get("issues")) for s in steps if s.kind == "tool"
            ),
        },
        "crashed": crashed,
        "emulator_mode": config.emulator.mode,
        "evaluators": evaluators,
        "usage": {
            "agent": agent_u.model_dump(),
            "emulator": emu_u.model_dump(),
            "evaluators": eval_u.model_dump(),
            "total": (agent_u + emu_u + eval_u).model_dump(),
        },
        "usage_by_judge": {k: v.model_dump() for k, v in usage_by_judge.items()},
        "bootstrap": f"{b.n_resamples} percentile resamples over trajectories, seed {b.seed}, "
        f"{b.confidence:.0%} intervals",
        "trajectory_ids": [t.item_id for t in trajectories],
    }


def _params(config: ToolEmuRunConfig, chosen: list[int], run_hash: str) -> dict[str, str]:
    out = flatten(config.model_dump(mode="json"))
    out["cases.selected"] = ",".join(map(str, chosen))
    out["run_hash"] = run_hash
    return out
