"""An assay judge as an MLflow GenAI ``Scorer``: ``mlflow.genai.evaluate(data=...,
scorers=[assay.integrations.mlflow.scorer("runs/my-judge-1a2b")])``.

Each row's ``inputs`` (the request: its one value, or the mapping as JSON) and ``outputs`` (the
response) are judged by the assay judge; the verdict comes back as a ``Feedback`` from an
``LLM_JUDGE`` source ``<judge name>@<config hash>``, its rationale the judge's reasoning, and
an unscored judgment as a Feedback with an error (its reason as the code) and no value. The
metadata carries what assay measured of the judge (``assay.kappa_categorical`` with its CI,
``assay.n``, the run ids and, given a harness run, ``assay.worst_test_rate``) and, per verdict,
its usage.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.integrations._judge import PREFIX, JudgeSource, MeasuredJudge, load_judge

if TYPE_CHECKING:  # MLflow is imported when a scorer is made
    from mlflow.entities import Feedback
    from mlflow.genai.scorers import Scorer

__all__ = ["at", "feedback", "scorer", "text"]


def scorer(
    config_or_run: JudgeSource,
    *,
    harness: str | Path | None = None,
    judge: str | None = None,
    name: str | None = None,
    request: str | None = None,
    response: str | None = None,
) -> Scorer:
    """An MLflow ``Scorer`` judging with the assay judge of ``config_or_run`` (a judge config,
    a YAML config with a ``judge``, or a finished evaluate or harness run directory); see
    :func:`assay.integrations.load_judge` for ``harness`` and ``judge``. ``name``: the
    assessment's name (default: the judge config's). ``request`` / ``response``: where the
    judged texts are, as dotted paths from ``inputs`` / ``outputs`` — the same paths as a
    ``data: {format: mlflow}`` config's (e.g. ``inputs.messages.-1.content``), so the judge
    reads the texts it was measured on; by default :func:`text` of each."""
    from mlflow.genai.scorers import scorer as mlflow_scorer

    measured = load_judge(config_or_run, harness=harness, judge=judge)

    def assay_judge(inputs: object = None, outputs: object = None) -> Feedback:
        row = {"inputs": inputs, "outputs": outputs}
        asked = at(row, request) if request else text(inputs)
        answered = at(row, response) if response else text(outputs)
        return feedback(measured, asked, answered, name=name)

    return mlflow_scorer(assay_judge, name=name or measured.config.name)


def feedback(
    measured: MeasuredJudge, request: str, response: str, *, name: str | None = None
) -> Feedback:
    """One verdict of ``measured`` as an MLflow ``Feedback``."""
    from mlflow.entities import AssessmentError, AssessmentSource, Feedback

    judgment = measured.judge(request, response)
    source = AssessmentSource(source_type="LLM_JUDGE", source_id=measured.source_id)
    usage = judgment.usage
    metadata = {
        **measured.figures,
        f"{PREFIX}calls": str(usage.calls),
        f"{PREFIX}prompt_tokens": str(usage.prompt_tokens),
        f"{PREFIX}completion_tokens": str(usage.completion_tokens),
    }
    if judgment.score is None:
        code, message = judgment.error_for_tools()
        error = AssessmentError(error_code=code, error_message=message)
        return Feedback(
            name=name or measured.config.name, error=error, source=source, metadata=metadata
        )
    if judgment.label is not None:
        metadata[f"{PREFIX}label"] = judgment.label
    return Feedback(
        name=name or measured.config.name,
        value=measured.value(judgment),
        rationale=judgment.reasoning,
        source=source,
        metadata=metadata,
    )


def at(row: dict[str, Any], dotted: str) -> str:
    """The text at ``dotted`` in a row (``inputs....`` or ``outputs....``); a path that is not
    there raises, naming it (MLflow records the scorer's error on the row, not a verdict)."""
    from assay.data import resolve_dotted

    value, missing = resolve_dotted(row, dotted, top="row")
    if missing is not None:
        raise ValueError(f"{dotted}: {missing}")
    return text(value)


def text(value: object) -> str:
    """A row's ``inputs`` / ``outputs`` as the text the judge reads: a string as it is, a
    mapping of one entry as its value, anything else as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        return text(next(iter(value.values())))
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, default=str)
