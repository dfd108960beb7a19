"""Several annotators per item: their agreement (Fleiss' κ, Krippendorff's α), the majority a
judge is compared with (ties broken at random from a recorded seed), and the Alternative
Annotator Test of the judge against them."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from assay.data import ColumnMap, load_table
from assay.errors import DataError
from assay.experiments._results import AltTestOutcome, AnnotatorsReport
from assay.metrics import AnnotationMatrix, alt_test, annotator_agreement, majority_vote
from assay.scale import Scale

Rows = list[tuple[str, str, int | None]]


def read_annotations(
    path: str | Path,
    *,
    id_column: str,
    annotator_column: str,
    score_column: str,
    scale: Scale | None = None,
) -> Rows:
    """``(item, annotator, score or None)`` per row of a long annotation table (labels read on
    ``scale`` when one is given)."""
    items = load_table(
        str(path),
        columns=ColumnMap(id="@row", request=None, response=None, expected=score_column),
        scale=scale,
    )
    out: Rows = []
    for row, it in enumerate(items, start=1):
        for column in (id_column, annotator_column):
            if it.meta.get(column) in (None, ""):
                raise DataError("empty cell", path=path, row=row, field=column)
        out.append((str(it.meta[id_column]), str(it.meta[annotator_column]), it.expected))
    return out


def majority(rows: Rows, *, seed: int) -> tuple[dict[str, int | None], int]:
    """The majority label per item (None where no annotator gave one) and how many ties a
    seeded draw had to break."""
    votes: dict[str, list[int]] = {}
    for item, _, score in rows:
        votes.setdefault(item, [])
        if score is not None:
            votes[item].append(score)
    m = majority_vote({i: v for i, v in votes.items() if v}, field="reference", seed=seed)
    return {i: m.values.get(i) for i in votes}, len(m.ties)


def annotators_report(
    rows: Rows,
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
    matrix = AnnotationMatrix.from_long(
        [i for i, _, _ in labelled],
        [a for _, a, _ in labelled],
        [scale.index(s) for *_, s in labelled],
    )
    level = "ordinal" if scale.ordered and scale.kind != "binary" else "nominal"
    agreement = annotator_agreement(
        matrix,
        level=level,
        value_domain=list(range(scale.k)),
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
    )
    _, ties = majority(rows, seed=seed)
    report = AnnotatorsReport(
        annotators=annotators,
        items=len(matrix.item_ids),
        labels=len(labelled),
        agreement=agreement,
        majority_ties=ties,
        majority_seed=seed,
    )
    if len(annotators) < 3:
        return report.model_copy(
            update={
                "note": f"the Alt-Test needs at least 3 annotators; there are {len(annotators)}"
            }
        )
    unscored = sum(1 for i in matrix.item_ids if candidate.get(str(i)) is None)
    judge = {i: float(scale.index(v)) for i, v in candidate.items() if v is not None}
    try:
        result = alt_test(
            matrix,
            judge,
            scoring="neg_rmse" if level == "ordinal" else "accuracy",
            epsilon=epsilon,
        )
    except ValueError as exc:
        return report.model_copy(update={"note": f"Alt-Test not run: {exc}"})
    outcome = AltTestOutcome(
        **{
            k: v
            for k, v in asdict(result).items()
            if k not in ("comparisons", "skipped_annotators")
        },
        comparisons=[asdict(c) for c in result.comparisons],
        skipped_annotators=[str(a) for a in result.skipped_annotators],
    )
    note = (
        f"{unscored} annotated items have no judge verdict (unscored): the Alt-Test leaves them out"
        if unscored
        else None
    )
    return report.model_copy(update={"alt_test": outcome, "note": note})
