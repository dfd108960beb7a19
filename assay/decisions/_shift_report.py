"""The reports of ``drift --anchors`` (a score change split into the judge's shift and the
system's change) and ``drift --series`` (an EWMA control chart over runs): their tables, the
chart's PNG, and what their comparison run logs to MLflow."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.metrics import fmt, fmt_level
from assay.report import Report, Table

EWMA_PNG = "ewma.png"


def _signed(v: float) -> str:
    return f"{v:+.3f}"


def _interval(low: float, high: float) -> str:
    return f"[{_signed(low)}, {_signed(high)}]"


def shift_tables(d: dict[str, Any]) -> list[Table]:
    from assay.decisions._shift import no_width_said, shift_intervals

    x = d["decomposition"]
    flat = no_width_said(shift_intervals(x))
    rows = [
        [
            "score change (other items)",
            f"{fmt(x['old_score'])} ({x['old_items']} items)",
            f"{fmt(x['new_score'])} ({x['new_items']} items)",
            _signed(x["score_change"]),
            _interval(x["score_change_low"], x["score_change_high"]),
        ],
        [
            "judge shift (anchors)",
            f"{fmt(x['old_anchor_score'])} (old judge)",
            f"{fmt(x['new_anchor_score'])} (new judge)",
            _signed(x["judge_shift"]),
            _interval(x["judge_shift_low"], x["judge_shift_high"]),
        ],
        [
            "system change",
            "",
            "",
            _signed(x["system_change"]),
            _interval(x["system_change_low"], x["system_change_high"]),
        ],
    ]
    return [
        Table(
            "Judge shift and system change",
            ["", "OLD", "NEW", "Δ", f"{fmt_level(x['confidence'])} CI"],
            rows,
            lead=(
                f"The score is the {d['score']} ({d['scale']}). On {x['anchors']} anchors — the "
                "same inputs in both runs, matched by content digest — the judge's shift is the "
                "mean of new judge − old judge; on each run's other items, the score change is "
                "NEW − OLD; the system's change is the score change less the judge's shift."
            ),
            note=(
                f"Intervals: percentile bootstrap, {x['n_resamples']} replicates (seed "
                f"{x['seed']}), each resampling the anchors in pairs and each run's other items "
                "on their own; a replicate's system change is its score change less its shift."
                + (f" {x['clusters'][0].upper()}{x['clusters'][1:]}." if x.get("clusters") else "")
                + (f" {flat[0].upper()}{flat[1:]}." if flat else "")
            ),
        )
    ]


def shift_report(d: dict[str, Any]) -> Report:
    from assay.decisions._paired_report import _left_table, _side

    r = Report("compare", f"assay drift --anchors — {d['old']['judge']} → {d['new']['judge']}")
    r.facts = [
        _side("old", d["old"]),
        _side("new", d["new"]),
        ("anchors", f"{d['decomposition']['anchors']} scored by both judges ({d['anchors_file']})"),
        ("verdict", d["verdict"]),
    ]
    r.tables = shift_tables(d)
    if d["left_out"]:
        r.tables.append(_left_table(d["left_out"], "used"))
    return r


def series_tables(d: dict[str, Any]) -> list[Table]:
    c = d["chart"]
    rows = []
    for i, p in enumerate(d["points"]):
        rows.append(
            [
                str(i + 1),
                f"{p['run']['run_name']} ({p['run']['named']})",
                f"{p['run']['judge']} · {p['run']['config_hash'][:10]}",
                str(p["scored"]),
                fmt(p["score"]),
                fmt(c["ewma"][i]),
                f"[{fmt(c['lower'][i])}, {fmt(c['upper'][i])}]",
                "out of control" if c["out_of_control"][i] else "in control",
            ]
        )
    if c["baseline"] is None:
        where = f"μ0 = {fmt(c['center'])} and σ = {fmt(c['sigma'])} given"
    else:
        where = (
            f"μ0 = {fmt(c['center'])} and σ = {fmt(c['sigma'])} from the first {c['baseline']} "
            "runs (their mean and sample standard deviation; given values take their place)"
        )
    return [
        Table(
            "EWMA control chart",
            ["run", "evaluate run", "judge · config", "scored", "score", "EWMA", "limits", "chart"],
            rows,
            lead=(
                f"Each run's {d['score']} ({d['scale']}), in the order given, smoothed: "
                f"z_i = λ x_i + (1 − λ) z_(i−1) from z_0 = μ0, with λ = {c['smoothing']:g}; limits "
                f"μ0 ± L σ √(λ/(2 − λ) · (1 − (1 − λ)^(2i))) with L = {c['width']:g}; {where}."
            ),
            figure=("EWMA control chart", EWMA_PNG),
        )
    ]


def series_report(d: dict[str, Any]) -> Report:
    r = Report("compare", f"assay drift --series — {len(d['points'])} runs")
    r.facts = [("runs", " → ".join(p["run"]["named"] for p in d["points"]))]
    r.facts.append(("verdict", d["verdict"]))
    r.tables = series_tables(d)
    return r


def ewma_plot(chart: Any, path: Path, *, ylabel: str) -> Path:
    """The chart: each run's score, its EWMA, the limits as steps, the points out of control
    marked; the y-axis label is also the PNG's ``Description``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = list(range(1, len(chart.values) + 1))
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    ax.plot(x, chart.values, "o", color="tab:gray", alpha=0.6, label="run score")
    ax.plot(x, chart.ewma, "-o", color="tab:blue", markersize=4, label="EWMA")
    ax.step(x, chart.upper, where="mid", color="tab:red", linewidth=1, label="limits")
    ax.step(x, chart.lower, where="mid", color="tab:red", linewidth=1)
    ax.axhline(chart.center, color="tab:green", linewidth=1, linestyle="--", label="μ0")
    out = [(i, z) for i, z, o in zip(x, chart.ewma, chart.out_of_control, strict=True) if o]
    if out:
        ax.plot(*zip(*out, strict=True), "x", color="tab:red", markersize=10, mew=2)
    if chart.baseline:
        ax.axvspan(0.5, chart.baseline + 0.5, color="tab:gray", alpha=0.1, label="baseline")
    ax.set_xticks(x)
    ax.set_xlabel("run")
    ax.set_ylabel(ylabel)
    ax.set_title(f"EWMA (λ = {chart.smoothing:g}, L = {chart.width:g})")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Description": ylabel}, bbox_inches="tight")
    plt.close(fig)
    return path


def shift_metrics(data: dict[str, Any]) -> tuple[dict[str, float], dict[str, Any], list]:
    """The comparison run of ``--anchors`` or ``--series``: its metrics, params and sides."""
    if data["mode"] == "anchors":
        x = data["decomposition"]
        metrics = {
            k: x[k]
            for k in ("anchors", "old_items", "new_items", "old_score", "new_score")
            + tuple(
                f"{name}{end}"
                for name in ("score_change", "judge_shift", "system_change")
                for end in ("", "_low", "_high")
            )
        }
        params = {"old": data["old"]["named"], "new": data["new"]["named"]}
        params |= {"anchors": data["anchors_file"], "confidence": x["confidence"]}
        params |= {"n_resamples": x["n_resamples"], "seed": x["seed"]}
        return metrics, params, [data["old"], data["new"]]
    c = data["chart"]
    metrics = {"runs": len(data["points"]), "out_of_control": sum(c["out_of_control"])}
    if c["first_out"] is not None:
        metrics["first_out_of_control"] = c["first_out"]
    for i, p in enumerate(data["points"], start=1):
        metrics |= {f"score.{i}": p["score"], f"ewma.{i}": c["ewma"][i - 1]}
        metrics |= {f"lower.{i}": c["lower"][i - 1], f"upper.{i}": c["upper"][i - 1]}
    params = {"runs": " ".join(p["run"]["named"] for p in data["points"])}
    params |= {k: c[k] for k in ("smoothing", "width", "center", "sigma", "baseline")}
    return metrics, params, [p["run"] for p in data["points"]]
