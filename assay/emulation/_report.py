"""``report.md`` of a ToolEmu run (its tables those of report.html: headline numbers with CIs,
breakdowns, emulation, costs, crashed cases) and the console's summary of a run."""

from __future__ import annotations

from typing import Any

from assay.emulation._config import ToolEmuRunConfig
from assay.emulation._html_report import FAILURE_NOTE, report_tables
from assay.emulation._results import ToolEmuResult, ToolEmuSummary
from assay.metrics import fmt_ci
from assay.report import markdown
from assay.types import spend_line, usd


def render_report(config: Any, m: ToolEmuSummary) -> str:
    t = m.trajectories
    lines = [
        f"# ToolEmu run `{config.name}`",
        "",
        f"- agent: `{config.agent.model}` (at most {config.agent.max_steps} steps)",
        f"- emulator: `{config.emulator.model}`, {config.emulator.mode} mode"
        + (", with self-critique" if config.emulator.critique else ""),
        f"- evaluators: {', '.join(f'`{e.name}` ({e.model})' for e in config.evaluators)}",
        f"- trajectories: {t.n} of {t.cases_selected} selected cases"
        + (f" — **{t.missing} missing (crashed; re-run to retry)**" if t.missing else ""),
        f"- stopped at the step limit: {t.stopped_at_step_limit}; tool calls {t.tool_calls} "
        f"(unknown tool {t.unknown_tool_calls}, invalid input {t.invalid_tool_inputs}, "
        f"observations failing the spec checks {t.observations_with_issues}); "
        f"unreadable agent outputs {t.invalid_agent_outputs}",
        f"- intervals: {m.bootstrap}",
        "",
        FAILURE_NOTE,
        "",
    ]
    lines += markdown(report_tables(m))
    lines += [f"All calls of the run: {spend_line(m.spend)}."]
    return "\n".join(lines) + "\n"


def render_run_summary(config: ToolEmuRunConfig, res: ToolEmuResult) -> str:
    """What ``assay toolemu run`` prints: trajectories, each evaluator's headline numbers with
    CIs, LM calls and cost by stage, crashed cases and where the report is."""
    m = res.summary
    t = m.trajectories
    state = (
        "re-read (finished before; no LM call)"
        if res.reread
        else f"{res.new_trajectories} new trajectories, {res.new_judgments} new judgments"
    )
    lines = [
        f"\n{config.name}: {state}",
        f"trajectories {t.n}/{t.cases_selected} · step limit {t.stopped_at_step_limit} · "
        f"tool calls {t.tool_calls} (unknown tool {t.unknown_tool_calls}, invalid input "
        f"{t.invalid_tool_inputs})",
    ]
    for name, ev in m.evaluators.items():
        parts = []
        for key, s in (("safety", ev.safety), ("helpfulness", ev.helpfulness)):
            if s is not None and s.mean:
                parts.append(f"{key} {fmt_ci(s.mean, 2)}")
        if ev.failure_rate:
            parts.append(f"failure rate {fmt_ci(ev.failure_rate, 3, percent=True)}")
        estimate = m.failure_estimates.by_evaluator.get(name) if m.failure_estimates else None
        if estimate is not None and estimate.best is not None:
            e = estimate.best
            parts.append(
                f"failure incidence ({e.name}, {estimate.n_labelled} annotated) "
                f"{fmt_ci(e.metric_value(), 3, percent=True)}"
            )
        lines.append(f"evaluator {name}: " + (" · ".join(parts) or "nothing scored"))
    u = m.usage.stages()
    lines.append("LM calls: " + " · ".join(f"{k} {v.calls} ({usd(v, '$')})" for k, v in u.items()))
    lines.append(spend_line(m.spend))
    for c in res.crashed:
        lines.append(f"crashed: case {c.case_idx} ({c.case}): {c.error} — re-run to retry")
    lines.append(f"report: {res.run_dir / 'report.md'}")
    if "local" in {config.agent.model, config.emulator.model}:
        lines.append(
            "note: the embedded model is a poor agent and emulator; the pipeline is what is shown."
        )
    return "\n".join(lines)
