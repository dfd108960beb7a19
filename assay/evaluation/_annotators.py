"""Several annotators per item: their agreement (Fleiss' κ, Krippendorff's α), each one's
accuracy under Dawid–Skene (no reference needed), and the Alternative Annotator Test of the
judge against them."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from assay.evaluation._no_labels import dawid_skene_report
from assay.evaluation._results import AltTestOutcome, AnnotatorsReport
from assay.evaluation._scoring import verdict_names
from assay.inputs import AnnotationRows, majority
from assay.metrics import AnnotationMatrix, alt_test, annotator_agreement, category_ranks
from assay.scale import Scale

NO_PAIR = (
    "no item was labelled by two annotators: their agreement, the Alt-Test and Dawid–Skene "
    "compare annotators on the items they share"
)


def annotators_report(
    rows: AnnotationRows,
    candidate: dict[str, int | None],
    scale: Scale,
    *,
    seed: int,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    epsilon: float = 0.2,
) -> AnnotatorsReport:
    """Fleiss' κ / Krippendorff's α among the annotators (on 0-based scale positions, item
    bootstrap) and, with three or more annotators, the Alt-Test of ``candidate`` (the judge)."""
    # sorted: the row order of an annotation file must not change the resamples
    labelled = sorted((str(i), str(a), s) for i, a, s in rows if s is not None)
    annotators = sorted({a for _, a, _ in labelled})
    level = "ordinal" if scale.ordered and scale.kind != "binary" else "nominal"
    indices = [scale.index(s) for *_, s in labelled]
    if level == "nominal":  # codes in an order the scale's listing and names do not decide
        rank = category_ranks(verdict_names(scale), np.array(indices, dtype=np.int64))
        indices = [int(rank[i]) for i in indices]
    matrix = AnnotationMatrix.from_long(
        [i for i, _, _ in labelled], [a for _, a, _ in labelled], indices
    )
    majority_labels, ties = majority(rows, seed=seed, scale=scale)
    report = AnnotatorsReport(
        annotators=annotators,
        items=len(matrix.item_ids),
        labels=len(labelled),
        single_label_items=int((matrix.counts == 1).sum()),
        agreement={},
        majority_ties=ties,
        majority_seed=seed,
    )
    if not (matrix.counts >= 2).any():
        return report.model_copy(update={"note": NO_PAIR})
    agreement = annotator_agreement(
        matrix,
        level=level,
        value_domain=list(range(scale.k)),
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
    )
    dawid_skene, _, why_not = dawid_skene_report(
        rows,
        scale,
        majority_labels,
        seed=seed,
        n_resamples=n_resamples,
        confidence=confidence,
    )
    report = report.model_copy(update={"agreement": agreement, "dawid_skene": dawid_skene})
    if len(annotators) < 3:
        return report.model_copy(
            update={
                "note": "the Alt-Test and Dawid–Skene need at least 3 annotators; there are "
                f"{len(annotators)}"
            }
        )
    code = (lambda s: rank[scale.index(s)]) if level == "nominal" else scale.index
    judge = {i: float(code(v)) for i, v in candidate.items() if v is not None}
    try:
        result = alt_test(
            matrix,
            judge,
            scoring="neg_rmse" if level == "ordinal" else "accuracy",
            epsilon=epsilon,
        )
    except ValueError as exc:
        notes = [n for n in (why_not, f"Alt-Test not run: {exc}") if n]
        return report.model_copy(update={"note": "; ".join(notes)})
    outcome = AltTestOutcome(
        **{
            k: v
            for k, v in asdict(result).items()
            if k not in ("comparisons", "skipped_annotators")
        },
        comparisons=[asdict(c) for c in result.comparisons],
        skipped_annotators=[str(a) for a in result.skipped_annotators],
        note=_one_verdict(matrix, candidate, scale, level),
    )
    return report.model_copy(update={"alt_test": outcome, "note": why_not})


def _one_verdict(
    matrix: AnnotationMatrix, candidate: dict[str, int | None], scale: Scale, level: str
) -> str | None:
    """Why the Alt-Test says nothing of agreement when the judge gave one verdict on every
    item it compared (None when it gave several): such a judge wins by matching most labels."""
    pairable = [str(i) for i, c in zip(matrix.item_ids, matrix.counts, strict=True) if c >= 2]
    compared = {candidate.get(i) for i in pairable} - {None}
    if len(compared) != 1:
        return None
    name = verdict_names(scale)[scale.index(compared.pop())]
    rewards = "matching the majority class" if level == "nominal" else "a score near most labels"
    return (
        f"the judge gave one verdict ({name}) on every item: the Alt-Test rewards {rewards}, "
        "so a pass is not evidence of agreement"
    )


def alt_test_left_out(t: AltTestOutcome, items: int) -> list[str]:
    """The annotators and items the Alt-Test left out, and why: a line for each that has any;
    and a line for each annotator it could not t-test (:func:`_without_variation`)."""
    lines = []
    if t.skipped_annotators:
        lines.append(
            f"Alt-Test skipped {', '.join(t.skipped_annotators)}: fewer than "
            f"{t.min_items_per_annotator} usable items (items with "
            f"{t.min_annotators_per_item}+ labels and a judge verdict), too few for its t-test"
        )
    if t.n_items_dropped:
        few = t.min_annotators_per_item
        why = []
        if t.n_items_few_labels:
            labels = "one label" if few == 2 else f"fewer than {few} labels"
            why.append(f"{_have(t.n_items_few_labels)} {labels}")
        if unjudged := t.n_items_dropped - t.n_items_few_labels:
            why.append(f"{_have(unjudged)} no judge verdict")
        lines.append(f"Alt-Test left out {t.n_items_dropped} of {items} items: {', '.join(why)}")
    return lines + [line for c in t.comparisons if (line := _without_variation(c)) is not None]


def _without_variation(comparison: dict[str, object]) -> str | None:
    """What the console says of an annotator against whom the per-item difference was the same
    on every item — both advantages 0 or 1 —, where the t-test is undefined and the p-value is
    the exact bound of what those items show; None for an annotator the t-test compared."""
    judge, human = comparison["judge_advantage"], comparison["annotator_advantage"]
    if judge not in (0.0, 1.0) or human not in (0.0, 1.0):
        return None
    who, n = comparison["annotator"], comparison["n_items"]
    if judge == human:
        why = f"the judge and {who} aligned with the others equally well on all {n} items"
    elif judge == 1.0:
        why = f"the judge aligned better than {who} on all {n} items"
    else:
        why = f"{who} aligned better than the judge on all {n} items"
    return (
        f"Alt-Test against {who}: {why}: no t-test without variation; "
        f"p = {comparison['p_value']:.2g}, the exact bound ((1 − ε) / (1 − d))^n"
    )


def _have(n: int) -> str:
    return f"{n} {'has' if n == 1 else 'have'}"
