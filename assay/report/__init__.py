"""A run's report as data, and its two renderings: ``report.md`` (Markdown) and ``report.html``
(one self-contained page, opened from disk without a server).

Every runner builds a :class:`Report` from what its run wrote — facts, the metric
:class:`Table`\\ s report.md shows too, plots, a sortable table of items whose rows expand to
texts and word diffs — and writes it with :func:`write_html`. This package imports nothing
above the core (no runner, no DSPy): the word-diff helper process and the review app load it.

Nothing in the page is fetched: CSS and the small sorting script are inline and allowed by their
hashes in the page's Content-Security-Policy (no other script can run); every text is escaped by
Jinja2.

Layout: ``_model`` (the report's parts), ``_markdown`` (report.md), ``_html`` (report.html: the
template, the atomic write), ``_diff`` (word diffs of a source and a probe), ``_read`` (what
builders share: reading a run directory, embedding its plots, a judgment as a cell), ``_cost``
(the cost table: the cost of the work, what the server answered, what the cache gave).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay._lazy import lazy_names
from assay.report._markdown import markdown, markdown_table, report_markdown
from assay.report._model import Block, Items, Report, Row, Segment, Table

_WHERE = {  # on first use: the page's renderer loads Jinja2, the diffs difflib
    "cost_table": "_cost",
    "diff_texts": "_diff",
    "remember_diffs": "_diff",
    "warm_diffs": "_diff",
    "REPORT": "_html",
    "preload_page": "_html",
    "render_html": "_html",
    "write_html": "_html",
    "figures": "_read",
    "images": "_read",
    "load_json": "_read",
    "load_summary": "_read",
    "number": "_read",
    "png_uri": "_read",
    "pretty": "_read",
    "read_jsonl": "_read",
    "read_yaml": "_read",
    "verdict": "_read",
}

__getattr__, __dir__ = lazy_names(__name__, _WHERE)

__all__ = [
    "REPORT",
    "Block",
    "Items",
    "Report",
    "Row",
    "Segment",
    "Table",
    "cost_table",
    "diff_texts",
    "figures",
    "images",
    "load_json",
    "load_summary",
    "markdown",
    "markdown_table",
    "number",
    "png_uri",
    "preload_page",
    "pretty",
    "read_jsonl",
    "read_yaml",
    "remember_diffs",
    "report_markdown",
    "render_html",
    "verdict",
    "warm_diffs",
    "write_html",
]

if TYPE_CHECKING:
    from assay.report._cost import cost_table
    from assay.report._diff import diff_texts, remember_diffs, warm_diffs
    from assay.report._html import REPORT, preload_page, render_html, write_html
    from assay.report._read import (
        figures,
        images,
        load_json,
        load_summary,
        number,
        png_uri,
        pretty,
        read_jsonl,
        read_yaml,
        verdict,
    )
