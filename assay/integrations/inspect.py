"""An assay judge as an Inspect ``@scorer``: ``Task(..., scorer=assay.integrations.inspect.
scorer("runs/my-judge-1a2b"))``.

Each sample's input (the request) and the solver's completion (the response) are judged by the
assay judge in a worker thread; the ``Score``'s value is the verdict (a number: 1/0 on a binary
scale, the score on an ordinal one, the label on a categorical one), its explanation the judge's
reasoning, and its metadata what assay measured of the judge (as for the MLflow scorer) with the
verdict's usage. An unscored judgment is a ``Score`` with no answer (``N``) and its reason in
``metadata["assay.unscored"]`` — counted by the ``unscored`` metric, never averaged as a 0: the
``scored_mean`` metric is the mean verdict over the scored samples.
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

from inspect_ai.scorer import NOANSWER, Metric, SampleScore, Score, Scorer, Target, metric
from inspect_ai.scorer import scorer as inspect_scorer
from inspect_ai.solver import TaskState

from assay.integrations._judge import PREFIX, JudgeSource, load_judge

__all__ = ["scored_mean", "scorer", "unscored"]


def scorer(
    config_or_run: JudgeSource,
    *,
    harness: str | Path | None = None,
    judge: str | None = None,
) -> Scorer:
    """An Inspect scorer judging with the assay judge of ``config_or_run`` (see
    :func:`assay.integrations.load_judge`), with the metrics ``scored_mean`` and ``unscored``."""
    measured = load_judge(config_or_run, harness=harness, judge=judge)

    @inspect_scorer(metrics=[scored_mean(), unscored()], name=measured.config.name)
    def assay_judge() -> Scorer:
        async def score(state: TaskState, target: Target) -> Score:
            response = state.output.completion
            judgment = await asyncio.to_thread(
                measured.judge, state.input_text, response, str(state.sample_id)
            )
            usage = judgment.usage
            metadata: dict[str, Any] = {
                **measured.figures,
                f"{PREFIX}source": measured.source_id,
                f"{PREFIX}calls": usage.calls,
                f"{PREFIX}prompt_tokens": usage.prompt_tokens,
                f"{PREFIX}completion_tokens": usage.completion_tokens,
            }
            if judgment.score is None:
                metadata[f"{PREFIX}unscored"] = judgment.unscored
                metadata[f"{PREFIX}error"] = judgment.error
                return Score(value=NOANSWER, answer=response, metadata=metadata)
            value = measured.value(judgment)
            if isinstance(value, bool):
                value = int(value)
            return Score(
                value=value, answer=response, explanation=judgment.reasoning, metadata=metadata
            )

        return score

    return assay_judge()


@metric
def scored_mean() -> Metric:
    """The mean verdict over the samples the judge scored (unscored ones left out)."""

    def compute(scores: list[SampleScore]) -> float:
        values = [s.score.as_float() for s in scores if _scored(s.score)]
        return sum(values) / len(values) if values else math.nan

    return compute


@metric
def unscored() -> Metric:
    """How many samples the judge left unscored."""

    def compute(scores: list[SampleScore]) -> float:
        return float(sum(not _scored(s.score) for s in scores))

    return compute


def _scored(score: Score) -> bool:
    meta = score.metadata or {}
    return PREFIX + "unscored" not in meta and isinstance(score.value, int | float)
