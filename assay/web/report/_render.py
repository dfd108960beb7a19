"""Writing ``report.html``: which kind of run a directory holds, its :class:`Report` rendered by
Jinja2 with the inline CSS and script allowed by their hashes, written atomically."""

from __future__ import annotations

import base64
import functools
import hashlib
import os
from importlib import resources
from pathlib import Path

from jinja2 import Environment, PackageLoader, Template, select_autoescape

from assay.errors import RunError
from assay.types import Item
from assay.web.report._compare import compare_report
from assay.web.report._evaluate import evaluate_report
from assay.web.report._harness import harness_report
from assay.web.report._model import Report
from assay.web.report._toolemu import toolemu_report

REPORT = "report.html"


def detect_kind(run_dir: Path) -> str:
    if (run_dir / "comparison.json").is_file():
        return "compare"
    if (run_dir / "metrics.json").is_file():
        if (run_dir / "trajectories.jsonl").is_file():
            return "toolemu"
        if (run_dir / "probes.jsonl").is_file():
            return "harness"
        if (run_dir / "judgments.jsonl").is_file():
            return "evaluate"
    raise RunError(
        f"{run_dir}: not a finished run (no comparison.json, or metrics.json with judgments.jsonl, "
        "probes.jsonl or trajectories.jsonl)"
    )


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


def write_html_report(run_dir: Path, *, items: list[Item] | None = None) -> Path:
    """Write ``run_dir/report.html`` for a finished run of any kind; returns its path.

    ``items`` (evaluate runs) gives the item texts; without it they are read back from the
    run's data set when that is a local file. Written atomically.
    """
    run_dir = Path(run_dir)
    kind = detect_kind(run_dir)
    report = {
        "evaluate": lambda: evaluate_report(run_dir, items),
        "harness": lambda: harness_report(run_dir),
        "toolemu": lambda: toolemu_report(run_dir),
        "compare": lambda: compare_report(run_dir),
    }[kind]()
    html = render_html(report)
    out = run_dir / REPORT
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(html, encoding="utf-8")
    os.replace(tmp, out)
    return out
