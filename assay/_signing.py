"""The signing key: what makes a run's seal, a certificate or a calibration assay's own word.

A file cannot vouch for itself: a digest written beside the files it covers is rewritten with
them. What assay writes to decide on later is signed with HMAC-SHA256 under a key kept outside
the runs folder — ``~/.config/assay/signing.key`` (``$XDG_CONFIG_HOME`` when set), or the file
``ASSAY_SIGNING_KEY_FILE`` names —, created on first use, readable by its owner only. A team
shares the file as it shares its tracking store; whoever holds it can sign, so it is guarded
like a credential. The signature is over the canonical JSON of what it covers (keys sorted, no
spaces), compared in constant time.

What assay records of what it signed — the heads of a certificates ledger's journal and of a
signed history (how many lines, the last one's digest) — is kept per key, found by the key's
identity (:func:`key_id`: a fingerprint of its bytes), never by the path the key is read from:
``$XDG_STATE_HOME/assay/keys/<key id>/`` (``~/.local/state`` when unset). The same key through a
symlink, a hard link or a copy in another folder, or after its owner moved it, finds the same
records; beside a key named through another folder there would have been none, and a journal
cut short would have passed as one never seen. Records kept beside the key file before
(``ledgers/``, ``review-runs/`` … in its folder) are still read where the key's own have none.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import os
import secrets
from pathlib import Path
from typing import Any

from assay.errors import ConfigError

KEY_FILE_ENV = "ASSAY_SIGNING_KEY_FILE"
STATE_ENV = "XDG_STATE_HOME"
_MIN_KEY_BYTES = 32
_log = logging.getLogger(__name__)
_SHARED_KEYS: set[Path] = set()  # the key files already said to be open to others
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


def key_id() -> str | None:
    """The signing key's identity: a fingerprint of its bytes (an HMAC under the key of a fixed
    label, so it tells nothing of the key), the same whatever path the key is read from. None
    when there is no key yet."""
    path = key_file()
    if not path.exists():
        return None
    return hmac.new(_read_key(path), b"assay key id", hashlib.sha256).hexdigest()[:32]


def records_folder(kind: str) -> Path:
    """The folder where what assay records of ``kind`` (``ledgers``, ``review-runs`` …) under
    this key is written: ``<state>/assay/keys/<key id>/<kind>``, found by the key's identity.
    The key must exist (a record is written after something was signed)."""
    ident = key_id()
    if ident is None:
        _read_key(key_file())  # one line: no key
    state = os.environ.get(STATE_ENV) or Path.home() / ".local" / "state"
    return Path(state).expanduser() / "assay" / "keys" / str(ident) / kind


def recorded(kind: str, name: str) -> Path | None:
    """The record ``name`` of ``kind`` kept for this key, where it is: in the key's records
    folder (:func:`records_folder`), else where records were kept before they were found by
    the key's identity — beside the key file, as named or with its symlinks followed. None when
    there is none (or no key)."""
    if key_id() is None:
        return None
    named = key_file()
    for folder in (records_folder(kind), named.parent / kind, named.resolve().parent / kind):
        if (folder / name).exists():
            return folder / name
    return None


def record_path(kind: str, name: str) -> Path:
    """Where the record ``name`` of ``kind`` is: where it is found (:func:`recorded`), else
    where it is written (:func:`records_folder`; beside the key file while there is no key, and
    so nothing recorded under it)."""
    found = recorded(kind, name)
    if found is not None:
        return found
    return (records_folder(kind) if key_id() else key_file().parent / kind) / name


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
    return signed_with(_read_key(ensure_key()), payload)


def signed_with(key_bytes: bytes, payload: Any) -> str:
    """The HMAC-SHA256 of ``payload``'s canonical JSON under ``key_bytes`` (the key as a caller
    that signs or checks many things read it once: :func:`key`)."""
    return hmac.new(key_bytes, canonical(payload), hashlib.sha256).hexdigest()


def key(*, create: bool) -> bytes:
    """The key's bytes, read once by a caller that signs or checks many things (a run's
    records); ``create``: make the key when there is none yet (a writer), else refuse."""
    return _read_key(ensure_key() if create else key_file())


def verify(payload: Any, signature: object) -> bool:
    """Whether ``signature`` is the key's signature of ``payload`` (constant-time compare). The
    key must exist: verifying never creates one."""
    if not isinstance(signature, str):
        return False
    expected = signed_with(_read_key(key_file()), payload)
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
    _warn_if_shared(path)
    return key


def _warn_if_shared(path: Path) -> None:
    """Say once (a warning on the console) when the key file can be read or written by others
    than its owner: whoever reads it can sign runs, certificates and calibrations as assay, and
    whoever writes it can swap it — the key assay creates is its owner's alone (mode 0600)."""
    if os.name != "posix" or path in _SHARED_KEYS:
        return
    try:
        mode = path.stat().st_mode & 0o777
    except OSError:
        return
    if mode & 0o077:
        _SHARED_KEYS.add(path)
        _log.warning(
            "assay: %s: the signing key is open to others than its owner (mode %03o): whoever "
            "can read it can sign as assay, whoever can write it can replace it — chmod 600 it",
            path,
            mode,
        )


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
