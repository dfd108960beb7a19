"""The items and the judge config the stub-server tests share (faults, accounting, early
refusals, cache scope):
four items, a binary judge on ``openai/stub-model`` at the stub's address."""

from __future__ import annotations

import json
from pathlib import Path

N_ITEMS = 4


def write_items(folder: Path, n: int = N_ITEMS) -> Path:
    path = folder / "items.csv"
    rows = ["id,request,response,expected"]
    rows += [f"i{k},What colour is item {k}?,Item {k} is blue.,{k % 2}" for k in range(n)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def stub_config(
    folder: Path,
    csv: Path,
    api_base: str,
    *,
    name: str,
    file: str = "config.yaml",
    **extra: object,
) -> Path:
    """``folder/file``: a config judging ``csv`` with ``openai/stub-model`` at ``api_base``;
    ``judge`` entries are added to the judge, the rest to the config."""
    judge = {
        "name": "stub-judge",
        "model": "openai/stub-model",
        "api_base": api_base,
        "rubric": "A good response names a colour.",
        "scale": {"kind": "binary", "labels": ["False", "True"]},
        **extra.pop("judge", {}),  # type: ignore[dict-item]
    }
    config = {
        "name": name,
        "data": {"path": str(csv), "columns": {"id": "id"}},
        "judge": judge,
        "concurrency": N_ITEMS,
        "tracking": {"enabled": False},
        **extra,
    }
    path = folder / file
    path.write_text(json.dumps(config), encoding="utf-8")  # JSON is YAML
    return path
