"""What an estimate run says, in words and tables: the headline lines the console, report.md and
report.html open with (the estimate, its interval, the human-only interval, the effective
labels, the method, the prediction and the assumption), then the table of every estimator, the
checks of the sample, the strata, the label plan and the queue — one :class:`Report`, rendered
both ways."""

from __future__ import annotations

from pathlib import Path

from assay.decisions._estimate import ITEMS, EstimateSummary
from assay.metrics import (
    METHOD_NAMES,
    MeanEstimate,
    estimates_table,
    fmt,
    rough_note,
)
from assay.report import Block, Items, Report, Row, Table, report_markdown


def _interval(e: MeanEstimate) -> str:
    return f"{fmt(e.value)} [{fmt(e.ci_low)}, {fmt(e.ci_high)}]"


def _level(s: EstimateSummary) -> str:
    return f"{100 * (1 - s.alpha):g}% CI"


def _prediction(s: EstimateSummary) -> str:
    """The judge's prediction in words: "the judge's probability of verdict True (token
    probabilities)", "the judge's 0/1 verdict"."""
    if s.prediction == "verdict":
        return "the judge's 0/1 verdict"
    if s.prediction == "score":
        return "the judge's score"
    if s.prediction == "probability":
        return f"the judge's probability of {s.target} ({s.prediction_source})"
    return f"the judge's {s.prediction} ({s.prediction_source})"


def estimate_words(s: EstimateSummary) -> list[str]:
    """The estimate said in words: what, the headline with its interval and method, the
    prediction it used, the human labels alone beside it and what the judge was worth in labels,
    and the assumption."""
    what = "the mean score" if s.mean_score else f"the rate of {s.target}"
    validation = f", {s.n_validation} of them the --validation run's" if s.n_validation else ""
    items = f"{s.n_items} items" + (
        f" ({s.n_labelled} with a human label{validation}, {s.n_unlabelled} without)"
        if s.n_unlabelled
        else f", every one with a human label{validation}"
    )
    lines = [f"{what} over {items}, judged by {s.judge}"]
    best = s.best
    if best is None:
        lines.append("no estimate yet: " + "; ".join(s.warnings))
        return lines
    method = METHOD_NAMES[best.method]
    if best.std_error is not None and not best.std_error > 0:  # no interval to lead with
        lines.append(
            f"estimate ({method}): {fmt(best.value)}, with no {_level(s)}: its standard error "
            "is 0 (every label the same), so its interval of zero width is none — label more "
            "items"
        )
    else:
        lines.append(f"estimate ({method}): {_interval(best)}, {_level(s)}")
        if best.std_error is not None and (
            rough := rough_note(
                best.n_labelled, best.strata, best.rarer_class_labels, best.labelled_units
            )
        ):
            lines.append(f"note: {rough}")
    if best.method != "human_only":
        lines.append(
            f"prediction: {_prediction(s)} on every item, corrected by its errors on the "
            "labelled ones" + (f" (λ = {fmt(best.lam, 2)})" if best.lam is not None else "")
        )
        human = s.of("human_only")
        if human is not None:
            worth = (
                f"; {method}'s {best.n_labelled} human labels are worth "
                f"{best.effective_labels:.0f} (effective labels)"
                if best.effective_labels is not None
                else ""
            )
            lines.append(f"the human labels alone: {_interval(human)}{worth}")
    lines.append(f"assumes: {s.sampling}")
    return lines


def estimate_headline(s: EstimateSummary) -> list[str]:
    """The lines the console and the report open with: the estimate in words, then every
    warning."""
    return estimate_words(s) + [f"warning: {w}" for w in s.warnings]


def _checks_table(s: EstimateSummary) -> Table:
    return Table(
        "Is the labelled sample like the rest?",
        [
            "feature",
            "test",
            "statistic",
            "p",
            "Holm p",
            "labelled",
            "unlabelled",
            "finding",
            "note",
        ],
        [
            [
                c.what,
                c.test,
                fmt(c.statistic),
                f"{c.p_value:.3g}",
                f"{c.p_adjusted:.3g}",
                c.n_labelled,
                c.n_unlabelled,
                c.finding,
                c.note or "",
            ]
            for c in s.checks
        ],
        lead=f"The estimates assume: {s.sampling}. Nothing proves it from the data, but a sample "
        "chosen otherwise often shows in what does not depend on the labels. Holm-adjusted "
        "p < 0.05 is a warning; p < 0.001 is refused (unless --accept-shift), except on the "
        "strata column.",
    )


def _strata_table(e: MeanEstimate) -> Table:
    return Table(
        "Strata",
        ["stratum", "weight", "labelled", "unlabelled", "mean", "SE", "λ"],
        [
            [
                p.stratum,
                fmt(p.weight),
                p.n_labelled,
                p.n_unlabelled,
                fmt(p.value),
                fmt(p.std_error),
                fmt(p.lam, 2),
            ]
            for p in e.strata
        ],
        lead="Stratified PPI++: PPI++ within each stratum, combined with the strata's shares "
        "of the run's items as weights (a --validation run's items are not among them).",
    )


def _pilot_notes(s: EstimateSummary) -> tuple[list[str], list[str]]:
    """Each plan's note, less what every plan's note ends with (what the pilot says of itself:
    its stand-in variance, its clusters), which is said once; and that."""
    notes = [(r.plan.note or "").split("; ") for r in s.plan]
    shared: list[str] = []
    while len(notes) > 1 and all(n[-1] and n[-1] == notes[0][-1] for n in notes):
        shared.insert(0, notes[0][-1])
        notes = [n[:-1] or [""] for n in notes]
    return ["; ".join(n) for n in notes], shared


def _plan_table(s: EstimateSummary) -> Table:
    rows = []
    notes, shared = _pilot_notes(s)
    for row, note in zip(s.plan, notes, strict=True):
        p = row.plan
        asked = (
            f"{s.plan_budget} labels"
            if row.given == "labels"
            else f"± {s.plan_target_half_width:g}"
        )
        more = "—" if p.n_labels is None else max(0, p.n_labels - s.n_labelled)
        if p.n_labels is not None and p.n_labels > s.n_items:
            note = "; ".join(x for x in (note, f"more than the {s.n_items} items") if x)
        rows.append(
            [
                asked,
                METHOD_NAMES[p.method],
                "out of reach" if p.n_labels is None else p.n_labels,
                more,
                fmt(p.half_width, 4),
                fmt(p.lam, 2),
                note,
            ]
        )
    asked = []
    if s.plan_target_half_width is not None:
        asked.append(f"± {s.plan_target_half_width:g} (the labels it needs)")
    if s.plan_budget is not None:
        asked.append(f"{s.plan_budget} labels (the half-width they buy)")
    return Table(
        "How many labels",
        ["plan for", "estimator", "human labels", "more than now", "half-width", "λ", "note"],
        rows,
        lead=f"Planned for {' and '.join(asked)} at {_level(s)}, from the "
        f"{s.n_labelled} labelled items as a pilot, "
        + (
            f"next to the run's {s.n_unlabelled} predictions (the labels another sample)"
            if s.validation
            else f"the labels drawn from the {s.n_items} items: n labelled leave {s.n_items} − n "
            "predictions"
        )
        + (
            f"; weighted by column {s.plan_weights} as the estimates are, the labels to come "
            "weighted like the pilot's (Rogan–Gladen, which takes no weights, is not planned)"
            if s.plan_weights
            else ""
        )
        + "".join(f"; {note}" for note in shared)
        + ". A pilot of a few dozen labels gives a rough number: plan again once half are in.",
    )


def _plan_budget(s: EstimateSummary) -> int | None:
    """The new labels PPI++'s plan for the target half-width asks for beyond those labelled
    before: the budget a ``--suggest`` queue should be drawn with (None without a plan)."""
    plan = next(
        (r.plan for r in s.plan if r.given == "half-width" and r.plan.method == "ppi++"), None
    )
    if plan is None or plan.n_labels is None:
        return None
    return max(0, plan.n_labels - s.n_labelled)


def _plan_out_of_reach(s: EstimateSummary) -> str | None:
    """PPI++'s plan's note when no number of labels reaches the target half-width."""
    plan = next(
        (r.plan for r in s.plan if r.given == "half-width" and r.plan.method == "ppi++"), None
    )
    return plan.note if plan is not None and plan.n_labels is None else None


def _plan_budget_row(s: EstimateSummary) -> tuple[list[object], str]:
    """The queue table's row of the plan's budget beside the one drawn, and what it means."""
    q, planned = s.queue, _plan_budget(s)
    assert q is not None and planned is not None
    row = [
        f"the plan's budget (PPI++ for ± {s.plan_target_half_width:g})",
        f"{planned} new labels ({planned + s.n_labelled} in all)",
    ]
    if planned == 0:
        return row, "By the plan, the labels given before reach that half-width already."
    if planned > q.pool:
        return row, f"The plan asks for more than the {q.pool} unlabelled items."
    if round(q.budget) < planned:
        return row, (
            f"This queue's budget, {q.budget:.0f}, is below the plan's: expect an interval wider "
            f"than ± {s.plan_target_half_width:g}."
        )
    return row, (
        "The plan counts uniform labels: a queue of that budget reaches about that half-width "
        "when the judge's probabilities track the labels (it may not with an unreliable judge)."
    )


def _queue_table(s: EstimateSummary) -> Table:
    q = s.queue
    assert q is not None
    rows = [
        ["queue", q.queue_dir],
        ["drawn from", f"the {q.pool} unlabelled items"],
        ["labelled before (the first phase)", q.labelled_before],
        ["budget (expected new labels, Σπ₂)", f"{q.budget:.1f}"],
        ["drawn", q.drawn],
        ["π₂ followed", q.uncertainty + f", mixed with a uniform share of {q.uniform_share:g}"],
        ["seed", q.seed],
    ]
    planned = ""
    if q.role == "drawn" and _plan_budget(s) is not None:
        row, planned = _plan_budget_row(s)
        rows.insert(4, row)
    elif q.role == "drawn" and (unreachable := _plan_out_of_reach(s)) is not None:
        rows.insert(4, [f"the plan's budget (PPI++ for ± {s.plan_target_half_width:g})", "—"])
        planned = f"By the plan, ± {s.plan_target_half_width:g} is {unreachable}."
    if q.role == "read":
        rows += [["labelled", q.labelled], ["pending", q.pending]]
        note = (
            "Every drawn item is labelled: the active estimate's interval holds."
            if q.pending == 0
            else f"{q.pending} drawn items are still pending: the active estimate is provisional "
            "until every one is labelled (a fixed budget: stopping early or labelling more after "
            "seeing an interval voids it)."
        )
    else:
        note = (
            f"Label every drawn item — assay review serve {q.queue_dir} (or assay review "
            f"export / import) — then: assay estimate {s.run} --queue {q.queue_dir}. A fixed "
            "budget: the interval holds once every drawn item is labelled."
        )
        note = " ".join(x for x in (planned, note) if x)
    return Table("Label queue", ["", "value"], rows, note=note)


def estimate_tables(s: EstimateSummary) -> list[Table]:
    """The report's tables: the estimates, the strata, the judge on the labelled items, the
    checks of the sample, the label plan and the queue (those that apply)."""
    tables: list[Table] = []
    if s.estimates:
        tables.append(
            estimates_table(
                "Estimates",
                s.estimates,
                lead="The headline first. Effective labels: the human labels a human-only "
                "interval would need to be as narrow. λ: PPI's weight on the judge's predictions "
                "(0: the labels alone, 1: classical PPI).",
            )
        )
    for e in s.estimates:
        if e.strata:
            tables.append(_strata_table(e))
    if s.judge_on_labelled is not None:
        j = s.judge_on_labelled
        tables.append(
            Table(
                "The judge on the labelled items",
                ["scored labelled items", "sensitivity (TPR)", "specificity (TNR)"],
                [[j.n, fmt(j.sensitivity), fmt(j.specificity)]],
                note="Rogan–Gladen corrects the judge's flagged rate with these two.",
            )
        )
    if s.checks:
        tables.append(_checks_table(s))
    if s.plan:
        tables.append(_plan_table(s))
    if s.queue is not None:
        tables.append(_queue_table(s))
    return tables


def estimate_console(s: EstimateSummary) -> list[str]:
    """What ``assay estimate`` prints: the headline in words, the warnings, the tables but the
    checks (a line says what was checked), and where the run is."""
    from assay.report import markdown

    lines = estimate_headline(s)
    if s.checks and not any(c.finding != "none" for c in s.checks):
        shown = ", ".join(f"{c.what} p = {c.p_adjusted:.2g}" for c in s.checks)
        lines.append(f"checked, no difference seen (Holm-adjusted): {shown}")
    tables = [t for t in estimate_tables(s) if t.title != "Is the labelled sample like the rest?"]
    lines += ["", *markdown(tables, level=3)]
    lines.append(f"report: {Path(s.run_dir) / 'report.md'}")
    return lines


def build_estimate_report(run_dir: Path) -> Report:
    """The report of the estimate run in ``run_dir`` (report.md shows the same tables)."""
    from assay.report import load_summary, read_jsonl

    run_dir = Path(run_dir)
    s = load_summary(run_dir / "metrics.json", EstimateSummary)
    r = Report("estimate", f"assay estimate — {s.target} ({s.judge})")
    r.facts = [("run", s.run)]
    if s.validation:
        r.facts.append(("labelled items from", s.validation))
    r.facts += [
        ("judge", f"{s.judge} (config {s.config_hash[:10]}) · {s.scale}"),
        ("estimated", "the mean score" if s.mean_score else f"the rate of {s.target}"),
        ("prediction", f"{s.prediction} ({s.prediction_source})"),
        (
            "items",
            f"{s.n_items}: {s.n_labelled} labelled, {s.n_unlabelled} unlabelled"
            + "".join(f" · unscored {k}: {v}" for k, v in sorted(s.unscored.items())),
        ),
        ("error level α", f"{s.alpha:g}"),
    ]
    r.notes = estimate_headline(s)
    r.tables = estimate_tables(s)
    records = read_jsonl(run_dir / ITEMS)
    r.items = Items(
        "Items",
        [("item", "text"), ("human label", "num"), ("verdict", "num"), ("prediction", "num")],
        [
            Row(
                [
                    (x["item_id"], x["item_id"]),
                    (fmt(x["label"]), -1 if x["label"] is None else x["label"]),
                    (
                        f"unscored: {x['unscored']}" if x["unscored"] else fmt(x["verdict"]),
                        -1 if x["verdict"] is None else x["verdict"],
                    ),
                    (fmt(x["prediction"]), x["prediction"]),
                ],
                [Block("from", x["run"])],
                "warn" if x["unscored"] else "",
            )
            for x in records
        ],
    )
    return r


def write_reports(run_dir: Path) -> None:
    """report.md and report.html of the estimate run in ``run_dir``."""
    from assay.report import write_html
    from assay.runs import write_atomic

    report = build_estimate_report(run_dir)
    write_atomic(Path(run_dir) / "report.md", report_markdown(report))
    write_html(report, run_dir)
