"""The signing key: what makes a run's seal, a certificate or a calibration assay's own word.

A file cannot vouch for itself: a digest written beside the files it covers is rewritten with
them. What assay writes to decide on later is signed with HMAC-SHA256 under a key kept outside
the runs folder — ``~/.config/assay/signing.key`` (``$XDG_CONFIG_HOME`` when set), or the file
``ASSAY_SIGNING_KEY_FILE`` names —, created on first use, readable by its owner only. A team
shares the file as it shares its tracking store; whoever holds it can sign, so it is guarded
like a credential. The signature is over the canonical JSON of what it covers (keys sorted, no
spaces), compared in constant time.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path
from typing import Any

from assay.errors import ConfigError

KEY_FILE_ENV = "ASSAY_SIGNING_KEY_FILE"
_MIN_KEY_BYTES = 32
MAC_FIELD = "_mac"
"""The field a run's signed records end with (:mod:`assay.runs`); readers of those files drop it."""


def key_file() -> Path:
    """Where the signing key is: ``ASSAY_SIGNING_KEY_FILE``, else under the user's config
    folder."""
    named = os.environ.get(KEY_FILE_ENV)
    if named:
        return Path(named).expanduser()
    config = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(config) / "assay" / "signing.key"


def ensure_key() -> Path:
    """The key file, created (mode 0600, in a folder of mode 0700) when there is none yet; a
    key that cannot be created or read is one line naming the file and the variable."""
    path = key_file()
    if not path.exists():
        _create(path)
    _read_key(path)
    return path


def canonical(payload: Any) -> bytes:
    """The bytes a signature covers: ``payload`` as JSON with sorted keys and no spaces."""
    return json.dumps(
        payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    ).encode("utf-8")


def digest(payload: Any) -> str:
    """SHA-256 of the canonical JSON of ``payload`` (hex)."""
    return hashlib.sha256(canonical(payload)).hexdigest()


def sign(payload: Any) -> str:
    """The HMAC-SHA256 of ``payload``'s canonical JSON under the key (created if missing)."""
    return hmac.new(_read_key(ensure_key()), canonical(payload), hashlib.sha256).hexdigest()


def key(*, create: bool) -> bytes:
    """The key's bytes, read once by a caller that signs or checks many things (a run's
    records); ``create``: make the key when there is none yet (a writer), else refuse."""
    return _read_key(ensure_key() if create else key_file())


def verify(payload: Any, signature: object) -> bool:
    """Whether ``signature`` is the key's signature of ``payload`` (constant-time compare). The
    key must exist: verifying never creates one."""
    if not isinstance(signature, str):
        return False
    expected = hmac.new(_read_key(key_file()), canonical(payload), hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, signature)


def _read_key(path: Path) -> bytes:
    try:
        key = path.read_bytes().strip()
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: no signing key, and one is needed to verify what assay signed (a team "
            f"shares its key file: set {KEY_FILE_ENV} to it)"
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot read the signing key ({exc.strerror}); set {KEY_FILE_ENV} to a "
            "readable key file"
        ) from None
    if len(key) < _MIN_KEY_BYTES:
        raise ConfigError(
            f"{path}: a signing key of {len(key)} bytes; a key has at least {_MIN_KEY_BYTES}"
        )
    return key


def _create(path: Path) -> None:
    """A fresh random key, written whole under a temporary name and linked into place: two
    processes creating it at once end with one key, never a half-written one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_hex(32) + "\n")
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process created it first: theirs is the key
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot create the signing key ({exc.strerror}); set {KEY_FILE_ENV} to a "
            "writable place outside the runs folder"
        ) from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
