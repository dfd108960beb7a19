"""``assay selective calibrate|apply``: trust a judge only where it has earned it, escalate the
rest (Jung, Brahman & Choi, "Trust or Escalate", ICLR 2025).

A cascade is a list of judge configs, cheapest first, each with a confidence per judgment
(``judge.confidence``). ``calibrate`` judges labelled items stage by stage — stage k only the
items no earlier stage kept — and picks each stage's threshold by fixed-sequence testing
(:mod:`assay.metrics._selective`), at δ/m per stage, so that on the items the cascade keeps the
judges agree with humans at rate ≥ 1 − α with probability ≥ 1 − δ. With ``holdout`` a seeded
part of the labelled items is kept aside and run through the calibrated cascade: the agreement
there is measured, not assumed. The thresholds go to ``calibration.json``, bound to each
stage's config hash. ``apply`` runs the cascade on other items: each is kept by the first stage
whose confidence reaches its threshold, escalated (judged by the next stage only), or abstains
— written to ``abstained.jsonl`` for human review.

Both are resumable like ``evaluate``: each stage's judgments are appended to
``judgments.<judge>.jsonl`` as they finish; a re-run judges only what is missing.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from assay.errors import ConfigError, RunError
from assay.experiments._config import DataConfig, RunConfig, load_config
from assay.experiments._items import data_fingerprint, item_set_tags, load_items
from assay.experiments.runs import (
    JudgeTask,
    ProgramRecipe,
    ProgramsByAttempt,
    Run,
    TrackedRun,
    flatten_metrics,
    run_tasks,
    to_judge,
)
from assay.experiments.selective_review import (
    ABSTAINED,
    VERDICTS,
    latest_human_verdicts,
    merge_verdicts,
    refresh_verdicts,
)
from assay.lm import Real, StrictInt
from assay.programs import JudgeConfig, build_judge, judge_lm_factory
from assay.types import Item, Judgment, Usage, stable_hash

CALIBRATION = "calibration.json"


class SelectiveConfig(RunConfig):
    """A cascade of judges and its guarantee: ``judges`` in order of cost, each with a
    ``confidence`` source; agreement ≥ 1 − ``alpha`` on kept items with probability ≥
    1 − ``delta``. ``data`` are the labelled items ``calibrate`` reads (``holdout``: the share
    kept aside, drawn with ``seed``); ``unlabelled`` the items ``apply`` judges."""

    data: DataConfig
    judges: list[JudgeConfig] = Field(min_length=1)
    alpha: Real = Field(default=0.1, gt=0, lt=1, description="disagreement allowed on kept items")
    delta: Real = Field(default=0.1, gt=0, lt=1, description="chance the guarantee fails")
    holdout: Real = Field(default=0.0, ge=0, lt=1, description="labelled share kept aside")
    seed: StrictInt = 0
    unlabelled: DataConfig | None = None

    @model_validator(mode="after")
    def _check(self) -> SelectiveConfig:
        names = [j.name for j in self.judges]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"judge name {', '.join(repeated)} is used by two stages")
        for k, judge in enumerate(self.judges):
            if judge.confidence is None:
                raise ValueError(
                    f"judges.{k} ({judge.name}) has no 'confidence' "
                    "({source: probability | samples | panel}): a stage keeps an item by it"
                )
            if judge.scale != self.judges[0].scale:
                raise ValueError(f"judges.{k} ({judge.name}): every stage must share one scale")
        return self

    @property
    def scale(self) -> Any:
        return self.judges[0].scale


def load_selective(path: str | Path, overrides: dict | None = None) -> tuple[SelectiveConfig, Path]:
    """A selective config from YAML: the judges' ``@file`` texts and ``data.path`` resolved as
    ``evaluate`` does them, and ``unlabelled.path`` against the config's folder too."""
    config, base = load_config(path, overrides, model=SelectiveConfig)
    if config.unlabelled is not None and not Path(config.unlabelled.path).is_absolute():
        config.unlabelled.path = str((base / config.unlabelled.path).resolve())
    return config, base


# -- what a run writes ------------------------------------------------------------------------


class StageThreshold(BaseModel):
    """One stage's calibrated threshold (``calibration.json``): keep an item when the judge's
    confidence is ≥ ``threshold``; None: it keeps nothing (nothing certified)."""

    model_config = ConfigDict(extra="forbid")

    judge: str
    config_hash: str
    confidence_source: str
    threshold: float | None
    delta: float
    n: int
    kept: int
    disagreements: int
    p_value: float | None
    note: str = ""


class Calibration(BaseModel):
    """``calibration.json``: the thresholds of a cascade, bound to each stage's judge config
    hash and to the labelled items they were calibrated on."""

    model_config = ConfigDict(extra="forbid")

    alpha: float
    delta: float
    guarantee: str
    data: str  # the calibration items' fingerprint
    n_calibration: int
    stages: list[StageThreshold]


class StageCount(BaseModel):
    """What one stage did on one part of the items: how many reached it, were judged (an
    unscored judgment is never kept), kept, escalated onward; what its calls cost."""

    model_config = ConfigDict(extra="forbid")

    judge: str
    threshold: float | None
    reached: int
    judged: int
    unscored: int
    kept: int
    escalated: int
    disagreements_kept: int | None = None  # where the items have references
    usage: Usage = Field(default_factory=Usage)


class PartSummary(BaseModel):
    """A part of the items (calibration, holdout, or the unlabelled items ``apply`` judged)
    through the cascade: per stage, and in all — kept, abstained, coverage and, where the items
    have references, the agreement on kept items with its exact (Clopper–Pearson) interval."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    part: Literal["calibration", "holdout", "items"]
    items: int
    kept: int
    abstained: int
    coverage: float | None
    stages: list[StageCount]
    labelled: int = 0
    agreement_kept: float | None = None
    agreement_ci: tuple[float, float] | None = None


class SelectiveSummary(BaseModel):
    """``metrics.json`` of a selective run (``mode``: calibrate or apply)."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    mode: Literal["calibrate", "apply"]
    alpha: float
    delta: float
    guarantee: str
    thresholds: list[StageThreshold]
    parts: list[PartSummary]
    usage: Usage
    without_reference: int = 0
    run_hash: str = ""


class SelectiveResult(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    run_dir: Path
    summary: SelectiveSummary
    new_judgments: int
    mlflow_run_id: str | None = None
    calibration_file: Path | None = None
    human_verdicts: int | None = None  # apply: abstained items a person has given a verdict


def guarantee(alpha: float, delta: float, m: int) -> str:
    split = f"; δ split as δ/{m} per stage (union bound)" if m > 1 else ""
    return (
        f"agreement with humans ≥ {1 - alpha:g} on kept items with probability ≥ {1 - delta:g} "
        f"(α = {alpha:g}, δ = {delta:g}{split}), for items exchangeable with the calibration items"
    )


# -- judging a stage --------------------------------------------------------------------------


class _Stage:
    """One judge of the cascade in a run: its programs, its judgments file, what it judged."""

    def __init__(self, run: Run, judge: JudgeConfig, config: SelectiveConfig, base: Path | None):
        self.judge = judge
        self.file = f"judgments.{judge.name}.jsonl"
        self.run = run
        self.config = config

        def make(rollout: int | None) -> Any:
            factory = judge_lm_factory(retries=config.retries, base=base, rollout=rollout)
            return build_judge(judge, factory)

        self.programs = ProgramsByAttempt(judge, make)
        self.base = base
        self.done = run.store.judgments(self.file)
        self.new = 0

    def recipe(self, attempt: int) -> ProgramRecipe:
        rollout = None if attempt == 1 else attempt
        return ProgramRecipe.of(
            self.judge, rollout=rollout, retries=self.config.retries, base=self.base
        )

    def judge_items(self, items: list[Item], *, progress: bool, deadline: float | None) -> None:
        """Judge the items not judged yet (and those to retry); appended as they finish."""
        by_id = {it.id: it for it in items}
        work, _ = to_judge(by_id, self.done, self.config.retry.unscored)
        if not work:
            return

        def persist(_task: JudgeTask, judgment: Judgment) -> None:
            self.run.calls_flowing()
            self.run.store.append(judgment, self.file)

        new = run_tasks(
            [
                JudgeTask(self.programs(a), by_id[i], self.judge, attempt=a, recipe=self.recipe(a))
                for i, a in work
            ],
            concurrency=self.config.concurrency,
            on_judgment=persist,
            progress=progress,
            desc=f"judging ({self.judge.name})",
            deadline=deadline,
            execution=self.config.execution,
        )
        self.done.update({j.item_id: j for j in new})
        self.new += len(new)
        missing = [i for i in by_id if i not in self.done]
        if missing:  # the deadline: what is judged is kept; a re-run resumes
            raise RunError(
                f"{self.run.dir}: stopped at the deadline with {len(missing)} items of stage "
                f"{self.judge.name} not judged (re-run to resume)"
            )

    def confidence(self, items: list[Item]) -> np.ndarray:
        """Each item's confidence; NaN for an unscored judgment or one without a confidence."""
        out = [self.done[it.id] for it in items]
        return np.array(
            [
                j.confidence if j.score is not None and j.confidence is not None else math.nan
                for j in out
            ]
        )


def _stage_count(
    stage: _Stage, items: list[Item], kept: np.ndarray, threshold: float | None
) -> StageCount:
    judged = [stage.done[it.id] for it in items if it.id in stage.done]
    labelled = [it.expected is not None for it in items]
    wrong = None
    if any(labelled):
        wrong = sum(
            int(stage.done[it.id].score != it.expected)
            for it, k in zip(items, kept, strict=True)
            if k and it.expected is not None
        )
    return StageCount(
        judge=stage.judge.name,
        threshold=threshold,
        reached=len(items),
        judged=len(judged),
        unscored=sum(j.score is None for j in judged),
        kept=int(kept.sum()),
        escalated=len(items) - int(kept.sum()),
        disagreements_kept=wrong,
        usage=Usage.total(j.usage for j in judged),
    )


def _through_cascade(
    stages: list[_Stage],
    items: list[Item],
    thresholds: Callable[[int, list[Item]], float | None],
    *,
    part: Literal["calibration", "holdout", "items"],
    progress: bool,
    deadline: float | None,
) -> tuple[PartSummary, dict[str, int]]:
    """Run ``items`` down the cascade: stage k judges the items no earlier stage kept (a stage
    without a threshold is skipped, unless calibrating it needs its verdicts — ``thresholds``
    is then called after the judging); returns the part's summary and, per item id, the stage
    that kept it (-1: abstained)."""
    from assay.metrics import keeps

    reach = list(items)
    kept_by: dict[str, int] = {}
    counts: list[StageCount] = []
    agree = 0
    for k, stage in enumerate(stages):
        if part == "calibration":
            stage.judge_items(reach, progress=progress, deadline=deadline)
            lam = thresholds(k, reach)
        else:
            lam = thresholds(k, reach)
            if lam is not None:
                stage.judge_items(reach, progress=progress, deadline=deadline)
        kept = (
            keeps(stage.confidence(reach), lam) if lam is not None else np.zeros(len(reach), bool)
        )
        counts.append(_stage_count(stage, reach, kept, lam))
        for it, keep in zip(reach, kept, strict=True):
            if keep:
                kept_by[it.id] = k
                agree += it.expected is not None and stage.done[it.id].score == it.expected
        reach = [it for it, keep in zip(reach, kept, strict=True) if not keep]
    for it in reach:
        kept_by[it.id] = -1
    n_kept = len(items) - len(reach)
    labelled_kept = sum(1 for it in items if kept_by[it.id] >= 0 and it.expected is not None)
    summary = PartSummary(
        part=part,
        items=len(items),
        kept=n_kept,
        abstained=len(reach),
        coverage=n_kept / len(items) if items else None,
        stages=counts,
        labelled=sum(it.expected is not None for it in items),
    )
    if labelled_kept:
        from scipy.stats import binomtest

        ci = binomtest(agree, labelled_kept).proportion_ci(0.95, method="exact")
        summary.agreement_kept = agree / labelled_kept
        summary.agreement_ci = (float(ci.low), float(ci.high))
    return summary, kept_by


# -- calibrate --------------------------------------------------------------------------------


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
    cal, hold = split_holdout(items, config.holdout, config.seed)
    fingerprint = data_fingerprint(items)
    hashes = [j.config_hash() for j in config.judges]
    run_hash = stable_hash(
        {
            "mode": "calibrate",
            "judges": hashes,
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
            return _reread(run, calibration_file=run.dir / CALIBRATION)
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
        )
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
            run_hash=run_hash,
        )
        run_id = _finish(run, config, summary, items, "calibrate")
        return SelectiveResult(
            run_dir=run.dir,
            summary=summary,
            new_judgments=sum(s.new for s in stages),
            mlflow_run_id=run_id,
            calibration_file=run.dir / CALIBRATION,
        )


# -- apply ------------------------------------------------------------------------------------


def read_calibration(path: str | Path, config: SelectiveConfig) -> Calibration:
    """``calibration.json`` (or the calibrate run directory holding it), checked against the
    config's judges: the same stages, each the very judge config that was calibrated."""
    path = Path(path)
    if path.is_dir():
        path = path / CALIBRATION
    try:
        calibration = Calibration.model_validate_json(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the calibration file ({exc.strerror})") from None
    except ValueError as exc:
        raise ConfigError(
            f"{path}: not a selective calibration file ({str(exc).splitlines()[0]})"
        ) from None
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
    calibration = read_calibration(calibration_file, config)
    items = load_items(
        config.unlabelled, config.scale, cache_dir=workdir / ".assay" / "hf", limit=limit
    )
    run_hash = stable_hash(
        {
            "mode": "apply",
            "calibration": calibration.model_dump(mode="json"),
            "data": data_fingerprint(items),
        }
    )
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
            result = _reread(run)
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
        merged = merge_verdicts(machine, latest_human_verdicts(run.dir))
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
            run_hash=run_hash,
        )
        run_id = _finish(run, config, summary, items, "apply")
        return SelectiveResult(
            run_dir=run.dir,
            summary=summary,
            new_judgments=sum(s.new for s in stages),
            mlflow_run_id=run_id,
            human_verdicts=sum(r["source"] == "human" for r in merged),
        )


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


def _reread(run: Run, calibration_file: Path | None = None) -> SelectiveResult:
    summary = SelectiveSummary.model_validate(run.store.read_json("metrics.json"))
    return SelectiveResult(
        run_dir=run.dir,
        summary=summary,
        new_judgments=0,
        mlflow_run_id=run.mlflow_run_id,
        calibration_file=calibration_file,
    )


# -- the end of a run -------------------------------------------------------------------------


def _finish(
    run: Run, config: SelectiveConfig, summary: SelectiveSummary, items: list[Item], mode: str
) -> str | None:
    """metrics.json, report.md and report.html, then MLflow; the run marked finished."""
    run.store.write_json("metrics.json", summary.model_dump(mode="json"))
    _write_report(run)
    params = {"mode": mode, "alpha": str(config.alpha), "delta": str(config.delta)}
    for k, judge in enumerate(config.judges):
        params.update({f"stage{k}.{key}": v for key, v in judge.flat_params().items()})
    params["holdout"] = str(config.holdout)
    return run.finish(
        TrackedRun(
            name=config.name,
            params=params,
            metrics=selective_metrics(summary),
            tags={"assay.selective": mode, **item_set_tags(items, split="all")},
        )
    )


def _write_report(run: Run) -> None:
    """report.md and report.html from metrics.json (and, for apply, verdicts.jsonl)."""
    from assay.report import markdown, write_html

    report = build_report(run.dir)
    lines = [f"# {report.title}", ""]
    lines += [f"- {k}: {v}" for k, v in report.facts] + [""]
    lines += markdown(report.tables)
    run.store.write_text("report.md", "\n".join(lines) + "\n")
    write_html(report, run.dir)


def selective_metrics(summary: SelectiveSummary) -> dict[str, float]:
    """The summary as MLflow metrics: per part its coverage, counts and agreement on kept
    items, per stage its threshold and counts, and the usage."""
    out: dict[str, float] = {}
    for part in summary.parts:
        p = part.part
        out.update(
            flatten_metrics(
                {
                    "items": part.items,
                    "kept": part.kept,
                    "abstained": part.abstained,
                    "coverage": part.coverage,
                    "agreement_kept": part.agreement_kept,
                },
                f"{p}_",
            )
        )
        for s in part.stages:
            out.update(
                flatten_metrics(
                    {"kept": s.kept, "escalated": s.escalated, "cost_usd": s.usage.cost_usd},
                    f"{p}_{s.judge}_",
                )
            )
    for t in summary.thresholds:
        if t.threshold is not None:
            out[f"threshold_{t.judge}"] = t.threshold
    out.update(flatten_metrics(summary.usage, "usage_"))
    return out


def build_report(run_dir: Path) -> Any:
    """The run's :class:`~assay.report.Report`: the guarantee, the thresholds, and each part
    through the cascade (report.md shows the same tables)."""
    from assay.report import Report, Table, load_json

    s = SelectiveSummary.model_validate(load_json(Path(run_dir) / "metrics.json"))
    facts = [("guarantee", s.guarantee), ("α", f"{s.alpha:g}"), ("δ", f"{s.delta:g}")]
    if s.without_reference:
        facts.append(("left out", f"{s.without_reference} items without a reference label"))
    u = s.usage
    facts.append(
        (
            "LM usage",
            f"{u.calls} calls · tokens {u.prompt_tokens}+{u.completion_tokens} · ${u.cost_usd:.6f}",
        )
    )
    tables = [
        Table(
            title="Thresholds",
            columns=[
                "stage",
                "judge",
                "confidence",
                "threshold λ̂",
                "δ",
                "n",
                "kept",
                "risk",
                "note",
            ],
            rows=[
                [
                    k + 1,
                    t.judge,
                    t.confidence_source,
                    "none" if t.threshold is None else f"{t.threshold:.4f}",
                    f"{t.delta:.3g}",
                    t.n,
                    t.kept,
                    "" if not t.kept else f"{t.disagreements / t.kept:.3f}",
                    t.note,
                ]
                for k, t in enumerate(s.thresholds)
            ],
            lead="Each stage keeps an item when its confidence is ≥ λ̂, picked by fixed-sequence "
            "testing on the calibration items that reached it (exact binomial p-values).",
        )
    ]
    titles = {
        "calibration": "Calibration items",
        "holdout": "Held-out labelled items (the calibrated cascade, measured)",
        "items": "Items",
    }
    for part in s.parts:
        rows = [
            [
                k + 1,
                c.judge,
                c.reached,
                c.judged,
                c.unscored,
                c.kept,
                c.escalated if k + 1 < len(part.stages) else f"{c.escalated} (abstain)",
                f"{c.kept / part.items:.3f}" if part.items else "",
                ""
                if c.disagreements_kept is None or not c.kept
                else f"{1 - c.disagreements_kept / c.kept:.3f}",
                f"${c.usage.cost_usd:.6f} ({c.usage.calls} calls)",
            ]
            for k, c in enumerate(part.stages)
        ]
        note = (
            f"{part.items} items · kept {part.kept} (coverage "
            f"{'' if part.coverage is None else f'{part.coverage:.3f}'}) · abstained "
            f"{part.abstained}"
        )
        if part.agreement_kept is not None and part.agreement_ci is not None:
            lo, hi = part.agreement_ci
            note += (
                f" · agreement with the reference on kept items {part.agreement_kept:.3f} "
                f"[{lo:.3f}, {hi:.3f}] (exact 95% interval; the guarantee: ≥ {1 - s.alpha:g} "
                f"with probability ≥ {1 - s.delta:g})"
            )
        tables.append(
            Table(
                title=titles[part.part],
                columns=[
                    "stage",
                    "judge",
                    "reached",
                    "judged",
                    "unscored",
                    "kept",
                    "escalated",
                    "share kept",
                    "agreement (kept)",
                    "cost",
                ],
                rows=rows,
                note=note,
            )
        )
    verdicts = Path(run_dir) / VERDICTS
    if s.mode == "apply" and verdicts.is_file():
        tables.append(_final_verdicts_table(verdicts))
    title = f"Selective evaluation ({s.mode})"
    return Report(kind=f"selective_{s.mode}", title=title, facts=facts, tables=tables)


def _final_verdicts_table(path: Path) -> Any:
    """The final verdicts by where they came from: each stage's kept items, the abstained
    items a person gave a verdict (``human``), and those still waiting for one."""
    from collections import Counter

    from assay.report import Table

    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    counts = Counter(
        (r["source"] or "abstained, no verdict yet", r["label"] or r["score"]) for r in rows
    )
    waiting = sum(r["source"] is None for r in rows)
    return Table(
        title="Final verdicts",
        columns=["source", "verdict", "items"],
        rows=[[src, "—" if v is None else v, n] for (src, v), n in counts.items()],
        lead="verdicts.jsonl: each kept item's verdict from the stage that kept it, each "
        "abstained item's from a person (`assay review serve` on this run directory).",
        note=f"{len(rows)} items · {waiting} abstained without a human verdict yet",
    )
