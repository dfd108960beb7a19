"""``selective calibrate``: each stage's threshold by fixed-sequence testing, on the labelled
items the earlier stages did not keep; a seeded holdout measured through the result.

The thresholds are fitted on the calibration part's labels: a tuning, recorded in the runs
folder's ledger (:mod:`assay.decisions._tuning`) as ``assay calibrate`` records its fit, so that
``certify`` and ``compare --paired`` of a stage's judge deciding by its confidence (the judge
config with that ``confidence``) refuse those items."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from assay import _signing
from assay.decisions._certify import ledger_of
from assay.decisions._tuning import record_tuning
from assay.decisions.selective._config import CALIBRATION, SelectiveConfig
from assay.decisions.selective._report import _finish, _reread
from assay.decisions.selective._results import (
    Calibration,
    SelectiveResult,
    SelectiveSummary,
    StageThreshold,
    guarantee,
)
from assay.decisions.selective._stages import _Stage, _through_cascade
from assay.errors import ConfigError
from assay.inputs import data_fingerprint, epochs_line, load_items, repeated_samples
from assay.runs import Run
from assay.types import Item, Usage, stable_hash


def split_holdout(items: list[Item], share: float, seed: int) -> tuple[list[Item], list[Item]]:
    """``(calibration, holdout)``: a seeded random ``share`` of the items (by id) kept aside."""
    if share <= 0:
        return items, []
    ids = sorted(it.id for it in items)
    n = round(share * len(ids))
    held = set(np.random.default_rng(seed).permutation(len(ids))[:n].tolist())
    out = {ids[i] for i in held}
    return [it for it in items if it.id not in out], [it for it in items if it.id in out]


def calibrate(
    config: SelectiveConfig,
    *,
    workdir: Path,
    config_dir: Path | None = None,
    limit: int | None = None,
    tracking_uri: str | None = None,
    progress: bool = True,
) -> SelectiveResult:
    """Judge the labelled items down the cascade, calibrate each stage's threshold on the
    calibration part, measure the cascade on the held-out part; write ``calibration.json``."""
    from assay.metrics import selective_threshold

    started = time.monotonic()
    loaded = load_items(config.data, config.scale, cache_dir=workdir / ".assay" / "hf", limit=limit)
    items = [it for it in loaded if it.expected is not None]
    if not items:
        raise ConfigError(f"{config.data.path}: no labelled item to calibrate on")
    repeats = repeated_samples(items)
    if repeats[0]:  # a guarantee over independent items: refused, not made up
        raise ConfigError(
            f"{config.data.path}: "
            + epochs_line(*repeats, "the thresholds' risk guarantee would take")
        )
    cal, hold = split_holdout(items, config.holdout, config.seed)
    fingerprint = data_fingerprint(items)
    hashes = [j.config_hash() for j in config.judges]
    run_hash = stable_hash(
        {
            "mode": "calibrate",
            # each judge with the prices its cost is counted at: at another price the cascade
            # judges again, through the LM cache (its thresholds are the config hash's)
            "judges": [j.results_hash() for j in config.judges],
            "data": fingerprint,
            "alpha": config.alpha,
            "delta": config.delta,
            "holdout": config.holdout,
            "seed": config.seed,
        }
    )
    m = len(config.judges)
    with Run.open(
        config, run_hash, command="selective_calibrate", workdir=workdir, tracking_uri=tracking_uri
    ) as run:
        if run.finished:  # re-read: no LM call, nothing logged again
            _record_tunings(config, cal, run.dir, workdir)
            return _reread(run, config, items, calibration_file=run.dir / CALIBRATION)
        stages = [_Stage(run, j, config, config_dir) for j in config.judges]
        thresholds: list[StageThreshold] = []

        def fit(k: int, reach: list[Item]) -> float | None:
            stage = stages[k]
            agrees = [int(stage.done[it.id].score == it.expected) for it in reach]
            got = selective_threshold(
                stage.confidence(reach), agrees, alpha=config.alpha, delta=config.delta / m
            )
            thresholds.append(
                StageThreshold(
                    judge=stage.judge.name,
                    config_hash=hashes[k],
                    confidence_source=stage.judge.confidence.source,  # type: ignore[union-attr]
                    threshold=got.threshold,
                    delta=got.delta,
                    n=got.n,
                    kept=got.kept,
                    disagreements=got.disagreements,
                    p_value=got.p_value,
                    note=got.note,
                )
            )
            return got.threshold

        where = {"progress": progress, "deadline": config.deadline(started)}
        parts = [_through_cascade(stages, cal, fit, part="calibration", **where)[0]]
        if hold:
            fixed = [t.threshold for t in thresholds]
            held, _ = _through_cascade(
                stages, hold, lambda k, _r: fixed[k], part="holdout", **where
            )
            parts.append(held)
        text = guarantee(config.alpha, config.delta, m)
        calibration = Calibration(
            alpha=config.alpha,
            delta=config.delta,
            guarantee=text,
            data=fingerprint,
            n_calibration=len(cal),
            stages=thresholds,
            run=run.dir.name,
        )
        calibration.signature = _signing.sign(calibration.signed_part())
        # recorded before calibration.json, which tells how to use the thresholds, is written
        _record_tunings(config, cal, run.dir, workdir)
        run.store.write_json(CALIBRATION, calibration.model_dump(mode="json"))
        summary = SelectiveSummary(
            mode="calibrate",
            alpha=config.alpha,
            delta=config.delta,
            guarantee=text,
            thresholds=thresholds,
            parts=parts,
            usage=Usage.total(j.usage for s in stages for j in s.done.values()),
            without_reference=len(loaded) - len(items),
            run_hash=run.run_hash,
        )
        new = sum(s.new for s in stages)
        return _finish(run, config, summary, items, new, calibration_file=run.dir / CALIBRATION)


def _record_tunings(config: SelectiveConfig, cal: list[Item], run_dir: Path, workdir: Path) -> None:
    """Record each stage's threshold as a tuning on the calibration part ``cal`` (every stage:
    which items reach a stage depends on the thresholds before it): the tuned judge is the
    stage's judge config, its ``confidence`` included, and, as for ``assay calibrate``'s rule,
    one deciding by a threshold or a map from the same judge; the judge without a confidence
    (or its program state alone) was not tuned."""
    ledger = ledger_of(workdir, config.output_dir)
    for judge in config.judges:
        record_tuning(
            judge,
            judge.model_copy(update={"confidence": None}),
            cal,
            source="assay selective calibrate",
            run=run_dir,
            ledger=ledger,
            decision_rule_of=judge,
        )
