"""The harness's report: its tables built once from the summary (``_report``: per judge and
test; ``_bias_report``: the bias probes and the samples-needed curve, through the scoring kinds'
sections), rendered to ``report.md`` and, with the probes (each test's first ones: ``_shown``), to
``report.html`` (``_html_report``),
and the plots. Names load on first use, so the report lane of a run imports only what it draws."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay._lazy import lazy_names

_WHERE = {
    "headline": "_bias_report",
    "bias_tables": "_bias_report",
    "samples_plot": "_bias_report",
    "build_report": "_html_report",
    "PROBE_ROWS": "_shown",
    "keeper": "_shown",
    "rows_per_test": "_shown",
    "shown": "_shown",
    "ci": "_report",
    "generation_models": "_report",
    "heatmap": "_report",
    "other_metrics": "_report",
    "pass_rates": "_report",
    "preload_plotting": "_report",
    "report_tables": "_report",
    "write_report": "_report",
    "write_reports": "_report",
}
__all__ = [
    "PROBE_ROWS",
    "bias_tables",
    "build_report",
    "ci",
    "generation_models",
    "headline",
    "heatmap",
    "keeper",
    "other_metrics",
    "pass_rates",
    "preload_plotting",
    "report_tables",
    "rows_per_test",
    "samples_plot",
    "shown",
    "write_report",
    "write_reports",
]
__getattr__, __dir__ = lazy_names(__name__, _WHERE)

if TYPE_CHECKING:  # for type checkers and editors: the same names, imported eagerly
    from assay.reliability.report._bias_report import (
        bias_tables,
        headline,
        samples_plot,
    )
    from assay.reliability.report._html_report import build_report
    from assay.reliability.report._report import (
        ci,
        generation_models,
        heatmap,
        other_metrics,
        pass_rates,
        preload_plotting,
        report_tables,
        write_report,
        write_reports,
    )
    from assay.reliability.report._shown import PROBE_ROWS, keeper, rows_per_test, shown
