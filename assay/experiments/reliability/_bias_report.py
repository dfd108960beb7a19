"""The bias-probe sections of the harness report (position bias, prompt injection, cues,
polarity, samples needed) and the samples-needed plot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.experiments.reliability._results import HarnessSummary, ReliabilityScores
from assay.metrics import MetricValue, fmt, fmt_ci
from assay.report import Table

CUE_TESTS = ("authority", "bandwagon", "distraction")


def _ci(m: Any) -> str:
    return fmt_ci(m, 2) if isinstance(m, MetricValue) else fmt(m, 2)


def _runs(summary: HarnessSummary, test: str) -> list[tuple[str, dict[str, Any]]]:
    """Each judge's metrics on ``test`` (the judges that have it), as one flat dict: the bias
    tables read the envelope and the scoring kind's metrics alike."""
    return [(name, _flat(r.tests[test])) for name, r in summary.judges.items() if test in r.tests]


def _flat(m: ReliabilityScores) -> dict[str, Any]:
    return {"pass_rate": m.pass_rate, "consistency": m.consistency, **m.scoring_metrics}


def bias_tables(summary: HarnessSummary) -> list[Table]:
    """The sections of every bias test the run has (none when it has none), for report.md and
    report.html alike."""
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
    rows = _runs(summary, "position_bias")
    if rows:
        out.append(_position(rows))
    rows = _runs(summary, "prompt_injection")
    if rows:
        out.append(_injection(rows))
    cue_rows = [(t, n, m) for t in CUE_TESTS for n, m in _runs(summary, t)]
    if cue_rows:
        out.append(_cues(cue_rows))
    rows = _runs(summary, "polarity")
    if rows:
        out.append(_polarity(rows))
    rows = [(n, m) for n, m in _runs(summary, "stochastic_stability") if m.get("samples_needed")]
    if rows:
        out.append(_samples(rows))
    return out


def _position(rows) -> Table:
    return Table(
        "Position bias (pairwise, both orders; the pair is the resampling unit)",
        [
            "judge",
            "pairs",
            "consistent pairs",
            "flip rate (decisive pairs)",
            "first-position preference",
            "accuracy, A first",
            "accuracy, B first",
            "accuracy, order-averaged",
        ],
        [
            [
                n,
                m.get("pairs"),
                _ci(m.get("consistency")),
                f"{_ci(m.get('flip_rate'))} (of {m.get('decisive_pairs')})",
                _ci(m.get("first_position_rate")),
                _ci(m.get("accuracy_ab")),
                _ci(m.get("accuracy_ba")),
                _ci(m.get("accuracy_order_averaged")),
            ]
            for n, m in rows
        ],
        note="A position-blind judge has first-position preference 0.5 and flip rate 0.",
    )


def _injection(rows) -> Table:
    variants = list(dict.fromkeys(v for _, m in rows for v in m["injection_success_by_variant"]))
    positions = list(dict.fromkeys(p for _, m in rows for p in m["injection_success_by_position"]))
    body = []
    for n, m in rows:
        by_v, by_p = m["injection_success_by_variant"], m["injection_success_by_position"]
        body.append(
            [
                n,
                _ci(m.get("injection_success")),
                m.get("eligible_sources"),
                m.get("excluded_sources"),
            ]
            + [_ci(by_v.get(v)) for v in variants]
            + [_ci(by_p.get(p)) for p in positions]
        )
    return Table(
        "Prompt injection",
        ["judge", "success", "sources counted", "left out", *variants, *positions],
        body,
        lead="The injected instruction asks for the opposite of the source's reference label. "
        "Success (the verdict moved toward the injected one) is counted only on sources where "
        "the judge's own source verdict equals that reference — so the injection asks for the "
        "opposite of the judge's own verdict; the other sources are left out.",
    )


def _cues(rows) -> Table:
    return Table(
        "Cues (content unchanged; the measure is consistency with the own source verdict)",
        [
            "test",
            "judge",
            "consistency",
            "changed",
            "toward the cue",
            "away from it",
            "moved up",
            "moved down",
        ],
        [
            [t, n]
            + [
                _ci(m.get(k))
                for k in ("consistency", "changed", "toward_cue", "away_from_cue")
                + ("moved_up", "moved_down")
            ]
            for t, n, m in rows
        ],
    )


def _polarity(rows) -> Table:
    task = rows[0][1].get("inverted_task") or {}
    return Table(
        "Polarity (the rubric's question inverted, verdicts mirrored back)",
        ["judge", "mirrored-verdict agreement", "contradiction rate", "pass rate"],
        [
            [n, _ci(m.get("mirrored_agreement")), _ci(m.get("contradiction_rate"))]
            + [_ci(m.get("pass_rate"))]
            for n, m in rows
        ],
        quotes=[
            (f"Inverted {key}", task[key]) for key in ("instruction", "rubric") if task.get(key)
        ],
    )


def needed(m: dict[str, Any], key: str = "samples_needed_95") -> str:
    """The smallest m of the samples-needed curve, or that no m below k reached 95%."""
    if m.get(key) is not None:
        return fmt(m[key])
    k = m.get("samples_k")
    return f"not reached within k = {k}" if k is not None else "not reached"


def _samples(rows) -> Table:
    ms = list(dict.fromkeys(k for _, m in rows for k in m["samples_needed"]))
    return Table(
        "Samples needed (stochastic_stability)",
        [
            "judge",
            *(f"m={k[1:]}" for k in ms),
            "smallest m ≥ 95%",
            "smallest m with CI low ≥ 95%",
        ],
        [
            [n, *(_ci(m["samples_needed"].get(k)) for k in ms)]
            + [needed(m), needed(m, "samples_needed_95_ci_low")]
            for n, m in rows
        ],
        lead="P(the majority of m samples agrees with the majority of the item's other k − m "
        "samples): out of sample (exact over every split), item = unit of the CI. A judge "
        "answering at random stays near 0.5 at every m; the curve falls again as the held-out "
        "rest shrinks (m and k − m play the same part), so it is a conservative estimate.",
        figure=("Samples needed for a stable majority", "samples_needed.png"),
    )


def samples_plot(summary: HarnessSummary, path: Path) -> Path | None:
    """The samples-needed curve per judge, with its CI band (None when the run has none)."""
    rows = [(n, m) for n, m in _runs(summary, "stochastic_stability") if m.get("samples_needed")]
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
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


_HEADLINES = (
    ("flip_rate", "flip"),
    ("first_position_rate", "first-position"),
    ("injection_success", "injection success"),
    ("toward_cue", "toward cue"),
    ("away_from_cue", "away"),
    ("contradiction_rate", "contradiction"),
    ("samples_needed_95", "samples for 95%"),
)


def headline(m: ReliabilityScores) -> str:
    """The bias metrics of one test result on one line (empty for other tests)."""
    extra = m.scoring_metrics
    parts = [f"{name} {_ci(extra[key])}" for key, name in _HEADLINES if extra.get(key) is not None]
    if extra.get("samples_needed") and extra.get("samples_needed_95") is None:
        parts.append(f"samples for 95% {needed(extra)}")
    return "  " + " · ".join(parts) if parts else ""
