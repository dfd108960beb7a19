"""``assay evaluate``: judge every item, keep every judgment, measure agreement, log to MLflow.

Data flows one way: config → items → judgments (appended as they finish) → metrics → report
and MLflow. The run directory is keyed by the judge config hash and the data, so re-running a
finished config reads its results and makes no LM call; re-running a killed one judges only
what is missing; ``retry.unscored`` judges the items left unscored for those reasons again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dspy

from assay.experiments._config import EvaluateConfig
from assay.experiments._items import load_items
from assay.experiments._report import render_report
from assay.experiments._scoring import summarize_run
from assay.experiments.runs import (
    JudgeTask,
    ProgramRecipe,
    ProgramsByAttempt,
    Run,
    TrackedRun,
    flatten_metrics,
    run_tasks,
    to_judge,
    write_html,
)
from assay.programs import LMFactory, build_judge, judge_lm_factory, save_program
from assay.types import Item, Judgment, stable_hash


@dataclass
class EvaluateResult:
    run_dir: Path
    summary: dict[str, Any]
    judgments: list[Judgment]
    new_judgments: int
    mlflow_run_id: str | None
    resumed: bool
    items: list[Item]
    retried: int = 0


def data_fingerprint(items: list[Item]) -> str:
    return stable_hash([it.model_dump(mode="json") for it in items])


def evaluate(
    config: EvaluateConfig,
    *,
    workdir: Path,
    config_dir: Path | None = None,
    limit: int | None = None,
    tracking_uri: str | None = None,
    progress: bool = True,
    lm_factory: LMFactory | None = None,
) -> EvaluateResult:
    """Run (or resume, or re-read) an evaluation. Nothing is written before input is validated."""
    started = time.monotonic()
    assert config.judge.scale is not None
    items = load_items(
        config.data, config.judge.scale, cache_dir=workdir / ".assay" / "hf", limit=limit
    )
    fingerprint = data_fingerprint(items)
    run_hash = config.run_hash(fingerprint)

    def make(rollout: int | None) -> dspy.Module:
        factory = lm_factory or judge_lm_factory(
            retries=config.retries, base=config_dir, rollout=rollout
        )
        return build_judge(config.judge, factory)

    programs = ProgramsByAttempt(config.judge, make)

    def recipe(attempt: int) -> ProgramRecipe | None:
        """How a Ray worker rebuilds the attempt's program (not a custom ``lm_factory``'s)."""
        if lm_factory is not None:
            return None
        rollout = None if attempt == 1 else attempt
        return ProgramRecipe.of(
            config.judge, rollout=rollout, retries=config.retries, base=config_dir
        )

    programs(1)  # built (API keys checked, program state loaded) before anything is written

    with Run.open(
        config, run_hash, command="evaluate", workdir=workdir, tracking_uri=tracking_uri
    ) as run:
        done = run.store.judgments()
        resumed = bool(done)
        work, retried = to_judge((it.id for it in items), done, config.retry.unscored)
        if not work and run.finished:
            summary = run.store.read_json("metrics.json")
            return EvaluateResult(
                run.dir, summary, [done[it.id] for it in items], 0, run.mlflow_run_id, True, items
            )
        by_id = {it.id: it for it in items}
        new = run_tasks(
            [
                JudgeTask(programs(a), by_id[i], config.judge, attempt=a, recipe=recipe(a))
                for i, a in work
            ],
            concurrency=config.concurrency,
            on_judgment=lambda _t, j: run.store.append(j),
            progress=progress,
            deadline=config.deadline(started),
            execution=config.execution,
        )
        judged = {**done, **{j.item_id: j for j in new}}
        judgments = [judged[it.id] for it in items]
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
        summary["retried"] = retried
        summary["config_hash"] = config.judge.config_hash()
        summary["run_hash"] = run_hash
        summary["bootstrap"] = (
            f"{b.n_resamples} percentile resamples over items, seed {b.seed}, {b.confidence:.0%} intervals"
        )
        run.store.write_json("metrics.json", summary)
        run.store.write_text(
            "report.md",
            render_report(config.name, config.model_dump(mode="json"), summary, b.confidence),
        )
        save_program(programs(1), run.dir / "program.json")
        write_html(run.dir, items=items)
        run_id = run.finish(
            TrackedRun(
                name=config.name,
                params={
                    **config.judge.flat_params(),
                    "data.path": config.data.path,
                    "data.format": config.data.format,
                    "data.n_items": str(len(items)),
                    "threshold": str(config.threshold),
                    "run_hash": run_hash,
                },
                metrics=evaluate_metrics(summary),
                tags={
                    "assay.data": fingerprint[:16],
                    "assay.scale": config.judge.scale.describe(),
                    "assay.judge": config.judge.name,
                },
            ),
            n_items=len(items),
        )
        return EvaluateResult(
            run.dir, summary, judgments, len(new), run_id, resumed, items, retried
        )


def evaluate_metrics(summary: dict[str, Any]) -> dict[str, float]:
    """An evaluate summary as MLflow metrics: every metric with its CI bounds (unprefixed),
    counts as ``n_*``, usage as ``usage_*`` and the cost per accuracy point."""
    usage = summary["usage"]
    return {
        **flatten_metrics(summary.get("metrics", {})),
        **flatten_metrics(summary["counts"], "n_"),
        **flatten_metrics(usage, "usage_"),
        **flatten_metrics(
            {"cost_per_accuracy_point_usd": usage.get("cost_per_accuracy_point_usd")}
        ),
    }
