"""``report.md``: a report's :class:`~assay.report.Table` sections rendered to Markdown (the
same tables ``report.html`` shows)."""

from __future__ import annotations

from typing import Any

from assay.report._model import Report, Table


def _cell(v: Any) -> str:
    return " ".join(str(v).split()).replace("|", "\\|")


def markdown_table(t: Table) -> list[str]:
    """The Markdown lines of ``t``'s table alone (header, rule, rows)."""
    return [
        "| " + " | ".join(_cell(c) for c in t.columns) + " |",
        "|" + "---|" * len(t.columns),
        *("| " + " | ".join(_cell(c) for c in row) + " |" for row in t.rows),
    ]


def markdown(tables: list[Table], level: int = 2) -> list[str]:
    """The Markdown lines of ``tables``, each under a heading of ``level``."""
    out: list[str] = []
    for t in tables:
        out += [f"{'#' * level} {t.title}", ""]
        if t.lead:
            out += [t.lead, ""]
        if t.columns:
            out += [*markdown_table(t), ""]
        if t.note:
            out += [t.note, ""]
        for what, text in t.quotes:
            out += [f"{what}:", "", "> " + text.replace("\n", "\n> "), ""]
        if t.figure:
            out += [f"![{t.figure[0]}]({t.figure[1]})", ""]
    return out


def report_markdown(report: Report) -> str:
    """``report.md`` of a report: its facts, its notes, its tables and its list of items (the
    items' cells, without their texts)."""
    lines = [f"# {report.title}", ""]
    lines += [f"- {k}: {v}" for k, v in report.facts] + [""]
    lines += [*report.notes, ""]
    lines += markdown(report.tables)
    if report.items is not None:
        lines += [f"## {report.items.title}", ""]
        columns = [c for c, _ in report.items.columns]
        rows = [[cell for cell, _ in row.cells] for row in report.items.rows]
        lines += markdown_table(Table(report.items.title, columns, rows))
    return "\n".join(lines).rstrip() + "\n"
