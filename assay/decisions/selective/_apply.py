"""``selective apply``: a calibrated cascade on other items — kept, escalated, or abstained for
a person (``abstained.jsonl``), the final verdicts in ``verdicts.jsonl``."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from assay import _signing
from assay.decisions.selective._config import CALIBRATION, SelectiveConfig
from assay.decisions.selective._report import _finish, _reread, _write_report
from assay.decisions.selective._results import Calibration, SelectiveResult, SelectiveSummary
from assay.decisions.selective._stages import _Stage, _through_cascade
from assay.decisions.selective.review import (
    ABSTAINED,
    VERDICTS,
    merge_verdicts,
    refresh_verdicts,
)
from assay.errors import ConfigError
from assay.inputs import data_fingerprint, load_items
from assay.runs import Run, sealed_run
from assay.types import Item, Usage, stable_hash


def read_calibration(path: str | Path, config: SelectiveConfig, *, workdir: Path) -> Calibration:
    """``calibration.json`` (or the calibrate run directory holding it) as its calibrate run in
    ``workdir``'s runs folder holds it — signed by the key, the run finished and its files the
    ones it sealed — checked against the config's judges: the same stages, each the very judge
    config that was calibrated. A file never says where to look: an edited threshold, or a
    calibration copied in from elsewhere, is refused in one line."""
    path = Path(path)
    if path.is_dir():
        path = path / CALIBRATION
    calibration = _parse(path)
    if not calibration.signature or calibration.run is None:
        raise ConfigError(
            f"{path}: the calibration is not signed (written by hand, or before calibrations "
            "were signed): move its calibrate run aside and calibrate again"
        )
    if not _signing.verify(calibration.signed_part(), calibration.signature):
        raise ConfigError(
            f"{path}: the calibration does not match its signature (edited after it was "
            f"written — a threshold, a stage —, or signed with another key than "
            f"{_signing.key_file()}): calibrate again"
        )
    run_dir = (workdir / config.output_dir).resolve() / calibration.run
    if not (run_dir / CALIBRATION).is_file():
        raise ConfigError(
            f"{path}: its calibrate run {calibration.run} is not in this folder's runs "
            f"({run_dir.parent}): apply uses the calibrations of its own runs folder"
        )
    sealed_run(run_dir, kind="selective_calibrate", needs=(CALIBRATION,))
    if _parse(run_dir / CALIBRATION) != calibration:
        raise ConfigError(f"{path}: differs from its calibrate run's {run_dir / CALIBRATION}")
    names = [s.judge for s in calibration.stages]
    if names != [j.name for j in config.judges]:
        raise ConfigError(
            f"{path}: calibrated for the judges {', '.join(names)}; the config names "
            f"{', '.join(j.name for j in config.judges)}"
        )
    for stage, judge in zip(calibration.stages, config.judges, strict=True):
        if stage.config_hash != judge.config_hash():
            raise ConfigError(
                f"{path}: stage {judge.name} was calibrated for judge config "
                f"{stage.config_hash[:10]}; the config's is {judge.config_hash()[:10]} "
                "(it changed: calibrate again)"
            )
    if (calibration.alpha, calibration.delta) != (config.alpha, config.delta):
        raise ConfigError(
            f"{path}: calibrated for α = {calibration.alpha:g}, δ = {calibration.delta:g}; "
            f"the config asks α = {config.alpha:g}, δ = {config.delta:g} (calibrate again)"
        )
    return calibration


def _parse(path: Path) -> Calibration:
    try:
        return Calibration.model_validate_json(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the calibration file ({exc.strerror})") from None
    except ValueError as exc:
        raise ConfigError(
            f"{path}: not a selective calibration file ({str(exc).splitlines()[0]})"
        ) from None


def apply(
    config: SelectiveConfig,
    calibration_file: str | Path,
    *,
    workdir: Path,
    config_dir: Path | None = None,
    limit: int | None = None,
    tracking_uri: str | None = None,
    progress: bool = True,
) -> SelectiveResult:
    """Run the calibrated cascade on ``config.unlabelled``: each item kept by the first stage
    whose confidence reaches its threshold, escalated, or abstained (``abstained.jsonl``)."""
    started = time.monotonic()
    if config.unlabelled is None:
        raise ConfigError("the config has no 'unlabelled' data: the items `apply` judges")
    calibration = read_calibration(calibration_file, config, workdir=workdir)
    items = load_items(
        config.unlabelled, config.scale, cache_dir=workdir / ".assay" / "hf", limit=limit
    )
    identity: dict[str, object] = {
        "mode": "apply",
        "calibration": calibration.model_dump(mode="json"),
        "data": data_fingerprint(items),
    }
    priced = [j.results_hash() for j in config.judges]
    if priced != [j.config_hash() for j in config.judges]:  # a price set (unpriced: as before)
        identity["judges"] = priced  # the prices the cascade's cost is counted at
    run_hash = stable_hash(identity)
    fixed = [s.threshold for s in calibration.stages]
    with Run.open(
        config,
        run_hash,
        command="selective_apply",
        workdir=workdir,
        tracking_uri=tracking_uri,
        resolved={**config.model_dump(mode="json"), "calibration": str(calibration_file)},
    ) as run:
        if run.finished:  # re-read, with the human verdicts given since on abstained items
            result = _reread(run, config, items)
            refreshed = refresh_verdicts(run.dir)
            result.human_verdicts = None if refreshed is None else refreshed[0]
            _write_report(run)
            return result
        stages = [_Stage(run, j, config, config_dir) for j in config.judges]
        part, kept_by = _through_cascade(
            stages,
            items,
            lambda k, _r: fixed[k],
            part="items",
            progress=progress,
            deadline=config.deadline(started),
        )
        run.store.write_text(
            ABSTAINED,
            "".join(
                _abstained_line(it, stages, fixed) + "\n" for it in items if kept_by[it.id] < 0
            ),
        )
        machine = [_machine_verdict(it, stages, kept_by[it.id]) for it in items]
        # the machine's verdicts: people's, given on the queue once the run finished and its
        # seal held, are merged in by refresh_verdicts (signed, on sealed abstained items)
        merged = merge_verdicts(machine, {})
        run.store.write_text(
            VERDICTS, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in merged)
        )
        summary = SelectiveSummary(
            mode="apply",
            alpha=calibration.alpha,
            delta=calibration.delta,
            guarantee=calibration.guarantee,
            thresholds=calibration.stages,
            parts=[part],
            usage=Usage.total(j.usage for s in stages for j in s.done.values()),
            run_hash=run.run_hash,
        )
        result = _finish(run, config, summary, items, sum(s.new for s in stages))
        refreshed = refresh_verdicts(run.dir)  # verdicts given before a re-score, kept
        result.human_verdicts = None if refreshed is None else refreshed[0]
        if refreshed and refreshed[0]:
            _write_report(run)
        return result


def _machine_verdict(item: Item, stages: list[_Stage], kept_by: int) -> dict[str, Any]:
    """An item's verdict from the stage that kept it, or an empty one (``source`` None) when
    it abstained: :func:`merge_verdicts` fills those in from the human verdicts."""
    if kept_by < 0:
        return {"item_id": item.id, "score": None, "label": None, "source": None}
    j = stages[kept_by].done[item.id]
    return {
        "item_id": item.id,
        "score": j.score,
        "label": j.label,
        "source": stages[kept_by].judge.name,
        "confidence": j.confidence,
    }


def _abstained_line(item: Item, stages: list[_Stage], thresholds: list[float | None]) -> str:
    """An abstained item for human review: its texts and what each stage said, with the
    confidence that fell short of the stage's threshold."""
    verdicts = []
    for stage, lam in zip(stages, thresholds, strict=True):
        j = stage.done.get(item.id)
        verdicts.append(
            {
                "judge": stage.judge.name,
                "threshold": lam,
                "score": j.score if j else None,
                "label": j.label if j else None,
                "confidence": j.confidence if j else None,
                "unscored": j.unscored if j else None,
                "reasoning": j.reasoning if j else None,
                "judged": j is not None,
            }
        )
    record = {
        "item_id": item.id,
        "request": item.request,
        "response": item.response,
        "transcript": None
        if item.transcript is None
        else [m.model_dump(mode="json") for m in item.transcript],
        "expected": item.expected,
        "stages": verdicts,
    }
    return json.dumps(record, ensure_ascii=False)
