"""The readable report of ``assay toolemu agreement``."""

from __future__ import annotations

from assay.emulation._agreement_results import (
    AnnotatorsAgreement,
    EvaluatorVsHuman,
    ToolEmuAgreement,
)
from assay.emulation._annotations import FAILURE_MAX_SAFETY
from assay.evaluation import AnnotatorsReport, alt_test_left_out
from assay.metrics import KAPPAS, fmt_ci, metrics_table


def render_agreement(report: ToolEmuAgreement) -> str:
    """The report as readable Markdown-style text."""
    conf = report.confidence
    tr, an, mj = report.trajectories, report.annotations, report.majority
    lines = [
        f"ToolEmu agreement — {tr.annotated} of {tr.total} trajectories annotated "
        f"({an.rows} rows by {len(an.annotators)} annotators: {', '.join(an.annotators)}; "
        f"{an.true_failure_derived} true_failure values derived as safety <= {FAILURE_MAX_SAFETY})",
        f"majority ties broken at random with seed {mj.seed}: {mj.tie_count} "
        f"({', '.join(f'{k} {v}' for k, v in mj.ties.items())})",
    ]
    for t in mj.tie_details:
        lines.append(f"  - {t.trajectory} {t.field}: {t.candidates} → {t.chosen}")
    for field in ("safety", "helpfulness"):
        ev = report.evaluator_vs_human[field]
        lines += ["", f"## {field}: evaluator vs human majority"]
        if isinstance(ev, EvaluatorVsHuman) and ev.metrics:
            lines.append(
                f"pairs {ev.n} · evaluator unscored {ev.unscored} · not evaluated "
                f"{ev.not_evaluated}"
            )
            lines.append(metrics_table(ev.metrics, conf))
        else:
            lines.append(ev.note or "no pair")
        lines += _inter_annotator(field, report.inter_annotator[field], conf)
    em, fa = report.emulation, report.failures
    lines += [
        "",
        "## emulation and failures",
        f"emulations free of critical issues: {fmt_ci(em.free_of_critical_issues)} "
        f"({em.critical} critical of {em.n})",
    ]
    if fa.identified_failure_precision is not None and fa.true_failure_incidence is not None:
        lines.append(
            f"{fa.flagged_rule}; {fa.true_failure_rule}. "
            f"Trajectories {fa.n}, flagged {fa.flagged}, true failures {fa.true_failures} "
            f"({fa.excluded_critical} more excluded for critical emulation issues), "
            f"true and flagged {fa.true_and_flagged}"
            + (
                f"; {fa.without_score} annotated left out: no safety score"
                if fa.without_score
                else ""
            )
        )
        lines.append(
            metrics_table(
                {
                    "identified_failure_precision": fa.identified_failure_precision,
                    "true_failure_incidence": fa.true_failure_incidence,
                },
                conf,
            )
        )
    else:
        lines.append(fa.note or "")
    return "\n".join(lines)


def _inter_annotator(field: str, ia: AnnotatorsAgreement, conf: float) -> list[str]:
    """The annotators' κ pair by pair, their mean, and every annotator at once."""
    lines = ["", f"## {field}: human inter-annotator κ"]
    if ia.mean:
        lines.append(metrics_table({f"mean pairwise {k}": v for k, v in ia.mean.items()}, conf))
    lines += ["", "| pair | n | " + " | ".join(KAPPAS) + " |", "|---" * (len(KAPPAS) + 2) + "|"]
    for pair in ia.pairs:
        cells = [fmt_ci(pair.metrics[k]) if pair.metrics else "—" for k in KAPPAS]
        lines.append(f"| {' vs '.join(pair.annotators)} | {pair.n} | " + " | ".join(cells) + " |")
    if ia.note:
        lines.append(ia.note)
    return lines + _all_annotators(ia.all_annotators, conf)


def _all_annotators(block: AnnotatorsReport, conf: float) -> list[str]:
    """Every annotator at once (Fleiss, Krippendorff) and the Alt-Test of the evaluator."""
    lines = ["", f"all {len(block.annotators)} annotators at once:"]
    lines.append(metrics_table(block.agreement, conf))
    t = block.alt_test
    if t:
        verdict = "can stand in for an annotator" if t.passed else "cannot stand in yet"
        lines.append(
            f"Alt-Test of the evaluator (epsilon {t.epsilon}): winning rate "
            f"{t.winning_rate:.2f}, advantage probability {t.advantage_probability:.2f} "
            f"— {verdict}" + ("" if t.note is None else f" ({t.note})")
        )
        lines += alt_test_left_out(t, block.items)
    if block.note:
        lines.append(block.note)
    return lines
