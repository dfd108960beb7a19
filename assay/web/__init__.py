"""The browser side of assay: ``assay review serve`` (review probes in a browser) and
``report.html`` (one self-contained page per run, opened without a server)."""

from pathlib import Path
from typing import Any

from assay.web._diff import warm_diffs
from assay.web.report import preload_page, write_report_html


def serve(run_dir: Path, **options: Any) -> None:
    """``assay review serve``: the review app on a run directory (see :mod:`assay.web._serve`);
    the ASGI stack is imported only when a server is started."""
    from assay.web._serve import serve as _serve

    _serve(run_dir, **options)


__all__ = ["preload_page", "serve", "warm_diffs", "write_report_html"]
