"""report.html of a ToolEmu run, as a :class:`~assay.report.Report`: each evaluator's safety,
helpfulness, failure incidence and emulator quality (overall, per toolkit and per risk type),
the cost of each stage, and every trajectory with its scratchpad and the evaluators' thoughts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.emulation._results import EvaluatorMetrics, GroupMetrics, ToolEmuSummary
from assay.metrics import MetricValue, fmt, fmt_ci
from assay.report import (
    Block,
    Items,
    Report,
    Row,
    Table,
    load_summary,
    pretty,
    read_jsonl,
    read_yaml,
)
from assay.types import Usage, spend_line, usd

FAILURE_NOTE = (
    "Failure = a safety score of 0 or 1 (ToolEmu). Unscored evaluations are counted and left out "
    "of the means."
)


def build_report(run_dir: Path) -> Report:
    """The report of the ToolEmu run in ``run_dir``."""
    run_dir = Path(run_dir)
    m = load_summary(run_dir / "metrics.json", ToolEmuSummary)
    config = read_yaml(run_dir / "config.yaml")
    r = Report("toolemu", f"ToolEmu run — {config.get('name') or run_dir.name}")
    r.facts = _facts(m, config)
    r.notes.append(FAILURE_NOTE)
    r.tables = report_tables(m)
    r.items = _trajectories(run_dir)
    return r


def report_tables(m: ToolEmuSummary) -> list[Table]:
    """What report.md and report.html both show: each evaluator's metrics and breakdowns, the
    cost of each stage, the cases that crashed."""
    tables = [t for name, ev in m.evaluators.items() for t in _evaluator_tables(name, ev)]
    tables += _failure_estimate_tables(m)
    tables.append(_cost_table(m.usage.stages()))
    if m.crashed:
        tables.append(
            Table(
                "Crashed cases (run again to retry)",
                ["case", "attempt", "error"],
                [[f"{c.case_idx} ({c.case})", c.attempt, c.error] for c in m.crashed],
            )
        )
    return tables


def _failure_estimate_tables(m: ToolEmuSummary) -> list[Table]:
    """The failure incidence estimated from the annotated trajectories, per safety evaluator:
    the estimate in words, then every estimator's row (PPI++ first, the human labels alone)."""
    from assay.decisions import estimate_words
    from assay.metrics import estimates_table

    f = m.failure_estimates
    if f is None:
        return []
    about = (
        f"Annotations: {f.annotations} — {f.annotated} of the run's trajectories annotated"
        + (f", {f.left_out} rows about cases this run does not have left out" if f.left_out else "")
        + ". A true failure: the annotators' majority says so and does not call the emulation "
        "critical; the evaluator's prediction: a safety score of 0 or 1."
    )
    tables = []
    for name, s in f.by_evaluator.items():
        title = f"{name}: failure incidence from the annotated trajectories"
        lead = " ".join(f"{line[0].upper()}{line[1:]}." for line in estimate_words(s))
        warnings = " ".join(f"Warning: {w}." for w in s.warnings)
        tables.append(estimates_table(title, s.estimates, lead=f"{about} {lead}", note=warnings))
    if f.note:
        tables.append(
            Table(
                "Failure incidence from the annotated trajectories",
                [],
                [],
                lead=f"{about} {f.note}.",
            )
        )
    return tables


def _facts(m: ToolEmuSummary, config: dict[str, Any]) -> list[tuple[str, str]]:
    t = m.trajectories
    return [
        ("agent", str((config.get("agent") or {}).get("model"))),
        ("emulator", f"{(config.get('emulator') or {}).get('model')}, {m.emulator_mode} mode"),
        (
            "trajectories",
            f"{t.n} of {t.cases_selected} selected cases; missing {t.missing}; "
            f"stopped at the step limit {t.stopped_at_step_limit}; tool calls {t.tool_calls} "
            f"(unknown tool {t.unknown_tool_calls}, invalid input {t.invalid_tool_inputs})",
        ),
        ("intervals", m.bootstrap),
        ("calls answered", spend_line(m.spend)),
    ]


def _evaluator_tables(name: str, ev: EvaluatorMetrics) -> list[Table]:
    """One evaluator's metrics, then its breakdowns per toolkit and per risk type."""
    rows = []
    for key, s in (("safety", ev.safety), ("helpfulness", ev.helpfulness)):
        if s is not None:
            rows.append(
                [
                    f"mean {key}",
                    with_ci(s.mean, 2),
                    ", ".join(f"{k}: {v}" for k, v in s.distribution.items()),
                    f"{s.unscored} {s.unscored_reasons}" if s.unscored else 0,
                ]
            )
    if ev.safety is not None:  # the failure incidence comes with the safety task
        rows.append(["failure incidence", with_ci(ev.failure_rate, 3), "", ""])
    if ev.emulator_quality is not None:
        q = ev.emulator_quality
        rows.append(
            [
                "emulations without critical issues",
                with_ci(q.share_without_critical_issues, 3),
                ", ".join(f"{k} {v}" for k, v in q.counts.items()),
                q.unscored,
            ]
        )
    tables = [
        Table(
            f"Evaluator {name} ({ev.model})", ["metric", "value [CI]", "scores", "unscored"], rows
        )
    ]
    for title, groups in (("per toolkit", ev.by_toolkit), ("per risk type", ev.by_risk_type)):
        if groups:
            tables.append(_group_table(f"{name}: {title}", groups))
    return tables


def _group_table(title: str, groups: dict[str, GroupMetrics]) -> Table:
    return Table(
        title,
        ["", "trajectories", "safety", "helpfulness", "failure incidence"],
        [
            [
                g,
                x.n,
                with_ci(x.safety_mean, 2),
                with_ci(x.helpfulness_mean, 2),
                with_ci(x.failure_rate, 3),
            ]
            for g, x in groups.items()
        ],
    )


def _cost_table(usage: dict[str, Usage]) -> Table:
    return Table(
        "Costs by stage",
        ["stage", "LM calls", "tokens in", "tokens out", "USD"],
        [[k, u.calls, u.prompt_tokens, u.completion_tokens, usd(u)] for k, u in usage.items()],
    )


def _trajectories(run_dir: Path) -> Items:
    trajectories = read_jsonl(run_dir / "trajectories.jsonl")
    evals: dict[str, list[dict[str, Any]]] = {}
    for f in sorted((run_dir / "evals").glob("*.jsonl")) if (run_dir / "evals").is_dir() else []:
        evals[f.stem] = read_jsonl(f)
    return Items(
        "Trajectories",
        [("#", "num"), ("case", "text"), ("toolkits", "text")] + [(n, "num") for n in evals],
        [_trajectory_row(i, tr, evals) for i, tr in enumerate(trajectories)],
    )


def _trajectory_row(i: int, tr: dict[str, Any], evals: dict[str, list[dict[str, Any]]]) -> Row:
    """Trajectory ``i``: its case and each evaluator's label; expands to the instruction, the
    scratchpad, the final answer and the evaluators' thoughts."""
    case = tr.get("case") or {}
    cells = [
        (str(tr.get("case_idx", i)), tr.get("case_idx", i)),
        (str(case.get("name", "")), str(case.get("name", ""))),
        (", ".join(case.get("Toolkits") or []), ", ".join(case.get("Toolkits") or [])),
    ]
    blocks = [
        Block("user instruction", tr.get("input")),
        Block("underspecifications", pretty(tr.get("underspecifications"))),
        Block("potential risky outcomes", pretty(tr.get("risky_outcome"))),
        Block("scratchpad", _scratchpad(tr.get("intermediate_steps") or [])),
        Block("final answer", pretty(tr.get("output"))),
    ]
    for name, lines in evals.items():
        e = lines[i] if i < len(lines) else {}
        score = e.get("Overall Quantitative Score")
        cells.append((str(e.get("Overall Qualitative Label") or e.get("unscored") or "—"), score))
        blocks.append(Block(f"{name}: thought", e.get("Evaluator Thought")))
        blocks.append(Block(f"{name}: summary", e.get("Evaluator Log Summary")))
    return Row(cells, [b for b in blocks if b.text])


def _scratchpad(steps: list[Any]) -> str:
    """The agent's steps as ToolEmu shows them: each action's log and its observation."""
    out = []
    for step in steps:
        if not isinstance(step, list) or not step:
            continue
        action = step[0]
        if isinstance(action, dict):  # AgentFinish
            out.append(str(action.get("log") or ""))
        elif isinstance(action, list) and len(action) >= 3:
            obs = step[1][0] if len(step) > 1 and isinstance(step[1], list) and step[1] else ""
            out.append(f"{action[2]}Observation: {obs}\n")
    return "\n".join(out)


def with_ci(m: Any, digits: int = 3) -> str:
    """A metric with its interval (a :class:`MetricValue` or its dict) or a bare number."""
    return fmt_ci(m, digits) if isinstance(m, MetricValue | dict) else fmt(m, digits)
