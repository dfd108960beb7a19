"""Self-preference in a run: the judge's verdicts on its own model family's outputs against the
others', adjusted for the human reference where there is one, as reported (metrics.json,
report.md and report.html, MLflow, the console)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

from assay.evaluation._results import SelfPreferenceReport
from assay.lm import model_family
from assay.metrics import MetricValue, fmt, fmt_ci, fmt_level, metric_table
from assay.report import Table


def self_preference_report(
    ids: Sequence[str],
    scores: Sequence[int | None],
    references: Sequence[int | None],
    generators: Mapping[str, object],
    judge_family: str | None,
    *,
    source: str,
    confidence: float,
) -> SelfPreferenceReport:
    """Self-preference over a run's judged items (``ids`` with their ``scores`` and
    ``references``, None where there is none): each item's generator (a model string or a
    family, from ``generators``; missing or empty: left out and counted) is read as a family
    and compared with ``judge_family``. Items the judge left unscored are left out (the run's
    counts show them). With no reference on any item the raw difference is reported."""
    from assay.metrics import self_preference

    if judge_family is None:
        return SelfPreferenceReport(
            judge_family="?",
            source=source,
            families={},
            note="the panel's members are of several model families: set judge.family",
        )
    rows, without = [], 0
    for i, s, r in zip(ids, scores, references, strict=True):
        generator = generators.get(i)
        if generator is None or str(generator).strip().strip("/") == "":  # no model named
            without += 1
        elif s is not None:
            rows.append((model_family(str(generator)), s, r))
    families = dict(sorted(Counter(f for f, _, _ in rows).items()))
    report = SelfPreferenceReport(
        judge_family=judge_family, source=source, families=families, without_generator=without
    )
    labelled = any(r is not None for _, _, r in rows)
    try:
        figures = self_preference(
            [s for _, s, _ in rows],
            [f for f, _, _ in rows],
            judge_family,
            reference=[math.nan if r is None else r for _, _, r in rows] if labelled else None,
            confidence=confidence,
        )
    except ValueError as exc:  # too few items of one side: said, not computed
        return report.model_copy(update={"note": f"not computed: {exc}"})
    flagged = not math.isnan(figures.ci_low) and figures.ci_low > 0
    return report.model_copy(update={"figures": figures, "flagged": flagged})


def difference(report: SelfPreferenceReport) -> MetricValue | None:
    """Δ as a metric with its Welch interval (None when it was not computed)."""
    f = report.figures
    if f is None:
        return None
    has_ci = not math.isnan(f.ci_low)
    return MetricValue(
        value=f.difference,
        ci_low=f.ci_low if has_ci else None,
        ci_high=f.ci_high if has_ci else None,
        n=f.n_own + f.n_other,
        ci_method=f.interval if has_ci else None,
        note=f.note,
    )


def lead(report: SelfPreferenceReport) -> str:
    """What was compared, and the verdict: flagged or not."""
    counts = ", ".join(f"{k} {v}" for k, v in report.families.items()) or "none"
    text = (
        f"The judge's family is `{report.judge_family}`; each item's generator is {report.source} "
        f"(scored items per family: {counts}"
        + (
            f"; {report.without_generator} items without a generator are left out"
            if report.without_generator
            else ""
        )
        + ")."
    )
    f = report.figures
    if f is None:
        return f"{text} {report.note}." if report.note else text
    what = (
        "Δ = mean(judge − reference | own family) − mean(judge − reference | other families)"
        if f.adjusted
        else "Δ = mean(judge | own family) − mean(judge | other families), raw scores"
    )
    if report.flagged:
        verdict = (
            "**Flagged**: the interval lies above 0, the judge scores its own family's outputs "
            "higher than the others'"
            + (" beyond what the reference says of them." if f.adjusted else ".")
        )
    elif math.isnan(f.ci_low):
        verdict = f"Not flagged: {f.note or 'no interval'}."
    else:
        verdict = "Not flagged: no preference for its own family detected at this sample size."
    return f"{text} {what}. {verdict}"


def self_preference_tables(report: SelfPreferenceReport, confidence: float) -> list[Table]:
    """report.md and report.html: Δ with its interval and test, then each group's means."""
    delta = difference(report)
    if delta is None:
        return [Table("Self-preference", [], [], lead=lead(report))]
    f = report.figures
    assert f is not None
    table = metric_table("Self-preference", {"self_preference Δ": delta.to_dict()}, confidence)
    note = (
        f"{f.test}: p {_p(f.p_value)} (H0: Δ = 0), Welch df {fmt(f.df, 1)}"
        + (
            f"; {f.n_without_reference} items without a reference left out"
            if f.n_without_reference
            else ""
        )
        + "."
    )
    groups = Table(
        "Self-preference: the judge's own family's items and the others'",
        ["", f"own family ({f.judge_family})", "other families"],
        [
            ["judge's mean score", fmt(f.judge_own), fmt(f.judge_other)],
            *(
                [["reference's mean score", fmt(f.reference_own), fmt(f.reference_other)]]
                if f.adjusted
                else []
            ),
            ["items", f.n_own, f.n_other],
        ],
    )
    return [Table(table.title, table.columns, table.rows, lead=lead(report), note=note), groups]


def _p(p: float) -> str:
    """A p-value as shown: ``= 0.0123``, or ``< 0.0001``."""
    return "< 0.0001" if p < 1e-4 else f"= {fmt(p, 4)}"


def self_preference_console(report: SelfPreferenceReport, confidence: float) -> str:
    """One line for the console."""
    delta = difference(report)
    if delta is None:
        return f"self-preference: {lead(report)}"
    f = report.figures
    assert f is not None
    flag = "FLAGGED" if report.flagged else "not flagged"
    against = "against the reference" if f.adjusted else "raw scores"
    return (
        f"self-preference of family {report.judge_family}: Δ {fmt_ci(delta)} "
        f"({fmt_level(confidence)} {f.interval}, {against}; two-sided p {_p(f.p_value)}) — {flag}"
        + (f" ({f.note})" if f.note else "")
    )


def self_preference_metrics(report: SelfPreferenceReport) -> dict[str, object]:
    """MLflow: ``difference`` (with its interval), ``p_value``, ``flagged``, ``n_own`` and
    ``n_other``, ``n_without_generator``."""
    out: dict[str, object] = {"n_without_generator": report.without_generator}
    delta = difference(report)
    if delta is None:
        return out
    f = report.figures
    assert f is not None
    return {
        **out,
        "difference": delta.to_dict(),
        "p_value": f.p_value,
        "flagged": float(report.flagged),
        "n_own": f.n_own,
        "n_other": f.n_other,
    }
