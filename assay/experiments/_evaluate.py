"""``assay evaluate``: judge every item, keep every judgment, measure agreement, log to MLflow.

Data flows one way: config → items → judgments (appended as they finish) → metrics → report
and MLflow. The run directory is keyed by the judge config hash and the data, so re-running a
finished config reads its results and makes no LM call; re-running a killed one judges only
what is missing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dspy

from assay.experiments._config import EvaluateConfig
from assay.experiments._items import load_items
from assay.experiments._report import render_report
from assay.experiments._runner import judge_items
from assay.experiments._scoring import summarize_run
from assay.experiments._store import RunStore, now
from assay.experiments._tracking import default_tracking_uri, flat_metrics, log_run
from assay.lm import lm_from_spec
from assay.programs import JudgeConfig, build_judge
from assay.types import Item, Judgment, stable_hash
from assay.web import write_html_report


@dataclass
class EvaluateResult:
    run_dir: Path
    summary: dict[str, Any]
    judgments: list[Judgment]
    new_judgments: int
    mlflow_run_id: str | None
    resumed: bool
    items: list[Item]


def default_lm_factory(
    retries: int,
    base: Path | None = None,
    temperature: float | None = None,
    rollout: int | None = None,
) -> Callable[[JudgeConfig], dspy.LM]:
    """``judge config → LM`` for ``build_judge`` (optionally at another temperature / rollout)."""

    def factory(cfg: JudgeConfig) -> dspy.LM:
        return lm_from_spec(
            cfg, retries=retries, base=base, temperature=temperature, rollout=rollout
        )

    return factory


def data_fingerprint(items: list[Item]) -> str:
    return stable_hash([it.model_dump(mode="json") for it in items])


def save_program(program: dspy.Module, path: Path) -> None:
    """Save the judge program's DSPy state (instructions, demos) without its LM objects."""
    predictors = program.predictors()
    lms = [p.lm for p in predictors]
    try:
        for p in predictors:
            p.lm = None
        program.save(str(path))
    finally:
        for p, lm in zip(predictors, lms, strict=True):
            p.lm = lm


def evaluate(
    config: EvaluateConfig,
    *,
    workdir: Path,
    config_dir: Path | None = None,
    limit: int | None = None,
    tracking_uri: str | None = None,
    progress: bool = True,
    lm_factory: Callable[[JudgeConfig], dspy.LM] | None = None,
) -> EvaluateResult:
    """Run (or resume, or re-read) an evaluation. Nothing is written before input is validated."""
    assert config.judge.scale is not None
    items = load_items(
        config.data, config.judge.scale, cache_dir=workdir / ".assay" / "hf", limit=limit
    )
    run_hash = config.run_hash(data_fingerprint(items))
    run_dir = (workdir / config.output_dir / f"{config.name}-{run_hash[:10]}").resolve()
    program = build_judge(
        config.judge, lm_factory or default_lm_factory(config.retries, config_dir)
    )

    store = RunStore(run_dir, run_hash)
    state = store.open(config.model_dump(mode="json"))
    done = store.judgments()
    resumed = bool(done)
    todo = [it for it in items if it.id not in done]
    if not todo and state.get("status") == "finished":
        import json

        summary = json.loads((run_dir / "metrics.json").read_text())
        return EvaluateResult(
            run_dir,
            summary,
            [done[it.id] for it in items],
            0,
            state.get("mlflow_run_id"),
            True,
            items,
        )

    new = judge_items(
        program,
        todo,
        config.judge,
        concurrency=config.concurrency,
        on_judgment=store.append,
        progress=progress,
    )
    by_id = {**done, **{j.item_id: j for j in new}}
    judgments = [by_id[it.id] for it in items]
    b = config.bootstrap
    summary = summarize_run(
        judgments,
        {it.id: it.expected for it in items},
        config.judge.scale,
        threshold=config.threshold,
        n_resamples=b.n_resamples,
        confidence=b.confidence,
        seed=b.seed,
    )
    summary["config_hash"] = config.judge.config_hash()
    summary["run_hash"] = run_hash
    summary["bootstrap"] = (
        f"{b.n_resamples} percentile resamples over items, seed {b.seed}, {b.confidence:.0%} intervals"
    )
    store.write_json("metrics.json", summary)
    store.write_text(
        "report.md",
        render_report(config.name, config.model_dump(mode="json"), summary, b.confidence),
    )
    write_html_report(run_dir, items=items)
    save_program(program, run_dir / "program.json")

    run_id = None
    if config.tracking.enabled:
        uri = tracking_uri or config.tracking.uri or default_tracking_uri(workdir)
        params = config.judge.flat_params()
        params.update(
            {
                "data.path": config.data.path,
                "data.format": config.data.format,
                "data.n_items": str(len(items)),
                "threshold": str(config.threshold),
                "run_hash": run_hash,
            }
        )
        run_id = log_run(
            tracking_uri=uri,
            experiment=config.tracking.experiment,
            run_name=config.name,
            params=params,
            metrics=flat_metrics(summary),
            tags={
                "assay.command": "evaluate",
                "assay.data": data_fingerprint(items)[:16],
                "assay.scale": config.judge.scale.describe(),
                "assay.judge": config.judge.name,
            },
            artifacts_dir=run_dir,
            artifact_root=workdir / "mlartifacts",
        )
    store.update_state(status="finished", finished=now(), mlflow_run_id=run_id, n_items=len(items))
    return EvaluateResult(run_dir, summary, judgments, len(new), run_id, resumed, items)
