"""A report's sections as data, built once and rendered twice: to Markdown here (``report.md``)
and to HTML by :mod:`assay.web` (``report.html``) — so that both say the same.

A :class:`Table` is a titled table of already formatted cells, with an optional paragraph before
it, notes and quoted texts after it and a figure the run wrote (a PNG in the run directory). A
section with no columns is text alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[Any]]
    note: str = ""  # after the table
    lead: str = ""  # before the table
    quotes: list[tuple[str, str]] = field(default_factory=list)  # (what, text) shown verbatim
    figure: tuple[str, str] | None = None  # (caption, file name in the run directory)


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
