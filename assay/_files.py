"""Files a user names (a config, an ``@file`` text, a rubric), opened within bounds: a regular
file only, up to a size, every failure one line naming the path.

``open()`` on a FIFO waits for a writer forever, ``/dev/zero`` reads until memory runs out, and
``Path.resolve`` raises ``RuntimeError`` on a symlink loop: :func:`read_bytes` opens without
blocking, refuses anything that is not a regular file before reading a byte, and reads at most
its bound plus one byte; :func:`resolve` names a loop in one line. :func:`check_writable`
says, before anything is recorded, that an output file can be written.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from assay.errors import AssayError, ConfigError

MAX_TEXT_BYTES = 10 * 2**20
"""Largest ``@file`` text read into a config (10 MiB: an instruction, a rubric or a criteria
file is a few KiB, and every byte of it is sent to the model with each item)."""

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "a loop of symbolic links"
    return f"cannot read ({exc.strerror or exc})"


def read_bytes(
    path: str | Path, *, limit: int, error: type[AssayError] = ConfigError, what: str = "file"
) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them. Missing, not a
    regular file (a directory, FIFO, device, socket), a symlink loop, unreadable or larger than
    ``limit``: ``error("<path>: <one line>")``, without blocking and without reading more than
    ``limit + 1`` bytes."""
    path = Path(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)  # non-blocking: a FIFO without a writer opens at once
    except FileNotFoundError:
        raise error(f"{path}: {what} not found") from None
    except IsADirectoryError:
        raise error(f"{path}: is a directory, not a {what}") from None
    except OSError as exc:
        raise error(f"{path}: {_reason(exc)}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise error(f"{path}: is {_kind(mode)}, not a {what}; name a regular file")
    with os.fdopen(fd, "rb") as fh:
        try:
            data = fh.read(limit + 1)
        except OSError as exc:
            raise error(f"{path}: {_reason(exc)}") from None
    if len(data) > limit:
        raise error(f"{path}: larger than {_size(limit)}; not read")
    return data


def read_text(
    path: str | Path, *, limit: int, error: type[AssayError] = ConfigError, what: str = "file"
) -> str:
    """:func:`read_bytes` decoded as UTF-8 (else ``error("<path>: not UTF-8 text (byte N)")``)."""
    data = read_bytes(path, limit=limit, error=error, what=what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text (byte {exc.start})") from None


def resolve(path: str | Path, error: type[AssayError] = ConfigError) -> Path:
    """``Path(path).resolve()``; a symlink loop is ``error("<path>: a loop of symbolic
    links")`` (Python raises ``RuntimeError`` or ``OSError`` there, by version)."""
    path = Path(path)
    try:
        return path.resolve()
    except (RuntimeError, OSError):
        raise error(f"{path}: a loop of symbolic links") from None


def sha256_file(path: str | Path) -> str:
    """The SHA-256 (hex) of a file's bytes, read a block at a time whatever its size."""
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_text_field(value: str | None, base: Path) -> str | None:
    """``@path`` reads a file relative to ``base`` (the config's folder); anything else is text.
    A regular UTF-8 file of at most :data:`MAX_TEXT_BYTES` (10 MiB), else one line naming it (a
    FIFO, ``/dev/zero`` or a directory is refused before anything is read)."""
    if value is None or not value.startswith("@"):
        return value
    path = resolve(base / value[1:])
    return read_text(path, limit=MAX_TEXT_BYTES, what="text file").strip()


def check_writable(
    path: str | Path, *, option: str = "", error: type[AssayError] = ConfigError
) -> Path:
    """``path`` as a file that can be written, checked before anything is recorded: not a
    directory, in a folder that exists or can be made, where a file can be created (a scratch
    file made and removed). Otherwise ``error("<option> <path>: <one line>")``."""
    import tempfile

    path = Path(path)
    where = f"{option} {path}" if option else str(path)
    if path.name in ("", ".", "..") or path.is_dir():
        raise error(f"{where}: is a directory; name a file")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"):
            pass
        if path.exists() and not os.access(path, os.W_OK):
            raise PermissionError(errno.EACCES, "Permission denied")
    except OSError as exc:
        raise error(f"{where}: cannot be written ({exc.strerror or exc})") from None
    return path


def _size(n: int) -> str:
    return f"{n // 2**20} MiB" if n % 2**20 == 0 else f"{n:,} bytes"
