"""An Inspect log written by inspect_ai's own writer, for tests of what assay reads from it: one
sample per row, each with its epoch, its request, the model's answer and its scores."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple


class Epoch(NamedTuple):
    """One sample's run in one epoch: ``scores`` maps a scorer to its value."""

    sample: str
    epoch: int
    request: str
    answer: str
    scores: dict[str, object]


def write_inspect_log(path: Path, rows: list[Epoch], *, task: str, epochs: int) -> Path:
    """``rows`` as a finished eval of ``task`` run ``epochs`` times, written by inspect_ai."""
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalSample,
        EvalSpec,
        write_eval_log,
    )
    from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, ModelOutput
    from inspect_ai.scorer import Score

    samples = [
        EvalSample(
            id=row.sample,
            epoch=row.epoch,
            input=row.request,
            target="",
            messages=[
                ChatMessageUser(content=row.request),
                ChatMessageAssistant(content=row.answer),
            ],
            output=ModelOutput.from_content("mockllm/model", row.answer),
            scores={name: Score(value=value) for name, value in row.scores.items()},
        )
        for row in rows
    ]
    spec = EvalSpec(
        created="2025-01-01T00:00:00+00:00",
        task=task,
        dataset=EvalDataset(name="demo"),
        model="mockllm/model",
        config=EvalConfig(epochs=epochs),
    )
    write_eval_log(EvalLog(eval=spec, status="success", samples=samples), str(path))
    return path
