"""``report.html``: one self-contained page per finished run, opened from disk without a server.

It reads what the run wrote — evaluate runs (``metrics.json``, ``judgments.jsonl``), harness
runs (``metrics.json``, ``probes.jsonl``, ``judgments/*.jsonl``), ToolEmu runs
(``metrics.json``, ``trajectories.jsonl``, ``evals/``) and comparisons (``comparison.json``) —
and writes the metric tables with their intervals, the confusion matrix, the plots (PNG
embedded as ``data:`` URIs) and a sortable table of items whose rows expand to the texts and
the judges' reasoning.

Nothing is fetched: CSS and the small sorting script are inline and allowed by their hashes in
the page's Content-Security-Policy (no other script can run); every text is escaped by Jinja2.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from assay.errors import RunError
from assay.metrics import fmt, fmt_ci
from assay.types import Item, Judgment
from assay.web._diff import Segment, diff_texts

REPORT = "report.html"


# -- what a report is made of ------------------------------------------------------------------
@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[Any]]
    note: str = ""


@dataclass
class Block:
    """One expandable text: plain, or diff segments (source / probe)."""

    title: str
    text: str | None = None
    segments: list[Segment] | None = None


@dataclass
class Row:
    cells: list[tuple[str, Any]]  # (shown, sort key)
    blocks: list[Block]
    css: str = ""


@dataclass
class Items:
    title: str
    columns: list[tuple[str, str]]  # (name, "num" | "text")
    rows: list[Row]
    note: str = ""


@dataclass
class Report:
    kind: str
    title: str
    facts: list[tuple[str, str]] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    images: list[tuple[str, str]] = field(default_factory=list)  # (caption, data URI)
    items: Items | None = None
    notes: list[str] = field(default_factory=list)


# -- helpers -----------------------------------------------------------------------------------
def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunError(f"{path}: cannot read ({exc})") from None


def _jsonl(path: Path) -> list[dict[str, Any]]:
    """The readable lines of a JSONL file (a torn last line is skipped)."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


def _yaml(path: Path) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def _image(path: Path) -> str | None:
    if not path.is_file():
        return None
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _ci(m: Any, digits: int = 3) -> str:
    return fmt_ci(m, digits) if isinstance(m, dict) else fmt(m, digits)


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and v == v else None


def _verdict(j: Judgment | dict | None, label=None) -> tuple[str, Any]:
    if j is None:
        return ("not judged", None)
    if isinstance(j, dict):
        j = Judgment.model_validate(j)
    if j.score is None:
        return (f"unscored: {j.unscored}", None)
    shown = label(j.score) if label else (f"{j.label} ({j.score})" if j.label else str(j.score))
    return (shown, j.score)


def _pretty(raw: Any) -> str | None:
    if raw is None or raw == "":
        return None
    return raw if isinstance(raw, str) else json.dumps(raw, indent=2, ensure_ascii=False)


def _metrics_table(title: str, metrics: dict[str, dict[str, Any]]) -> Table:
    rows = []
    for name, m in metrics.items():
        lo, hi = m.get("ci_low"), m.get("ci_high")
        ci = f"[{fmt(lo)}, {fmt(hi)}]" if lo is not None else "—"
        rows.append([name, fmt(m.get("value")), ci, m.get("n", ""), m.get("note") or ""])
    return Table(title, ["metric", "value", "CI", "n", "note"], rows)


# -- evaluate ----------------------------------------------------------------------------------
def _evaluate(run_dir: Path, items: list[Item] | None) -> Report:
    config = _yaml(run_dir / "config.yaml")
    m = _load_json(run_dir / "metrics.json")
    judge = config.get("judge") or {}
    c, u = m.get("counts", {}), m.get("usage", {})
    r = Report("evaluate", f"assay evaluate — {config.get('name') or run_dir.name}")
    r.facts = [
        (
            "judge",
            f"{judge.get('name')} · model {judge.get('model')} · program "
            f"{judge.get('program')} · adapter {judge.get('adapter')} · temperature "
            f"{judge.get('temperature')}",
        ),
        ("config hash", str(m.get("config_hash", ""))),
        ("data", f"{(config.get('data') or {}).get('path')} ({c.get('items')} items)"),
        (
            "counts",
            f"judged {c.get('judged')}, scored {c.get('scored')}, unscored "
            f"{c.get('unscored')} {c.get('unscored_reasons') or ''}; without a reference "
            f"{c.get('without_reference')}; metrics on {c.get('paired')} pairs",
        ),
        ("intervals", str(m.get("bootstrap", ""))),
    ]
    if m.get("metrics"):
        r.tables.append(_metrics_table("Agreement with the reference", m["metrics"]))
    else:
        r.notes.append(m.get("note") or "No item has both a reference label and a judge score.")
    cm = m.get("confusion_matrix")
    if cm:
        r.tables.append(
            Table(
                "Confusion matrix (rows: reference, columns: judge)",
                ["reference \\ judge", *map(str, cm["labels"])],
                [
                    [str(lab), *row]
                    for lab, row in zip(cm["labels"], cm["rows_reference"], strict=False)
                ],
            )
        )
    r.tables.append(
        Table(
            "Cost",
            [
                "LM calls",
                "prompt tokens",
                "completion tokens",
                "USD",
                "USD per accuracy point",
                "mean latency s",
                "unpriced calls",
            ],
            [
                [
                    u.get("calls"),
                    u.get("prompt_tokens"),
                    u.get("completion_tokens"),
                    fmt(u.get("cost_usd"), 6),
                    fmt(u.get("cost_per_accuracy_point_usd"), 6),
                    fmt(u.get("mean_latency_s")),
                    u.get("unpriced_calls", 0),
                ]
            ],
        )
    )
    judgments = [Judgment.model_validate(x) for x in _jsonl(run_dir / "judgments.jsonl")]
    by_item = {it.id: it for it in (items if items is not None else _load_items(config))}
    labels = _labels(judge.get("scale"))
    rows = []
    for j in judgments:
        it = by_item.get(j.item_id)
        expected = it.expected if it else None
        shown, score = _verdict(j, labels)
        agree = "" if expected is None or score is None else ("yes" if score == expected else "no")
        blocks = []
        if it is not None:
            blocks += [Block("request", it.request), Block("response", it.response)]
            if it.transcript:
                from assay.data import render_transcript

                blocks.append(Block("transcript", render_transcript(it.transcript)))
        blocks += [
            Block("reasoning", j.reasoning),
            Block("error", j.error),
            Block("raw output", _pretty(j.raw)),
        ]
        rows.append(
            Row(
                [
                    (j.item_id, j.item_id),
                    (labels(expected) if expected is not None else "—", expected),
                    (shown, score),
                    (agree, agree),
                    (j.unscored or "", j.unscored or ""),
                    (fmt(j.usage.cost_usd, 6), j.usage.cost_usd),
                    (fmt(j.latency_s, 2), j.latency_s),
                ],
                [b for b in blocks if b.text],
                "bad" if agree == "no" else ("warn" if score is None else ""),
            )
        )
    r.items = Items(
        "Items",
        [
            ("item", "text"),
            ("reference", "num"),
            ("judge", "num"),
            ("agrees", "text"),
            ("unscored", "text"),
            ("USD", "num"),
            ("latency s", "num"),
        ],
        rows,
        "" if by_item else "The item texts could not be read from the data set; verdicts only.",
    )
    return r


def _labels(scale_spec: Any):
    from assay.scale import Scale

    try:
        scale = Scale.parse(scale_spec) if scale_spec else None
    except Exception:
        scale = None

    def label(score: Any) -> str:
        if score is None:
            return "—"
        name = scale.label_of(score) if scale else None
        return f"{name} ({score})" if name is not None else str(score)

    return label


def _load_items(config: dict[str, Any]) -> list[Item]:
    """The run's items read back from its data set, when that is a local file (best effort: the
    report shows verdicts without texts otherwise)."""
    try:
        from assay.experiments import EvaluateConfig, load_items

        cfg = EvaluateConfig.model_validate(config)
        if not Path(cfg.data.path).is_file():
            return []
        return load_items(cfg.data, cfg.judge.scale)
    except Exception:  # noqa: BLE001 - a report never fails for want of texts
        return []


# -- harness -----------------------------------------------------------------------------------
def _harness(run_dir: Path) -> Report:
    from assay.web._run import ReviewRun

    run = ReviewRun(run_dir)
    m = _load_json(run_dir / "metrics.json")
    config = _yaml(run_dir / "config.yaml")
    gen, val = config.get("generator") or {}, config.get("validator") or {}
    r = Report("harness", f"assay harness — {run.name}")
    dropped = ", ".join(
        f"{t}: " + ", ".join(f"{k} {n}" for k, n in d.items())
        for t, d in m.get("dropped", {}).items()
    )
    r.facts = [
        ("seeds", f"{m.get('seeds')} · scale {run.scale.describe()}"),
        (
            "generator",
            f"{gen.get('model')} (temperature {gen.get('temperature')}) · validator {val.get('model')}",
        ),
        ("probes per test", ", ".join(f"{k} {v}" for k, v in m.get("probes", {}).items())),
        ("dropped (never judged)", dropped or "none"),
        ("review", ", ".join(f"{k} {v}" for k, v in (m.get("review") or {}).items())),
        ("intervals", str(m.get("bootstrap", ""))),
    ]
    for caption, name in (
        ("Pass rate per test and judge", "heatmap.png"),
        ("Cost vs accuracy per judge", "cost_accuracy.png"),
    ):
        uri = _image(run_dir / name)
        if uri:
            r.images.append((caption, uri))
    for name, j in (m.get("judges") or {}).items():
        rows = []
        for t, tm in j.get("tests", {}).items():
            other = "; ".join(
                f"{k} {_ci(tm[k], 2)}"
                for k in ("flip_rate", "majority_accuracy", "ccc", "pearson", "spearman", "mae")
                if tm.get(k) is not None
            )
            rows.append(
                [
                    t,
                    _ci(tm.get("pass_rate"), 2),
                    _ci(tm.get("consistency"), 2),
                    f"{tm.get('unscored')} of {tm.get('judged')}",
                    other,
                ]
            )
        u = j.get("usage", {})
        r.tables.append(
            Table(
                f"Judge {name} — {j.get('model')} (config {str(j.get('config_hash', ''))[:10]})",
                [
                    "test",
                    "pass rate [CI]",
                    "consistency with own source verdict [CI]",
                    "unscored",
                    "other",
                ],
                rows,
                f"{u.get('calls')} calls, {u.get('prompt_tokens')}+{u.get('completion_tokens')} tokens, "
                f"${fmt(u.get('cost_usd'), 6)}; cost per accuracy point "
                f"{fmt(j.get('cost_per_accuracy_point_usd'), 6)} USD; sources unscored {j.get('source_unscored')}",
            )
        )
    gu = m.get("generation_usage") or {}
    if gu:
        r.tables.append(
            Table(
                "Cost of generation and validation",
                ["stage:test", "calls", "tokens", "USD"],
                [
                    [
                        k,
                        v["calls"],
                        f"{v['prompt_tokens']}+{v['completion_tokens']}",
                        fmt(v["cost_usd"], 6),
                    ]
                    for k, v in gu.items()
                ],
            )
        )
    views = run.views()
    judges = sorted({v.judge for view in views for v in view.verdicts})
    rows = []
    for view in views:
        p = view.probe
        cells = [
            (p.id, p.id),
            (p.test, p.test),
            (p.source_id, p.source_id),
            (run.label(p.target), p.target),
            (p.review.status, p.review.status),
        ]
        blocks: list[Block] = []
        if p.request:
            blocks.append(Block("request", p.request))
        if p.transcript is None:
            src, prb = diff_texts(view.seed.response if view.seed else "", p.response)
            blocks += [Block("source", segments=src), Block("probe", segments=prb)]
        else:
            from assay.data import render_transcript

            blocks += [
                Block(
                    "source transcript",
                    render_transcript(view.seed.transcript or []) if view.seed else None,
                ),
                Block("probe transcript", render_transcript(p.transcript)),
            ]
        if view.intent:
            blocks.append(Block("planner's intent", view.intent))
        if p.validation and p.validation.reason:
            blocks.append(
                Block(
                    f"validator ({'confirmed' if p.validation.verdict else 'not confirmed'})",
                    p.validation.reason,
                )
            )
        if p.review.note:
            blocks.append(Block(f"review note ({p.review.reviewer})", p.review.note))
        by_judge = {v.judge: v for v in view.verdicts}
        css = ""
        for name in judges:
            v = by_judge.get(name)
            shown, score = _verdict(v.probe if v else None, run.label)
            if score is not None and p.target is not None and score != p.target:
                css = "bad"
            cells.append((shown, score))
            if v and v.source is not None:
                blocks.append(
                    Block(
                        f"{name} on the source: {_verdict(v.source, run.label)[0]}",
                        v.source.reasoning or "(no reasoning)",
                    )
                )
            if v and v.probe is not None:
                blocks.append(
                    Block(f"{name} on the probe: {shown}", v.probe.reasoning or "(no reasoning)")
                )
        rows.append(Row(cells, [b for b in blocks if b.text or b.segments], css))
    r.items = Items(
        "Probes",
        [
            ("probe", "text"),
            ("test", "text"),
            ("source", "text"),
            ("target", "num"),
            ("review", "text"),
        ]
        + [(f"{j} on probe", "num") for j in judges],
        rows,
    )
    return r


# -- ToolEmu -----------------------------------------------------------------------------------
def _toolemu(run_dir: Path) -> Report:
    m = _load_json(run_dir / "metrics.json")
    config = _yaml(run_dir / "config.yaml")
    t = m.get("trajectories", {})
    r = Report("toolemu", f"ToolEmu run — {config.get('name') or run_dir.name}")
    r.facts = [
        ("agent", str((config.get("agent") or {}).get("model"))),
        (
            "emulator",
            f"{(config.get('emulator') or {}).get('model')}, {m.get('emulator_mode')} mode",
        ),
        (
            "trajectories",
            f"{t.get('n')} of {t.get('cases_selected')} selected cases; missing {t.get('missing')}; "
            f"stopped at the step limit {t.get('stopped_at_step_limit')}; tool calls {t.get('tool_calls')} "
            f"(unknown tool {t.get('unknown_tool_calls')}, invalid input {t.get('invalid_tool_inputs')})",
        ),
        ("intervals", str(m.get("bootstrap", ""))),
    ]
    r.notes.append(
        "Failure = a safety score of 0 or 1 (ToolEmu). Unscored evaluations are counted and left out of the means."
    )
    for name, ev in (m.get("evaluators") or {}).items():
        rows = []
        for key in ("safety", "helpfulness"):
            if key in ev:
                s = ev[key]
                rows.append(
                    [
                        f"mean {key}",
                        _ci(s.get("mean"), 2),
                        ", ".join(f"{k}: {v}" for k, v in (s.get("distribution") or {}).items()),
                        s.get("unscored"),
                    ]
                )
        if "failure_incidence" in ev:
            rows.append(["failure incidence", _ci(ev["failure_incidence"], 3), "", ""])
        if "emulator_quality" in ev:
            q = ev["emulator_quality"]
            rows.append(
                [
                    "emulations without critical issues",
                    _ci(q.get("share_without_critical_issues"), 3),
                    ", ".join(f"{k} {v}" for k, v in (q.get("counts") or {}).items()),
                    q.get("unscored"),
                ]
            )
        r.tables.append(
            Table(
                f"Evaluator {name} ({ev.get('model')})",
                ["metric", "value [CI]", "scores", "unscored"],
                rows,
            )
        )
        for title, key in (("per toolkit", "by_toolkit"), ("per risk type", "by_risk_type")):
            groups = ev.get(key) or {}
            if groups:
                r.tables.append(
                    Table(
                        f"{name}: {title}",
                        ["", "trajectories", "safety", "helpfulness", "failure incidence"],
                        [
                            [
                                g,
                                x.get("n"),
                                _ci(x.get("safety_mean"), 2),
                                _ci(x.get("helpfulness_mean"), 2),
                                _ci(x.get("failure_incidence"), 3),
                            ]
                            for g, x in groups.items()
                        ],
                    )
                )
    usage = m.get("usage") or {}
    r.tables.append(
        Table(
            "Costs by stage",
            ["stage", "LM calls", "tokens in", "tokens out", "USD"],
            [
                [
                    k,
                    u.get("calls"),
                    u.get("prompt_tokens"),
                    u.get("completion_tokens"),
                    fmt(u.get("cost_usd"), 6),
                ]
                for k, u in usage.items()
            ],
        )
    )
    trajectories = _jsonl(run_dir / "trajectories.jsonl")
    evals: dict[str, list[dict[str, Any]]] = {}
    for f in sorted((run_dir / "evals").glob("*.jsonl")) if (run_dir / "evals").is_dir() else []:
        evals[f.stem] = _jsonl(f)
    rows = []
    for i, tr in enumerate(trajectories):
        case = tr.get("case") or {}
        cells = [
            (str(tr.get("case_idx", i)), tr.get("case_idx", i)),
            (str(case.get("name", "")), str(case.get("name", ""))),
            (", ".join(case.get("Toolkits") or []), ", ".join(case.get("Toolkits") or [])),
        ]
        blocks = [
            Block("user instruction", tr.get("input")),
            Block("underspecifications", _pretty(tr.get("underspecifications"))),
            Block("potential risky outcomes", _pretty(tr.get("risky_outcome"))),
            Block("scratchpad", _scratchpad(tr.get("intermediate_steps") or [])),
            Block("final answer", _pretty(tr.get("output"))),
        ]
        for name, lines in evals.items():
            e = lines[i] if i < len(lines) else {}
            score = e.get("Overall Quantitative Score")
            cells.append(
                (str(e.get("Overall Qualitative Label") or e.get("unscored") or "—"), score)
            )
            blocks.append(Block(f"{name}: thought", e.get("Evaluator Thought")))
            blocks.append(Block(f"{name}: summary", e.get("Evaluator Log Summary")))
        rows.append(Row(cells, [b for b in blocks if b.text]))
    r.items = Items(
        "Trajectories",
        [("#", "num"), ("case", "text"), ("toolkits", "text")] + [(n, "num") for n in evals],
        rows,
    )
    return r


def _scratchpad(steps: list[Any]) -> str:
    out = []
    for step in steps:
        if not isinstance(step, list) or not step:
            continue
        action = step[0]
        if isinstance(action, dict):  # AgentFinish
            out.append(str(action.get("log") or ""))
        elif isinstance(action, list) and len(action) >= 3:
            obs = step[1][0] if len(step) > 1 and isinstance(step[1], list) and step[1] else ""
            out.append(f"{action[2]}Observation: {obs}\n")
    return "\n".join(out)


# -- compare -----------------------------------------------------------------------------------
def _compare(run_dir: Path) -> Report:
    c = _load_json(run_dir / "comparison.json")
    metric = c.get("metric")
    g = c.get("group")
    r = Report("compare", f"assay compare — {metric}")
    r.facts = [
        ("runs compared", str(len(c.get("leaderboard") or []))),
        (
            "group",
            (
                f"data {g.get('data')} · scale {g.get('scale')}"
                + (f" · probes {g['probes']}" if g.get("probes") else "")
            )
            if g
            else "forced across data sets/scales",
        ),
        ("tracking", str(c.get("tracking_uri"))),
    ]
    for caption, name in (
        ("Cost vs metric (Pareto front)", "pareto.png"),
        ("Pass rate per test and judge", "heatmap.png"),
    ):
        uri = _image(run_dir / name)
        if uri:
            r.images.append((caption, uri))
    d = c.get("differences") or {}
    if d.get("rows"):
        r.tables.append(
            Table(
                "Config differences",
                ["judge param", *d.get("columns", [])],
                [[k, *v] for k, v in d["rows"].items()],
            )
        )
    if c.get("left_out"):
        r.tables.append(
            Table(
                "Left out",
                ["run", "name", "reason"],
                [[x.get("run_id"), x.get("name"), x.get("reason")] for x in c["left_out"]],
            )
        )
    rows = []
    columns = d.get("columns") or []
    for row in c.get("leaderboard") or []:
        ci = (
            f" [{fmt(row.get('ci_low'))}, {fmt(row.get('ci_high'))}]"
            if row.get("ci_low") is not None
            else ""
        )
        params = "\n".join(
            f"{k}: {v[columns.index(row.get('name'))] if row.get('name') in columns else ''}"
            for k, v in (d.get("rows") or {}).items()
        )
        rows.append(
            Row(
                [
                    (str(row.get("rank")), row.get("rank")),
                    (str(row.get("name")), str(row.get("name"))),
                    (str(row.get("model")), str(row.get("model"))),
                    (f"{fmt(row.get('value'))}{ci}", _num(row.get("value"))),
                    (fmt(row.get("accuracy")), _num(row.get("accuracy"))),
                    (fmt(row.get("cost_usd"), 6), _num(row.get("cost_usd"))),
                    (
                        fmt(row.get("cost_per_accuracy_point_usd"), 6),
                        _num(row.get("cost_per_accuracy_point_usd")),
                    ),
                    (
                        "yes"
                        if row.get("pareto")
                        else ("—" if row.get("pareto") is None else "no"),
                        str(row.get("pareto")),
                    ),
                ],
                [
                    Block("run", json.dumps(row, indent=2, ensure_ascii=False, default=str)),
                    Block("differing params", params or None),
                ],
            )
        )
    r.items = Items(
        "Leaderboard",
        [
            ("#", "num"),
            ("run", "text"),
            ("model", "text"),
            (f"{metric} [CI]", "num"),
            ("accuracy", "num"),
            ("USD", "num"),
            ("USD per accuracy point", "num"),
            ("Pareto", "text"),
        ],
        rows,
    )
    return r


# -- rendering ---------------------------------------------------------------------------------
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
    env = Environment(
        loader=PackageLoader("assay.web", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    return env.get_template("report.html").render(r=report, css=css, js=js, csp=csp)


def write_html_report(run_dir: Path, *, items: list[Item] | None = None) -> Path:
    """Write ``run_dir/report.html`` for a finished run of any kind; returns its path.

    ``items`` (evaluate runs) gives the item texts; without it they are read back from the
    run's data set when that is a local file. Written atomically.
    """
    run_dir = Path(run_dir)
    kind = detect_kind(run_dir)
    report = {
        "evaluate": lambda: _evaluate(run_dir, items),
        "harness": lambda: _harness(run_dir),
        "toolemu": lambda: _toolemu(run_dir),
        "compare": lambda: _compare(run_dir),
    }[kind]()
    html = render_html(report)
    out = run_dir / REPORT
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(html, encoding="utf-8")
    os.replace(tmp, out)
    return out
