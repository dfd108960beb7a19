"""The scoring kinds' sections of the harness report (each kind's own ``section``: position
bias, prompt injection, cues, polarity, samples needed...), the console headline of a test's
kind metrics and the samples-needed plot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.reliability._results import HarnessSummary, ReliabilityScores
from assay.reliability.scoring import scoring_kinds, section_rows
from assay.reliability.scoring.stability import needed
from assay.report import Table

__all__ = ["bias_tables", "headline", "needed", "samples_plot"]


def bias_tables(summary: HarnessSummary) -> list[Table]:
    """The sections of every scoring kind the run has (none when it has none), for report.md
    and report.html alike."""
    out: list[Table] = []
    if summary.pairs:
        c = summary.pairs
        skipped = ", ".join(
            f"{k.removeprefix('skipped_')} {v}"
            for k, v in c.items()
            if v and k.startswith("skipped")
        )
        out.append(
            Table(
                "Pairs built from the score column",
                [],
                [],
                lead=f"{c['pairs']} of {c['candidates']} candidates (skipped: "
                f"{skipped or 'none'}; left out by the cap: {c['left_out_by_cap']}).",
            )
        )
    for kind in scoring_kinds():
        rows = section_rows(summary, kind.name)
        table = kind.section(rows) if rows else None
        if table is not None:
            out.append(table)
    return out


def samples_plot(summary: HarnessSummary, path: Path) -> Path | None:
    """The samples-needed curve per judge, with its CI band (None when the run has none)."""
    rows = [(n, m) for _, n, m in section_rows(summary, "stability") if m.get("samples_needed")]
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4))
    for name, m in rows:
        pts = [(int(k[1:]), v) for k, v in m["samples_needed"].items() if v]
        xs = [x for x, _ in pts]
        ax.plot(xs, [v.value for _, v in pts], marker="o", label=name)
        lo = [v.ci_low if v.ci_low is not None else v.value for _, v in pts]
        hi = [v.ci_high if v.ci_high is not None else v.value for _, v in pts]
        ax.fill_between(xs, lo, hi, alpha=0.15)
    ax.axhline(0.95, color="grey", linestyle="--", linewidth=1)
    ax.set_xlabel("samples in the vote (m)")
    ax.set_ylabel("P(majority of m = majority of the other k − m)")
    ax.set_ylim(0, 1.05)
    ax.set_title("Samples needed for a stable majority")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")  # no label cut at the edge
    plt.close(fig)
    return path


def headline(m: ReliabilityScores) -> str:
    """The kind metrics of one test result on one line (empty when it has none): every scoring
    kind's headlines the result has, in section order, each once."""
    extra: dict[str, Any] = m.scoring_metrics
    parts: list[str] = []
    for kind in scoring_kinds():
        parts += [p for p in kind.headline(extra) if p not in parts]
    return "  " + " · ".join(parts) if parts else ""
