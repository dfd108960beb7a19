"""``assay agreement``: agreement between two existing sets of verdicts, with no LM call.

Reads assay ``judgments.jsonl`` (paired by item id; each verdict by its label, read on the
scale the comparison uses: ``--scale``, else the run's own from the ``config.yaml`` of the run
folder the file is in), ToolEmu evaluator JSONL (read as ``evaluate`` reads ``expected_from``:
``eval_scores``, the label, or the markdown of the thought; paired by ``eval_id`` where unique,
else line by line where the files align) and tables with an id and a score column (or paired by
row without one), read on the given scale (label names of a categorical scale too).
``unpaired`` counts the keys only one side has; ``paired_by`` says how the pairs were made.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from assay import _json
from assay._yaml import load as load_yaml
from assay.data import ColumnMap, is_toolemu_evaluation, load_table, load_toolemu_evaluations
from assay.errors import DataError
from assay.evaluation._annotators import annotators_report
from assay.evaluation._results import AgreementResult
from assay.evaluation._scale_use import scale_use_report
from assay.evaluation._scoring import agreement_summary, disagreement_records
from assay.inputs import majority, read_annotations
from assay.scale import Scale


@dataclass
class Verdicts:
    """One side of an agreement: its rows in file order, each ``(key, score or None)``.

    ``kind`` says how its keys pair: ``"id"`` (assay judgments, tables with an id column),
    ``"toolemu"`` (evaluator files: see :func:`assay.data.align_evaluation_files`) or ``"line"``
    (tables without ids).
    """

    path: Path
    kind: Literal["id", "toolemu", "line"]
    rows: list[tuple[str, int | None]]
    raw: list[dict[str, Any]] | None = None  # ToolEmu evaluator rows
    # where each of ``rows`` was read, as an error names it: (row, field) — a table's data row
    # from 1 and its score column, a JSONL file's line and the record's field
    where: list[tuple[int, str]] | None = None


@dataclass(frozen=True)
class ScaleSource:
    """The scale a comparison reads its verdicts on, and where it came from (``--scale``, a
    run folder's ``config.yaml``, or the scores themselves), as a message names it."""

    scale: Scale | None
    origin: str = "--scale"

    def describe(self) -> str:
        assert self.scale is not None
        return f"the {self.scale.describe()} scale ({self.origin})"


def is_judgments(path: str | Path) -> bool:
    """Whether ``path`` is an assay judgments file (JSONL whose first record has ``item_id``
    and ``judge``)."""
    path = Path(path)
    if path.suffix != ".jsonl" or not path.is_file():
        return False
    first = _first_record(path)
    return first is not None and "item_id" in first and "judge" in first


def run_scale(path: str | Path) -> ScaleSource | None:
    """The scale of the run a judgments file is in: the judge's (``judge.scale``), or the
    run's (``scale``: a harness or selective run, whose judgments are in ``judgments/``), from
    the ``config.yaml`` of its run folder; None where there is no such file or it names no
    scale. A scale there that cannot be read is a one-line error naming it."""
    path = Path(path)
    folders = [path.parent] + ([path.parent.parent] if path.parent.name == "judgments" else [])
    for folder in folders:
        config = folder / "config.yaml"
        if not config.is_file():
            continue
        try:
            raw = load_yaml(config.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        if not isinstance(raw, dict):
            continue
        judge = raw.get("judge")
        spec = judge.get("scale") if isinstance(judge, dict) else None
        spec = spec if spec is not None else raw.get("scale")
        if spec is None:
            continue
        try:
            return ScaleSource(Scale.parse(spec), f"its run's, from {config}")
        except ValueError as exc:  # pydantic's: its first reason, on one line
            reason = exc.errors()[0]["msg"] if hasattr(exc, "errors") else str(exc)
            raise DataError(
                f"cannot read the run's scale: {reason}", path=config, field="scale"
            ) from None
    return None


def read_verdicts(
    path: str | Path,
    *,
    id_column: str | None = None,
    score_column: str | None = None,
    key: str | None = None,
    scale: Scale | ScaleSource | None = None,
) -> Verdicts:
    """The verdicts of a judgments file (each by its label, read on ``scale``: the one given,
    else its run's own), a ToolEmu evaluator file or a table (whose scores are read on
    ``scale`` when one is given: label names, or numbers on the scale)."""
    path = Path(path)
    source = scale if isinstance(scale, ScaleSource) else ScaleSource(scale)
    scale = source.scale
    if not path.is_file():
        raise DataError("file not found", path=path)
    if path.suffix == ".jsonl":
        first = _first_record(path)
        if first is not None and "item_id" in first and "judge" in first:
            if source.scale is None:
                source = run_scale(path) or source
            judged = _read_judgments(path, source)
            return Verdicts(path, "id", [r for r, _ in judged], where=[w for _, w in judged])
        if is_toolemu_evaluation(first):
            rows = load_toolemu_evaluations(path, key=key)
            return Verdicts(
                path,
                "toolemu",
                [(str(r["line"]), r["score"]) for r in rows],
                rows,
                [(r["row"], _toolemu_field(r["raw"])) for r in rows],
            )
    if score_column is None:
        raise DataError(
            "not an assay judgments or ToolEmu evaluator file; give --score-column (and --id-column)",
            path=path,
        )
    try:
        items = load_table(
            str(path),
            columns=ColumnMap(
                id=id_column or "@row", request=None, response=None, expected=score_column
            ),
            scale=scale,
            suggest_format=False,
        )
    except DataError as exc:
        if source.scale is None or source.origin == "--scale" or exc.field != score_column:
            raise
        raise DataError(
            f"{exc.message} (the scale is {source.origin}; give --scale to read on another)",
            path=exc.path,
            row=exc.row,
            field=exc.field,
        ) from None
    where = [(row, score_column) for row in range(1, len(items) + 1)]  # one item a data row
    if id_column:
        return Verdicts(path, "id", [(it.id, it.expected) for it in items], where=where)
    return Verdicts(
        path, "line", [(str(i), it.expected) for i, it in enumerate(items)], where=where
    )


def _toolemu_field(record: dict[str, Any]) -> str:
    """The field of an evaluator record its score is read from first (what an error names)."""
    fields = ("eval_scores", "Overall Quantitative Score", "Overall Qualitative Label")
    return next((f for f in fields if record.get(f) is not None), fields[0])


def _first_record(path: Path) -> dict | None:
    for line in _json.read_lines(path):
        try:
            rec = _json.loads(line.text)
        except json.JSONDecodeError as exc:
            raise DataError(
                f"malformed JSON line ({exc.msg})", path=path, row=line.number
            ) from None
        return rec if isinstance(rec, dict) else None
    raise DataError("empty file", path=path)


def _read_judgments(
    path: Path, source: ScaleSource
) -> list[tuple[tuple[str, int | None], tuple[int, str]]]:
    """``(item, score)`` per item of a judgments file, with the row and field it was read
    from: its verdict by its ``label`` (a judge on a scale without names has none: its
    ``score`` is its verdict), read on ``source``'s scale —
    a run's ``score`` is its place on the run's own scale, which another scale (another label
    order, another ``positive``) may number otherwise. A label not on the scale, or a label with
    no scale to read it on, is a one-line error naming the file, row and field.

    A run's file is a journal: an item judged again (a retried one, a panel's verdict fitted
    over the run) has a later line from the same judge config, and the latest wins, as the run
    reads it. A second judgment from another judge or config is an error (files concatenated
    by mistake)."""
    out: dict[str, int | None] = {}
    where: dict[str, tuple[int, str]] = {}
    seen: dict[str, tuple[int, object]] = {}
    for line in _json.read_lines(path):
        n = line.number
        try:
            rec = _json.loads(line.text)
            item_id, score, label = str(rec["item_id"]), rec.get("score"), rec.get("label")
            who = (rec.get("judge"), rec.get("config_hash"))
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
            raise DataError("malformed judgment line", path=path, row=n, field="item_id") from None
        if item_id in seen and (seen[item_id][1] != who or not who[1]):
            raise DataError(
                f"second judgment of item '{item_id}' (first in row {seen[item_id][0]})",
                path=path,
                row=n,
                field="item_id",
            )
        seen.setdefault(item_id, (n, who))
        out[item_id] = None if score is None else _verdict(item_id, score, label, source, path, n)
        where[item_id] = (n, "label" if label is not None else "score")
    return [((i, s), where[i]) for i, s in out.items()]


def _verdict(
    item_id: str, score: object, label: object, source: ScaleSource, path: Path, row: int
) -> int:
    """A scored judgment's verdict on ``source``'s scale: its label read on it, else (a judge
    on a scale without names) its score — a score of that scale, never read as a reference
    label is (a 1 on ``["True", "False"]`` is its score 1, the label ``False``)."""
    field, value = ("label", label) if label is not None else ("score", score)
    if source.scale is None and field == "label":
        raise DataError(
            f"item '{item_id}': the label {label!r} needs a scale to be read on, and no "
            "config.yaml of a run folder beside the file gives the run's: give --scale",
            path=path,
            row=row,
            field=field,
        )
    if field == "score" and (isinstance(score, bool) or not isinstance(score, int)):
        raise DataError(
            f"item '{item_id}': score {score!r} is not an integer",
            path=path,
            row=row,
            field=field,
        )
    if source.scale is None:
        return score
    try:
        return source.scale.coerce(value) if field == "label" else source.scale.check(score)
    except ValueError:
        raise DataError(
            f"item '{item_id}': {field} {value!r} is not on {source.describe()}",
            path=path,
            row=row,
            field=field,
        ) from None


def pair_verdicts(
    ref: Verdicts, cand: Verdicts
) -> tuple[list[tuple[str, int | None, int | None]], dict[str, int], str]:
    """``[(key, reference score, candidate score)]`` for keys on both sides, how many keys only
    one side has, and how they were paired (``id``, ``eval_id`` or ``line``). Nothing is paired
    by a guess: files that cannot be paired exactly are a one-line error."""
    if ref.kind == cand.kind == "toolemu":
        from assay.data import align_evaluation_files

        assert ref.raw is not None and cand.raw is not None
        rows, how = align_evaluation_files(ref.raw, cand.raw, paths=(ref.path, cand.path))
        both = [(k, r["score"], c["score"]) for k, r, c in rows if r is not None and c is not None]
        unpaired = {
            "reference": sum(c is None for _, _, c in rows),
            "candidate": sum(r is None for _, r, _ in rows),
        }
        return both, unpaired, how
    if ref.kind == cand.kind == "id":
        r, c = dict(ref.rows), dict(cand.rows)
        both = [(k, r[k], c[k]) for k in r if k in c]
        return both, {"reference": len(set(r) - set(c)), "candidate": len(set(c) - set(r))}, "id"
    if "id" in (ref.kind, cand.kind):
        by_id = ref if ref.kind == "id" else cand
        raise DataError(
            "verdicts keyed by item id cannot be paired with a file paired by position "
            "(give both sides ids, e.g. --id-column)",
            path=by_id.path,
        )
    if len(ref.rows) != len(cand.rows):
        raise DataError(
            f"files paired by line differ in length ({len(ref.rows)} vs {len(cand.rows)} rows)",
            path=cand.path,
        )
    both = [(k, s, t) for (k, s), (_, t) in zip(ref.rows, cand.rows, strict=True)]
    return both, {"reference": 0, "candidate": 0}, "line"


def agreement(
    reference: str | Path,
    candidate: str | Path,
    *,
    scale: Scale | None = None,
    threshold: int | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    id_column: str | None = None,
    score_column: str | None = None,
    key: str | None = None,
    disagreements: int = 10,
    annotator_column: str | None = None,
    epsilon: float = 0.2,
) -> AgreementResult:
    """The agreement report between two verdict files (reference defines true failures), with
    the ``disagreements`` pairs that differ most on the scale.

    With ``annotator_column`` the reference is a long table of several annotators per item
    (``id_column``, ``annotator_column``, ``score_column``): the candidate is compared with the
    annotators' majority, and the report adds their own agreement and the Alt-Test."""
    source = ScaleSource(scale)
    if scale is None:  # the scale of the run a judgments file is in (the reference's first)
        runs = (run_scale(p) for p in (reference, candidate) if is_judgments(p))
        source = next((s for s in runs if s is not None), source)
        scale = source.scale
    columns = {"id_column": id_column, "score_column": score_column, "key": key, "scale": source}
    annotations = None
    if annotator_column is not None:
        annotations = _annotations(reference, id_column, annotator_column, score_column, scale)
        majority_scores = majority(annotations, seed=seed, scale=scale)[0]
        ref_side = Verdicts(Path(reference), "id", list(majority_scores.items()))
    else:
        ref_side = read_verdicts(reference, **columns)
    cand_side = read_verdicts(candidate, **columns)
    pairs, unpaired, paired_by = pair_verdicts(ref_side, cand_side)
    scored = [(k, s, t) for k, s, t in pairs if s is not None and t is not None]
    ids, r, c = [k for k, _, _ in scored], [s for _, s, _ in scored], [t for _, _, t in scored]
    read = [
        *(
            _read_scores(ref_side)
            if annotations is None
            else [
                (s, Path(reference), (row, str(score_column)))
                for row, (*_, s) in enumerate(annotations, start=1)  # one label a data row
            ]
        ),
        *_read_scores(cand_side),
    ]
    source = _checked_scale(source, read, bool(scored), candidate, threshold)
    scale = source.scale
    assert scale is not None
    summary = agreement_summary(
        r, c, scale, threshold=threshold, n_resamples=n_resamples, seed=seed
    )
    by_annotator: dict[str, dict[str, int | None]] | None = None
    if annotations is not None:
        by_annotator = {}
        for item, who, score in annotations:
            by_annotator.setdefault(item, {})[who] = score
    scale_use = scale_use_report(
        [k for k, _, _ in pairs],
        [t for _, _, t in pairs],
        [s for _, s, _ in pairs],
        scale,
        judge="candidate",
        annotations=by_annotator,
        n_resamples=n_resamples,
        confidence=0.95,
        seed=seed,
    )
    return AgreementResult(
        **summary.model_dump(),
        n=len(ids),
        unscored={
            "reference": sum(s is None for _, s, _ in pairs),
            "candidate": sum(t is None for _, _, t in pairs),
        },
        unpaired=unpaired,
        paired_by=paired_by,
        scale=scale.describe(),
        scale_origin=source.origin,
        threshold=threshold,
        disagreements=disagreement_records(ids, r, c, scale, top=disagreements),
        annotators=None
        if annotations is None
        else annotators_report(
            annotations,
            dict(cand_side.rows),
            scale,
            seed=seed,
            n_resamples=n_resamples,
            epsilon=epsilon,
        ),
        scale_use=scale_use,
    )


def _annotations(
    reference: str | Path,
    id_column: str | None,
    annotator_column: str,
    score_column: str | None,
    scale: Scale | None,
) -> list[tuple[str, str, int | None]]:
    if id_column is None or score_column is None:
        raise DataError("--annotator-column needs --id-column and --score-column", path=reference)
    rows = read_annotations(
        reference,
        id_column=id_column,
        annotator_column=annotator_column,
        score_column=score_column,
        scale=scale,
    )
    if all(score is None for *_, score in rows):
        raise DataError("no annotator gave a label", path=reference, field=score_column)
    return rows


INFERRED = "inferred from the scores"
"""Where the scale of a comparison with no ``--scale`` and no run folder came from."""


ReadScore = tuple[int, Path, tuple[int, str] | None]
"""A score the comparison read, the file it is from and its row and field there (None: made
from others, as the annotators' majority is)."""


def _read_scores(side: Verdicts) -> list[ReadScore]:
    """Every score a side holds, paired or not, with where it was read."""
    where = side.where or [None] * len(side.rows)
    return [(s, side.path, w) for (_, s), w in zip(side.rows, where, strict=True) if s is not None]


def _checked_scale(
    source: ScaleSource,
    read: list[ReadScore],
    scored: bool,
    candidate: str | Path,
    threshold: int | None,
) -> ScaleSource:
    """The scale read on (default: inferred, the range of every score read — each annotator's,
    the unpaired ones' —, as every one of them is read on it), with every score and the
    threshold checked against it (a one-line error naming the file, row and field)."""
    if source.scale is None:
        seen = sorted({s for s, *_ in read})
        if not scored:
            raise DataError("no pair is scored on both sides", path=candidate)
        if seen[0] == seen[-1] and seen[0] not in (0, 1):
            raise DataError(
                f"every score on both sides is {seen[0]}: no scale can be inferred from one "
                "value (without --scale the scale is the range of the scores seen); give it "
                "with --scale, e.g. --scale 1-5",
                path=candidate,
            )
        scale = (
            Scale.parse(f"{seen[0]}-{seen[-1]}") if seen[0] != seen[-1] else Scale(kind="binary")
        )
        source = ScaleSource(scale, INFERRED)
    scale = source.scale
    for s, path, where in read:
        try:
            scale.check(s)
        except ValueError:
            row, field = where or (None, None)
            raise DataError(
                f"score {s} is not on {source.describe()}", path=path, row=row, field=field
            ) from None
    if threshold is not None and threshold not in scale.values:
        how = "; give the scale with --scale" if source.origin == INFERRED else ""
        raise DataError(f"threshold {threshold} is not on {source.describe()}{how}")
    return source
