"""MLflow logging for every runner: one flattener, one logger, parent and child runs.

A local SQLite store is created (and migrated) under an inter-process lock, so two runs started
together in a fresh folder cannot leave it half-made.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.runs._lock import file_lock


def default_tracking_uri(workdir: Path) -> str:
    return f"sqlite:///{(workdir / 'mlflow.db').resolve()}"


def check_tracking_uri(uri: str, field: str) -> None:
    """Raise a one-line :class:`~assay.errors.ConfigError` naming ``field`` when MLflow has no
    tracking store for ``uri``'s scheme — MLflow's own resolution (its store registry: the
    built-in schemes and those plugins register), without creating a store, so a wrong URI is
    refused before the run rather than after every item is judged."""
    from mlflow.tracking._tracking_service.utils import _tracking_store_registry

    from assay.errors import ConfigError

    try:
        _tracking_store_registry.get_store_builder(uri)
    except Exception:  # MLflow's UnsupportedModelRegistryStoreURIException (any scheme it lacks)
        known = ", ".join(sorted(s for s in _tracking_store_registry._registry if s))
        raise ConfigError(
            f"{field} {uri!r}: MLflow has no tracking store for this URI scheme (known: {known})"
        ) from None


def check_sqlite_store(uri: str, field: str) -> None:
    """Raise a one-line :class:`~assay.errors.ConfigError` naming ``field`` when a
    ``sqlite:///`` store cannot be one: its path a directory (MLflow retried for minutes, then
    failed after every item was judged), a file that is not an SQLite database (a truncated or
    overwritten ``mlflow.db``: its first 16 bytes, SQLite's header, decide; an empty file is a
    new database), or a file or folder assay cannot write (the store's journal and lock live
    beside it)."""
    from assay.errors import ConfigError

    if not uri.startswith("sqlite:///"):
        return
    path = Path(uri.removeprefix("sqlite:///").split("?", 1)[0])
    where = f"{field} {uri!r}"
    if path.is_dir():
        raise ConfigError(f"{where}: {path} is a directory, not an SQLite database file")
    folder = next((p for p in path.absolute().parents if p.exists()), None)
    if folder is None or not folder.is_dir():
        raise ConfigError(f"{where}: cannot create {path}: {folder} is not a directory")
    if not os.access(folder, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        unwritable = path if path.exists() and not os.access(path, os.W_OK) else folder
        raise ConfigError(f"{where}: {unwritable} is not writable")
    if not path.is_file():
        return
    try:
        with path.open("rb") as f:
            header = f.read(16)
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read {path} ({exc.strerror})") from None
    if header and header != b"SQLite format 3\x00":
        raise ConfigError(
            f"{where}: {path} is not an SQLite database (move it aside, or name another file)"
        )


def check_http_store(uri: str, field: str) -> None:
    """Raise a one-line :class:`~assay.errors.ConfigError` naming ``field`` when no MLflow
    server answers at an ``http(s)://`` tracking URI (:func:`assay.data.server_problem`: one
    request to its ``/health`` within seconds, no retry): MLflow's own client retried a dead
    one for four minutes, after every item was judged."""
    if not uri.startswith(("http://", "https://")):
        return
    from assay.data import server_problem
    from assay.errors import ConfigError

    problem = server_problem(uri)
    if problem is not None:
        raise ConfigError(
            f"{field} {uri!r}: no MLflow server answers at this address ({problem}); start "
            "it, or name another store"
        )


def _plain(value: Any) -> Any:
    """A pydantic model or dataclass as its dict of fields; anything else as it is."""
    if hasattr(value, "model_dump"):
        return value.model_dump()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def _is_metric_value(value: Any) -> bool:
    return isinstance(value, dict) and "value" in value and "ci_low" in value


def flatten_metrics(value: object, prefix: str = "") -> dict[str, float]:
    """Every number in a nested result, as MLflow metrics.

    A metric with an interval (``{value, ci_low, ci_high, ...}``) gives ``name``,
    ``name_ci_low`` and ``name_ci_high``, and ``name_n``, what it is over (a rate's
    denominator; a κ's items scored on both sides), and a rate also ``name_count``, its
    numerator; nested mappings join their keys with ``.`` (after a ``prefix`` ending in ``_``
    or ``.``, directly); nan, booleans, text and lists are left out.
    """
    out: dict[str, float] = {}

    def join(name: str, key: str) -> str:
        return f"{name}{key}" if not name or name.endswith(("_", ".")) else f"{name}.{key}"

    def put(name: str, v: Any) -> None:
        v = _plain(v)
        if _is_metric_value(v):
            keys = [("value", ""), ("ci_low", "_ci_low"), ("ci_high", "_ci_high"), ("n", "_n")]
            if v.get("count") is not None:  # a rate: its numerator too
                keys += [("count", "_count")]
            for key, suffix in keys:
                x = v.get(key)
                if isinstance(x, int | float) and not isinstance(x, bool) and x == x:
                    out[f"{name}{suffix}"] = float(x)
        elif isinstance(v, dict):
            for k, sub in v.items():
                put(join(name, str(k)), sub)
        elif isinstance(v, int | float) and not isinstance(v, bool) and v == v and name:
            out[name] = float(v)

    put(prefix, value)
    return out


@dataclass
class TrackedRun:
    """What one MLflow run records; ``children`` become nested runs of it."""

    name: str
    params: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    artifacts: list[Path | tuple[Path, str]] = field(default_factory=list)  # (file, artifact dir)
    children: list[TrackedRun] = field(default_factory=list)
    # files the run's end writes while the rest is logged (its reports: see Run.log), logged last
    late: list[Path] = field(default_factory=list)


CONFIDENCE_TAG = "assay.confidence"
"""The tag of a judge run's MLflow run that holds its intervals' confidence level (``0.95``):
the bounds it logs are at that level, which ``assay compare`` shows beside them."""


def confidence_tag(confidence: float) -> dict[str, str]:
    """The tag of a run whose intervals are at ``confidence``."""
    return {CONFIDENCE_TAG: f"{confidence:g}"}


KEYS_FILE = "mlflow_keys.json"  # a logged run's key → the name it stands for, where they differ
_KEY_LENGTH = 250


def mlflow_key(name: str) -> str:
    """``name`` as an MLflow key, which allows alphanumerics and ``_ - . space /`` only and 250
    characters: unchanged when it is one; else each ``.``-separated part that had another
    character has it replaced by ``_`` and a short hash of the part appended (``m+1`` →
    ``m_1_4a1c03f2``), so two names that clean to the same text (``m+1``, ``m_1``) keep two
    keys; a key still too long keeps its start and a hash of the whole name."""
    if _VALID_KEY.fullmatch(name) and len(name) <= _KEY_LENGTH:
        return name
    key = ".".join(
        part if _VALID_KEY.fullmatch(part) else _cleaned(part) for part in name.split(".")
    )
    if len(key) > _KEY_LENGTH:
        key = f"{key[: _KEY_LENGTH - 9]}_{_digest(name)}"
    return key


_VALID_KEY = re.compile(r"[A-Za-z0-9_\-. /]*")
_NOT_IN_A_KEY = re.compile(r"[^A-Za-z0-9_\-. /]")


def _cleaned(part: str) -> str:
    return _NOT_IN_A_KEY.sub("_", part) + "_" + _digest(part)


def _digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def _store_lock(uri: str) -> Path | None:
    if uri.startswith("sqlite:///"):
        db = Path(uri[len("sqlite:///") :])
        return db.with_name(db.name + ".lock")
    return None


def prepare_store(tracking_uri: str, experiment: str, artifact_root: Path | str) -> str:
    """Import MLflow, create (and migrate) the store if new, and return the experiment's id —
    the slow part of logging (seconds on a new SQLite store), done once per run while the LM
    calls are in flight (in the run's sidecar, or a background thread)."""
    import contextlib
    import logging

    import mlflow

    # MLflow sets its logger to INFO on import ("Updating database tables..."): not for users
    logging.getLogger("mlflow").setLevel(logging.WARNING)

    lock = _store_lock(tracking_uri)
    guard = file_lock(lock) if lock is not None else contextlib.nullcontext()
    with guard:
        _from_template(tracking_uri)
        client = mlflow.MlflowClient(tracking_uri=tracking_uri)
        exp = client.get_experiment_by_name(experiment)
        if exp is None:
            root = Path(artifact_root).resolve().as_uri()
            location = root if tracking_uri.startswith("sqlite:") else None
            exp_id = client.create_experiment(experiment, artifact_location=location)
        else:
            exp_id = exp.experiment_id
    _warm_run_tags()
    return exp_id


def prepare_lane(tracking_uri: str, experiment: str, artifact_root: Path | str) -> str:
    """:func:`prepare_store` in the tracking lane (a helper interpreter that only logs this
    run), and MLflow's tracking URI set there now: :func:`log_tracked` sets it at the end, and
    MLflow re-initialises its tracer provider whenever it changes — the OpenTelemetry SDK's first
    import, 0.015-0.03 s of the end's CPU otherwise."""
    import mlflow

    exp_id = prepare_store(tracking_uri, experiment, artifact_root)
    mlflow.set_tracking_uri(tracking_uri)
    return exp_id


def _warm_run_tags() -> None:
    """MLflow resolves a run's source tags (entry point, user, git commit) when the run
    starts; the first time loads GitPython and friends (~0.25 s), done here rather than at
    the end of the run."""
    try:
        from mlflow.tracking.context.registry import resolve_tags

        resolve_tags()
    except Exception:  # only a warm-up: starting the run resolves them again
        pass


def _from_template(tracking_uri: str) -> None:
    """A new SQLite store starts as a copy of an empty one made once per MLflow version (in
    ``$ASSAY_CACHE_DIR``, default ``~/.cache/assay``): creating a store runs MLflow's ~50 schema
    migrations, seconds of work that every new working folder would otherwise repeat. Any
    failure falls back to MLflow creating the store itself."""
    if not tracking_uri.startswith("sqlite:///"):
        return
    db = Path(tracking_uri[len("sqlite:///") :])
    if db.exists():
        return
    import contextlib
    import os
    import shutil
    import sqlite3

    import mlflow

    folder = Path(os.environ.get("ASSAY_CACHE_DIR") or Path.home() / ".cache" / "assay")
    template = folder / f"mlflow-{mlflow.__version__}.db"
    copy = db.with_name(f"{db.name}.{os.getpid()}.tmp")  # renamed into place: a killed copy
    try:  # leaves no half-made store
        if not template.exists():
            folder.mkdir(parents=True, exist_ok=True)
            with file_lock(folder / (template.name + ".lock")):
                if not template.exists():
                    scratch = template.with_name(f"{template.name}.{os.getpid()}.tmp")
                    scratch.unlink(missing_ok=True)
                    mlflow.MlflowClient(tracking_uri=f"sqlite:///{scratch}").search_experiments()
                    os.replace(scratch, template)
        db.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(template, copy)
        # MLflow's Default experiment points where the creating process stood: here, not
        # where the template was made
        with contextlib.closing(sqlite3.connect(copy)) as con, con:
            con.execute(
                "UPDATE experiments SET artifact_location = ? WHERE experiment_id = 0",
                (str(Path("mlruns").resolve() / "0"),),
            )
        os.replace(copy, db)
    except (OSError, sqlite3.Error):
        copy.unlink(missing_ok=True)  # MLflow creates the store itself


def log_tracked(
    run: TrackedRun,
    *,
    tracking_uri: str,
    experiment: str,
    artifact_root: Path | str,
    experiment_id: str | None = None,
) -> str:
    """Log ``run`` (and its children) to MLflow; returns the top run's id. ``experiment_id``
    from :func:`prepare_store` skips looking the experiment up again."""
    import mlflow

    exp_id = experiment_id or prepare_store(tracking_uri, experiment, artifact_root)
    mlflow.set_tracking_uri(tracking_uri)
    return _log(run, exp_id, nested=False)


def tracked_json(run: TrackedRun) -> dict[str, Any]:
    """``run`` as JSON (to log it from the run's sidecar): paths as text."""
    return {
        "name": run.name,
        "params": run.params,
        "metrics": run.metrics,
        "tags": run.tags,
        "artifacts": [[str(a[0]), a[1]] if isinstance(a, tuple) else str(a) for a in run.artifacts],
        "children": [tracked_json(c) for c in run.children],
        "late": [str(p) for p in run.late],
    }


def tracked_from_json(data: dict[str, Any]) -> TrackedRun:
    return TrackedRun(
        name=data["name"],
        params=data["params"],
        metrics=data["metrics"],
        tags=data["tags"],
        artifacts=[
            (Path(a[0]), a[1]) if isinstance(a, list) else Path(a) for a in data["artifacts"]
        ],
        children=[tracked_from_json(c) for c in data["children"]],
        late=[Path(p) for p in data.get("late", [])],
    )


def log_tracked_json(run: dict[str, Any], **where: Any) -> str:
    """:func:`log_tracked` of a run given as :func:`tracked_json` (the sidecar's job)."""
    return log_tracked(tracked_from_json(run), **where)


def log_late_json(run_id: str, paths: list[str], *, tracking_uri: str) -> None:
    """The ``late`` files of a logged run, added to its artifacts once they are written."""
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=tracking_uri)
    for path in paths:
        if Path(path).exists():
            client.log_artifact(run_id, path)


def mark_failed(run_id: str, *, tracking_uri: str) -> None:
    """A logged run whose late files were never written: FAILED, not FINISHED."""
    import mlflow

    mlflow.MlflowClient(tracking_uri=tracking_uri).set_terminated(run_id, "FAILED")


def _log(run: TrackedRun, exp_id: str, *, nested: bool) -> str:
    import mlflow

    with mlflow.start_run(
        experiment_id=exp_id, run_name=run.name, tags=run.tags, nested=nested
    ) as active:
        if run.params:
            mlflow.log_params({mlflow_key(k): str(v)[:6000] for k, v in run.params.items()})
        if run.metrics:
            mlflow.log_metrics({mlflow_key(k): v for k, v in run.metrics.items()})
        renamed = {mlflow_key(k): k for k in [*run.params, *run.metrics] if mlflow_key(k) != k}
        if renamed:  # where a key is not the name it stands for, the run says which name
            mlflow.log_dict(dict(sorted(renamed.items())), KEYS_FILE)
        for art in [*run.artifacts, *run.late]:
            path, where = art if isinstance(art, tuple) else (art, None)
            for file, folder in _artifact_files(path, where):
                mlflow.log_artifact(str(file), artifact_path=folder)
        for child in run.children:
            _log(child, exp_id, nested=True)
        return active.info.run_id


def _artifact_files(path: Path, where: str | None) -> list[tuple[Path, str | None]]:
    """The files of an artifact (a file, or every file under a folder) and the artifact folder
    each goes to; lock files (a run directory's ``.lock``, ``reviews.lock``) are left out —
    they hold no result, only which process was writing."""
    if not path.is_dir():
        return [(path, where)] if path.exists() and not _is_lock(path) else []
    out = []
    for file in sorted(p for p in path.rglob("*") if p.is_file() and not _is_lock(p)):
        parts = [where, *file.parent.relative_to(path).parts]
        out.append((file, "/".join(p for p in parts if p) or None))
    return out


def _is_lock(path: Path) -> bool:
    return path.name.endswith(".lock")
