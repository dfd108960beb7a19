"""``assay agreement``: agreement between two existing sets of verdicts, with no LM call.

Reads assay ``judgments.jsonl`` (paired by item id), ToolEmu evaluator JSONL (``eval_scores``;
paired by line: line *i* scores trajectory *i*) and tables with an id and a score column.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from assay.data import ColumnMap, load_table
from assay.errors import DataError
from assay.experiments._scoring import agreement_summary, pair_scores
from assay.scale import Scale


def read_verdicts(
    path: str | Path,
    *,
    id_column: str | None = None,
    score_column: str | None = None,
    key: str | None = None,
) -> tuple[dict[str, int | None], str]:
    """Scores by id (``None`` = unscored) and how they pair: ``"id"`` or ``"line"``."""
    path = Path(path)
    if not path.is_file():
        raise DataError("file not found", path=path)
    if path.suffix == ".jsonl":
        first = _first_record(path)
        if first is not None and "item_id" in first and "judge" in first:
            return _read_judgments(path), "id"
        if first is not None and ("eval_scores" in first or "Overall Qualitative Label" in first):
            return _read_toolemu(path, key), "line"
    if score_column is None:
        raise DataError(
            "not an assay judgments or ToolEmu evaluator file; give --score-column (and --id-column)",
            path=path,
        )
    items = load_table(
        str(path),
        columns=ColumnMap(
            id=id_column or "@row", request=None, response=None, expected=score_column
        ),
    )
    how = "id" if id_column else "line"
    return {(it.id if id_column else str(i)): it.expected for i, it in enumerate(items)}, how


def _first_record(path: Path) -> dict | None:
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    raise DataError("malformed JSON line", path=path, row=n) from None
                return rec if isinstance(rec, dict) else None
    raise DataError("empty file", path=path)


def _read_judgments(path: Path) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                out[str(rec["item_id"])] = rec.get("score")
            except (json.JSONDecodeError, KeyError, TypeError):
                raise DataError(
                    "malformed judgment line", path=path, row=n, field="item_id"
                ) from None
    return out


def _read_toolemu(path: Path, key: str | None) -> dict[str, int | None]:
    from assay.data import load_toolemu_evaluations

    out: dict[str, int | None] = {}
    for rec in load_toolemu_evaluations(path, key=key):
        line = rec["eval_id"] if rec.get("eval_id") is not None else rec["line"]
        out[str(line)] = rec["score"]
    return out


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
) -> dict[str, Any]:
    """The agreement report between two verdict files (reference defines true failures)."""
    ref, how_r = read_verdicts(reference, id_column=id_column, score_column=score_column, key=key)
    cand, how_c = read_verdicts(candidate, id_column=id_column, score_column=score_column, key=key)
    if how_r != how_c:
        if how_r == "id":
            ref = {str(i): v for i, v in enumerate(ref.values())}
        else:
            cand = {str(i): v for i, v in enumerate(cand.values())}
    ids, r, c, unscored = pair_scores(ref, cand)
    if scale is None:
        seen = sorted(set(r) | set(c))
        if not seen:
            raise DataError("no pair is scored on both sides", path=candidate)
        scale = (
            Scale.parse(f"{seen[0]}-{seen[-1]}") if seen[0] != seen[-1] else Scale(kind="binary")
        )
    for side, path, scores in (("reference", reference, r), ("candidate", candidate, c)):
        for i, s in zip(ids, scores, strict=True):
            try:
                scale.check(s)
            except ValueError as exc:
                raise DataError(f"{exc}", path=path, field=f"{side} score of {i}") from None
    if threshold is not None and threshold not in scale.values:
        raise DataError(f"threshold {threshold} is not on the {scale.describe()} scale")
    summary = agreement_summary(
        r, c, scale, threshold=threshold, n_resamples=n_resamples, seed=seed
    )
    return {
        "n": len(ids),
        "unscored": unscored,
        "unpaired": {
            "reference": len(set(ref) - set(cand)),
            "candidate": len(set(cand) - set(ref)),
        },
        "paired_by": "id" if how_r == how_c == "id" else "line",
        "scale": scale.describe(),
        "threshold": threshold,
        "metrics": {
            k: {
                "value": m["value"],
                "ci_low": m["ci_low"],
                "ci_high": m["ci_high"],
                **({"note": m["note"]} if m.get("note") else {}),
            }
            for k, m in summary["metrics"].items()
        },
        "confusion_matrix": summary["confusion_matrix"],
    }
