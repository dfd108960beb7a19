"""The harness report: Markdown with a tests × judges heatmap and a cost-vs-accuracy plot (PNG)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.experiments.reliability._bias_report import bias_lines, samples_plot
from assay.metrics import fmt, fmt_ci


def ci(m: dict | None) -> str:
    """A metric with its interval, two decimals (the harness report and the CLI)."""
    return fmt_ci(m, 2)


def preload_plotting() -> None:
    """Import matplotlib (headless) and render a throw-away figure ahead of time (fonts, the
    Agg canvas, the PNG writer load on first use); the report's plots then start at once."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(1, 1))
    ax = fig.add_subplot()
    ax.imshow([[0.0, 1.0]], cmap="RdYlGn")
    ax.set_title("warm-up")
    ax.text(0, 0, "0.00")
    fig.colorbar(ax.images[0], ax=ax, label="x")
    fig.savefig(io.BytesIO(), format="png", dpi=20)


def heatmap(metrics: dict[str, Any], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    judges = list(metrics["judges"])
    tests = list(metrics["probes"])
    grid = np.full((len(tests), len(judges)), np.nan)
    for j, name in enumerate(judges):
        for i, t in enumerate(tests):
            m = metrics["judges"][name]["tests"].get(t, {}).get("pass_rate")
            if m and m.get("value") is not None:
                grid[i, j] = m["value"]
    fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(judges), 0.9 + 0.5 * len(tests)))
    im = ax.imshow(grid, vmin=0, vmax=1, cmap="RdYlGn", aspect="auto")
    ax.set_xticks(range(len(judges)), judges, rotation=30, ha="right")
    ax.set_yticks(range(len(tests)), tests)
    for i in range(len(tests)):
        for j in range(len(judges)):
            ax.text(
                j,
                i,
                "n/a" if np.isnan(grid[i, j]) else f"{grid[i, j]:.2f}",
                ha="center",
                va="center",
                fontsize=8,
            )
    fig.colorbar(im, ax=ax, label="pass rate")
    ax.set_title("Reliability: pass rate per test and judge")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def cost_plot(metrics: dict[str, Any], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4))
    for name, r in metrics["judges"].items():
        if r.get("mean_pass_rate") is None:
            continue
        ax.scatter(r["usage"]["cost_usd"], r["mean_pass_rate"])
        ax.annotate(
            name,
            (r["usage"]["cost_usd"], r["mean_pass_rate"]),
            fontsize=8,
            xytext=(4, 4),
            textcoords="offset points",
        )
    ax.set_xlabel("judge cost (USD, all probes and sources)")
    ax.set_ylabel("mean pass rate over tests")
    ax.set_ylim(0, 1.05)
    ax.set_title("Cost vs accuracy per judge")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def render(config, metrics: dict[str, Any]) -> str:
    lines = [
        f"# assay harness — {config.name}",
        "",
        f"- seeds: {metrics['seeds']} · scale {config.scale.describe()} · generator `{config.generator.model}` "
        f"(temperature {config.generator.temperature}) · validator `{config.validator.model}`",
        f"- probes per test: {', '.join(f'{k} {v}' for k, v in metrics['probes'].items())}",
        "- dropped (never judged): "
        + (
            ", ".join(
                f"{t}: " + ", ".join(f"{r} {n}" for r, n in d.items())
                for t, d in metrics["dropped"].items()
            )
            or "none"
        ),
        f"- review: {metrics['review']}",
        *[f"- note: {n}" for n in metrics.get("notes", [])],
        "",
        "![pass rate per test and judge](heatmap.png)",
        "",
    ]
    for name, r in metrics["judges"].items():
        lines += [
            f"## Judge `{name}` — `{r['model']}` (config {r['config_hash'][:10]})",
            "",
            "| test | pass rate [CI] | consistency with own source verdict [CI] | unscored | other |",
            "|---|---|---|---|---|",
        ]
        for t, m in r["tests"].items():
            other = []
            for key in ("flip_rate", "majority_accuracy", "ccc", "pearson", "spearman", "mae"):
                if m.get(key) is not None:
                    other.append(
                        f"{key} {ci(m[key]) if isinstance(m[key], dict) else fmt(m[key], 2)}"
                    )
            lines.append(
                f"| {t} | {ci(m.get('pass_rate'))} | {ci(m.get('consistency'))} | {m['unscored']} of {m['judged']} | {'; '.join(other)} |"
            )
        lines += _criterion_tables(r["tests"])
        u = r["usage"]
        lines += [
            "",
            f"Judge cost: {u['calls']} calls, {u['prompt_tokens']}+{u['completion_tokens']} tokens, ${u['cost_usd']:.6f}; "
            f"cost per accuracy point {fmt(r.get('cost_per_accuracy_point_usd'), 6)} USD; sources unscored {r['source_unscored']}; "
            f"waiting on rate limits {u.get('limit_wait_s', 0.0):.1f} s, HTTP 429 answers {u.get('rate_limited', 0)}.",
            "",
        ]
    lines += bias_lines(metrics)
    lines += [
        "## Cost of generation and validation",
        "",
        "| stage:test | calls | tokens | USD |",
        "|---|---|---|---|",
    ]
    for k, u in metrics["generation_usage"].items():
        lines.append(
            f"| {k} | {u['calls']} | {u['prompt_tokens']}+{u['completion_tokens']} | {u['cost_usd']:.6f} |"
        )
    lines += [
        "",
        "![cost vs accuracy](cost_accuracy.png)",
        "",
        f"Intervals: {metrics['bootstrap']}.",
    ]
    if any(str(j.model).startswith("local") for j in config.judges) or str(
        config.generator.model
    ).startswith("local"):
        lines += [
            "",
            "> The embedded local model makes poor probes and poor verdicts: this run shows the pipeline, not a trustworthy measurement.",
        ]
    return "\n".join(lines) + "\n"


def _criterion_tables(tests: dict[str, Any]) -> list[str]:
    """Agent tests: pass rate and consistency per rubric criterion; exact / within one / MAE
    per target score of an ordinal criterion."""
    rows, targets = [], []
    for t, m in tests.items():
        for c, cm in (m.get("criteria") or {}).items():
            rows.append(
                f"| {t} | {c} | {cm['probes']} | {ci(cm.get('pass_rate'))} | "
                f"{ci(cm.get('consistency'))} ({cm['consistency_undefined']} undefined: already at the target, or untouched) |"
            )
        for target, tm in (m.get("by_target") or {}).items():
            targets.append(
                f"| {t} | {target} | {tm['probes']} | {ci(tm['exact'])} | "
                f"{ci(tm['within_one'])} | {ci(tm['mae'])} |"
            )
    out: list[str] = []
    if rows:
        out += [
            "",
            "| test | criterion | probes | pass rate [CI] | verdict moved toward the target [CI] |",
            "|---|---|---|---|---|",
            *rows,
        ]
    if targets:
        out += [
            "",
            "| test | target score | probes | exact [CI] | within one [CI] | MAE [CI] |",
            "|---|---|---|---|---|---|",
            *targets,
        ]
    return out


def write_report(run_dir: Path, config, metrics: dict[str, Any]) -> None:
    heatmap(metrics, run_dir / "heatmap.png")
    cost_plot(metrics, run_dir / "cost_accuracy.png")
    samples_plot(metrics, run_dir / "samples_needed.png")
    (run_dir / "report.md").write_text(render(config, metrics), encoding="utf-8")
