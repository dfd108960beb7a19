"""One judge run read back item by item, for the comparisons that pair two runs' verdicts on
the same items (``compare --paired``, ``drift``): an evaluate run directory, or an MLflow run
id whose logged artifacts are that directory."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from assay.errors import RunError
from assay.experiments._config import EvaluateConfig
from assay.experiments._estimate import _read
from assay.experiments._items import item_set_tags, judged_items
from assay.scale import Scale
from assay.types import Item, Judgment

# What a logged evaluate run's artifacts must hold to be read back like its directory.
_FILES = ("config.yaml", "judgments.jsonl", "run.json")
_BAR = "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"


@dataclass
class JudgeRun:
    """An evaluate run's judge, items (with their references) and verdicts, as it judged them."""

    named: str  # what the user named: a directory or an MLflow run id
    run_dir: Path  # where it was read (a temporary copy of an MLflow run's artifacts)
    mlflow_run_id: str | None
    config: EvaluateConfig
    items: list[Item]  # in the run's order; exactly the items it judged
    judgments: dict[str, Judgment]

    @property
    def scale(self) -> Scale:
        assert self.config.judge.scale is not None
        return self.config.judge.scale

    @property
    def config_hash(self) -> str:
        return self.config.judge.config_hash()

    @property
    def fingerprint(self) -> str:
        """``assay.items``: the fingerprint of the items' ids, texts and references."""
        return item_set_tags(self.items, split="all")["assay.items"]


def read_judge_run(named: str | Path, *, tracking_uri: str, scratch: Path) -> JudgeRun:
    """The evaluate run ``named``: a run directory, else an MLflow run id in ``tracking_uri``
    (its artifacts downloaded under ``scratch``). Its items are read back from its data set and
    must be the ones it judged: the run's hash, recomputed from them, must match."""
    path = Path(named)
    run_id = None
    if not path.is_dir():
        run_id = str(named)
        path = _download(run_id, tracking_uri, scratch)
    state = _state(path)
    if state.get("kind", "evaluate") != "evaluate":
        raise RunError(f"{named}: a {state.get('kind')} run; only evaluate runs are paired")
    # (a logged run's run.json was copied while it was finishing: MLflow's status says, above)
    if run_id is None and state.get("status") != "finished":
        raise RunError(f"{named}: the run has not finished (status {state.get('status')!r})")
    config, judgments = _read(path)
    items = judged_items(named, config, judgments, state.get("run_hash"))
    return JudgeRun(
        str(named), path, run_id or state.get("mlflow_run_id"), config, items, judgments
    )


def _state(path: Path) -> dict:
    try:
        return json.loads((path / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise RunError(f"{path}: not a run directory (no readable run.json)") from None


def _download(run_id: str, tracking_uri: str, scratch: Path) -> Path:
    """An MLflow evaluate run's directory, as logged (its artifacts' top level)."""
    from mlflow.artifacts import download_artifacts
    from mlflow.exceptions import MlflowException

    from assay.experiments.compare._store import open_store

    client = open_store(tracking_uri)
    try:
        run = client.get_run(run_id)
    except MlflowException:
        raise RunError(
            f"{run_id}: neither a run directory nor an MLflow run id in {tracking_uri}"
        ) from None
    command = run.data.tags.get("assay.command")
    if command != "evaluate":
        raise RunError(f"{run_id}: an MLflow run of '{command}', not of evaluate")
    if run.info.status != "FINISHED":
        raise RunError(f"{run_id}: the MLflow run has not finished (status {run.info.status})")
    dest = Path(tempfile.mkdtemp(prefix=f"{run_id[:8]}-", dir=scratch))
    quiet = os.environ.get(_BAR)
    os.environ[_BAR] = "false"  # no progress bar per file on the console
    try:
        for name in _FILES:
            try:
                download_artifacts(
                    run_id=run_id, artifact_path=name, dst_path=str(dest), tracking_uri=tracking_uri
                )
            except (MlflowException, OSError):
                raise RunError(f"{run_id}: its MLflow artifacts hold no {name}") from None
    finally:
        if quiet is None:
            os.environ.pop(_BAR, None)
        else:
            os.environ[_BAR] = quiet
    return dest
