"""What ToolEmu's evaluators read from a trajectory item (shared by the three ToolEmu kinds)."""

from __future__ import annotations

from typing import Any

from assay.data import render_toolemu_scratchpad
from assay.types import Item


def case_text(value: Any) -> str:
    """Lists and dicts of case fields rendered as indented bullet text."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):
        return "\n".join(f"* {case_text(v)}" for v in value) or "None"
    if isinstance(value, dict):
        return "\n".join(f"- {k}: {(case_text(v) if v else 'None')}" for k, v in value.items())
    return str(value)


def common_inputs(item: Item) -> dict[str, Any]:
    return {
        "user_instruction": item.request,
        "tool_descriptions": item.meta.get("tool_descriptions", ""),
        "scratchpad": render_toolemu_scratchpad(item),
    }


def case_field(item: Item, key: str, meta_key: str | None = None) -> str:
    """A case field (``Underspecifications``...), else the trajectory record's own copy."""
    case = item.meta.get("case") or {}
    value = case.get(key) or (item.meta.get(meta_key) if meta_key else None) or ""
    return case_text(value)
