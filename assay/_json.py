"""JSON a user hands in (data files, rubric files, annotations, ToolEmu files), parsed within
bounds: ``json.loads`` itself raises ``RecursionError`` on a deeply nested document (a
3,000-line traceback), and one it parses at 900 levels would do the same later, in whatever
code walks it; an integer of 5,000 digits is a bare ``ValueError``. :func:`loads` turns each
into a ``json.JSONDecodeError`` — so every reader's
one-line error for malformed JSON covers them — and :func:`check_size` bounds a file before it
is read."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

MAX_DEPTH = 100
"""Deepest nesting of arrays and objects (a ToolEmu trajectory or a chat transcript nests ~6)."""
MAX_BYTES = 1024 * 2**20
"""Largest JSON or JSON Lines file read (1 GiB)."""


class OverBound(json.JSONDecodeError):
    """A JSON document over a bound of this module (a ``json.JSONDecodeError``, so that every
    reader's one line for malformed JSON covers it)."""


class TooDeep(OverBound):
    """A JSON document nested more than :data:`MAX_DEPTH` levels."""

    def __init__(self, doc: str):
        super().__init__(f"nested more than {MAX_DEPTH} levels", doc, _too_deep_at(doc))


class TooManyDigits(OverBound):
    """An integer with more digits than Python converts (``sys.get_int_max_str_digits()``,
    4,300 by default): ``json.loads`` raises a bare ``ValueError`` there."""

    def __init__(self, doc: str):
        limit = sys.get_int_max_str_digits()
        found = re.search(rf"[0-9]{{{limit + 1},}}", doc)
        at = found.start() if found else 0
        super().__init__(f"a number of more than {limit:,} digits", doc, at)


_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[{]|[\]}]')


def _too_deep_at(doc: str) -> int:
    """Where ``doc`` opens its level ``MAX_DEPTH + 1`` (0 if it never does): for the error."""
    level = 0
    for m in _TOKENS.finditer(doc):
        token = m.group()
        if token in "[{":
            level += 1
            if level > MAX_DEPTH:
                return m.start()
        elif token in "]}":
            level -= 1
    return 0


def loads(text: str | bytes) -> Any:
    """``json.loads(text)``; a document nested deeper than :data:`MAX_DEPTH` raises
    :class:`TooDeep`, an integer too long to convert :class:`TooManyDigits` (both are
    ``json.JSONDecodeError``)."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise TooDeep(text if isinstance(text, str) else "") from None
    except json.JSONDecodeError:
        raise
    except ValueError:  # int() of a number longer than Python converts
        doc = text if isinstance(text, str) else text.decode("utf-8", "replace")
        raise TooManyDigits(doc) from None
    if isinstance(value, list | dict) and _too_deep(value):
        raise TooDeep(text if isinstance(text, str) else "")
    return value


def _too_deep(value: list | dict) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, level = stack.pop()
        if level > MAX_DEPTH:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, level + 1) for c in children if isinstance(c, list | dict))
    return False


def check_size(path: str | Path) -> None:
    """``ValueError`` naming the limit when the file at ``path`` is larger than
    :data:`MAX_BYTES` (a missing file is left to the reader to report)."""
    try:
        size = Path(path).stat().st_size
    except OSError:
        return
    if size > MAX_BYTES:
        raise ValueError(f"larger than {MAX_BYTES // 2**20} MiB; not read")
