"""A finished run found again by its inputs, before its config is validated or its data read.

Once a run of a config file has finished, the command that ran it records what the run was made
from — its *inputs*: the config as read (every ``@file`` text in it, its paths resolved, the
options' overrides applied), the command's options, the content of every file the config names
(the data, program states), its plug-ins, and the code (assay's sources by content, the DSPy and
pydantic versions, the installed plug-ins) — as one digest in the run's ``run.json``, signed with
the run's seal and with the digests of the run's files that its figures read but the seal does
not cover (a harness run's review decisions). The working folder's ``.assay/finished/<digest>``
names the run directory: a pointer, which vouches for nothing.

The same command with the same inputs (:func:`finished_run`) takes that directory only when its
``run.json`` says finished, its record is signed by the signing key and holds this digest and
this seal, the seal is signed and every file it covers is the file sealed
(:func:`~._seal.check_seal`), and the watched files are as recorded — all under the run's lock.
The runner then reads its result back from the sealed files: no config model, no DSPy, no item,
no judgment read, no helper interpreter, no LM call. Anything else, and the command runs as it
always did (which re-reads a finished run that nothing changed) and records its inputs anew.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from assay import _signing
from assay._files import sha256_file
from assay.errors import AssayError, RunError
from assay.runs._files import write_atomic, write_json
from assay.runs._lock import RunLock
from assay.runs._seal import InputsRecord, RunState, check_seal

INDEX = Path(".assay") / "finished"
"""Where a working folder keeps, per inputs digest, the run directory made from those inputs."""
RECORD = "inputs"
"""The key of ``run.json`` holding the signed record of a finished run's inputs."""


class RunInputs(TypedDict):
    """What a run of a config file is made from (a runner's ``inputs``), as JSON values: the
    command, the config file as read (``config``, its relative paths against ``base``), the
    SHA-256 of each file it names by path, its plug-ins' identity, the options, and the base
    URLs set in the environment (``endpoints``: where a LiteLLM model with no ``api_base``
    calls)."""

    command: str
    config: dict[str, object]
    base: str
    files: dict[str, str]
    plugins: list[list[str]]
    options: dict[str, object]
    endpoints: dict[str, str]


@dataclass
class FinishedRun:
    """A finished run whose inputs are the command's: its directory, its ``run.json`` and what
    its console shows of its config (``shown``, as the runner recorded it)."""

    dir: Path
    state: RunState
    shown: dict[str, object]


def inputs_digest(inputs: RunInputs) -> str | None:
    """The digest of a command's ``inputs`` (JSON values) with the code's identity
    (:func:`code_identity`); None when a value is not JSON (an object handed to the API)."""
    try:
        text = json.dumps(
            {"inputs": inputs, "code": code_identity()},
            sort_keys=True,
            ensure_ascii=False,
            allow_nan=False,
        )
    except (TypeError, ValueError):
        return None
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@functools.cache
def code_identity() -> dict[str, object]:
    """The code a run ran: every source file of assay by its content (an edited checkout is
    other code), the versions of DSPy and pydantic (a program's saved state and a config's dump
    are theirs), and the installed packages' plug-ins by name, version and content."""
    from importlib.metadata import PackageNotFoundError, version

    import assay
    from assay._registry import entry_point_plugins, plugin_identity

    root = os.path.dirname(os.path.realpath(assay.__file__))
    files = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [f for f in subfolders if f != "__pycache__"]
        files += [os.path.join(folder, n) for n in names if n.endswith(".py")]
    sources = hashlib.sha256()
    for path in sorted(files):
        sources.update(f"{path[len(root) + 1 :]}\0{sha256_file(path)}\n".encode())
    out: dict[str, object] = {"assay": sources.hexdigest()}
    for dist in ("dspy", "pydantic"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = ""
    out["plugins"] = plugin_identity(entry_point_plugins())
    return out


def code_digest() -> str:
    """:func:`code_identity` as one digest: what a finished run records as the code that made
    its figures, so that other code (assay upgraded or edited) makes them again."""
    text = json.dumps(code_identity(), sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def any_recorded(workdir: Path) -> bool:
    """Whether the working folder has recorded the inputs of any finished run (else there is
    nothing to look up, and no reason to digest the inputs before the run starts)."""
    try:
        with os.scandir(workdir / INDEX) as entries:
            return any(True for _ in entries)
    except OSError:
        return False


@contextlib.contextmanager
def finished_run(
    workdir: Path, digest: str, *, kind: str, watched: Sequence[str] = ()
) -> Iterator[FinishedRun | None]:
    """The finished run of ``kind`` made from the inputs ``digest`` names, checked as the
    module says and held under its lock while the block reads it; None when there is none
    (or it is in use: the command then says so as it always did)."""
    run_dir = _indexed(workdir, digest)
    if run_dir is None:
        yield None
        return
    lock = RunLock(run_dir)
    try:
        lock.acquire()
    except RunError:
        yield None
        return
    try:
        yield _checked(run_dir, digest, kind, watched)
    finally:
        lock.release()


def remember_inputs(
    workdir: Path,
    run_dir: Path,
    digest: str,
    *,
    watched: Sequence[str] = (),
    shown: dict[str, object] | None = None,
) -> None:
    """Record that the finished run in ``run_dir`` was made from the inputs ``digest`` names
    (nothing when it has not finished or is in use): the record signed into its ``run.json``,
    its directory under the working folder's index."""
    lock = RunLock(run_dir)
    try:
        lock.acquire()
    except RunError:
        return
    try:
        state = _state(run_dir)
        if state is None or state.get("status") != "finished" or "seal" not in state:
            return
        record = {"digest": digest, "watched": _digests(run_dir, watched), "shown": shown or {}}
        signed = InputsRecord(**record, signature=_signing.sign(_signed(state, record)))
        write_json(run_dir / "run.json", {**state, RECORD: signed})
        index = workdir / INDEX / digest
        index.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(index, str(run_dir))
    finally:
        lock.release()


def _indexed(workdir: Path, digest: str) -> Path | None:
    try:
        named = Path((workdir / INDEX / digest).read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None
    return named if named.is_absolute() and (named / "run.json").is_file() else None


def _checked(run_dir: Path, digest: str, kind: str, watched: Sequence[str]) -> FinishedRun | None:
    state = _state(run_dir)
    if state is None or state.get("status") != "finished" or state.get("kind") != kind:
        return None
    record = state.get(RECORD)
    if not isinstance(record, dict) or record.get("digest") != digest:
        return None
    try:
        if not _signing.verify(_signed(state, record), record.get("signature")):
            return None
        check_seal(run_dir, state, where=run_dir)
    except AssayError:  # no key to check with, a seal that does not hold: the run decides
        return None
    if _digests(run_dir, watched) != record.get("watched"):
        return None
    shown = record.get("shown")
    return FinishedRun(run_dir, state, shown if isinstance(shown, dict) else {})


def _state(run_dir: Path) -> dict[str, Any] | None:
    try:
        state = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def _signed(state: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """What a record's signature covers: the run (kind, hash, seal) and the record."""
    seal = state.get("seal")
    return {
        "kind": state.get("kind"),
        "run_hash": state.get("run_hash"),
        "seal": seal.get("digest") if isinstance(seal, dict) else None,
        **{k: record.get(k) for k in ("digest", "watched", "shown")},
    }


def _digests(run_dir: Path, names: Sequence[str]) -> dict[str, str]:
    """The SHA-256 of each of the run's files ``names`` names (globs too) that exists."""
    out = {}
    for pattern in names:
        for path in sorted(run_dir.glob(pattern)):
            if path.is_file():
                out[path.relative_to(run_dir).as_posix()] = sha256_file(path)
    return out
