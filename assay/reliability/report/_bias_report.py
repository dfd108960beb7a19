"""The scoring kinds' sections of the harness report (each kind's own ``section``: position
bias, prompt injection, cues, polarity, samples needed...), the console headline of a test's
kind metrics and the samples-needed plot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.metrics import fmt
from assay.reliability._results import HarnessSummary, ReliabilityScores
from assay.reliability.scoring import scoring_kinds, section_rows
from assay.reliability.scoring.stability import needed
from assay.report import Table

__all__ = ["bias_tables", "headline", "needed", "placebo_table", "samples_plot"]


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
    placebo = placebo_table(summary)
    return out + ([placebo] if placebo else [])


def placebo_table(summary: HarnessSummary) -> Table | None:
    """Every bias test's effect against its placebo, per judge and cue cell (None: no bias
    test in the run)."""
    rows = []
    for name, r in summary.judges.items():
        for t, m in r.tests.items():
            if m.placebo is None:
                continue
            for cell, e in m.placebo.effects.items():
                rows.append(
                    [
                        t,
                        name,
                        cell,
                        f"{e.n} (+{e.n_at_cue} at the cue)",
                        effect_cell(e),
                        f"{e.cue_flips} / {e.placebo_flips}",
                        f"{fmt(e.directional_share, 2)} / {fmt(e.placebo_directional_share, 2)}",
                        p_cell(e.p_value),
                        p_cell(e.p_adjusted),
                        {True: "yes", False: "no"}.get(e.flagged, "—")
                        + (f" — {e.note}" if e.note and e.effect == e.effect else ""),
                    ]
                )
            pl = m.placebo
            if pl.left_out or pl.unscored:
                why = ", ".join(f"{k} {n}" for k, n in pl.unscored_reasons.items())
                left = f"{pl.left_out} cue verdicts without a scored source, cue or placebo "
                left += f"verdict; placebo unscored {pl.unscored} of {pl.judged}"
                rows.append([t, name, "(left out)", left + (f" ({why})" if why else "")])
                rows[-1] += [""] * 6
    if not rows:
        return None
    return Table(
        "Effects against a placebo (the bias tests)",
        [
            "test",
            "judge",
            "cue",
            "sources that could move",
            "effect [CI]",
            "flips toward the cue: cue / placebo",
            "directional share: cue / placebo",
            "p",
            "p adjusted (BH)",
            "flagged",
        ],
        rows,
        lead="Each source is judged again unchanged, with the judge's own sampling and the LM "
        "cache bypassed (the placebo). Effect = P(flip toward the cue under the cue) − P(flip "
        "toward it on the placebo), over the sources whose verdict was not already the cue's; "
        "a cue that claims no verdict counts any change. Newcombe's paired interval, exact "
        "one-sided McNemar p-value, Benjamini–Hochberg over every bias test × judge of the run. "
        "The swap of position_bias has no direction known in advance: its effect is signed "
        "(+ the answer shown first favoured, − the one shown second), over every pair, tested "
        "two-sided, and its flips are toward the favoured position.",
        note=f"Flagged: adjusted p ≤ {fmt(summary.fdr, 2)} and the interval above 0 (a "
        "two-sided effect: on either side of 0) — both; where only one holds, the flagged "
        "column says which. An interval around 0 says the cue moved verdicts no more than "
        "asking again does.",
    )


def p_cell(p: float | None) -> str:
    """A p-value: four decimals, or two significant digits below 0.0001."""
    return f"{p:.1e}" if p is not None and 0 < p < 1e-4 else fmt(p, 4)


def effect_cell(e: Any) -> str:
    """An effect against the placebo with its interval, signed, and for a two-sided effect the
    pole it favours."""
    if e.effect != e.effect:
        return "undefined"
    favoured = f" ({e.favoured} favoured)" if e.favoured else ""
    return f"{e.effect:+.2f} [{e.ci_low:+.2f}, {e.ci_high:+.2f}]{favoured}"


def placebo_headline(m: ReliabilityScores) -> str:
    """A bias test's effect against its placebo on the console: the cell with the smallest
    adjusted p-value (the only one for a test of one cue), and whether any cell is flagged."""
    effects = m.placebo.effects if m.placebo else {}
    defined = {c: e for c, e in effects.items() if e.p_value == e.p_value}
    if not defined:
        return ""
    cell, e = min(defined.items(), key=lambda ce: (ce[1].p_adjusted or ce[1].p_value, ce[0]))
    where = f" ({cell}, of {len(effects)})" if len(effects) > 1 else ""
    flag = " FLAGGED" if m.placebo and m.placebo.flagged else ""
    said = f" ({e.note})" if e.note else ""  # an interval and a test that disagree
    return f"vs placebo {effect_cell(e)}{where}{flag}{said}"


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
    parts += [p for p in [placebo_headline(m)] if p]
    return "  " + " · ".join(parts) if parts else ""
