"""Pairing ToolEmu evaluator lines with trajectories, or two evaluator files with each other,
so that no pair is lost or invented: ``eval_id`` where unique, else line by line where the files
align, else a one-line error naming the repeated ids."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.data._common import as_int_label
from assay.errors import DataError


def _eval_ids(rows: list[dict[str, Any]]) -> list[int] | None:
    """The rows' ``eval_id`` values when every row has an integer one, else None."""
    out = []
    for r in rows:
        try:
            out.append(as_int_label(r["eval_id"]) if "eval_id" in r["raw"] else None)
        except (ValueError, TypeError):
            return None
    return None if any(v is None for v in out) else out  # type: ignore[return-value]


def _repeated(ids: list[int]) -> list[int]:
    seen: set[int] = set()
    dup: list[int] = []
    for i in ids:
        if i in seen and i not in dup:
            dup.append(i)
        seen.add(i)
    return dup


def _describe(ids: list[int]) -> str:
    shown = ", ".join(str(i) for i in ids[:5])
    return shown + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")


def pair_evaluations(
    rows: list[dict[str, Any]], n_trajectories: int, *, path: str | Path
) -> tuple[dict[int, dict[str, Any]], str]:
    """``{trajectory line: evaluator row}`` and how they were paired: ``"eval_id"`` or ``"line"``.

    ``eval_id`` is the key where every row has one and none repeats (each must name a line of
    the trajectory file). Where they repeat — files concatenating several agent runs, each
    restarting at 0 — and the file has exactly one row per trajectory, row *i* scores line *i*.
    Anything else cannot be paired without losing or inventing pairs: a one-line error naming
    the repeated ids.
    """
    ids = _eval_ids(rows)
    if ids is not None and not _repeated(ids):
        out: dict[int, dict[str, Any]] = {}
        for r, i in zip(rows, ids, strict=True):
            if not 0 <= i < n_trajectories:
                raise DataError(
                    f"eval_id {i} has no trajectory (the trajectory file has lines "
                    f"0..{n_trajectories - 1})",
                    path=path,
                    row=r["line"] + 1,
                    field="eval_id",
                )
            out[i] = r
        return out, "eval_id"
    if len(rows) == n_trajectories:
        return {r["line"]: r for r in rows}, "line"
    why = (
        f"eval_id repeats ({_describe(_repeated(ids))})"
        if ids is not None
        else "some lines have no integer eval_id"
    )
    raise DataError(
        f"{why} and the file has {len(rows)} lines for {n_trajectories} trajectories, so its "
        "lines cannot be paired with them (split it per agent run, or give one line per trajectory)",
        path=path,
    )


def align_evaluation_files(
    reference: list[dict[str, Any]],
    candidate: list[dict[str, Any]],
    *,
    paths: tuple[str | Path, str | Path],
) -> tuple[list[tuple[str, dict[str, Any] | None, dict[str, Any] | None]], str]:
    """Pair two evaluator files of the same trajectories: ``[(key, reference row or None,
    candidate row or None)]`` in reference order, and ``"eval_id"`` or ``"line"``.

    By ``eval_id`` where both files have unique ones (a key missing on one side is unpaired);
    by line where ids repeat and the files have the same length and the same ``eval_id``
    sequence (they come from the same concatenated trajectory file); otherwise a one-line error.
    """
    ids_r, ids_c = _eval_ids(reference), _eval_ids(candidate)
    if ids_r is not None and ids_c is not None and not _repeated(ids_r) and not _repeated(ids_c):
        by_c = dict(zip(ids_c, candidate, strict=True))
        by_r = dict(zip(ids_r, reference, strict=True))
        keys = list(ids_r) + [i for i in ids_c if i not in by_r]
        return [(str(i), by_r.get(i), by_c.get(i)) for i in keys], "eval_id"
    if len(reference) == len(candidate) and (ids_r is None or ids_c is None or ids_r == ids_c):
        return [(str(r["line"]), r, c) for r, c in zip(reference, candidate, strict=True)], "line"
    for ids, path in ((ids_r, paths[0]), (ids_c, paths[1])):
        if ids is not None and _repeated(ids):
            raise DataError(
                f"eval_id repeats ({_describe(_repeated(ids))}) and the two files differ in "
                f"length or eval_id order ({len(reference)} vs {len(candidate)} lines), so they "
                "cannot be paired line by line",
                path=path,
            )
    raise DataError(
        f"the two evaluator files cannot be paired: no unique eval_id and {len(reference)} vs "
        f"{len(candidate)} lines",
        path=paths[1],
    )
