"""Where a judge's saved program state comes from: a DSPy JSON file, or an MLflow artifact URI.

``program_state`` in a judge config names the state an optimizer produced (demos, instructions):
a path (relative paths against the config's folder), or an MLflow URI such as
``runs:/<run_id>/program.json`` (what ``assay optimize`` logs), ``models:/...`` or
``mlflow-artifacts:/...``. MLflow artifacts are downloaded once into a cache folder keyed by the
tracking URI and the reference, so a later run reads the file without contacting MLflow (a run's
artifacts are not expected to change once logged).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import dspy

from assay.errors import ConfigError
from assay.programs._config import MLFLOW_SCHEMES
from assay.types import stable_hash

STATE_FILE = "program.json"


def is_mlflow_uri(ref: str) -> bool:
    """Whether ``ref`` is an MLflow artifact URI rather than a file path."""
    return ref.startswith(MLFLOW_SCHEMES)


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/assay/program_state`` (``~/.cache`` when unset)."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(root) / "assay" / "program_state"


def resolve_program_state(
    ref: str,
    tracking_uri: str | None = None,
    *,
    base: Path | None = None,
    cache_dir: Path | None = None,
) -> str:
    """A local path to the program state ``ref`` names (downloading an MLflow URI once).

    ``tracking_uri`` is where ``runs:/`` and ``models:/`` URIs are looked up (default: MLflow's
    own, i.e. ``MLFLOW_TRACKING_URI``). A missing file or an artifact that cannot be downloaded
    is a :class:`ConfigError` naming the reference.
    """
    if not is_mlflow_uri(ref):
        path = Path(ref).expanduser()
        if not path.is_absolute() and base is not None:
            path = base / path
        if not path.is_file():
            raise ConfigError(f"program_state {ref}: file not found ({path})")
        return str(path)
    uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
    target = (cache_dir or default_cache_dir()) / stable_hash({"uri": uri, "ref": ref})
    if target.is_dir():
        found = _state_file(target)
        if found is not None:
            return str(found)
    import mlflow

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".download-", dir=target.parent))
    try:
        try:
            mlflow.artifacts.download_artifacts(
                artifact_uri=ref, dst_path=str(tmp), tracking_uri=uri
            )
        except Exception as exc:  # MlflowException, OSError, a bad URI...: one line for the user
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            where = f" at {uri}" if uri else ""
            raise ConfigError(
                f"program_state {ref}: cannot download from MLflow{where}: {first}"
            ) from None
        if _state_file(tmp) is None:
            raise ConfigError(f"program_state {ref}: no .json program state in that artifact")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)  # atomic: a half download is never taken for the cache
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    found = _state_file(target)
    assert found is not None
    return str(found)


def _state_file(folder: Path) -> Path | None:
    """The state file in a downloaded artifact: ``program.json``, else the only ``.json``."""
    preferred = sorted(folder.rglob(STATE_FILE))
    if preferred:
        return preferred[0]
    found = sorted(folder.rglob("*.json"))
    return found[0] if len(found) == 1 else None


def load_program_state(
    program: dspy.Module,
    ref: str,
    *,
    tracking_uri: str | None = None,
    base: Path | None = None,
    cache_dir: Path | None = None,
) -> str:
    """Load the state ``ref`` names into ``program``; returns the local file it came from.

    States are saved without LMs (``save_program``), and ``Module.load`` sets a predictor's LM to
    what the file holds, i.e. none; the LMs the program was built with are kept instead.
    """
    path = resolve_program_state(ref, tracking_uri, base=base, cache_dir=cache_dir)
    predictors = program.predictors()
    lms = [p.lm for p in predictors]
    try:
        program.load(path)
    except (KeyError, ValueError) as exc:  # another program's state, or not JSON
        raise ConfigError(
            f"program_state {ref}: not a saved state of this judge program ({type(exc).__name__}: {exc})"
        ) from None
    for p, lm in zip(predictors, lms, strict=True):
        if p.lm is None:
            p.lm = lm
    return path


def save_program(program: dspy.Module, path: Path | str) -> None:
    """Save a program's DSPy state (instructions, demos) as JSON, without its LM objects."""
    predictors = program.predictors()
    lms = [p.lm for p in predictors]
    try:
        for p in predictors:
            p.lm = None
        program.save(str(path))
    finally:
        for p, lm in zip(predictors, lms, strict=True):
            p.lm = lm
