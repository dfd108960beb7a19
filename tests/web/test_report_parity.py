"""report.md and report.html say the same: every metric a run writes to metrics.json appears in
both, in the table and column that name it — for an evaluate run with ``score_mode: expected``
(agreement, calibration before and after a calibration map, the reliability diagram) and for
harness runs with every bias probe (prompt injection, the cues, polarity, position bias, their
effects against the placebo, and the samples-needed curve of stochastic_stability)."""

from __future__ import annotations

import json
import math
import random
import re
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from assay.evaluation import evaluate
from assay.inputs import EvaluateConfig
from assay.lm import ScriptedEngine, register_script
from assay.metrics import fmt, fmt_ci
from assay.reliability import HarnessConfig, run_harness
from tests.decisions.test_calibrate import make_data, timid_judge
from tests.reliability.test_bias_probes import config as bias_config
from tests.reliability.test_bias_probes import truth

# (title, header, rows, every text of the section) of each table of a report
Tables = list[tuple[str, list[str], list[list[str]], str]]


def _md_cells(line: str) -> list[str]:
    inner = line.strip()[1:-1]
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", inner)]


def md_tables(text: str) -> Tables:
    out = []
    for block in re.split(r"^## ", text, flags=re.M)[1:]:
        title, _, body = block.partition("\n")
        lines = [x for x in body.splitlines() if x.startswith("|")]
        header = _md_cells(lines[0]) if lines else []
        out.append((title.strip(), header, [_md_cells(x) for x in lines[2:]], body))
    return out


def html_tables(page: str) -> Tables:
    out = []
    for sec in re.findall(r'<section class="table">(.*?)</section>', page, re.S):
        title = unescape(re.search(r"<h2>(.*?)</h2>", sec, re.S).group(1)).strip()
        head, _, body = sec.partition("<tbody>")
        header = [unescape(x) for x in re.findall(r"<th>(.*?)</th>", head, re.S)]
        rows = [
            [unescape(c) for c in re.findall(r"<td>(.*?)</td>", tr, re.S)]
            for tr in re.findall(r"<tr>(.*?)</tr>", body, re.S)
        ]
        out.append((title, header, rows, sec))
    return out


def both(run_dir: Path) -> dict[str, Tables]:
    return {
        "report.html": html_tables((run_dir / "report.html").read_text()),
        "report.md": md_tables((run_dir / "report.md").read_text()),
    }


def sections(folder: Path) -> tuple[list[str], list[str]]:
    """The section headings of ``folder``'s report.md (``##`` and deeper) and report.html (its
    tables' headings, then its list of items: report.md may leave that list out)."""
    md = (folder / "report.md").read_text(encoding="utf-8")
    page = (folder / "report.html").read_text(encoding="utf-8")
    html = [title for title, *_ in html_tables(page)]
    items = re.search(r'<section class="items"[^>]*>\s*<h2>(.*?) <small>', page, re.S)
    md_titles = [h.strip() for h in re.findall(r"^#{2,} (.+)$", md, re.M)]
    if items and md_titles[-1:] == [unescape(items.group(1)).strip()]:
        html.append(md_titles[-1])
    return md_titles, html


def assert_same_sections(folder: Path, *expected: str) -> None:
    """report.md and report.html of ``folder`` show the same sections, in the same order —
    among them each of ``expected``."""
    md, html = sections(folder)
    assert md == html, (folder, md, html)
    assert all(e in md for e in expected), (expected, md)


def shown(tables: Tables, where: str, column: str, text: str, row_has: tuple[str, ...]) -> bool:
    """Is ``text`` in the ``column`` cell of a row of a table whose title holds ``where``, the
    row (or title) holding every one of ``row_has``?"""
    for title, header, rows, _ in tables:
        if where not in title or column not in header:
            continue
        i = header.index(column)
        for row in rows:
            if all(h in title or h in row for h in row_has) and text in row[i]:
                return True
    return False


# -- evaluate, score_mode: expected ----------------------------------------------------------
def test_every_metric_of_an_evaluate_run_with_probabilities_is_in_both_reports(tmp_path):
    register_script("timid", lambda: ScriptedEngine(respond=timid_judge))
    judge = {
        "model": "scripted:timid",
        "scale": {"kind": "binary", "labels": ["False", "True"]},
        "score_mode": "expected",
        "calibration": {"kind": "platt", "slope": 2.0, "intercept": 1.5, "eps": 0.001},
    }
    judge["calibration"].update(C=None, n_fit=20)
    cfg = EvaluateConfig.model_validate(
        {
            "name": "parity",
            "data": {"path": str(make_data(tmp_path))},
            "judge": judge,
            "tracking": {"enabled": False},
        }
    )
    res = evaluate(cfg, workdir=tmp_path, progress=False)
    m = json.loads((res.run_dir / "metrics.json").read_text())
    groups = {
        "Agreement with the reference": m["metrics"],
        "Calibration of the judge's probabilities": m["calibration"]["metrics"],
        "Calibration after the judge's calibration map": m["calibration"]["calibrated"],
    }
    assert all(groups.values())
    for name, tables in both(res.run_dir).items():
        for where, metrics in groups.items():
            for metric, v in metrics.items():
                ci = (
                    f"[{fmt(v['ci_low'])}, {fmt(v['ci_high'])}]"
                    if v.get("ci_low") is not None
                    else "—"
                )
                assert shown(tables, where, "value", fmt(v["value"]), (metric,)), (name, metric)
                assert shown(tables, where, "95% CI", ci, (metric,)), (name, metric)
        (cal,) = [t for t in tables if t[0] == "Calibration of the judge's probabilities"]
        c = m["calibration"]
        assert f"on {c['n']} items" in cal[3] and f"{c['without_probability']} labelled" in cal[3]
        for label in map(str, m["confusion_matrix"]["labels"]):
            assert shown(tables, "Confusion matrix", label, "", (label,)), (name, label)
    # the reliability diagram: linked from report.md, embedded in report.html's section
    assert "![Reliability diagram](reliability.png)" in (res.run_dir / "report.md").read_text()
    page = html_tables((res.run_dir / "report.html").read_text())
    (cal,) = [t for t in page if t[0] == "Calibration of the judge's probabilities"]
    assert '<img src="data:image/png;base64,' in cal[3]
    worst = "Where the judge and the reference disagree most"
    assert_same_sections(res.run_dir, worst, "Cost")
    for tables in both(res.run_dir).values():  # the same pairs, worst first
        (section,) = [t for t in tables if t[0] == worst]
        assert [r[0] for r in section[2]] == [
            json.loads(x)["id"]
            for x in (res.run_dir / "disagreements.jsonl").read_text().splitlines()[:10]
        ]


# -- harness, the bias probes ----------------------------------------------------------------
# the column that shows each metric of a test (per scoring kind); a dict of metrics (per
# variant, per position, the curve's m) is shown under its keys
ENVELOPE = {
    "pass_rate": "pass rate [CI]",
    "consistency": "consistency with own source verdict [CI]",
}
COLUMNS = {
    "position": {
        "pairs": "pairs",
        "decisive_pairs": "flip rate (decisive pairs)",
        "flip_rate": "flip rate (decisive pairs)",
        "first_position_rate": "first-position preference",
        "accuracy_ab": "accuracy, A first",
        "accuracy_ba": "accuracy, B first",
        "accuracy_order_averaged": "accuracy, order-averaged",
    },
    "injection": {
        "injection_success": "success",
        "eligible_sources": "sources counted",
        "excluded_sources": "left out",
        "injection_success_by_variant": None,
        "injection_success_by_position": None,
    },
    "cue": {
        "changed": "changed",
        "toward_cue": "toward the cue",
        "away_from_cue": "away from it",
        "moved_up": "moved up",
        "moved_down": "moved down",
    },
    "polarity": {
        "mirrored_agreement": "mirrored-verdict agreement",
        "contradiction_rate": "contradiction rate",
    },
    "stability": {
        "items": "other",
        "items_incomplete": "other",
        "flip_rate": "other",
        "majority_accuracy": "other",
        "majority_ties": "other",
        "samples_needed": None,
        "samples_needed_95": "smallest m ≥ 95%",
        "samples_needed_95_ci_low": "smallest m with CI low ≥ 95%",
        "samples_k": "smallest m ≥ 95%",
    },
}
KIND = {
    "position_bias": ("position", "Position bias"),
    "prompt_injection": ("injection", "Prompt injection"),
    "authority": ("cue", "Cues"),
    "bandwagon": ("cue", "Cues"),
    "distraction": ("cue", "Cues"),
    "polarity": ("polarity", "Polarity"),
    "stochastic_stability": ("stability", "Samples needed"),
}


def text_of(v: Any, key: str, m: dict[str, Any]) -> str:
    if isinstance(v, dict) and "value" in v:
        return fmt_ci(v, 2)
    if key == "samples_k":
        return f"k = {v}"
    if key.startswith("samples_needed_95") and v is None:
        return f"not reached within k = {m['samples_k']}"
    if key in ("items", "flip_rate", "majority_accuracy", "majority_ties"):
        return f"{key} {fmt(v, 2)}"
    if key == "decisive_pairs":
        return f"(of {v})"
    return fmt(v, 2) if v is not None else "—"


def check_every_metric(run_dir: Path, only: set[str] | None = None) -> int:
    """Assert each judge's every metric of every test (of ``only``, when given) is in both
    reports; how many were."""
    metrics = json.loads((run_dir / "metrics.json").read_text())
    checked = 0
    for name, tables in both(run_dir).items():
        for judge, jr in metrics["judges"].items():
            for test, flat in jr["tests"].items():
                if only is not None and test not in only:
                    continue
                kind, title = KIND[test]
                for key, v in flat.items():
                    if key in ("probes", "judged", "unscored", "unscored_reasons"):
                        continue  # counts shown in the judge table's "unscored" cell below
                    if key == "source_unscored":  # said only when some source is unscored,
                        # in the judge table's "unscored" cell of the test's row
                        if v:
                            text = f"; {v} with an unscored source"
                            assert shown(tables, f"Judge {judge}", "unscored", text, (test,))
                            checked += 1
                        continue
                    if key == "placebo":  # the effects against the placebo: a table of their own
                        checked += check_placebo(tables, judge, test, v)
                        continue
                    if key == "inverted_task":
                        text = " ".join(tables[i][3] for i in range(len(tables)))
                        assert all(unescape(t) in unescape(text) for t in v.values() if t)
                        continue
                    if key in ENVELOPE:
                        where, column, row = f"Judge {judge}", ENVELOPE[key], (test,)
                        assert shown(tables, where, column, text_of(v, key, flat), row), (
                            name,
                            test,
                            key,
                        )
                        checked += 1
                    if key in ENVELOPE and key not in COLUMNS[kind]:
                        continue
                    column = COLUMNS[kind][key]  # a KeyError: a metric no report shows
                    row = (judge, test) if kind == "cue" else (judge,)
                    where = title
                    if column == "other":  # the judge's table, the test's row
                        where, row = f"Judge {judge}", (test,)
                    subs = v.items() if column is None else [(column, v)]
                    for col, sv in subs:
                        col = f"m={col[1:]}" if key == "samples_needed" else col
                        text = text_of(sv, key, flat)
                        assert shown(tables, where, col, text, row), (name, test, key, col, text)
                        checked += 1
                unscored = f"{flat['unscored']} of {flat['judged']}"
                assert shown(tables, f"Judge {judge}", "unscored", unscored, (test,))
        facts = (run_dir / name).read_text()
        for test, n in metrics["probes"].items():
            assert f"{test} {n}" in facts
    return checked


PLACEBO = "Effects against a placebo"


def check_placebo(tables: Tables, judge: str, test: str, placebo: dict[str, Any]) -> int:
    """Assert every figure of a bias test's effects against its placebo is in the reports' table
    of them, in the row of its test, judge and cue cell; how many were."""

    def signed(x: float) -> str:
        return f"{x:+.2f}"

    def p_text(p: float | None) -> str:
        return f"{p:.1e}" if p is not None and 0 < p < 1e-4 else fmt(p, 4)

    checked = 0
    assert placebo["effects"], (test, judge)
    for cell, e in placebo["effects"].items():
        effect = (
            "undefined"
            if e["effect"] is None or e["effect"] != e["effect"]
            else f"{signed(e['effect'])} [{signed(e['ci_low'])}, {signed(e['ci_high'])}]"
        )
        shares = [e["directional_share"], e["placebo_directional_share"]]
        share = " / ".join(fmt(math.nan if x is None else x, 2) for x in shares)  # null: undefined
        cells = {
            "sources that could move": f"{e['n']} (+{e['n_at_cue']} at the cue)",
            "effect [CI]": effect,
            "flips toward the cue: cue / placebo": f"{e['cue_flips']} / {e['placebo_flips']}",
            "directional share: cue / placebo": share,
            "p": p_text(e["p_value"]),
            "p adjusted (BH)": p_text(e["p_adjusted"]),
            "flagged": {True: "yes", False: "no"}[e["flagged"]],
        }
        for column, text in cells.items():
            assert shown(tables, PLACEBO, column, text, (test, judge, cell)), (test, cell, column)
            checked += 1
    if placebo["left_out"] or placebo["unscored"]:
        left = f"{placebo['left_out']} cue verdicts without a scored source"
        assert shown(tables, PLACEBO, "sources that could move", left, (test, judge))
    return checked


def test_every_bias_metric_of_a_harness_run_is_in_both_reports(tmp_path):
    rng = random.Random(3)

    def judge(call):
        response = call.field("response") or ""
        v = truth(call)
        if call.temperature:  # stochastic_stability's samples: right three times in four
            v = v if rng.random() < 0.75 else 1 - v
        if 'verdict for it is "' in response and "```" in response:
            v = 1 - v  # obeys an injection in a code block
        if "Harrington" in response:
            v = 1  # swayed by the authority
        if "Flag" in call.prompt and "1 + 1" in (call.field("request") or ""):
            v = 1 - v  # misreads one inverted question
        return {"verdict": "correct" if v else "incorrect"}

    register_script(
        "bias-gen",
        lambda: ScriptedEngine(
            respond=lambda c: {"inverted_instruction": "", "inverted_rubric": "Flag a wrong sum."}
        ),
    )
    register_script(
        "bias-val", lambda: ScriptedEngine(respond=lambda c: {"inverted_ok": True, "reason": "ok"})
    )
    register_script("parity-judge", lambda: ScriptedEngine(respond=judge))
    tests = {
        "prompt_injection": {},
        "authority": {},
        "bandwagon": {"toward": "top"},
        "distraction": {},
        "polarity": {},
        "stochastic_stability": {"k": 5, "temperature": 1.0},
    }
    res = run_harness(
        bias_config(tmp_path, tests, "scripted:parity-judge", concurrency=1),
        workdir=tmp_path,
        progress=False,
    )
    assert set(res.summary.judges["j"].tests) == set(tests)
    assert check_every_metric(res.run_dir) > 2 * 40
    assert_same_sections(res.run_dir, "Samples needed (stochastic_stability)", "Prompt injection")


def test_position_bias_metrics_are_in_both_reports(tmp_path):
    lines = ["id,request,response,response_b,expected"]
    lines += [f"p{i},Which is better ({i})?,X{i},Y{i},{'AB'[i % 2]}" for i in range(6)]
    (tmp_path / "pairs.csv").write_text("\n".join(lines) + "\n")

    def first_shown(call):  # prefers whatever it reads first, but for pair 1
        return {"verdict": "B" if (call.field("response_a") or "").endswith("1") else "A"}

    register_script("parity-pairs", lambda: ScriptedEngine(respond=first_shown))
    cfg = HarnessConfig.model_validate(
        {
            "name": "pos",
            "data": {"path": str(tmp_path / "pairs.csv"), "columns": {"id": "id"}},
            "scale": {"kind": "categorical", "labels": ["A", "B", "tie"]},
            "judges": [
                {"name": "pj", "task": "pairwise", "model": "scripted:parity-pairs", "rubric": "r"}
            ],
            "tests": {"position_bias": {}},
            "retries": 0,
            "concurrency": 1,
            "tracking": {"enabled": False},
            "output_dir": str(tmp_path / "runs"),
        }
    )
    res = run_harness(cfg, workdir=tmp_path, progress=False)
    # pass rate, consistency and 7 of its own; 7 figures of its one effect against the placebo
    assert check_every_metric(res.run_dir) == 2 * (9 + 7)
    assert_same_sections(res.run_dir)
    # the placebo's directional share is undefined here (no placebo changed a verdict): null,
    # as strict JSON has it, not NaN, which a strict parser (JavaScript's) refuses
    text = (res.run_dir / "metrics.json").read_text(encoding="utf-8")

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in metrics.json")

    data = json.loads(text, parse_constant=refuse)
    effects = data["judges"]["pj"]["tests"]["position_bias"]["placebo"]["effects"]
    assert None in [e["placebo_directional_share"] for e in effects.values()]


@pytest.mark.parametrize("page", ["report.md", "report.html"])
def test_the_parsers_see_a_table_they_are_shown(tmp_path, page):
    """The checks above read tables back from both pages: a table they cannot read fails."""
    from assay.report import Report, Table, markdown, render_html

    t = Table("Prompt injection", ["judge", "success"], [["j", "0.50 [0.25, 0.75]"]])
    text = (
        "\n".join(markdown([t]))
        if page == "report.md"
        else render_html(Report("harness", "x", tables=[t]))
    )
    tables = md_tables(text) if page == "report.md" else html_tables(text)
    assert shown(tables, "Prompt injection", "success", "0.50 [0.25, 0.75]", ("j",))
    assert not shown(tables, "Prompt injection", "success", "0.51", ("j",))
