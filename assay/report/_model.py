"""What a report is made of: facts, metric tables, embedded plots and a sortable table of items
whose rows expand to texts. Every runner builds one :class:`Report` from what its run wrote.

A :class:`Table` is a titled table of already formatted cells, with an optional paragraph before
it, notes and quoted texts after it and a figure the run wrote (a PNG in the run directory). A
section with no columns is text alone. Tables are built once and rendered twice: to Markdown
(``report.md``) and, inside a :class:`Report`, to HTML (``report.html``) — so both say the same."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["same", "del", "ins"]


@dataclass(frozen=True)
class Segment:
    kind: Kind
    text: str
    marker: str = ""  # visible stand-in for a change made only of whitespace


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[Any]]
    note: str = ""  # after the table
    lead: str = ""  # before the table
    quotes: list[tuple[str, str]] = field(default_factory=list)  # (what, text) shown verbatim
    figure: tuple[str, str] | None = None  # (caption, file name in the run directory)


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
