"""Load a run's items from its data config (tables, ToolEmu trajectories, Inspect logs)."""

from __future__ import annotations

from pathlib import Path

from assay.data import (
    check_limit,
    load_inspect_log,
    load_table,
    load_toolemu_evaluations,
    load_toolemu_toolkits,
    load_toolemu_trajectories,
    missing_labels_error,
    pair_evaluations,
    render_toolkit_descriptions,
)
from assay.errors import DataError
from assay.experiments._config import DataConfig
from assay.scale import Scale
from assay.types import Item


def load_items(
    data: DataConfig, scale: Scale, *, cache_dir: Path | None = None, limit: int | None = None
) -> list[Item]:
    """Items of ``data``, validated against ``scale``; ``limit`` (else ``data.limit``) keeps the
    first N, and must be at least 1."""
    limit = check_limit(limit) if limit is not None else data.limit
    if data.format == "table":
        items = load_table(
            data.path,
            columns=data.columns,
            scale=scale,
            split=data.split,
            limit=limit,
            cache_dir=cache_dir,
            missing_expected=data.missing_expected,
        )
    elif data.format == "inspect":
        items = load_inspect_log(data.path, expected=data.expected)
        for it in items:
            if it.expected is not None:
                try:
                    it.expected = scale.coerce(it.expected)
                except ValueError as exc:
                    raise DataError(
                        str(exc), path=data.path, field=f"{it.id}: {data.expected}"
                    ) from None
    else:
        items = _toolemu_items(data, scale)
    if limit is not None:
        items = items[:limit]
    if not items:
        raise DataError("no items to judge", path=data.path)
    return items


def _toolemu_items(data: DataConfig, scale: Scale) -> list[Item]:
    items = load_toolemu_trajectories(data.path)
    if data.toolkits:
        toolkits = load_toolemu_toolkits(data.toolkits)
        for it in items:
            it.meta["tool_descriptions"] = render_toolkit_descriptions(
                toolkits, it.meta.get("toolkits") or []
            )
    if data.expected_from:
        evals = load_toolemu_evaluations(data.expected_from, key=data.expected_key)
        by_line, _ = pair_evaluations(evals, len(items), path=data.expected_from)
        missing = [
            it.meta["line"] + 1
            for it in items
            if (by_line.get(it.meta["line"]) or {}).get("score") is None
        ]
        if missing and data.missing_expected == "error":
            raise missing_labels_error(missing, len(items), data.expected_from, "eval_scores")
        for it in items:
            e = by_line.get(it.meta["line"])
            if e is not None and e["score"] is not None:
                try:
                    it.expected = scale.coerce(e["score"])
                except ValueError as exc:
                    raise DataError(
                        str(exc), path=data.expected_from, row=e["line"] + 1, field="eval_scores"
                    ) from None
    return items
