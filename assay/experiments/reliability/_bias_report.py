"""The bias-probe sections of the harness report (position bias, prompt injection, cues,
polarity, samples needed) and the samples-needed plot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.experiments.reliability._results import HarnessSummary, ReliabilityScores
from assay.metrics import MetricValue, fmt, fmt_ci

CUE_TESTS = ("authority", "bandwagon", "distraction")


def _ci(m: Any) -> str:
    return fmt_ci(m, 2) if isinstance(m, MetricValue) else fmt(m, 2)


def _runs(summary: HarnessSummary, test: str) -> list[tuple[str, dict[str, Any]]]:
    """Each judge's metrics on ``test`` (the judges that have it), as one flat dict: the bias
    tables read the envelope and the scoring kind's metrics alike."""
    return [(name, _flat(r.tests[test])) for name, r in summary.judges.items() if test in r.tests]


def _flat(m: ReliabilityScores) -> dict[str, Any]:
    return {"pass_rate": m.pass_rate, "consistency": m.consistency, **m.scoring_metrics}


def bias_lines(summary: HarnessSummary) -> list[str]:
    """Markdown for every bias test the run has (nothing when it has none)."""
    out: list[str] = []
    if summary.pairs:
        c = summary.pairs
        skipped = ", ".join(
            f"{k.removeprefix('skipped_')} {v}"
            for k, v in c.items()
            if v and k.startswith("skipped")
        )
        out += [
            f"Pairs built from the score column: {c['pairs']} of {c['candidates']} candidates "
            f"(skipped: {skipped or 'none'}; left out by the cap: {c['left_out_by_cap']}).",
            "",
        ]
    rows = _runs(summary, "position_bias")
    if rows:
        out += [
            "## Position bias (pairwise, both orders; the pair is the resampling unit)",
            "",
            "| judge | pairs | consistent pairs | flip rate (decisive pairs) | first-position "
            "preference | accuracy, A first | accuracy, B first | accuracy, order-averaged |",
            "|---|---|---|---|---|---|---|---|",
        ]
        out += [
            f"| {n} | {m.get('pairs')} | {_ci(m.get('consistency'))} | {_ci(m.get('flip_rate'))} "
            f"(of {m.get('decisive_pairs')}) | {_ci(m.get('first_position_rate'))} | "
            f"{_ci(m.get('accuracy_ab'))} | {_ci(m.get('accuracy_ba'))} | "
            f"{_ci(m.get('accuracy_order_averaged'))} |"
            for n, m in rows
        ]
        out += ["", "A position-blind judge has first-position preference 0.5 and flip rate 0.", ""]
    rows = _runs(summary, "prompt_injection")
    if rows:
        out += _injection(rows)
    cue_rows = [(t, n, m) for t in CUE_TESTS for n, m in _runs(summary, t)]
    if cue_rows:
        out += [
            "## Cues (content unchanged; the measure is consistency with the own source verdict)",
            "",
            "| test | judge | consistency | changed | toward the cue | away from it | "
            "moved up | moved down |",
            "|---|---|---|---|---|---|---|---|",
        ]
        out += [
            f"| {t} | {n} | {_ci(m.get('consistency'))} | {_ci(m.get('changed'))} | "
            f"{_ci(m.get('toward_cue'))} | {_ci(m.get('away_from_cue'))} | "
            f"{_ci(m.get('moved_up'))} | {_ci(m.get('moved_down'))} |"
            for t, n, m in cue_rows
        ]
        out.append("")
    rows = _runs(summary, "polarity")
    if rows:
        out += _polarity(rows)
    rows = [(n, m) for n, m in _runs(summary, "stochastic_stability") if m.get("samples_needed")]
    if rows:
        out += _samples(rows)
    return out


def _injection(rows) -> list[str]:
    variants = list(dict.fromkeys(v for _, m in rows for v in m["injection_success_by_variant"]))
    positions = list(dict.fromkeys(p for _, m in rows for p in m["injection_success_by_position"]))
    out = [
        "## Prompt injection",
        "",
        "The injected instruction asks for the opposite of the source's reference label. Success "
        "(the verdict moved toward the injected one) is counted only on sources where the "
        "judge's own source verdict equals that reference — so the injection asks for the "
        "opposite of the judge's own verdict; the other sources are left out.",
        "",
        "| judge | success | sources counted | left out | "
        + " | ".join(variants + positions)
        + " |",
        "|---|---|---|---|" + "---|" * (len(variants) + len(positions)),
    ]
    for n, m in rows:
        by_v, by_p = m["injection_success_by_variant"], m["injection_success_by_position"]
        cells = [_ci(by_v.get(v)) for v in variants] + [_ci(by_p.get(p)) for p in positions]
        out.append(
            f"| {n} | {_ci(m.get('injection_success'))} | {m.get('eligible_sources')} | "
            f"{m.get('excluded_sources')} | " + " | ".join(cells) + " |"
        )
    return [*out, ""]


def _polarity(rows) -> list[str]:
    out = [
        "## Polarity (the rubric's question inverted, verdicts mirrored back)",
        "",
        "| judge | mirrored-verdict agreement | contradiction rate | pass rate |",
        "|---|---|---|---|",
    ]
    out += [
        f"| {n} | {_ci(m.get('mirrored_agreement'))} | {_ci(m.get('contradiction_rate'))} | "
        f"{_ci(m.get('pass_rate'))} |"
        for n, m in rows
    ]
    task = rows[0][1].get("inverted_task") or {}
    for key in ("instruction", "rubric"):
        if task.get(key):
            out += ["", f"Inverted {key}:", "", "> " + task[key].replace("\n", "\n> ")]
    return [*out, ""]


def _samples(rows) -> list[str]:
    ms = list(dict.fromkeys(k for _, m in rows for k in m["samples_needed"]))
    out = [
        "## Samples needed (stochastic_stability)",
        "",
        "P(the majority of m samples agrees with the majority of all k), item = unit:",
        "",
        "| judge | " + " | ".join(f"m={k[1:]}" for k in ms) + " | smallest m ≥ 95% | "
        "smallest m with CI low ≥ 95% |",
        "|---|" + "---|" * (len(ms) + 2),
    ]
    out += [
        f"| {n} | "
        + " | ".join(_ci(m["samples_needed"].get(k)) for k in ms)
        + f" | {fmt(m.get('samples_needed_95'))} | {fmt(m.get('samples_needed_95_ci_low'))} |"
        for n, m in rows
    ]
    return [*out, "", "![samples needed](samples_needed.png)", ""]


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
    ax.set_ylabel("P(majority of m = majority of all k)")
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
    return "  " + " · ".join(parts) if parts else ""
