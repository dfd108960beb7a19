"""What a ToolEmu run writes after its stages: the evaluator files in ToolEmu's format
(``evals/``), ``metrics.json`` (trajectory counts, each evaluator's metrics, usage by stage and
judge), the config as YAML and the params logged to MLflow."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from assay.emulation._config import EvaluatorConfig, ToolEmuRunConfig
from assay.emulation._metrics import Trajectory, evaluator_metrics
from assay.emulation._models import Case
from assay.emulation._results import CrashedCase, StageUsage, ToolEmuSummary, TrajectoryCounts
from assay.emulation._trajectory import toolemu_jsonl
from assay.metrics import fmt_level
from assay.programs import JudgeConfig
from assay.runs import RunStore
from assay.types import Item, Judgment, Usage, flatten

if TYPE_CHECKING:  # the runner's record; the runner imports this module
    from assay.emulation._run import CaseRecord

EVAL_FILE = {
    "toolemu_safety": ("eval_agent_safe", "ToolCallRisk"),
    "toolemu_helpfulness": ("eval_agent_help_ignore_safety", "Helpfulness"),
}
Judgments = dict[str, dict[str, Judgment]]  # judge name -> item id -> judgment


def verdict_record(j: Judgment | None, task: str, line: int) -> dict[str, Any]:
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


def write_eval_files(
    store: RunStore, evaluators: list[EvaluatorConfig], existing: Judgments, items: list[Item]
) -> None:
    """ToolEmu evaluator JSONL per evaluator: ``evals/<name>_eval_agent_safe.jsonl`` and
    ``evals/<name>_eval_agent_help_ignore_safety.jsonl``, line *i* for trajectory line *i*."""
    (store.path / "evals").mkdir(exist_ok=True)
    for ev in evaluators:
        for task, (suffix, _) in EVAL_FILE.items():
            if task in ev.tasks:
                by_id = existing[ev.judge_config(task).name]
                lines = [verdict_record(by_id.get(it.id), task, i) for i, it in enumerate(items)]
                store.write_text(f"evals/{ev.name}_{suffix}.jsonl", toolemu_jsonl(lines))


def summarize(
    config: ToolEmuRunConfig,
    cases: list[Case],
    done: dict[int, CaseRecord],
    items: list[Item],
    judges: list[tuple[EvaluatorConfig, JudgeConfig]],
    existing: Judgments,
    crashed: list[CrashedCase],
) -> ToolEmuSummary:
    """``metrics.json``: the trajectories of the selected cases, each evaluator's metrics with
    bootstrap CIs, and the usage of the agent, the emulator and every judge."""
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
    evaluators = {
        ev.name: evaluator_metrics(
            ev.model,
            trajectories,
            {t: existing[ev.judge_config(t).name] for t in ev.tasks},
            n_resamples=b.n_resamples,
            confidence=b.confidence,
            seed=b.seed,
        )
        for ev in config.evaluators
    }
    usage_by_judge = {
        jc.name: Usage.total(j.usage for j in existing[jc.name].values()) for _, jc in judges
    }
    selected = [done[c.index] for c in cases if c.index in done]
    return ToolEmuSummary(
        trajectories=_trajectory_counts(cases, trajectories, selected, crashed),
        crashed=crashed,
        emulator_mode=config.emulator.mode,
        evaluators=evaluators,
        usage=_stage_usage(selected, usage_by_judge),
        usage_by_judge=usage_by_judge,
        bootstrap=f"{b.n_resamples} percentile resamples over trajectories, seed {b.seed}, "
        f"{fmt_level(b.confidence)} intervals",
        trajectory_ids=[t.item_id for t in trajectories],
    )


def crashed_cases(new: list[CaseRecord]) -> list[CrashedCase]:
    """The cases whose agent run failed this time, with the first line of the error."""
    return [
        CrashedCase(
            case_idx=r.case_idx,
            case=r.case_name,
            attempt=r.attempt,
            error=(r.error or "").split("\n")[0],
        )
        for r in new
        if r.status == "error"
    ]


def stored_summary(store: RunStore) -> ToolEmuSummary | None:
    """The summary a run wrote before; None when there is none, or one this version cannot
    read (an older assay wrote it): the run then summarizes again, with no LM call."""
    data = store.read_json("metrics.json")
    try:
        return ToolEmuSummary.model_validate(data) if data is not None else None
    except ValidationError:
        return None


def _trajectory_counts(
    cases: list[Case],
    trajectories: list[Trajectory],
    selected: list[CaseRecord],
    crashed: list[CrashedCase],
) -> TrajectoryCounts:
    """How many trajectories there are, how they stopped and what their tool calls met."""
    steps = [s for r in selected for s in r.steps]
    kinds = [(s.emulator or {}).get("kind") for s in steps if s.kind == "tool"]
    return TrajectoryCounts(
        cases_selected=len(cases),
        n=len(trajectories),
        crashed_this_run=len(crashed),
        missing=len(cases) - len(trajectories),
        stopped_at_step_limit=sum(t.stopped == "step_limit" for t in trajectories),
        mean_tool_calls=(sum(t.n_steps for t in trajectories) / len(trajectories))
        if trajectories
        else 0.0,
        tool_calls=len(kinds),
        unknown_tool_calls=kinds.count("unknown_tool"),
        invalid_tool_inputs=kinds.count("invalid_input"),
        invalid_agent_outputs=sum(s.kind == "invalid_output" for s in steps),
        observations_with_issues=sum(
            bool((s.emulator or {}).get("issues")) for s in steps if s.kind == "tool"
        ),
    )


def _stage_usage(selected: list[CaseRecord], usage_by_judge: dict[str, Usage]) -> StageUsage:
    """Usage by stage: the agent, the emulator, the evaluators (every judge) and the total."""
    agent_u = Usage.total(r.usage.get("agent", Usage()) for r in selected)
    emu_u = Usage.total(r.usage.get("emulator", Usage()) for r in selected)
    eval_u = Usage.total(usage_by_judge.values())
    return StageUsage(
        agent=agent_u, emulator=emu_u, evaluators=eval_u, total=agent_u + emu_u + eval_u
    )


def config_yaml(config: ToolEmuRunConfig) -> str:
    import yaml

    return yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False, allow_unicode=True)


def params(config: ToolEmuRunConfig, chosen: list[int], run_hash: str) -> dict[str, str]:
    """The params logged to MLflow: the flattened config, the selected cases, the run hash."""
    out = flatten(config.model_dump(mode="json"))
    out["cases.selected"] = ",".join(map(str, chosen))
    out["run_hash"] = run_hash
    return out
