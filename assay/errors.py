"""One error hierarchy. A subclass of :class:`AssayError` is a user mistake: the CLI prints its
one-line message and exits non-zero without a traceback. Anything else is a bug and keeps its
traceback."""

from __future__ import annotations

from pathlib import Path

__all__ = ["AssayError", "ConfigError", "DataError", "ModelError", "RunError", "quoted"]

SHOWN = 80
"""The most characters of a value a message quotes (:func:`quoted`)."""
MESSAGE_LIMIT = 2_000
"""The most characters of a message printed (:meth:`AssayError.__str__`): a one-line error stays
one readable line whatever it quotes."""


def quoted(value: object, limit: int = SHOWN) -> str:
    """``repr(value)`` for a message, its start alone when it is longer than ``limit``
    characters, with its length: a 200 MB cell is named, not echoed."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}… ({len(value):,} characters)"
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


class AssayError(Exception):
    """A problem the user can fix (bad config, missing file, missing key...)."""

    exit_code = 2

    def __str__(self) -> str:
        text = super().__str__()
        if len(text) <= MESSAGE_LIMIT:
            return text
        return f"{text[:MESSAGE_LIMIT]}… (the message's {len(text):,} characters cut)"


class ConfigError(AssayError):
    """A config file that is missing, malformed or has an invalid field."""


class DataError(AssayError):
    """Input data that cannot be read: names the file, and where possible the row and field."""

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        row: int | None = None,
        field: str | None = None,
    ):
        where = []
        if path is not None:
            where.append(str(path))
        if row is not None:
            where.append(f"row {row}")
        if field is not None:
            where.append(f"field '{field}'")
        self.message, self.path, self.row, self.field = message, path, row, field
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


class ModelError(AssayError):
    """A model that cannot be used: unknown backend, missing API key, missing GGUF file."""


class RunError(AssayError):
    """A run directory that cannot be used (for instance, it belongs to another config)."""
