"""A cascade's stages in a run: each judge's programs and judgments, its confidence, and items
passed through the cascade stage by stage."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np

from assay.decisions.selective._config import SelectiveConfig
from assay.decisions.selective._results import PartSummary, StageCount
from assay.errors import RunError
from assay.programs import JudgeConfig, build_judge, judge_lm_factory
from assay.runs import (
    JudgeTask,
    ProgramRecipe,
    ProgramsByAttempt,
    Run,
    run_tasks,
    to_judge,
)
from assay.types import Item, Judgment, Usage


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
        unscored_reasons=dict(Counter(str(j.unscored) for j in judged if j.score is None)),
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
        from assay.metrics import clopper_pearson_interval

        summary.labelled_kept = labelled_kept
        summary.agreement_kept = agree / labelled_kept
        summary.agreement_ci = clopper_pearson_interval(agree, labelled_kept, 0.95)
    return summary, kept_by
