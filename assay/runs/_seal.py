"""A finished run's seal: the digest of the files its results stand on, signed.

When a run finishes, the files a later decision reads — its resolved config, its judgments,
its metrics (a runner names more) — are hashed, and the list is signed with the signing key
(:mod:`assay._signing`) together with the run's kind, hash and instance (the random id its
records are signed with, :mod:`assay.runs._signed`). The seal goes into ``run.json``
and, as the tag ``assay.seal``, into the run's MLflow run. A command that decides on a run
(certify, conformal, compare --paired, drift, estimate, the integrations' measured figures)
reads it through :func:`sealed_run` or :func:`check_seal`: a file edited since, a seal edited
with it, or a run finished before seals existed is refused in one line naming the run. A
finished run's report drawn again (:func:`check_redrawn`) is refused the same way.

Not sealed: ``run.json`` (it holds the seal and the run's state), the call ledger (a run
stopped with calls in flight writes their lines as it closes; a resume appends to it), the
reports (drawn again from the sealed files only), and what people add after the run (review
decisions, human verdicts). The seal holds from the finish on: the records of a killed run are what its resume
continues from.
"""

from __future__ import annotations

import glob
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TypedDict

from assay import _signing
from assay._files import sha256_file
from assay.errors import RunError

SEAL_TAG = "assay.seal"
"""The MLflow tag holding a logged run's seal: its digest and signature."""
SEALED = ("config.yaml", "metrics.json", "judgments.jsonl")
"""What a run's seal covers unless its runner names more: those of them the run wrote."""


class Seal(TypedDict):
    """A run's seal in its ``run.json``: each sealed file's SHA-256, the digest of that list
    (with the run's kind, hash and instance) and its signature."""

    files: dict[str, str]
    digest: str
    signature: str


class InputsRecord(TypedDict):
    """What a finished run was made from, in its ``run.json`` (:mod:`assay.runs._reread`): the
    digest of its inputs, the digests of the run files its figures read unsealed (``watched``),
    what its console shows of its config (``shown``), and the signature over them, its kind,
    hash and seal."""

    digest: str
    watched: dict[str, str]
    shown: dict[str, object]
    signature: str


class RunState(TypedDict, total=False):
    """A run's ``run.json``: its hash, its instance (the random id drawn when its directory was
    created, which its records are signed with; none in a run created before instances
    existed), status (``running``, ``finished``), when it was created and finished, its runner (``kind``), its seal and MLflow run once finished, what its
    runner adds at the finish (the harness's and ToolEmu's ``finish_key``, ToolEmu's
    ``n_cases``; evaluate's ``n_items`` and ``data_fingerprint``, the fingerprint of the items it
    judged — unsigned, it only names what changed when the run's hash no longer matches), the
    code that sealed its figures (``code``: assay's sources, DSPy's and
    pydantic's versions and the installed plug-ins, as one digest) and what a finished
    evaluate or harness run was made from (``inputs``)."""

    run_hash: str
    instance: str
    status: str
    created: str
    finished: str
    kind: str
    seal: Seal
    mlflow_run_id: str | None
    finish_key: str
    n_cases: int
    n_items: int
    data_fingerprint: str
    code: str
    inputs: InputsRecord


def seal(
    run_dir: Path,
    patterns: Sequence[str],
    *,
    kind: str,
    run_hash: str,
    instance: str | None = None,
) -> Seal:
    """The seal of ``run_dir``: the SHA-256 of each file ``patterns`` match (names or globs,
    relative to the run directory), with the digest of that list and its signature (over the
    run's ``kind``, ``run_hash`` and ``instance`` too)."""
    files = {}
    for pattern in patterns:
        for name in sorted(glob.glob(pattern, root_dir=run_dir)):
            if (run_dir / name).is_file():
                files[Path(name).as_posix()] = sha256_file(run_dir / name)
    body = _sealed_body(kind, run_hash, instance, files)
    return Seal(files=files, digest=_signing.digest(body), signature=_signing.sign(body))


def _sealed_body(
    kind: object, run_hash: object, instance: object, files: dict[str, str]
) -> dict[str, object]:
    """What a seal's digest and signature cover; a run with no instance (created before
    instances existed) has the body its seal was made over then."""
    body = {"kind": kind, "run_hash": run_hash, "files": files}
    return body if instance is None else {**body, "instance": instance}


def seal_tag(sealed: Seal) -> str:
    """The ``assay.seal`` tag of a seal: ``<digest> <signature>``."""
    return f"{sealed['digest']} {sealed['signature']}"


def sealed_run(
    run_dir: Path, *, kind: str, where: str | Path | None = None, needs: Iterable[str] = ()
) -> RunState:
    """``run.json`` of a finished run of ``kind`` whose files are the ones it sealed, the files
    ``needs`` names among them (else one line naming ``where``, default the directory)."""
    where = where or run_dir
    try:
        state = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise RunError(f"{where}: not a run directory (no readable run.json)") from None
    if not isinstance(state, dict):
        raise RunError(f"{where}: not a run directory (run.json is not a run's state)")
    if state.get("kind", "evaluate") != kind:
        raise RunError(f"{where}: a run of '{state.get('kind')}', not of {kind}")
    if state.get("status") != "finished":
        raise RunError(f"{where}: the run has not finished (run its command again to finish it)")
    check_seal(run_dir, state, where=where, needs=needs)
    return state


def check_redrawn(run_dir: Path) -> None:
    """Refuse, as :func:`check_seal` does, to draw a finished run's report again from files
    that are not the ones it sealed: a report redrawn from an edited file would show what the
    run never measured beside the figures it sealed. A run still going (its runner draws its
    report before it finishes) and a directory with no ``run.json`` (written before runs had
    one) have no seal to check, and are drawn as they are."""
    state = finished_state(run_dir)
    if state is not None:
        check_seal(run_dir, state, where=run_dir)


def finished_state(run_dir: Path) -> RunState | None:
    """The ``run.json`` of the finished run in ``run_dir``, unchecked; None for a run still
    going and for a directory with no readable ``run.json``."""
    try:
        state = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or state.get("status") != "finished":
        return None
    return state


def vouches_for(state: RunState, name: str) -> bool:
    """Whether the seal in ``state`` (a run's ``run.json``) lists ``name``: a file a runner came
    to seal later is, in a run sealed before, not vouched for by anything."""
    sealed = state.get("seal")
    return isinstance(sealed, dict) and name in (sealed.get("files") or {})


def check_seal(
    run_dir: Path,
    state: RunState,
    *,
    where: str | Path,
    tag: str | None = None,
    needs: Iterable[str] = (),
) -> None:
    """Refuse, in one line naming ``where``, a run whose seal (in ``state``, its ``run.json``)
    is missing or not signed by the key, or whose sealed files differ from it. ``tag``: the
    seal logged on its MLflow run, which ``state``'s must be (a logged run read back). ``needs``:
    files the caller reads, which the seal must cover."""
    problem = seal_problem(run_dir, state, tag=tag, needs=needs)
    if problem is not None:
        raise RunError(f"{where}: {problem[0]}{problem[1]}")


def seal_problem(
    run_dir: Path, state: RunState, *, tag: str | None = None, needs: Iterable[str] = ()
) -> tuple[str, str] | None:
    """Why the seal of the run in ``run_dir`` does not hold (:func:`check_seal`'s rules): what
    is wrong and what to do about it, as two pieces of one line; None when it holds."""
    sealed = state.get("seal")
    if not isinstance(sealed, dict) or not isinstance(sealed.get("files"), dict):
        return (
            "finished before runs were sealed (no seal in its run.json)",
            ", so its files cannot be checked: move it aside and run its config again to seal "
            "it (the LM cache answers what it asked before)",
        )
    files: dict[str, str] = sealed["files"]
    body = _sealed_body(
        state.get("kind", "evaluate"), state.get("run_hash"), state.get("instance"), files
    )
    if not _signing.verify(body, sealed.get("signature")):
        return (
            "its run.json's seal is not signed by the signing key",
            f" ({_signing.key_file()}): the seal was edited, or made with another key",
        )
    if tag is not None and tag.split(" ")[0] != _signing.digest(body):
        return ("its run.json's seal is not the one its MLflow run was logged with", "")
    for name in needs:
        if name not in files:
            return (f"its seal does not cover {name}", ": not a run to decide on")
    for name, want in files.items():
        path = run_dir / name
        if not path.is_file():
            return (f"{name} is missing", "; the run's seal covers it")
        if sha256_file(path) != want:
            return (
                f"{name} is not the file the run sealed when it finished (edited since)",
                ": no decision is made on it — run its config again in a new run directory",
            )
    return None
