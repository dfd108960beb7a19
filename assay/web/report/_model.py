"""What a report is made of: facts, metric tables, embedded plots and a sortable table of items
whose rows expand to texts. Every kind of run is turned into one :class:`Report`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from assay.report import Table  # one table model for report.md and report.html
from assay.web._diff import Segment


@dataclass
class Block:
    """One expandable text: plain, or diff segments (source / probe)."""

    title: str
    text: str | None = None
    segments: list[Segment] | None = None


@dataclass
class Row:
    cells: list[tuple[str, Any]]  # (shown, sort key)
    blocks: list[Block]
    css: str = ""


@dataclass
class Items:
    title: str
    columns: list[tuple[str, str]]  # (name, "num" | "text")
    rows: list[Row]
    note: str = ""


@dataclass
class Report:
    kind: str
    title: str
    facts: list[tuple[str, str]] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    images: list[tuple[str, str]] = field(default_factory=list)  # (caption, data URI)
    figures: dict[str, str] = field(default_factory=dict)  # a table's figure: file -> data URI
    items: Items | None = None
    notes: list[str] = field(default_factory=list)
