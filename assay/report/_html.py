"""Writing ``report.html``: a :class:`Report` rendered by Jinja2 with the inline CSS and script
allowed by their hashes, written atomically."""

from __future__ import annotations

import base64
import functools
import hashlib
import os
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

from jinja2 import Environment, PackageLoader, Template, select_autoescape

from assay.report._model import Report

REPORT = "report.html"


def _asset(name: str) -> str:
    return resources.files("assay.report").joinpath("static", name).read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    return (
        "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"
    )


def render_html(report: Report) -> str:
    return "".join(_pieces(report))


def _pieces(report: Report) -> Iterator[str]:
    """The page, piece by piece as the template makes it (its rows one at a time)."""
    css, js = _asset("report.css"), _asset("report.js")
    csp = (
        f"default-src 'none'; img-src data:; style-src {_sha256(css)}; script-src {_sha256(js)}; "
        "base-uri 'none'; form-action 'none'"
    )
    return _template().generate(r=report, css=css, js=js, csp=csp)


@functools.cache
def _template() -> Template:
    """The page's template, compiled once per process (~30 ms: the run's sidecar does it while
    the LM calls are in flight, see :func:`preload_page`)."""
    env = Environment(
        loader=PackageLoader("assay.report", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    return env.get_template("report.html")


def preload_page() -> None:
    """Compile report.html's template ahead of the end of the run."""
    _template()


def write_html(report: Report, run_dir: Path) -> Path:
    """Write ``report`` as ``run_dir/report.html`` (atomically), as the template makes it: the
    page is never one string in memory; returns its path. A page that fails half-way leaves
    the one before, and no temporary file."""
    out = Path(run_dir) / REPORT
    tmp = out.with_name(out.name + ".tmp")
    try:
        with tmp.open("w", encoding="utf-8") as f:
            f.writelines(_pieces(report))
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return out
