"""``report.html``: one self-contained page per finished run, opened from disk without a server.

It reads what the run wrote — evaluate runs (``metrics.json``, ``judgments.jsonl``), harness
runs (``metrics.json``, ``probes.jsonl``, ``judgments/*.jsonl``), ToolEmu runs
(``metrics.json``, ``trajectories.jsonl``, ``evals/``) and comparisons (``comparison.json``) —
and writes the metric tables with their intervals, the confusion matrix, the plots (PNG
embedded as ``data:`` URIs) and a sortable table of items whose rows expand to the texts and
the judges' reasoning.

Nothing is fetched: CSS and the small sorting script are inline and allowed by their hashes in
the page's Content-Security-Policy (no other script can run); every text is escaped by Jinja2.

Layout: ``_model`` (the :class:`Report` every run kind is turned into), ``_read`` (reading the
run directory, formatting values), one module per run kind (``_evaluate``, ``_harness``,
``_toolemu``, ``_compare``), ``_render`` (HTML, the atomic write; which runner's report a directory gets is read from its ``run.json`` by :func:`assay.experiments.runs.write_html`).
"""

from assay.web.report._compare import compare_report
from assay.web.report._evaluate import evaluate_report
from assay.web.report._harness import harness_report
from assay.web.report._model import Block, Items, Report, Row, Table
from assay.web.report._render import (
    REPORT,
    preload_page,
    render_html,
    write_report_html,
)
from assay.web.report._toolemu import toolemu_report

__all__ = [
    "REPORT",
    "Block",
    "Items",
    "Report",
    "Row",
    "Table",
    "compare_report",
    "evaluate_report",
    "harness_report",
    "preload_page",
    "render_html",
    "toolemu_report",
    "write_report_html",
]
