"""The browser side of assay: ``assay review serve`` (review probes in a browser) and
``report.html`` (one self-contained page per run, opened without a server)."""

from assay.web._report import write_html_report
from assay.web._serve import serve

__all__ = ["serve", "write_html_report"]
