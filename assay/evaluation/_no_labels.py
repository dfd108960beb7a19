"""Judges combined without labels, as reported: Dawid–Skene over several annotators' (or a
panel's members') verdicts, and a panel's verdicts aggregated over the whole run
(``aggregate: dawid_skene`` — the fitted model's most probable label —, ``aggregate: weighted``
— a vote weighted by the members' Dawid–Skene accuracies, no member above 40% of the weight).

Both aggregates need every item of the run: a panel of that kind answers each item with its
members' majority while it judges, and :func:`panel_over_run` replaces those verdicts once
all items are judged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from assay.evaluation._results import (
    DawidSkeneReport,
    JudgeFigures,
    PairExcess,
    PanelReport,
)
from assay.programs import RUN_LEVEL_AGGREGATES, JudgeConfig, aggregate_scores
from assay.programs import RUN_LEVEL_MAX_CLASSES as MAX_CLASSES
from assay.report import Table
from assay.scale import Scale
from assay.types import Judgment

if TYPE_CHECKING:
    from assay.inputs import AnnotationRows


def dawid_skene_report(
    rows: AnnotationRows,
    scale: Scale,
    majority: Mapping[str, int | None],
    *,
    seed: int,
    n_resamples: int,
    confidence: float,
    samples: Mapping[str, str] | None = None,
) -> tuple[DawidSkeneReport | None, dict[str, int], str | None]:
    """Dawid–Skene over ``(item, judge, score)`` rows read on ``scale`` (unscored rows left
    out): the report, each item's Dawid–Skene verdict (a score on the scale), and why it was
    not fitted (fewer than three judges, more than :data:`MAX_CLASSES` classes). ``samples``
    (item id → the Inspect sample it is an epoch of): the bootstrap resamples the samples."""
    from assay.metrics import AnnotationMatrix, dawid_skene, fmt_level

    labelled = sorted((str(i), str(a), s) for i, a, s in rows if s is not None)
    judges = sorted({a for _, a, _ in labelled})
    if len(judges) < 3:
        return None, {}, f"Dawid–Skene needs at least 3 judges; there are {len(judges)}"
    if scale.k > MAX_CLASSES:
        return (
            None,
            {},
            (
                f"Dawid–Skene not fitted: a scale of {scale.k} classes has {scale.k}² confusion "
                f"entries per judge (at most {MAX_CLASSES} classes)"
            ),
        )
    matrix = AnnotationMatrix.from_long(
        [i for i, _, _ in labelled],
        [a for _, a, _ in labelled],
        [scale.index(s) for *_, s in labelled],
    )
    fit = dawid_skene(
        matrix,
        k=scale.k,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
        clusters=samples,
        # sensitivity and specificity on a binary scale alone, whose score 1 is the positive
        # class: two labels of another scale (True,False as categories, A/B) have none
        positive=scale.index(1) if scale.kind == "binary" else None,
    )
    names = [_class_name(scale, v) for v in scale.values]
    verdicts = {str(i): scale.values[int(c)] for i, c in zip(fit.item_ids, fit.labels, strict=True)}
    report = DawidSkeneReport(
        judges=[
            JudgeFigures(
                judge=str(j.judge),
                n=j.n,
                accuracy=j.accuracy,
                sensitivity=j.sensitivity,
                specificity=j.specificity,
                recall=dict(zip(names, j.recall, strict=True)),
            )
            for j in fit.judges
        ],
        priors=dict(zip(names, fit.priors, strict=True)),
        pairs=[
            PairExcess(
                judges=[str(a) for a in d.judges],
                n=d.n,
                observed=d.observed,
                predicted=d.predicted,
                excess=d.excess,
                p_value=d.p_value,
                flagged=d.flagged,
            )
            for d in fit.dependence
        ],
        items=len(fit.item_ids),
        differs_from_majority=sum(
            majority.get(i) is not None and majority[i] != v for i, v in verdicts.items()
        ),
        iterations=fit.iterations,
        converged=fit.converged,
        warning=fit.warning,
        bootstrap=f"{n_resamples} percentile resamples over "
        + (
            "items"
            if fit.resampled_clusters is None
            else f"{fit.resampled_clusters} clusters (an Inspect sample's epochs together)"
        )
        + f" (the model refitted on each), seed {seed}, {fmt_level(confidence)} intervals",
    )
    return report, verdicts, None


def _class_name(scale: Scale, value: int) -> str:
    return scale.label_of(value) if scale.labels else str(value)


def panel_over_run(
    config: JudgeConfig,
    judgments: list[Judgment],
    *,
    seed: int,
    n_resamples: int,
    confidence: float,
    samples: Mapping[str, str] | None = None,
) -> tuple[list[Judgment], PanelReport]:
    """A panel's members over the run under Dawid–Skene and, for a run-level aggregate, the
    judgments with the panel's verdicts replaced by it (a judgment the quorum left unscored
    stays so; a tie follows the config's ``tie_break``). ``samples``: each item's Inspect
    sample, whose epochs the bootstrap resamples together."""
    assert config.scale is not None
    scale = config.scale
    # every member's verdict is evidence of its reliability, on an item the quorum left
    # unscored too (that item's panel verdict stays unscored: _with_verdict)
    rows = [
        (j.item_id, str(m["judge"]), m.get("score")) for j in judgments for m in j.members or []
    ]
    majority = {
        j.item_id: aggregate_scores(
            [m["score"] for m in j.members if m.get("score") is not None],
            "majority",
            config.tie_break,
            scale.values,
        )
        for j in judgments
        if j.members
    }
    report, verdicts, note = dawid_skene_report(
        rows,
        scale,
        majority,
        seed=seed,
        n_resamples=n_resamples,
        confidence=confidence,
        samples=samples,
    )
    members = [m.name for m in config.members]
    panel = PanelReport(aggregate=config.aggregate, members=members, dawid_skene=report, note=note)
    # the config requires a quorum of three and at most MAX_CLASSES classes: without a fit,
    # no judgment was scored, and there is no verdict to replace
    if config.aggregate not in RUN_LEVEL_AGGREGATES or report is None:
        return judgments, panel
    if config.aggregate == "weighted":
        verdicts, shares = _weighted(config, judgments, report)
        panel = panel.model_copy(update={"weights": shares})
    out = [_with_verdict(config, j, verdicts.get(j.item_id)) for j in judgments]
    changed = sum(a.score != b.score for a, b in zip(judgments, out, strict=True))
    return out, panel.model_copy(update={"changed": changed})


def _weighted(
    config: JudgeConfig, judgments: list[Judgment], report: DawidSkeneReport
) -> tuple[dict[str, int | None], dict[str, float]]:
    """Each item's verdict by the members' capped reliability weights (None: a tie left
    unscored by ``tie_break: unscored``), and the members' shares."""
    import numpy as np

    from assay.metrics import capped_weights, reliability_weights, weighted_vote

    assert config.scale is not None
    scale = config.scale
    accuracy = {f.judge: f.accuracy.value for f in report.judges}
    members = [m.name for m in config.members]
    shares = capped_weights(reliability_weights([accuracy.get(m, 0.0) for m in members], k=scale.k))
    items = [j for j in judgments if j.members and j.unscored != "panel_quorum"]
    table = np.full((len(items), len(members)), np.nan)
    for row, j in enumerate(items):
        for m in j.members or []:
            if m.get("score") is not None and m["judge"] in members:
                table[row, members.index(m["judge"])] = scale.index(m["score"])
    labels, ties = weighted_vote(table, shares, k=scale.k)
    verdicts: dict[str, int | None] = {}
    for j, label, tie, row in zip(items, labels, ties, table, strict=True):
        if label < 0:
            continue
        if tie:
            totals = np.bincount(
                row[~np.isnan(row)].astype(int), shares[~np.isnan(row)], minlength=scale.k
            )
            tied = [scale.values[c] for c in np.flatnonzero(np.isclose(totals, totals.max()))]
            verdicts[j.item_id] = (
                None
                if config.tie_break == "unscored"
                else (tied[0] if config.tie_break == "lower" else tied[-1])
            )
        else:
            verdicts[j.item_id] = scale.values[int(label)]
    return verdicts, {m: float(s) for m, s in zip(members, shares, strict=True)}


def _with_verdict(config: JudgeConfig, judgment: Judgment, score: int | None) -> Judgment:
    """``judgment`` with the panel's run-level verdict (unchanged where the quorum left it
    unscored or no member scored the item)."""
    assert config.scale is not None
    members = judgment.members or []
    scored = [m["score"] for m in members if m.get("score") is not None]
    if judgment.unscored == "panel_quorum" or not scored:
        return judgment
    update: dict = {
        "score": score,
        "label": config.scale.label_of(score) if score is not None else None,
        "unscored": None if score is not None else "tie",
    }
    if config.confidence is not None:  # source: panel — the share of members agreeing
        update["confidence"] = scored.count(score) / len(members) if score is not None else None
    return judgment.model_copy(update=update)


def judge_figures(report: DawidSkeneReport) -> dict[str, dict]:
    """Every judge's Dawid–Skene figures as one metric table's rows (``<judge> accuracy``,
    ``<judge> sensitivity`` … on a binary scale, else ``<judge> recall <class>`` for every
    class: two labels of a categorical scale have no positive class)."""
    out: dict[str, dict] = {}
    for f in report.judges:
        out[f"{f.judge} accuracy"] = f.accuracy.to_dict()
        if f.sensitivity is not None and f.specificity is not None:
            out[f"{f.judge} sensitivity"] = f.sensitivity.to_dict()
            out[f"{f.judge} specificity"] = f.specificity.to_dict()
        else:
            out.update({f"{f.judge} recall {c}": m.to_dict() for c, m in f.recall.items()})
    return out


def pair_figures(report: DawidSkeneReport) -> dict[str, dict]:
    """Every pair's excess agreement (observed − predicted) as metric table rows."""
    out = {}
    for p in report.pairs:
        m = p.excess.to_dict()
        said = f"agree {p.observed:.3f}, the model predicts {p.predicted:.3f}; p = {p.p_value:.3f}"
        m["note"] = (
            said + ("; flagged" if p.flagged else "") + (f"; {m['note']}" if m.get("note") else "")
        )
        out[f"{p.judges[0]} · {p.judges[1]}"] = m
    return out


def dawid_skene_lead(report: DawidSkeneReport, majority: str = "the majority") -> str:
    """What the Dawid–Skene tables are, in a sentence or two, and its warning."""
    priors = ", ".join(f"{c} {p:.3f}" for c, p in report.priors.items())
    lead = (
        f"Estimated from the judges' verdicts alone (no reference) on {report.items} items: "
        f"classes' shares {priors}; its verdict differs from {majority} on "
        f"{report.differs_from_majority} items; EM "
        + ("converged" if report.converged else "stopped without converging")
        + f" after {report.iterations} iterations. Bootstrap: {report.bootstrap}."
    )
    return lead + (f" **Warning:** {report.warning}." if report.warning else "")


def dawid_skene_tables(report: DawidSkeneReport, confidence: float, whose: str) -> list[Table]:
    """The judges' figures and the pairs' excess agreement (report.md and report.html)."""
    from assay.metrics import EXCESS_THRESHOLD, metric_table

    return [
        metric_table(
            f"{whose} under Dawid–Skene (no reference needed)",
            judge_figures(report),
            confidence,
            lead=dawid_skene_lead(report),
        ),
        metric_table(
            "Excess agreement of each pair (observed − predicted if their errors were "
            "independent given the class)",
            pair_figures(report),
            confidence,
            lead=f"A pair at {EXCESS_THRESHOLD:.2f} or more whose p-value (one-sided, bootstrap, "
            "Holm-adjusted over the pairs) is below 1 − confidence is flagged: the model's "
            "independence assumption visibly fails. No flag is no evidence of independence.",
        ),
    ]


def panel_lead(panel: PanelReport) -> str:
    """The panel's aggregate and what the run-level one changed."""
    lead = f"Panel of {', '.join(panel.members)}; aggregate `{panel.aggregate}`"
    if panel.aggregate in RUN_LEVEL_AGGREGATES:
        lead += (
            f": fitted over the run's items, it changed {panel.changed} verdicts from the "
            "members' majority"
        )
    if panel.weights:
        lead += (
            " (members' shares of the vote: "
            + ", ".join(f"{m} {w:.2f}" for m, w in panel.weights.items())
            + ")"
        )
    return lead + "." + (f" {panel.note}." if panel.note else "")


def panel_metrics(panel: PanelReport) -> dict[str, object]:
    """A panel's figures for MLflow: ``ds_accuracy.<member>`` (and, on a binary scale,
    sensitivity, specificity),
    ``ds_excess.<a>.<b>``, ``changed``, ``ds_differs_from_majority``, ``ds_warning`` (1 when
    the figures carry a warning: dependent judges, or too few judges to check) and
    ``ds_dependence_flagged`` (the pairs whose excess agreement was flagged)."""
    out: dict[str, object] = {"changed": panel.changed}
    ds = panel.dawid_skene
    if ds is None:
        return out
    for name in ("accuracy", "sensitivity", "specificity"):
        values = {f.judge: getattr(f, name) for f in ds.judges if getattr(f, name) is not None}
        if values:
            out[f"ds_{name}"] = {k: v.to_dict() for k, v in values.items()}
    out["ds_excess"] = {f"{p.judges[0]}.{p.judges[1]}": p.excess.to_dict() for p in ds.pairs}
    out["ds_differs_from_majority"] = ds.differs_from_majority
    out["ds_warning"] = float(ds.warning is not None)  # 1 when the console warns, for any reason
    out["ds_dependence_flagged"] = float(sum(p.flagged for p in ds.pairs))
    return out


def dawid_skene_console(report: DawidSkeneReport, confidence: float = 0.95) -> str:
    """The Dawid–Skene figures as the console prints them: the lead, the judges' table and the
    pairs' excess agreement."""
    from assay.metrics import metrics_table

    return "\n".join(
        [
            f"\nDawid–Skene: {dawid_skene_lead(report)}",
            metrics_table(judge_figures(report), confidence),
            "excess agreement of each pair (observed − predicted):",
            metrics_table(pair_figures(report), confidence),
        ]
    )
