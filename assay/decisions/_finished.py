"""Finished evaluate runs read back to decide on: their sealed files (:func:`read_evaluate_run`),
the items they judged (:func:`judged_items`), and one judge run item by item for the
comparisons that pair two runs' verdicts on the same items (``compare --paired``, ``drift``):
an evaluate run directory, or an MLflow run id whose logged artifacts are that directory."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from assay import _endpoints
from assay._yaml import load as load_yaml
from assay.errors import RunError
from assay.inputs import EvaluateConfig, data_fingerprint, item_set_tags, load_items
from assay.programs import JudgeConfig
from assay.runs import (
    JUDGMENTS,
    SEAL_TAG,
    RunState,
    RunStore,
    check_seal,
    load_run_plugins,
    run_identity,
    sealed_run,
)
from assay.scale import Scale
from assay.types import Item, Judgment


def read_evaluate_run(
    run_dir: Path, *, where: str | Path | None = None, state: RunState | None = None
) -> tuple[EvaluateConfig, dict[str, Judgment], RunState]:
    """A finished evaluate run read back to decide on: its resolved config, its judgments by
    item id, and its ``run.json`` — refused in one line naming ``where`` (default the
    directory) unless its files are the ones it sealed when it finished. ``state``: the run's
    ``run.json`` already checked by the caller (a logged run, checked against its MLflow tag)."""
    path = Path(run_dir)
    where = where or path
    if state is None:
        state = sealed_run(path, kind="evaluate", where=where, needs=("config.yaml", JUDGMENTS))
    load_run_plugins(path)  # one that cannot be imported is named, not a config said invalid
    try:
        raw = load_yaml((path / "config.yaml").read_text(encoding="utf-8"))
        config = EvaluateConfig.model_validate(raw)
    except (OSError, yaml.YAMLError, ValueError):
        raise RunError(f"{where}: not an evaluate run directory (no valid config.yaml)") from None
    if not (path / JUDGMENTS).is_file():
        raise RunError(f"{where}: not an evaluate run directory (no {JUDGMENTS})")
    return config, RunStore(path, run_hash=str(state.get("run_hash"))).judgments(), state


def judged_items(
    where: str | Path,
    config: EvaluateConfig,
    judged: Collection[str],
    run_hash: str | None,
    *,
    run_dir: Path | None = None,
) -> list[Item]:
    """The items a finished evaluate run judged (``judged``: their ids), read again from its
    data set, in the data's order — refused in one line naming ``where`` unless they are the
    ones it judged: none gone, and the run's hash over them the same (texts or references
    edited since would make a number about other items). The refusal says what differs, as far
    as the run's files in ``run_dir`` tell (:func:`what_differs`)."""
    assert config.judge.scale is not None
    items = [it for it in load_items(config.data, config.judge.scale) if it.id in judged]
    missing = sorted(set(judged) - {it.id for it in items})
    if missing:
        raise RunError(
            f"{where}: {len(missing)} judged items are no longer in {config.data.path} "
            f"(e.g. {missing[0]}): the data changed since the run"
        )
    fingerprint = data_fingerprint(items)
    # a run made before prices counted in its hash (a priced judge's): its hash without them
    unpriced = config.model_copy(update={"judge": config.judge.without_prices()})
    hashes = {run_identity(c, c.run_hash(fingerprint)) for c in (config, unpriced)}
    if run_hash not in hashes:
        raise RunError(f"{where}: {what_differs(config, fingerprint, run_dir)}")
    return items


def what_differs(config: EvaluateConfig, fingerprint: str, run_dir: Path | None) -> str:
    """Why a finished run's hash, computed again from its config and its items as read now
    (``fingerprint``), is not the one it ran under — what differs, as far as its files tell: the
    items (the fingerprint ``run.json`` recorded), the judge as resolved now (the config hash
    ``metrics.json`` recorded: an endpoint taken from the environment, an answer sheet or a
    program state by its content), else the code of a plug-in it names. The hash decides; this
    only names the cause (a run made before ``run.json`` recorded its items' fingerprint, with
    plug-ins, names both the data and the plug-ins)."""
    data = (
        f"the data changed since the run judged it ({config.data.path}): its items differ from "
        "those the run judged (the run's hash no longer matches)"
    )
    items, judge = _recorded(run_dir)
    if items is not None and items != fingerprint:
        return data
    now = config.judge.config_hash()
    if judge is not None and judge != now:
        return _judge_differs(config.judge, now, judge, data_checked=items is not None)
    if config.plugins:
        named = ", ".join(config.plugins)
        if items is None:
            return (
                f"the data ({config.data.path}) or the code of a plug-in the run names ({named}) "
                "changed since the run judged it (the run's hash no longer matches)"
            )
        return (
            f"the code of a plug-in the run names ({named}) is not the code it ran with — a "
            "plug-in counts by its file's content, a module by its version and content (the "
            "data and the judge are as they were; the run's hash no longer matches): put it "
            "back as it was, or evaluate again"
        )
    if items is None:
        return data
    return (
        "the run's hash no longer matches its config and its items, which are as they were: "
        "a run made by another version of assay, or edited; evaluate again"
    )


def _recorded(run_dir: Path | None) -> tuple[str | None, str | None]:
    """The items' fingerprint ``run.json`` recorded and the judge config hash ``metrics.json``
    recorded (None each where the run has none): what :func:`what_differs` names a cause by."""
    found: list[str | None] = []
    for name, key in (("run.json", "data_fingerprint"), ("metrics.json", "config_hash")):
        try:
            value = json.loads((Path(run_dir) / name).read_text(encoding="utf-8")).get(key)
        except (TypeError, OSError, ValueError, AttributeError):
            value = None
        found.append(value if isinstance(value, str) else None)
    return found[0], found[1]


def _judge_differs(judge: JudgeConfig, now: str, then: str, *, data_checked: bool) -> str:
    """The judge resolves to another config hash than the run's: name what its identity takes
    from outside its config — an endpoint from the environment, an answer sheet or a program
    state by its content."""
    causes = []
    for spec in (judge, *judge.members):
        if spec.api_base is None and spec.calls_litellm:
            names = _endpoints.variables(spec.model)
            shown = ", ".join(names[:2]) + (" …" if len(names) > 2 else "")
            value = _endpoints.from_environment(spec.model)
            here = f"{value} here" if value else "none set here"
            causes.append(
                f"the endpoint of {spec.model} comes from the environment ({shown}: {here}), "
                "and the run's came from another — set it as the run had it"
            )
        if spec.model.startswith("scripted:"):  # an answer sheet, by its content
            sheet = spec.model.split(":", 1)[1]
            causes.append(f"its answer sheet {sheet} counts by its content: edited since?")
        if spec.program_state:
            causes.append(f"its program state {spec.program_state} counts by its content")
    why = "; or ".join(dict.fromkeys(causes)) or "a run made by another version of assay, or edited"
    data = "; the data are as they were" if data_checked else ""
    return (
        f"the judge is not the one the run judged with (config {now}, the run's {then}{data}): "
        f"{why}"
    )


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
    seal: str = ""  # its seal's digest: a copy of a run has the run's
    instance: str = ""  # its run instance (run.json): a copy of a run, re-sealed or not, has it

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
    (its artifacts downloaded under ``scratch``). Its files must be the ones it sealed when it
    finished (a logged run's, the seal its MLflow run was tagged with), and its items, read back
    from its data set, the ones it judged: the run's hash, recomputed from them, must match."""
    path = Path(named)
    if path.is_dir():
        run_id = None
        config, judgments, state = read_evaluate_run(path, where=named)
    else:
        run_id = str(named)
        path, state = _download(run_id, tracking_uri, scratch)
        config, judgments, _ = read_evaluate_run(path, where=named, state=state)
    items = judged_items(named, config, judgments, state.get("run_hash"), run_dir=path)
    run_id = run_id or state.get("mlflow_run_id")
    digest = str(state.get("seal", {}).get("digest", ""))
    instance = str(state.get("instance") or "")
    return JudgeRun(str(named), path, run_id, config, items, judgments, digest, instance)


def distinct_runs(runs: Sequence[JudgeRun], command: str) -> None:
    """Refuse, in one line, a run given twice — by name or as a copy (its instance the same, or,
    for runs created before instances existed, its files and so its seal): compared with itself
    it shows no change whatever the judge did, and counted twice its verdicts weigh double."""
    seen: dict[str, JudgeRun] = {}
    for run in runs:
        keys = {f"instance {run.instance}", f"seal {run.seal}", f"dir {run.run_dir.resolve()}"}
        keys -= {"instance ", "seal "}  # a run with none of these: its directory alone
        first = next((seen[key] for key in sorted(keys) if key in seen), None)
        if first is not None:
            if first.named == run.named:
                how = "the same run"
            elif run.seal and first.seal == run.seal:
                how = "one run (the same sealed files)"
            else:
                how = "one run (a copy of it: the same run instance)"
            raise RunError(
                f"{first.named} and {run.named} are {how}: {command} needs distinct runs "
                "(a run compared with itself shows no change, and counted twice it weighs double)"
            )
        seen.update(dict.fromkeys(keys, run))


def _download(run_id: str, tracking_uri: str, scratch: Path) -> tuple[Path, RunState]:
    """An MLflow evaluate run's directory, as logged (the files its seal covers), and its
    ``run.json``, checked against the seal the run was tagged with. (The logged ``run.json``
    was copied while the run was finishing: MLflow's status says it finished.)"""
    from mlflow.artifacts import download_artifacts
    from mlflow.exceptions import MlflowException

    from assay.runs import open_store

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
    tag = run.data.tags.get(SEAL_TAG)
    if not tag:
        raise RunError(
            f"{run_id}: logged before runs were sealed (no {SEAL_TAG} tag), so its files cannot "
            "be checked: run its config again to seal it"
        )
    dest = Path(tempfile.mkdtemp(prefix=f"{run_id[:8]}-", dir=scratch))
    quiet = os.environ.get(_BAR)
    os.environ[_BAR] = "false"  # no progress bar per file on the console

    def fetch(name: str) -> None:
        try:
            download_artifacts(
                run_id=run_id, artifact_path=name, dst_path=str(dest), tracking_uri=tracking_uri
            )
        except (MlflowException, OSError):
            raise RunError(f"{run_id}: its MLflow artifacts hold no {name}") from None

    try:
        fetch("run.json")
        try:
            state = json.loads((dest / "run.json").read_text(encoding="utf-8"))
            sealed = [Path(name) for name in state["seal"]["files"]]
        except (OSError, ValueError, TypeError, KeyError):
            raise RunError(f"{run_id}: its logged run.json holds no seal") from None
        if any(name.is_absolute() or ".." in name.parts for name in sealed):
            raise RunError(f"{run_id}: its logged seal names a file outside the run")
        for name in sealed:
            fetch(name.as_posix())
    finally:
        if quiet is None:
            os.environ.pop(_BAR, None)
        else:
            os.environ[_BAR] = quiet
    if state.get("kind", "evaluate") != "evaluate":
        raise RunError(f"{run_id}: a run of '{state.get('kind')}', not of evaluate")
    check_seal(dest, state, where=run_id, tag=tag, needs=("config.yaml", JUDGMENTS))
    return dest, state
