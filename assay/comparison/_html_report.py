"""report.html of a comparison (``comparison.json``): the plots, how the judges' configs differ,
the runs left out, and the leaderboard whose rows expand to the run and its differing params."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from assay.comparison._report import ci_heading, group_line, row_ci
from assay.metrics import fmt
from assay.report import Block, Items, Report, Row, Table, images, load_json, number

PLOTS = (
    ("Cost vs metric (Pareto front)", "pareto.png"),
    ("Pass rate per test and judge", "heatmap.png"),
)


def build_report(run_dir: Path) -> Report:
    """The report of the comparison in ``run_dir``."""
    run_dir = Path(run_dir)
    c = load_json(run_dir / "comparison.json")
    metric = c.get("metric")
    r = Report("compare", f"assay compare — {metric}")
    r.facts = _facts(c)
    r.images += images(run_dir, PLOTS)
    d = c.get("differences") or {}
    if d.get("rows"):
        r.tables.append(
            Table(
                "Config differences",
                ["judge param", *d.get("columns", [])],
                [[k, *v] for k, v in d["rows"].items()],
            )
        )
    if c.get("left_out"):
        r.tables.append(
            Table(
                "Left out",
                ["run", "name", "reason"],
                [[x.get("run_id"), x.get("name"), x.get("reason")] for x in c["left_out"]],
            )
        )
    r.items = Items(
        "Leaderboard",
        [
            ("#", "num"),
            ("run", "text"),
            ("n", "num"),
            ("model", "text"),
            (f"{metric} {ci_heading(c)}", "num"),
            ("accuracy", "num"),
            ("USD", "num"),
            ("USD per accuracy point", "num"),
            ("Pareto", "text"),
        ],
        [_leaderboard_row(row, d, c) for row in c.get("leaderboard") or []],
    )
    return r


def _facts(c: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        ("runs compared", str(len(c.get("leaderboard") or []))),
        ("group", group_line(c).replace("`", "")),
        ("tracking", str(c.get("tracking_uri"))),
        *(("note", n) for n in c.get("notes") or []),
    ]


def _leaderboard_row(row: dict[str, Any], d: dict[str, Any], c: dict[str, Any]) -> Row:
    """One ranked run: its metric with the interval (and its level, where the rows' differ),
    accuracy, cost and place on the Pareto front; expands to the run's record and its params
    that differ from the others'."""
    columns = d.get("columns") or []
    ci = row_ci({"ci_low": None, "ci_high": None, **row}, c)
    params = "\n".join(
        f"{k}: {v[columns.index(row.get('name'))] if row.get('name') in columns else ''}"
        for k, v in (d.get("rows") or {}).items()
    )
    worst = f" ({row['worst_of']})" if row.get("worst_of") else ""
    pareto = "yes" if row.get("pareto") else ("—" if row.get("pareto") is None else "no")
    return Row(
        [
            (str(row.get("rank")), row.get("rank")),
            (str(row.get("name")), str(row.get("name"))),
            ("—" if row.get("n") is None else str(row["n"]), number(row.get("n"))),
            (str(row.get("model")), str(row.get("model"))),
            (f"{fmt(row.get('value'))}{ci}{worst}", number(row.get("value"))),
            (fmt(row.get("accuracy")), number(row.get("accuracy"))),
            (fmt(row.get("cost_usd"), 6), number(row.get("cost_usd"))),
            (
                fmt(row.get("cost_per_accuracy_point_usd"), 6),
                number(row.get("cost_per_accuracy_point_usd")),
            ),
            (pareto, str(row.get("pareto"))),
        ],
        [
            Block("run", json.dumps(row, indent=2, ensure_ascii=False, default=str)),
            Block("differing params", params or None),
        ],
    )
