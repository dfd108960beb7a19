"""Several annotators per item: a long annotation table read against a scale, and the majority
a judge is compared with (ties broken at random from a recorded seed)."""

from __future__ import annotations

from pathlib import Path

from assay.data import ColumnMap, load_table
from assay.errors import DataError
from assay.metrics import majority_vote
from assay.scale import Scale

AnnotationRows = list[tuple[str, str, int | None]]


def read_annotations(
    path: str | Path,
    *,
    id_column: str,
    annotator_column: str,
    score_column: str,
    scale: Scale | None = None,
) -> AnnotationRows:
    """``(item, annotator, score or None)`` per row of a long annotation table (labels read on
    ``scale`` when one is given)."""
    items = load_table(
        str(path),
        columns=ColumnMap(id="@row", request=None, response=None, expected=score_column),
        scale=scale,
        suggest_format=False,
    )
    out: AnnotationRows = []
    seen: dict[tuple[str, str], int] = {}
    for row, it in enumerate(items, start=1):
        for column in (id_column, annotator_column):
            if it.meta.get(column) in (None, ""):
                raise DataError("empty cell", path=path, row=row, field=column)
        key = (str(it.meta[id_column]), str(it.meta[annotator_column]))
        if key in seen:
            raise DataError(
                f"a second label of item '{key[0]}' by annotator '{key[1]}' (the first in row "
                f"{seen[key]})",
                path=path,
                row=row,
                field=annotator_column,
            )
        seen[key] = row
        out.append((*key, it.expected))
    return out


def majority(
    rows: AnnotationRows, *, seed: int, scale: Scale | None = None
) -> tuple[dict[str, int | None], int]:
    """The majority label per item (None where no annotator gave one) and how many ties a
    seeded draw had to break. The tied labels are drawn from in the order of their names on
    ``scale`` (of their scores where they have none), so the order a scale lists its labels in
    never decides a tie."""

    def vote(score: int) -> tuple[str, int]:
        name = scale.label_of(score) if scale is not None else None
        return (name or "", score)

    votes: dict[str, list[tuple[str, int]]] = {}
    for item, _, score in rows:
        votes.setdefault(item, [])
        if score is not None:
            votes[item].append(vote(score))
    m = majority_vote({i: v for i, v in votes.items() if v}, field="reference", seed=seed)
    return {i: m.values[i][1] if i in m.values else None for i in votes}, len(m.ties)
