"""report.html for each kind of run: self-contained (no external reference, inline assets
allowed only by their hashes), escaped, with the metrics, plots and expandable items."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
from html import unescape
from pathlib import Path

import pytest
import scipy.stats

from assay.api import write_html_report
from assay.emulation import run_toolemu
from assay.errors import RunError
from assay.evaluation import evaluate
from assay.inputs import load_config
from tests.emulation.conftest import roles, sandbox_files  # noqa: F401  (fixtures)
from tests.web.conftest import XSS

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "evaluate"


def _sha(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def check_self_contained(html: str) -> None:
    """No reference leaves the file; the inline style and script are the ones the CSP allows."""
    assert not re.search(r"""(src|href|action)\s*=\s*["']?(https?:|//)""", html, re.I)
    assert "@import" not in html and "url(" not in html
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1)
    csp = unescape(csp)
    assert "default-src 'none'" in csp and "unsafe-inline" not in csp
    (style,) = re.findall(r"<style>(.*?)</style>", html, re.S)
    (script,) = re.findall(r"<script>(.*?)</script>", html, re.S)
    assert f"'sha256-{_sha(style)}'" in csp and f"'sha256-{_sha(script)}'" in csp
    assert len(re.findall(r"<script", html)) == 1


def test_harness_report_is_written_by_the_run(harness_run: Path):
    html = (harness_run / "report.html").read_text()  # the harness runner wrote it
    check_self_contained(html)
    probes = (harness_run / "probes.jsonl").read_text().splitlines()
    assert html.count('<details class="row') == len(probes) == 16
    assert html.count('src="data:image/png;base64,') == 2  # heatmap and cost vs accuracy
    assert "pass rate [CI]" in html and "consistency with own source verdict" in html
    assert "lenient on probe" in html and "clean on probe" in html
    assert "<script>alert" not in html and "<img src=x" not in html and "<svg" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "My reasoning: &lt;script&gt;" in html  # the judge's reasoning, escaped


def test_a_harness_report_lists_each_tests_first_probes_and_says_so(
    harness_run: Path, tmp_path: Path, monkeypatch
):
    """Past ``PROBE_ROWS`` probes the page lists each test's first share of them, in the order
    of probes.jsonl, and a note says how many of how many; the page written piece by piece is
    the page rendered whole."""
    import assay.reliability.report._shown as shown
    from assay.reliability.report import build_report
    from assay.report import render_html, write_html

    tests = json.loads((harness_run / "metrics.json").read_text())["probes"]
    probes = [json.loads(x) for x in (harness_run / "probes.jsonl").read_text().splitlines()]
    monkeypatch.setattr(shown, "PROBE_ROWS", 2 * len(tests))  # two a test
    expected = [
        p["id"] for t in tests for p in [q for q in probes if q["test"] == t][:2]
    ]  # each test's first two, read independently of the report's code
    report = build_report(harness_run)
    listed = [row.cells[0][0] for row in report.items.rows]
    assert sorted(listed) == sorted(expected) and len(listed) < len(probes)
    assert listed == [p["id"] for p in probes if p["id"] in set(expected)]  # the file's order
    note = f"Each test's first 2 probes: {len(expected)} of {len(probes)}; every one is in"
    assert note in report.items.note
    page = write_html(report, tmp_path)
    html = page.read_text(encoding="utf-8")
    assert html == render_html(report)
    assert html.count('<details class="row') == len(expected) and note in unescape(html)


def test_the_reports_views_of_some_probes_are_the_review_apps_views_of_them(
    harness_run: Path, tmp_path: Path
):
    """What the report reads of the probes it lists (line by line, those alone) equals what the
    review app reads of the whole run, narrowed to them — with decisions recorded: an edited
    probe and a rejected one."""
    from assay.reliability import judged_id
    from assay.reliability.report import keeper, shown
    from assay.reliability.review import ReviewRun, record_decision, run_scale

    run_dir = tmp_path / "run"
    shutil.copytree(harness_run, run_dir)
    probes = [json.loads(x) for x in (run_dir / "probes.jsonl").read_text().splitlines()]
    scale = run_scale(run_dir)
    for entry in (
        {"probe_id": probes[0]["id"], "decision": "edit", "edited_text": "An edited text."},
        {"probe_id": probes[5]["id"], "decision": "reject", "note": "off"},
    ):
        record_decision(run_dir, {"reviewer": "ana", **entry}, scale)
    every = ReviewRun(run_dir).views()
    assert every[0].probe.review.status == "edited" and every[5].probe.review.status == "rejected"
    # a judgment of the edited text, stored under the edited probe's own id
    judgments = sorted((run_dir / "judgments").glob("*.jsonl"))[0]
    record = json.loads(judgments.read_text().splitlines()[0])
    record["item_id"] = judged_id(every[0].probe)
    with judgments.open("a") as f:
        f.write(json.dumps(record) + "\n")
    every = ReviewRun(run_dir).views()
    assert any(v.probe is not None and not v.on_generated for v in every[0].verdicts)
    for tests in (1000, 500, 10):  # 1, 2 and 100 probes a test (1,000 rows ÷ tests)
        some, total = ReviewRun(run_dir, read_now=False).some_views(keeper(lambda p: p.test, tests))
        assert total == len(every) == len(probes)
        assert some == shown(every, lambda v: v.probe.test, tests)
        assert some[0] == every[0] and some[0].probe.response == "An edited text."
    assert len(some) == len(every)  # 100 a test: all of them


def test_a_page_that_fails_half_way_leaves_the_one_before_and_no_temporary_file(
    harness_run: Path, tmp_path: Path
):
    from assay.reliability.report import build_report
    from assay.report import write_html

    report = build_report(harness_run)
    before = write_html(report, tmp_path).read_text(encoding="utf-8")

    class Broken:  # a row's cell that cannot be rendered, past the page's first pieces
        def __str__(self) -> str:
            raise RuntimeError("cannot render")

    report.items.rows[-1].cells[0] = (Broken(), "x")
    with pytest.raises(RuntimeError, match="cannot render"):
        write_html(report, tmp_path)
    assert (tmp_path / "report.html").read_text(encoding="utf-8") == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_evaluate_report_has_metrics_confusion_matrix_and_item_texts(tmp_path: Path):
    shutil.copytree(FIXTURE, tmp_path / "cfg")
    config, base = load_config(tmp_path / "cfg" / "config.yaml")
    res = evaluate(config, workdir=tmp_path, config_dir=base, progress=False)
    html = (res.run_dir / "report.html").read_text()
    check_self_contained(html)
    assert "Confusion matrix" in html and "kappa_categorical" in html
    assert html.count('<details class="row') == 12
    assert "GOOD answer about sunlight and water." in html  # the item texts
    assert "Question number 3: how do plants grow?" in html
    # written again from the directory alone, the texts come back from the data set
    (res.run_dir / "report.html").unlink()
    write_html_report(res.run_dir)
    assert "Question number 3" in (res.run_dir / "report.html").read_text()


def test_a_report_is_not_redrawn_from_a_judgment_edited_since_the_seal(tmp_path: Path):
    """An evaluate run whose judgments.jsonl was edited once it finished is refused in the one
    line certify refuses it with, and its report.html is left as the run drew it: redrawn, its
    item table would show the edited verdict under the headline the run sealed."""
    shutil.copytree(FIXTURE, tmp_path / "cfg")
    config, base = load_config(tmp_path / "cfg" / "config.yaml")
    res = evaluate(config, workdir=tmp_path, config_dir=base, progress=False)
    drawn = (res.run_dir / "report.html").read_text()
    assert write_html_report(res.run_dir).read_text() == drawn  # untouched: redrawn the same
    path = res.run_dir / "judgments.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines[0]["score"] = 1 - lines[0]["score"]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(RunError) as refused:
        write_html_report(res.run_dir)
    assert str(refused.value).startswith(f"{res.run_dir}: judgments.jsonl is not the file the run")
    assert "\n" not in str(refused.value)
    assert (res.run_dir / "report.html").read_text() == drawn


def test_toolemu_report_has_evaluators_and_trajectories(tmp_path, sandbox_files, roles):  # noqa: F811
    res = run_toolemu(roles.config(*sandbox_files), workdir=tmp_path, progress=False)
    html = (res.run_dir / "report.html").read_text()
    check_self_contained(html)
    assert "Evaluator ev" in html and "failure incidence" in html
    # the failure rate of metrics.json (safety 0 or 1), overall and per toolkit / risk type:
    # 0 of 3 trajectories, with its exact interval (not [0, 0])
    high = scipy.stats.binomtest(0, 3).proportion_ci(0.95, method="exact").high
    assert f"<td>failure incidence</td><td>0.000 [0.000, {high:.3f}]</td>" in html
    assert (
        "<td>Notes</td><td>3</td><td>2.00 [2.00, 2.00]</td><td>2.00 [2.00, 2.00]</td><td>0.000"
        in html
    )
    assert html.count('<details class="row') == 3
    assert "safety thought" in html and "Possible Mild Risk (2)" in html
    assert "Costs by stage" in html


def test_compare_report_from_comparison_json(tmp_path: Path, harness_run: Path):
    shutil.copy(harness_run / "heatmap.png", tmp_path / "pareto.png")
    row = {
        "rank": 1,
        "run_id": "abc",
        "name": "judge-<b>a</b>",
        "model": "m",
        "value": 0.5,
        "ci_low": 0.4,
        "ci_high": 0.6,
        "accuracy": 0.5,
        "cost_usd": 0.01,
        "cost_per_accuracy_point_usd": 0.0002,
        "pareto": True,
    }
    comparison = {
        "tracking_uri": "sqlite:///x.db",
        "metric": "accuracy",
        "group": {"command": "evaluate", "data": "d", "scale": "binary", "probes": None},
        "leaderboard": [row],
        "differences": {"columns": ["judge-<b>a</b>"], "rows": {"model": ["m"]}},
        "left_out": [{"run_id": "zzz", "name": "other", "reason": "data set differs"}],
    }
    (tmp_path / "comparison.json").write_text(json.dumps(comparison))
    html = write_html_report(tmp_path).read_text()
    check_self_contained(html)
    assert "judge-&lt;b&gt;a&lt;/b&gt;" in html and "<b>a</b>" not in html
    assert "data set differs" in html and "0.500 [0.400, 0.600]" in html
    assert html.count('src="data:image/png;base64,') == 1


def test_a_directory_that_is_not_a_run_is_refused(tmp_path: Path):
    with pytest.raises(RunError, match="not a finished run"):
        write_html_report(tmp_path)
    assert XSS  # (the hostile text used above comes from the shared fixtures)


def test_a_runner_outside_the_package_builds_its_report_from_the_model(tmp_path: Path):
    """A report is data. A runner that is not part of assay builds its
    :class:`assay.report.Report` (facts, a table report.md shows too, items whose rows expand
    to texts and word diffs) and writes report.html with the public renderer — no assay runner
    and no browser code involved."""
    from assay.report import Block, Items, Report, Row, Table, diff_texts, markdown, write_html

    def build_report(run_dir: Path) -> Report:  # what the outside runner would register
        summary = json.loads((run_dir / "metrics.json").read_text())
        r = Report("echo", f"echo run — {summary['name']}")
        r.facts = [("items", str(len(summary["items"])))]
        r.tables = [Table("Echo", ["item", "score"], [[k, v] for k, v in summary["items"].items()])]
        source, probe = diff_texts("the sky is blue", f"the sky is {XSS}")
        r.items = Items(
            "Items",
            [("item", "text"), ("score", "num")],
            [
                Row(
                    [(k, k), (str(v), v)],
                    [Block("source", segments=source), Block("probe", segments=probe)],
                )
                for k, v in summary["items"].items()
            ],
        )
        return r

    (tmp_path / "metrics.json").write_text(json.dumps({"name": "e", "items": {"a": 1, "b": 0}}))
    report = build_report(tmp_path)
    html = write_html(report, tmp_path).read_text()
    check_self_contained(html)
    assert "echo run — e" in html and html.count('<details class="row') == 2
    assert "<del>blue</del>" in html and "<ins>" in html and XSS not in html  # escaped diff
    assert "| a | 1 |" in markdown(report.tables)  # the same table, for report.md


def test_a_criterion_probes_row_shows_the_source_verdict_on_its_criterion(tmp_path: Path):
    """The source passes the criterion the probe was made for and fails overall: its row in
    report.html says what the judge said on that criterion (it said the overall verdict)."""
    from assay.reliability.report._html_report import _probe_row
    from assay.reliability.review import ReviewRun
    from tests.agent_review_run import MISSED, RESULT, write_agent_run

    run = ReviewRun(write_agent_run(tmp_path / "agent"))
    view = next(v for v in run.views() if v.probe.id == MISSED)
    row = _probe_row(run, view, ["j"])
    assert row.cells[-1] == ("passes (1)", 1) and row.css == "bad"  # the target is fails
    titles = [b.title for b in row.blocks]
    assert f"j on the source ({RESULT}): passes (1)" in titles
    assert f"j on the probe ({RESULT}): passes (1)" in titles
