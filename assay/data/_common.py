"""Helpers shared by the loaders: plain-JSON conversion and line-numbered JSON reading."""

from __future__ import annotations

import base64
import datetime as _dt
import decimal
import json
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from assay import _json
from assay.errors import ConfigError, DataError, quoted


def jsonable(value: object) -> Any:
    """Return ``value`` as plain JSON data (NaN/inf become None, dates ISO strings, bytes base64)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return jsonable(float(value))
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    if hasattr(value, "model_dump"):  # pydantic models (e.g. inspect_ai content)
        return jsonable(value.model_dump(mode="json", exclude_none=True))
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        try:
            return jsonable(value.item())
        except (TypeError, ValueError):
            pass
    if hasattr(value, "tolist") and callable(value.tolist):  # numpy arrays
        return jsonable(value.tolist())
    return str(value)


def is_missing(value: object) -> bool:
    """True for None, NaN and blank strings: the ways a table spells an empty cell."""
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


def check_file(path: str | Path) -> Path:
    """Return ``path`` as an absolute Path, or raise DataError if it is not an existing file."""
    p = Path(path).expanduser()
    if not p.exists():
        raise DataError("file not found", path=p)
    if not p.is_file():
        raise DataError("not a file", path=p)
    return p.resolve()


def read_json(path: str | Path) -> Any:
    """Parse a whole JSON file; DataError naming the file and line on malformed JSON."""
    p = check_file(path)
    try:
        _json.check_size(p)
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise DataError(f"cannot read: {exc}", path=p) from None
    try:
        return _json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(
            f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}", path=p
        ) from None


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, int, Any]]:
    """Yield ``(record index, 1-based line number, parsed value)`` for each non-blank line."""
    p = check_file(path)
    try:
        _json.check_size(p)
    except ValueError as exc:
        raise DataError(str(exc), path=p) from None
    for index, line in enumerate(_json.read_lines(p)):
        try:
            value = _json.loads(line.text)
        except json.JSONDecodeError as exc:
            raise DataError(
                f"line {line.number} is not valid JSON ({exc.msg}, column {exc.colno})",
                path=p,
                row=line.number,
            ) from None
        yield index, line.number, value


def as_int_label(value: object) -> int:
    """Read an integer label from an int, an integral float or a digit string; else ValueError.
    A boolean or a true/false word is no integer (``True`` is not the score 1): it is a label,
    read only on a scale that places it (:meth:`assay.scale.Scale.coerce`), as a column of
    scores 1..5 with a ``True`` in it is refused on ``--scale 1-5``."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not an integer label")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            number = float(text)
        except ValueError:
            pass
        else:
            if number.is_integer():
                return int(number)
    raise ValueError(f"{quoted(value)} is not an integer label")


def check_limit(limit: object) -> int | None:
    """``limit`` (keep the first N items) when it is None or a whole number of at least 1; a
    ConfigError otherwise — 0 must not mean "everything", nor -1 "all but the last"."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ConfigError(f"limit must be a positive number of items, not {limit!r}")
    return limit


def resolve_dotted(root: object, dotted: str, *, top: str = "meta") -> tuple[Any, str | None]:
    """Follow ``a.b.c`` through mappings and list indices (``-1``: the last element) from
    ``root`` (called ``top`` in messages); return the value and None, or None and what is
    missing (``no 'x' under 'a.b' (found: ...)``, ``no 'x' under 'a.b' (it is empty)``,
    ``'a.b' has no element -1 (it has 0)``)."""
    node: Any = root
    walked: list[str] = []
    for key in dotted.split("."):
        where = ".".join(walked) or top
        if isinstance(node, Mapping) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.lstrip("-").isdigit():
            if not -len(node) <= int(key) < len(node):
                return None, f"'{where}' has no element {key} (it has {len(node)})"
            node = node[int(key)]
        elif isinstance(node, Mapping) and not node:
            return None, f"no '{key}' under '{where}' (it is empty)"
        else:
            keys = ", ".join(map(str, node)) if isinstance(node, Mapping) else type(node).__name__
            return None, f"no '{key}' under '{where}' (found: {keys})"
        walked.append(key)
    return node, None
