"""A comparison as Markdown."""

from __future__ import annotations

from typing import Any

from assay.comparison._results import Comparison
from assay.comparison._tables import level_text
from assay.metrics import direction, fmt


def group_line(result: dict[str, Any]) -> str:
    """What the compared runs were measured on, as the leaderboard's header says it: "the same
    40 items" only where every run's figure is over them all, else that they were given the
    same items and the figure's n is each run's own."""
    g = result["group"]
    if not g:
        return "forced across item sets/scales: not comparable, n per row"
    if result.get("same_items", True):
        items = f"the same {g.get('measured_on')} (items `{g.get('items')}`)"
    else:
        items = (
            f"given the same {g.get('measured_on')} (items `{g.get('items')}`), "
            f"{result['metric']} not over the same ones: n per row"
        )
    probes = f" · probes `{g['probes']}`" if g.get("probes") else ""
    return f"{items} · scale {g.get('scale')}{probes}"


def ci_heading(result: dict[str, Any]) -> str:
    """The heading of the interval column: its level where every row shares one, else each
    row shows its own."""
    level = result.get("ci_level")
    return f"[{level_text(level)} CI]" if level is not None else "[CI, level]"


def row_ci(row: dict[str, Any], result: dict[str, Any]) -> str:
    """A row's interval, with its level where the rows do not share one."""
    if row["ci_low"] is None:
        return ""
    level = "" if result.get("ci_level") is not None else f" {level_text(row.get('ci_level'))}"
    return f" [{fmt(row['ci_low'])}, {fmt(row['ci_high'])}]{level}"


def render_markdown(comparison: Comparison) -> str:
    """The comparison as Markdown: leaderboard, differences, runs left out, where files went."""
    result = comparison.model_dump()
    metric = result["metric"]
    g = result["group"]
    where = group_line(result)
    lines = [
        f"## Leaderboard — {metric} ({direction(metric)})",
        "",
        f"{len(result['leaderboard'])} judge runs · {where}",
        "",
        *[f"Note: {n}." for n in result["notes"]],
        *([""] if result["notes"] else []),
        f"| # | run | n |{'' if g else ' items · scale |'} model | {metric} {ci_heading(result)} "
        "| accuracy "
        "| cost USD | USD per accuracy point | Pareto | program | adapter | temp. | rubric "
        "| optimized | config | run id |",
        "|---" * (16 if g else 17) + "|",
    ]
    for r in result["leaderboard"]:
        ci = row_ci(r, result)
        data = "" if g else f" {r['measured_on']} `{r['items']}` · {r['scale']} |"
        worst = f" ({r['worst_of']})" if r["worst_of"] else ""
        n = "—" if r["n"] is None else r["n"]
        lines.append(
            f"| {r['rank']} | {r['name']} | {n} |{data} `{r['model']}` "
            f"| {fmt(r['value'])}{ci}{worst} "
            f"| {fmt(r['accuracy'])} | {fmt(r['cost_usd'], 6)} "
            f"| {fmt(r['cost_per_accuracy_point_usd'], 6)} "
            f"| {'yes' if r['pareto'] else ('—' if r['pareto'] is None else 'no')} "
            f"| {r['program']} | {r['adapter']} | {r['temperature']} | {r['rubric'] or '—'} "
            f"| {'yes' if r['optimized'] else 'no'} | {r['config_hash']} | `{r['run_id']}` |"
        )
    d = result["differences"]
    lines += ["", "## Config differences", ""]
    if d["rows"]:
        lines += [
            "| judge param | " + " | ".join(d["columns"]) + " |",
            "|---" * (len(d["columns"]) + 1) + "|",
        ]
        lines += [f"| {k} | " + " | ".join(v) + " |" for k, v in d["rows"].items()]
    else:
        lines.append("The compared runs share every judge param.")
    lines += ["", "## Left out", ""]
    lines += [f"- `{x['run_id']}` {x['name']}: {x['reason']}" for x in result["left_out"]] or [
        "none"
    ]
    if result["plots"]:
        lines += ["", "Plots: " + ", ".join(str(p) for p in result["plots"].values())]
    if result["comparison_run_id"]:
        lines.append(f"MLflow comparison run: {result['comparison_run_id']}")
    return "\n".join(lines) + "\n"
