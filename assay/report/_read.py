"""What every runner's report builder shares: reading its run directory (JSON Lines through
:func:`assay._json.records`, a summary read through its model), embedding its plots, a judgment
as a table cell."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from assay._json import records
from assay.errors import RunError
from assay.report._model import Table
from assay.types import Judgment

M = TypeVar("M", bound=BaseModel)


def load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunError(f"{path}: cannot read ({exc})") from None


def load_summary(path: Path, model: type[M]) -> M:
    """A run's summary (``metrics.json``) read through its model; one line when it is not one
    (written by another version of assay, or edited)."""
    try:
        return model.model_validate(load_json(path))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise RunError(
            f"{path}: not a {model.__name__} this version of assay reads "
            f"({exc.error_count()} errors; first at {where}: {first['msg']})"
        ) from None


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of a JSONL file a run wrote (none when it has none): a torn last line is
    skipped, any other line that is not JSON is a one-line ``DataError`` naming it."""
    return [value for _, value in records(path)]


def read_yaml(path: Path) -> dict[str, Any]:
    import yaml

    from assay._yaml import load as load_yaml

    try:
        data = load_yaml(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def png_uri(path: Path) -> str | None:
    if not path.is_file():
        return None
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def images(run_dir: Path, plots: tuple[tuple[str, str], ...]) -> list[tuple[str, str]]:
    """``(caption, data URI)`` of each ``(caption, file name)`` plot the run wrote."""
    out = []
    for caption, name in plots:
        uri = png_uri(run_dir / name)
        if uri:
            out.append((caption, uri))
    return out


def figures(run_dir: Path, tables: list[Table]) -> dict[str, str]:
    """``file name -> data URI`` of the figure of each table, where the run wrote it."""
    out = {}
    for t in tables:
        uri = png_uri(run_dir / t.figure[1]) if t.figure else None
        if t.figure and uri:
            out[t.figure[1]] = uri
    return out


def number(v: object) -> float | None:
    """``v`` as a sort key: a float, or ``None`` for anything else (and NaN)."""
    return float(v) if isinstance(v, int | float) and v == v else None


def verdict(j: Judgment | dict | None, label=None) -> tuple[str, Any]:
    """``(shown, sort key)`` of a judgment: its label and score, or why it has none."""
    if j is None:
        return ("not judged", None)
    if isinstance(j, dict):
        j = Judgment.model_validate(j)
    if j.score is None:
        return (f"unscored: {j.unscored}", None)
    shown = label(j.score) if label else (f"{j.label} ({j.score})" if j.label else str(j.score))
    return (shown, j.score)


def pretty(raw: object) -> str | None:
    if raw is None or raw == "":
        return None
    return raw if isinstance(raw, str) else json.dumps(raw, indent=2, ensure_ascii=False)
