"""Writing ``report.html``: a run's :class:`Report` (built by its runner) rendered by Jinja2 with the inline CSS and script allowed by their hashes, written atomically."""

from __future__ import annotations

import base64
import functools
import hashlib
import os
from importlib import resources
from pathlib import Path

from jinja2 import Environment, PackageLoader, Template, select_autoescape

from assay.web.report._model import Report

REPORT = "report.html"


def _asset(name: str) -> str:
    return resources.files("assay.web").joinpath("static", name).read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    return (
        "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"
    )


def render_html(report: Report) -> str:
    css, js = _asset("report.css"), _asset("report.js")
    csp = (
        f"default-src 'none'; img-src data:; style-src {_sha256(css)}; script-src {_sha256(js)}; "
        "base-uri 'none'; form-action 'none'"
    )
    return _template().render(r=report, css=css, js=js, csp=csp)


@functools.cache
def _template() -> Template:
    """The page's template, compiled once per process (~30 ms: the run's sidecar does it while
    the LM calls are in flight, see :func:`preload_page`)."""
    env = Environment(
        loader=PackageLoader("assay.web", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    return env.get_template("report.html")


def preload_page() -> None:
    """Compile report.html's template ahead of the end of the run."""
    _template()


def write_report_html(report: Report, run_dir: Path) -> Path:
    """Write ``run_dir/report.html`` for ``report`` (built by the run's runner); returns its
    path. Written atomically."""
    html = render_html(report)
    out = Path(run_dir) / REPORT
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(html, encoding="utf-8")
    os.replace(tmp, out)
    return out
