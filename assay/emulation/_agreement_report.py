"""The readable report of ``assay toolemu agreement``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assay.emulation._annotations import FAILURE_MAX_SAFETY
from assay.metrics import KAPPAS, fmt_ci, metrics_table


def _with_ci(m: Mapping[str, Any]) -> str:
    return fmt_ci(m)


def render_agreement(report: Mapping[str, Any]) -> str:
    """The report as readable Markdown-style text."""
    conf = report["confidence"]
    tr, an, mj = report["trajectories"], report["annotations"], report["majority"]
    lines = [
        f"ToolEmu agreement — {tr['annotated']} of {tr['total']} trajectories annotated "
        f"({an['rows']} rows by {len(an['annotators'])} annotators: {', '.join(an['annotators'])}; "
        f"{an['true_failure_derived']} true_failure values derived as safety <= {FAILURE_MAX_SAFETY})",
        f"majority ties broken at random with seed {mj['seed']}: {mj['tie_count']} "
        f"({', '.join(f'{k} {v}' for k, v in mj['ties'].items())})",
    ]
    for t in mj["tie_details"]:
        lines.append(f"  - {t['trajectory']} {t['field']}: {t['candidates']} → {t['chosen']}")
    for field in ("safety", "helpfulness"):
        ev = report["evaluator_vs_human"][field]
        lines += ["", f"## {field}: evaluator vs human majority"]
        if ev.get("metrics"):
            lines.append(
                f"pairs {ev['n']} · evaluator unscored {ev['unscored']} · not evaluated "
                f"{ev['not_evaluated']}"
            )
            lines.append(metrics_table(ev["metrics"], conf))
        else:
            lines.append(ev.get("note", "no pair"))
        ia = report["inter_annotator"][field]
        lines += ["", f"## {field}: human inter-annotator κ"]
        if ia.get("mean"):
            lines.append(
                metrics_table({f"mean pairwise {k}": v for k, v in ia["mean"].items()}, conf)
            )
        lines += ["", "| pair | n | " + " | ".join(KAPPAS) + " |", "|---" * (len(KAPPAS) + 2) + "|"]
        for pair in ia["pairs"]:
            cells = [_with_ci(pair["metrics"][k]) if pair["metrics"] else "—" for k in KAPPAS]
            lines.append(
                f"| {' vs '.join(pair['annotators'])} | {pair['n']} | " + " | ".join(cells) + " |"
            )
        if ia.get("note"):
            lines.append(ia["note"])
        lines += _all_annotators(ia.get("all_annotators"), conf)
    em, fa = report["emulation"], report["failures"]
    lines += [
        "",
        "## emulation and failures",
        f"emulations free of critical issues: {_with_ci(em['free_of_critical_issues'])} "
        f"({em['critical']} critical of {em['n']})",
    ]
    if "identified_failure_precision" in fa:
        lines.append(
            f"{fa['flagged_rule']}; {fa['true_failure_rule']}. "
            f"Trajectories {fa['n']}, flagged {fa['flagged']}, true failures {fa['true_failures']} "
            f"({fa['excluded_critical']} more excluded for critical emulation issues), "
            f"true and flagged {fa['true_and_flagged']}"
        )
        lines.append(
            metrics_table(
                {k: fa[k] for k in ("identified_failure_precision", "true_failure_incidence")}, conf
            )
        )
    else:
        lines.append(fa.get("note", ""))
    return "\n".join(lines)


def _all_annotators(block: Mapping[str, Any] | None, conf: float) -> list[str]:
    """Every annotator at once (Fleiss, Krippendorff) and the Alt-Test of the evaluator."""
    if not block:
        return []
    lines = ["", f"all {len(block['annotators'])} annotators at once:"]
    lines.append(metrics_table(block["agreement"], conf))
    t = block.get("alt_test")
    if t:
        verdict = "can stand in for an annotator" if t["passed"] else "cannot stand in yet"
        lines.append(
            f"Alt-Test of the evaluator (epsilon {t['epsilon']}): winning rate "
            f"{t['winning_rate']:.2f}, advantage probability {t['advantage_probability']:.2f} "
            f"— {verdict}"
        )
    if block.get("note"):
        lines.append(block["note"])
    return lines
