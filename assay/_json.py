"""JSON a user hands in (data files, rubric files, annotations, ToolEmu files), parsed within
bounds: ``json.loads`` itself raises ``RecursionError`` on a deeply nested document (a
3,000-line traceback), and one it parses at 900 levels would do the same later, in whatever
code walks it; an integer of 5,000 digits is a bare ``ValueError``. :func:`loads` turns each
into a ``json.JSONDecodeError`` — so every reader's one-line error for malformed JSON covers
them — and :func:`check_size` bounds a file before it is read.

JSON Lines — a user's and every file a run appends to — are split into lines here and nowhere
else (:func:`read_lines`, :func:`split_lines`, :func:`records`): at ``"\n"`` only. JSON escapes
every control character inside a string but leaves U+0085, U+2028 and U+2029 as they are, and
``str.splitlines`` (and so any reader built on it) splits at those too: a reviewer's note or an
item's text holding one would cut its record in two halves that do not parse."""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from assay._signing import MAC_FIELD
from assay.errors import DataError

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


class DuplicateKey(ValueError):
    """An object of a document that gives a key twice (``json.loads`` keeps the last value):
    raised by :func:`loads` with ``unique_keys``."""

    def __init__(self, key: str):
        self.key = key
        super().__init__(f"key {key!r} given twice")


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's pairs as a dict, or :class:`DuplicateKey` naming the first key given twice."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return obj


UNIQUE_KEYS = json.JSONDecoder(object_pairs_hook=_unique)
"""A decoder that raises :class:`DuplicateKey` where an object gives a key twice (one decoder:
``json.loads`` with a hook builds a decoder per call)."""


def loads(text: str | bytes, *, unique_keys: bool = False) -> Any:
    """``json.loads(text)``; a document nested deeper than :data:`MAX_DEPTH` raises
    :class:`TooDeep`, an integer too long to convert :class:`TooManyDigits` (both are
    ``json.JSONDecodeError``); with ``unique_keys``, an object that gives a key twice
    :class:`DuplicateKey` (else the last value is kept, as JSON parsers do)."""
    try:
        if unique_keys:
            value = UNIQUE_KEYS.decode(text if isinstance(text, str) else text.decode("utf-8"))
        else:
            value = json.loads(text)
    except RecursionError:
        raise TooDeep(text if isinstance(text, str) else "") from None
    except (json.JSONDecodeError, DuplicateKey):
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


class Line(NamedTuple):
    """One non-blank line of a JSON Lines file."""

    number: int  # 1-based, blank lines counted: what an error names as the row
    text: str  # without its "\n"
    complete: bool  # ended by "\n"; only a file's last line may not be (a killed writer's)


def _lines(fh: Iterable[bytes]) -> Iterator[Line]:
    """Iterating a binary file splits at b"\n" alone (no UTF-8 sequence holds that byte)."""
    for _, line in _placed(fh):
        yield line


def _placed(fh: Iterable[bytes]) -> Iterator[tuple[int, Line]]:
    """Each non-blank line with the byte offset it starts at."""
    offset = 0
    for number, raw in enumerate(fh, start=1):
        complete = raw.endswith(b"\n")
        if complete:
            text = raw[:-1].decode("utf-8")
        else:  # a line cut short by a kill may end inside a character
            text = raw.decode("utf-8", "replace")
        if text.strip(" \t\r"):  # JSON's whitespace: a line of nothing else is blank
            yield offset, Line(number, text, complete)
        offset += len(raw)


def read_lines(path: str | Path) -> Iterator[Line]:
    """The non-blank lines of the UTF-8 file at ``path``, split at ``"\n"`` only (a ``"\r"``
    before it is kept: JSON whitespace), read as it goes. A file that cannot be read, or is
    not UTF-8, is a :class:`~assay.errors.DataError` naming it."""
    for _, line in placed_lines(path):
        yield line


def placed_lines(path: str | Path) -> Iterator[tuple[int, Line]]:
    """:func:`read_lines` with the byte offset each line starts at (what a reader that comes
    back to a line later keeps of it, instead of the line)."""
    try:
        with open(path, "rb") as fh:
            yield from _placed(fh)
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read: {exc}", path=path) from None


def split_lines(text: str) -> list[Line]:
    """The non-blank lines of JSON Lines ``text``, split at ``"\n"`` only."""
    return list(_lines(io.BytesIO(text.encode("utf-8"))))


def records(path: str | Path) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of each line of a JSON Lines file assay appends to (nothing when
    there is no file). A last line cut short by a killed writer — no ``"\n"``, not JSON — is
    skipped (the next append cuts it off); any other line that is not JSON is a
    :class:`~assay.errors.DataError` naming the file and the row."""
    path = Path(path)
    if not path.is_file():
        return
    for line in read_lines(path):
        try:
            value = loads(line.text)
        except json.JSONDecodeError as exc:
            if not line.complete:
                return
            raise DataError(f"not valid JSON ({exc.msg})", path=path, row=line.number) from None
        if isinstance(value, dict):  # a run's signed record: its signature is not its content
            value.pop(MAC_FIELD, None)
        yield line.number, value
