"""The browser side of assay: ``assay review serve`` (review a harness run's probes, or the
items a ``selective apply`` run abstained on, in a browser). ``report.html`` is rendered by
:mod:`assay.report`; this package reads a run through its runner's public read side
(``ReviewRun``, ``AbstentionQueue``), imported only when a server starts."""

from pathlib import Path
from typing import Any


def serve(run_dir: Path, **options: Any) -> None:
    """``assay review serve``: the review app on a run directory (see :mod:`assay.web._serve`);
    the ASGI stack is imported only when a server is started."""
    from assay.web._serve import serve as _serve

    _serve(run_dir, **options)


__all__ = ["serve"]
