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
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import dspy
from pydantic import BaseModel, Field
from tqdm import tqdm

from assay.data import load_toolemu_trajectories
from assay.experiments._evaluate import default_lm_factory, save_program
from assay.experiments._runner import JudgeTask, run_tasks
from assay.experiments._store import RunStore, now
from assay.experiments._tracking import default_tracking_uri, log_run
from assay.lm import make_lm
from assay.programs import JudgeConfig, build_judge
from assay.toolemu._agent import AgentRun, StepRecord, ToolAgent
from assay.toolemu._config import EvaluatorConfig, ModelRole, ToolEmuRunConfig
from assay.toolemu._emulator import Emulator, Sandbox
from assay.toolemu._metrics import Trajectory, evaluator_metrics, flat_metrics
from assay.toolemu._models import Case, Toolkit, load_cases, load_toolkits, parse_selection
from assay.toolemu._render import evaluator_tool_descriptions
from assay.toolemu._report import render_report
from assay.toolemu._trajectory import toolemu_jsonl, toolemu_record
from assay.types import Item, Judgment, Usage, flatten, stable_hash
from assay.web import write_html_report

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


def _role_lm(role: ModelRole, retries: int, base: Path | None) -> dspy.LM:
    return make_lm(
        role.model,
        temperature=role.temperature,
        max_tokens=role.max_tokens,
        seed=role.seed,
        api_base=role.api_base,
        api_key_env=role.api_key_env,
        retries=retries,
        base=base,
    )


def _price(role: ModelRole) -> tuple[float, float] | None:
    return (role.price.input_per_mtok, role.price.output_per_mtok) if role.price else None


def build_agent(config: ToolEmuRunConfig, base: Path | None = None) -> ToolAgent:
    """The agent program with its emulator, each predictor on its role's LM."""
    emulator = Emulator(config.emulator.mode, critique=config.emulator.critique)
    emulator.set_lm(_role_lm(config.emulator, config.retries, base))
    agent = ToolAgent(
        emulator,
        max_steps=config.agent.max_steps,
        agent_adapter=config.agent.adapter,
        emulator_adapter=config.emulator.adapter,
        agent_price=_price(config.agent),
        emulator_price=_price(config.emulator),
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
) -> list[CaseRecord]:
    out: list[CaseRecord] = []
    if not cases:
        return out
    bar = tqdm(total=len(cases), desc="trajectories", unit="case", disable=not progress)
    pool = ThreadPoolExecutor(max_workers=concurrency)
    try:
        futures = [
            pool.submit(run_case, agent, c, toolkits, attempts.get(c.index, 0) + 1) for c in cases
        ]
        for fut in as_completed(futures):
            rec = fut.result()
            store.append_record(UNITS, rec)  # the commit point of this trajectory
            out.append(rec)
            bar.update(1)
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True)
        bar.close()
    return out


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
    toolkits = load_toolkits(config.toolkits)
    all_cases = load_cases(config.cases, toolkits)
    chosen = parse_selection(select if select is not None else config.select, len(all_cases))
    chosen = chosen[: limit or config.limit or len(chosen)]
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
    lm_factory = default_lm_factory(config.retries, config_dir)
    programs = {jc.name: build_judge(jc, lm_factory) for _, jc in judges}

    run_hash = config.trajectory_hash(fingerprint)
    store = RunStore(
        (workdir / config.output_dir / f"{config.name}-{run_hash[:10]}").resolve(), run_hash
    )
    state = store.open(config.model_dump(mode="json"))
    finish_key = stable_hash(
        {
            "cases": chosen,
            "judges": [jc.config_hash() for _, jc in judges],
            "names": [jc.name for _, jc in judges],
            "bootstrap": config.bootstrap.model_dump(),
        }
    )
    done, attempts = _committed(store.records(UNITS, CaseRecord))
    todo = [c for c in cases if c.index not in done]
    if not todo and state.get("status") == "finished" and state.get("finish_key") == finish_key:
        import json

        metrics = json.loads((store.path / "metrics.json").read_text(encoding="utf-8"))
        return ToolEmuResult(store.path, metrics, 0, 0, [], state.get("mlflow_run_id"), True)
    store.write_text("config.yaml", _yaml(config))

    # -- 1. agent + emulation ------------------------------------------------------------------
    new = _run_agents(agent, todo, toolkits, attempts, store, config.concurrency, progress)
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

    # -- 2. trajectories in ToolEmu's format -------------------------------------------------------
    store.write_text(TRAJECTORIES, toolemu_jsonl([done[c.index].trajectory or {} for c in ready]))
    by_idx = {c.index: c for c in all_cases}
    items = _items(store, by_idx, toolkits) if ready else []

    # -- 3. evaluation ---------------------------------------------------------------------------
    existing = {jc.name: store.judgments(judgments_file(jc)) for _, jc in judges}
    tasks = [
        JudgeTask(programs[jc.name], it, jc, key=judgments_file(jc))
        for _, jc in judges
        for it in items
        if it.id not in existing[jc.name]
    ]
    fresh = run_tasks(
        tasks,
        concurrency=config.concurrency,
        on_judgment=lambda t, j: store.append(j, t.key),
        progress=progress,
        desc="evaluating",
    )
    for t, j in zip(tasks, fresh, strict=True):
        existing[t.config.name].setdefault(j.item_id, j)
    _write_eval_files(store, config.evaluators, existing, items)

    # -- 4. metrics, report, MLflow ------------------------------------------------------------
    metrics = _summarize(config, cases, done, items, judges, existing, crashed)
    store.write_json("metrics.json", metrics)
    store.write_text("report.md", render_report(config, metrics))
    write_html_report(store.path)
    save_program(agent, store.path / "agent_program.json")
    run_id = None
    if config.tracking.enabled:
        run_id = log_run(
            tracking_uri=tracking_uri or config.tracking.uri or default_tracking_uri(workdir),
            experiment=config.tracking.experiment,
            run_name=config.name,
            params=_params(config, chosen, run_hash),
            metrics=flat_metrics(metrics),
            tags={
                "assay.command": "toolemu run",
                "assay.emulator_mode": config.emulator.mode,
                "assay.agent": config.agent.model,
            },
            artifacts_dir=store.path,
            artifact_root=workdir / "mlartifacts",
        )
    complete = not crashed and len(ready) == len(cases)
    store.update_state(
        status="finished" if complete else "incomplete",
        finish_key=finish_key if complete else None,
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
