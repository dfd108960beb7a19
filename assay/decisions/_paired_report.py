"""The reports of ``compare --paired`` (``paired.json``) and ``drift`` (``drift.json``): one
:class:`~assay.report.Report` each, rendered to report.md and report.html, the same tables the
console prints, and the comparison run MLflow logs."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.metrics import PAIRED_CLUSTER_BOOTSTRAP, fmt, fmt_level
from assay.report import Report, Table, figures, load_json

if TYPE_CHECKING:
    from assay.decisions._paired_results import (
        DriftResult,
        PairedResult,
        SeriesResult,
        ShiftResult,
    )


def build_paired_report(folder: Path) -> Report:
    """The report of the paired comparison or drift check written in ``folder``."""
    folder = Path(folder)
    if (folder / "drift.json").is_file():
        report = _report_of(load_json(folder / "drift.json"))
        report.figures = figures(folder, report.tables)  # a series' chart
        return report
    return _paired_report(load_json(folder / "paired.json"))


def _report_of(d: dict[str, Any]) -> Report:
    """The report of a ``drift.json`` of any of drift's modes (an older one has no mode)."""
    from assay.decisions._shift_report import series_report, shift_report

    mode = d.get("mode", "verdicts")
    if mode == "anchors":
        return shift_report(d)
    if mode == "series":
        return series_report(d)
    return _drift_report(d)


def _side(name: str, s: dict[str, Any]) -> tuple[str, str]:
    return (
        name,
        f"{s['judge']} · model {s['model']} · config {s['config_hash'][:10]} · run "
        f"{s['run_name']} ({s['named']}) · {s['items']} items, {s['unscored']} unscored",
    )


def _value(v: float | None) -> str:
    return "undefined" if v is None or _nan(v) else fmt(v)


def _p(p: float | None) -> str:
    return "—" if p is None or (isinstance(p, float) and math.isnan(p)) else f"{p:.3g}"


def _left_table(left: list[dict[str, Any]], what: str) -> Table:
    return Table(
        "Items left out",
        ["item", "why"],
        [[x["item_id"], x["why"]] for x in left],
        lead=f"Not {what}: every item of both runs is here or above, none dropped silently.",
    )


def paired_tables(p: dict[str, Any]) -> list[Table]:
    c = p["comparison"]
    level, ci = c["level"], c["ci_level"]
    m = c["tests"]  # the metrics with a test: Holm's family, Bonferroni's m
    rows = []
    for d in c["differences"]:
        better = d["better"]
        if better:
            shown = f"{better} better"
        elif d["p_adjusted"] is None or math.isnan(d["p_adjusted"]):
            shown = "undefined"
        else:
            shown = "no difference detected"
        interval = f"[{fmt(d['ci_low'])}, {fmt(d['ci_high'])}]" if d["ci_low"] is not None else "—"
        rows.append(
            [
                d["metric"] + ("" if d["higher_is_better"] else " (lower is better)"),
                _value(d["a"]),
                _value(d["b"]),
                "—" if _nan(d["delta"]) else f"{d['delta']:+.3f}",
                interval,
                _p(d["p_value"]),
                d["test"],
                _p(d["p_adjusted"]),
                shown,
                "—" if d["items_needed"] is None else str(d["items_needed"]),
            ]
        )
    notes = [c["note"]] if c.get("note") else []  # about the comparison as a whole
    notes += [f"{d['metric']}: {d['note']}" for d in c["differences"] if d.get("note")]
    table = Table(
        "Is B better than A?",
        [
            "metric",
            "A",
            "B",
            "Δ = B − A",
            f"{ci:.2%} CI",
            "p",
            "test",
            "p (Holm)",
            f"at {level:g}",
            f"items for Δ = {c['delta']:g}",
        ],
        rows,
        lead=_lead(p, m, ci, level),
        note=_needed(c, m, level) + "".join(f" Note — {n}." for n in notes),
    )
    return [table]


def _clustered(c: dict[str, Any]) -> bool:
    """Whether the comparison resampled clusters (an Inspect log's epochs of one sample)."""
    return any(d["test"] == PAIRED_CLUSTER_BOOTSTRAP for d in c["differences"])


def _lead(p: dict[str, Any], m: int, ci: float, level: float) -> str:
    c = p["comparison"]
    holm = (
        f" p-values Holm-adjusted over the {m} metrics with a test; intervals at the Bonferroni "
        f"level {ci:.2%} (1 − {level:g}/{m}: they hold together)."
    )
    if _clustered(c):
        return (
            f"{p['n_paired']} items scored by both judges, with a reference, in samples of "
            "several items (an Inspect log's epochs): every metric, accuracy too, by a paired "
            f"cluster bootstrap ({c['n_resamples']} resamples of the samples with all their "
            f"items, seed {c['seed']})." + holm
        )
    return (
        f"{p['n_paired']} items scored by both judges, with a reference. Accuracy: McNemar's "
        f"exact test on the discordant items (A alone right: {c['a_only_right']}, B alone "
        f"right: {c['b_only_right']}); the other metrics: a paired bootstrap "
        f"({c['n_resamples']} resamples of the items, seed {c['seed']})." + holm
    )


def _needed(c: dict[str, Any], m: int, level: float) -> str:
    head = f"Items needed: to detect Δ = {c['delta']:g} at level {level:g}/{m} with power {c['power']:g} — "
    if _clustered(c):
        return head + (
            "from the bootstrap standard error scaled as one over the root of the samples, "
            "counted in samples of the mean size."
        )
    return head + (
        "accuracy by Connor's (1987) normal approximation for McNemar's test with the "
        "observed discordance rate, the others from the bootstrap standard error scaled as 1/√n."
    )


def _paired_report(p: dict[str, Any]) -> Report:
    r = Report("compare", f"assay compare --paired — A {p['a']['judge']} vs B {p['b']['judge']}")
    r.facts = [
        _side("A", p["a"]),
        _side("B", p["b"]),
        ("items", f"{p['n_items']} the same items (fingerprint {p['items']}) · scale {p['scale']}"),
        (
            "paired",
            f"{p['n_paired']} items; "
            + (
                f"{len(p['left_out'])} left out (listed below)"
                if p["left_out"]
                else "none left out"
            ),
        ),
        ("verdict", p["verdict"]),
    ]
    r.tables = paired_tables(p)
    if p["left_out"]:
        r.tables.append(_left_table(p["left_out"], "paired"))
    return r


def drift_tables(d: dict[str, Any]) -> list[Table]:
    t = d["test"]
    tables = [
        Table(
            "Changed verdicts against stability",
            [
                "anchors",
                "changed",
                f"change rate [{fmt_level(t['confidence'])} Clopper–Pearson]",
                "predicted by stability [upper bound tested]",
                "p (one-sided exact binomial)",
                f"at {t['level']:g}",
            ],
            [
                [
                    str(t["n"]),
                    str(t["changed"]),
                    f"{fmt(t['rate'])} [{fmt(t['ci_low'])}, {fmt(t['ci_high'])}]",
                    f"{fmt(t['predicted'])} [{fmt(t['tested_against'])}]",
                    _p(t["p_value"]),
                    "drifted" if t["drifted"] else "within stability",
                ]
            ],
            lead=f"Predicted change rate: {d['stability']}.",
        )
    ]
    if d["changes"]:
        tables.append(
            Table(
                "Items whose verdict changed",
                ["item", "old", "new"],
                [[c["item_id"], c["old"], c["new"]] for c in d["changes"]],
            )
        )
    return tables


def _drift_report(d: dict[str, Any]) -> Report:
    r = Report("compare", f"assay drift — {d['old']['judge']}")
    r.facts = [
        _side("old", d["old"]),
        _side("new", d["new"]),
        ("anchors", f"{d['n_items']} the same items (fingerprint {d['items']})"),
        ("verdict", d["verdict"]),
    ]
    r.tables = drift_tables(d)
    if d["left_out"]:
        r.tables.append(_left_table(d["left_out"], "compared"))
    return r


def tracked_run(result: Any, folder: Path) -> Any:
    """The comparison run MLflow logs: the two runs and settings as params, every number as a
    metric (``delta.<metric>`` with ``_ci_low`` / ``_ci_high``, ``p.<metric>``,
    ``p_holm.<metric>``; drift: ``changed``, ``change_rate``...), the files as artifacts."""
    from assay.runs import TrackedRun

    data = result.model_dump(mode="json")
    if "comparison" in data:
        c = data["comparison"]
        metrics: dict[str, float] = {"n_paired": data["n_paired"], "n_items": data["n_items"]}
        for d in c["differences"]:
            m = d["metric"]
            metrics |= {f"a.{m}": d["a"], f"b.{m}": d["b"], f"delta.{m}": d["delta"]}
            if d["ci_low"] is not None:
                metrics |= {f"delta.{m}_ci_low": d["ci_low"], f"delta.{m}_ci_high": d["ci_high"]}
            metrics |= {f"p.{m}": d["p_value"], f"p_holm.{m}": d["p_adjusted"]}
            if d["items_needed"] is not None:
                metrics[f"items_needed.{m}"] = d["items_needed"]
        params = {"a": data["a"]["named"], "b": data["b"]["named"], "level": c["level"]}
        params |= {"delta": c["delta"], "power": c["power"], "seed": c["seed"]}
        sides, mode = (data["a"], data["b"]), "paired"
    elif data.get("mode") in ("anchors", "series"):
        from assay.decisions._shift_report import shift_metrics

        metrics, params, sides = shift_metrics(data)
        mode = f"drift-{data['mode']}"
    else:
        t = data["test"]
        metrics = {
            "n_items": t["n"],
            "changed": t["changed"],
            "change_rate": t["rate"],
            "change_rate_ci_low": t["ci_low"],
            "change_rate_ci_high": t["ci_high"],
            "predicted_change_rate": t["predicted"],
            "predicted_change_rate_upper": t["tested_against"],
            "p": t["p_value"],
            "drifted": float(t["drifted"]),
        }
        params = {"old": data["old"]["named"], "new": data["new"]["named"], "level": t["level"]}
        params["stability"] = data["stability"]
        sides, mode = (data["old"], data["new"]), "drift"
    metrics = {k: float(v) for k, v in metrics.items() if v is not None and not _nan(v)}
    file = "paired.json" if mode == "paired" else "drift.json"
    artifacts = [folder / file, folder / "report.md", folder / "report.html"]
    if data.get("mode") == "series":
        from assay.decisions._shift_report import EWMA_PNG

        artifacts.append(folder / EWMA_PNG)
    return TrackedRun(
        name=f"{mode}-{sides[0]['judge']}-{sides[-1]['judge']}",
        params={k: str(v) for k, v in params.items()},
        metrics=metrics,
        tags={
            "assay.command": "compare",  # compare skips its own runs when it reads an experiment
            "assay.mode": mode,
            **({"assay.items": data["items"]} if "items" in data else {}),
            "assay.runs": " ".join(s["mlflow_run_id"] or s["named"] for s in sides),
        },
        artifacts=artifacts,
    )


def _nan(v: Any) -> bool:
    """Undefined: nan, or ``null`` as JSON writes it."""
    return v is None or (isinstance(v, float) and math.isnan(v))


def render_paired_console(
    result: PairedResult | DriftResult | ShiftResult | SeriesResult,
) -> str:
    """What the command prints: the report's facts, then its tables in Markdown (report.md's)."""
    from assay.report import markdown

    data = result.model_dump(mode="json")
    report = _paired_report(data) if "comparison" in data else _report_of(data)
    lines = [report.title, ""]
    lines += [f"{k}: {v}" for k, v in report.facts]
    tables = [replace(t, figure=None) for t in report.tables]  # a figure is the page's
    lines += ["", *markdown(tables, level=3)]
    if data.get("out_dir"):
        lines.append(f"written: {data['out_dir']} (report.md, report.html)")
    if data.get("comparison_run_id"):
        lines.append(f"MLflow comparison run: {data['comparison_run_id']}")
    return "\n".join(lines).rstrip() + "\n"
