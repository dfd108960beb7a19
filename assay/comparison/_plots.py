"""The Pareto plot (cost against the metric) and the tests × judges heatmap of a comparison."""

from __future__ import annotations

from pathlib import Path

from assay.comparison._results import LeaderboardRow
from assay.comparison._tables import PAID_LABELS, labels_of
from assay.metrics import direction


def pareto_plot(
    points: list[tuple[str, float, float, bool]],
    path: Path,
    *,
    xlabel: str,
    ylabel: str,
    title: str,
) -> Path:
    """Each judge's cost of the work against a metric, one labelled point per judge; the
    Pareto-optimal ones filled and joined by the front. The x-axis label is also the PNG's
    ``Description``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.2))
    for label, cost, value, best in points:
        ax.scatter(
            cost,
            value,
            s=60 if best else 40,
            facecolors="tab:green" if best else "none",
            edgecolors="tab:green" if best else "tab:gray",
            zorder=3,
        )
        ax.annotate(label, (cost, value), fontsize=8, xytext=(4, 4), textcoords="offset points")
    front = sorted((c, v) for _, c, v, best in points if best)
    if len(front) > 1:
        ax.step(*zip(*front, strict=True), where="post", color="tab:green", alpha=0.5)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Description": xlabel}, bbox_inches="tight")
    plt.close(fig)
    return path


def write_plots(
    runs: list, rows: list[LeaderboardRow], metric: str, folder: Path
) -> dict[str, Path]:
    from assay.reliability import heatmap

    files: dict[str, Path] = {}
    for stale in ("pareto.png", "heatmap.png"):  # a previous comparison's plots in this folder
        (folder / stale).unlink(missing_ok=True)
    points = [(r.name, r.paid, r.value, bool(r.pareto)) for r in rows if r.pareto is not None]
    if points:
        files["pareto"] = pareto_plot(
            points,
            folder / "pareto.png",
            xlabel=PAID_LABELS[rows[0].paid_in],
            ylabel=f"{metric} ({direction(metric)})",
            title="Cost vs metric (filled: Pareto-optimal)",
        )
    rank = {r.run_id: r.rank for r in rows}
    harness = sorted(
        (r for r in runs if r.data.tags.get("assay.command") == "harness"),
        key=lambda r: rank[r.info.run_id],
    )
    if harness:
        # The harness report's heatmap, fed with the per-judge runs' logged pass rates.
        labels = labels_of(harness)
        tests = sorted(
            {
                k.removesuffix(".pass_rate")
                for r in harness
                for k in r.data.metrics
                if k.endswith(".pass_rate")
            }
        )
        rates = {
            labels[r.info.run_id]: {t: r.data.metrics.get(f"{t}.pass_rate") for t in tests}
            for r in harness
        }
        files["heatmap"] = heatmap(rates, tests, folder / "heatmap.png")
    return files
