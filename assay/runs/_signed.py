"""A run's records signed as they are written, so that a record edited, added or moved from
another run is refused when the run reads it back — on a resume as much as after the finish.

Each JSON line a run appends (a judgment, a generated unit, a ToolEmu case) ends with a field
``"_mac"``: the HMAC-SHA256, under the signing key (:mod:`assay._signing`), of the run's hash,
its instance, the file's name within the run and the line without that field. The instance is
a random id drawn when the run directory is created (``run.json``'s ``instance``): two runs of
the same config and data — another folder, another machine with the same key — share a hash,
never an instance, so neither is a source of records for the other; the run's own resume,
re-score and re-run keep it, and so does a copy of the whole run directory (its ``run.json``
with it). A run created before instances existed has none: its records are signed over its hash
alone, as they were, and one signed so is refused in a run that has one; such a run is read as
it sealed them, never resumed or rebuilt from records its seal does not vouch for
(:meth:`assay.runs.Run.open`).

A run that resumes reads every record it keeps through :meth:`RecordSeal.open`: a record whose
signature is missing or wrong is refused in one line naming the file and line — never judged
again in silence, which would hide the edit. A signature cannot vouch for a line that is gone:
how many records each file holds, and which, is kept beside the key (:mod:`._record_heads`), so
a record removed is refused too. The call ledger is not signed: it is what the server answered,
kept for accounting, and no decision rests on it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from pathlib import Path

from assay import _signing
from assay.errors import RunError

_HEAD = f',"{_signing.MAC_FIELD}":"'
_TAIL = '"}'
_HEX = 64  # SHA-256, hex
_SUFFIX = len(_HEAD) + _HEX + len(_TAIL)
_HEAD_B, _TAIL_B = _HEAD.encode(), _TAIL.encode()  # ASCII: as many bytes as characters


def mac_of(line: bytes) -> bytes | None:
    """The signature a record's line (its bytes, without the newline) ends with; None for a line
    that carries none."""
    if len(line) > _SUFFIX and line.endswith(_TAIL_B) and line[-_SUFFIX:].startswith(_HEAD_B):
        return line[-_HEX - len(_TAIL_B) : -len(_TAIL_B)]
    return None


def signature_of(signed: str) -> bytes:
    """The signature of a line :meth:`RecordSeal.sign` made (as :func:`mac_of` reads it)."""
    return signed[-_HEX - len(_TAIL) : -len(_TAIL)].encode()


def new_instance() -> str:
    """A run instance's id, drawn once when its directory is created: 128 random bits, hex."""
    return secrets.token_hex(16)


def signed_run(run_hash: str, instance: str | None) -> str:
    """What a record signed for a run is bound to (its records here, the human verdicts of its
    review queue): the run's hash and its instance — the hash alone for a run created before
    instances existed."""
    return run_hash if instance is None else f"{run_hash}\n{instance}"


class RecordSeal:
    """Signs and checks the records of one run instance (its hash and ``instance``, None for a
    run created before instances existed) under a key read once."""

    def __init__(self, run_dir: Path, run_hash: str, instance: str | None, *, create: bool):
        self.run_dir = run_dir
        self.run_hash = run_hash
        self.instance = instance
        self.key = _signing.key(create=create)
        self._keyed: dict[str, hmac.HMAC] = {}  # per file: the HMAC with the key and prefix in

    def _tag(self, name: str, body: str) -> str:
        keyed = self._keyed.get(name)
        if keyed is None:  # the key schedule and the prefix once per file, not once per record
            run = signed_run(self.run_hash, self.instance)
            keyed = hmac.new(self.key, f"{run}\n{name}\n".encode(), hashlib.sha256)
            self._keyed[name] = keyed
        mac = keyed.copy()
        mac.update(body.encode("utf-8"))
        return mac.hexdigest()

    def sign(self, name: str, body: str) -> str:
        """``body`` (one record's JSON object, no newline) with its signature as last field."""
        if not (body.startswith("{") and body.endswith("}") and len(body) > 2):
            raise ValueError("a signed record is a non-empty JSON object")
        return f"{body[:-1]}{_HEAD}{self._tag(name, body)}{_TAIL}"

    def open(self, name: str, text: str, row: int) -> str:
        """The record's JSON without its signature, once the signature is checked; else a
        one-line :class:`RunError` naming the file and the line."""
        tail = text[-_SUFFIX:]
        if len(text) <= _SUFFIX or not (tail.startswith(_HEAD) and tail.endswith(_TAIL)):
            raise RunError(
                f"{self.run_dir / name}: line {row} carries no signature: it was not written by "
                "this run as it stands (written before records were signed, or edited); move "
                "the run directory aside and run its config again (the LM cache answers what "
                "it asked before)"
            )
        body = text[:-_SUFFIX] + "}"
        if not hmac.compare_digest(self._tag(name, body), tail[len(_HEAD) : -len(_TAIL)]):
            raise RunError(
                f"{self.run_dir / name}: line {row} is not the record this run wrote there "
                "(edited since, or taken from another run — of this config too — or file): no "
                "result is taken from it; move the run directory aside and run its config again"
            )
        return body
