"""A readable Markdown report of an evaluate run, from metrics.json alone."""

from __future__ import annotations

from typing import Any

from assay.evaluation._results import DisagreementRecord, EvaluateSummary
from assay.inputs import left_out_line
from assay.metrics import metric_table
from assay.report import Table, cost_table, markdown
from assay.types import cost_lines, cost_per_point, model_shown

RATES_LEAD = (
    "A rate is a count of its n (a false positive rate's n is the reference's negatives) with "
    "an exact Clopper–Pearson interval; κ has a BCa bootstrap interval over the items, the "
    "other metrics a percentile bootstrap one (each row names its method)."
)


def render_report(
    name: str,
    config: dict[str, Any],
    summary: EvaluateSummary,
    confidence: float,
    *,
    disagreements: list[DisagreementRecord] | None = None,
) -> str:
    judge = config["judge"]
    s = summary.model_dump()
    c = s["counts"]
    lines = [
        f"# assay evaluate — {name}",
        "",
        f"- judge: `{judge.get('name')}` · model `{model_shown(judge)}` · program `{judge.get('program')}` · "
        f"adapter `{judge.get('adapter')}` · temperature {judge.get('temperature')} · config hash `{summary.config_hash}`",
        f"- data: `{config['data']['path']}` ({c['items']} items)",
        f"- judged {c['judged']}, scored {c['scored']}, **unscored {c['unscored']}**"
        + (
            f" ({', '.join(f'{k}: {v}' for k, v in c['unscored_reasons'].items())})"
            if c["unscored"]
            else ""
        )
        + f"; without a reference label {c['without_reference']}; metrics computed on **{c['paired']}** pairs."
        + (
            f" {summary.retried} unscored items were judged again on this run."
            if summary.retried
            else ""
        ),
        *(
            [
                f"- pairs built from the score column: {s['pairs']['pairs']} of "
                f"{s['pairs']['candidates']} candidates; skipped: "
                + ", ".join(f"{k} {v}" for k, v in s["pairs"].items() if k.startswith("skipped"))
                + f"; left out by the cap {s['pairs']['left_out_by_cap']}"
            ]
            if s.get("pairs")
            else []
        ),
        *(
            [f"- {left_out_line(s['left_out'], s.get('errored_samples'))}"]
            if s.get("left_out")
            else []
        ),
        "",
    ]
    tables = evaluate_tables(summary, confidence)
    worst = disagreement_table(summary, disagreements or [])
    lines += markdown([*tables, *([worst] if worst else [])])
    lines += [*markdown([cost_section(summary)]), f"Bootstrap: {summary.bootstrap}"]
    members = judge.get("members") or [judge]  # a panel's verdicts are its members'
    if any(str(m.get("model", "")).startswith("local") for m in members):
        lines += [
            "",
            "> The embedded local model is for trying assay and for smoke tests. Its verdicts are "
            "not trustworthy; use a real model for real measurements.",
        ]
    return "\n".join(lines) + "\n"


def evaluate_tables(summary: EvaluateSummary, confidence: float) -> list[Table]:
    """What the run measured against the reference: agreement, the confusion matrix and, for a
    judge with probabilities, their calibration (with the reliability diagram) — report.md and
    report.html both show these."""
    s = summary.model_dump()
    out = []
    if s["metrics"]:
        out.append(
            metric_table(
                "Agreement with the reference",
                s["metrics"],
                confidence,
                lead=(f"{summary.note} " if summary.note else "") + RATES_LEAD,
            )
        )
        cm = s.get("confusion_matrix")
        if cm:
            out.append(
                Table(
                    "Confusion matrix (rows: reference, columns: judge)",
                    ["reference \\ judge", *map(str, cm["labels"])],
                    [
                        [str(lab), *row]
                        for lab, row in zip(cm["labels"], cm["rows_reference"], strict=True)
                    ],
                )
            )
    else:
        note = summary.note or "No item has both a reference label and a judge score."
        out.append(Table("Agreement with the reference", [], [], lead=note))
    if summary.panel is not None:
        out += panel_tables(summary, confidence)
    if summary.self_preference is not None:
        from assay.evaluation._self_preference import self_preference_tables

        out += self_preference_tables(summary.self_preference, confidence)
    if summary.scale_use is not None:
        from assay.evaluation._scale_use import scale_use_tables

        out += scale_use_tables(summary.scale_use, confidence)
    cal = summary.calibration
    if cal is not None:
        out.append(
            metric_table(
                "Calibration of the judge's probabilities",
                s["calibration"]["metrics"],
                confidence,
                lead=f"{cal.probability} against the reference on {cal.n} items ({cal.bins} "
                f"{cal.strategy.replace('_', '-')} bins; {cal.without_probability} labelled items "
                "had no probability and are left out).",
                figure=("Reliability diagram", "reliability.png"),
            )
        )
        if cal.calibrated:
            out.append(
                metric_table(
                    "Calibration after the judge's calibration map",
                    s["calibration"]["calibrated"],
                    confidence,
                )
            )
    return out


def panel_tables(summary: EvaluateSummary, confidence: float) -> list[Table]:
    """A panel judge's members combined over the run: its aggregate and, under Dawid–Skene,
    each member's accuracy and its sensitivity and specificity (a binary scale) or recall of
    every class, with no reference needed."""
    from assay.evaluation._no_labels import dawid_skene_tables, panel_lead

    panel = summary.panel
    assert panel is not None
    if panel.dawid_skene is None:
        return [Table("The panel's members", [], [], lead=panel_lead(panel))]
    tables = dawid_skene_tables(panel.dawid_skene, confidence, "The panel's members")
    first = tables[0]
    tables[0] = Table(
        first.title, first.columns, first.rows, lead=f"{panel_lead(panel)} {first.lead}"
    )
    return tables


def _excerpt(text: str | None, n: int = 160) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= n else flat[: n - 1] + "…"


SHOWN_DISAGREEMENTS = 10  # pairs the reports list; disagreements.jsonl has every one


def disagreement_table(
    summary: EvaluateSummary,
    disagreements: list[DisagreementRecord],
    shown: int = SHOWN_DISAGREEMENTS,
) -> Table | None:
    """The ``shown`` pairs most distant on the scale (``disagreements``: all of them, worst
    first, as ``disagreements.jsonl`` lists them) with an excerpt of the response and of the
    judge's reasoning; None when judge and reference agree on every pair."""
    worst = disagreements[:shown]
    if not worst:
        return None
    return Table(
        "Where the judge and the reference disagree most",
        ["item", "reference", "judge", "distance", "response", "judge's reasoning"],
        [
            [
                d.id,
                d.reference_label or d.reference,
                d.judge_label or d.judge,
                f"{d.distance:g}",
                _excerpt(d.response),
                _excerpt(d.reasoning),
            ]
            for d in worst
        ],
        lead=f"{summary.disagreements} of {summary.counts.paired} pairs disagree; the "
        f"{len(worst)} most distant on the scale (all of them: `disagreements.jsonl`):",
    )


def cost_section(summary: EvaluateSummary) -> Table:
    """The cost table (report.md and report.html): the judge's cost of the work, what the
    server answered and what the LM cache gave; below it what the run paid (its call ledger),
    the cost per accuracy point (of the work), latency and rate limits."""
    u = summary.usage
    notes = cost_lines(u, summary.spend)[1:]  # the table says the first: the cost of the work
    notes.append(f"judgments taken whole from the LM cache: {u.cached_judgments}")
    if summary.work.unpriced_calls:
        notes.append(
            f"**{summary.work.unpriced_calls} answers have no known price** (the model is not "
            "in LiteLLM's price map): their cost is not included; set `judge.price`"
        )
    notes.append(
        f"cost per accuracy point (of the work): {cost_per_point(u.cost_per_accuracy_point_usd, summary.work)}; "
        f"mean latency {u.mean_latency_s:.3f} s"
    )
    return cost_table({"judge": u}, note="; ".join(notes) + ".")
