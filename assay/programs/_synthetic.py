"""DSPy modules of ``synthetic_ordinal``: a generator aimed at a score and a scoring validator."""

from __future__ import annotations

import dspy

from assay.scale import Scale
from assay.signatures import GenerateForScore, score_signature


class ScoreGenerator(dspy.Module):
    """Writes a response to ``request`` aimed at ``target_score`` under ``rubric``."""

    def __init__(self) -> None:
        super().__init__()
        self.predict = dspy.Predict(GenerateForScore)

    @property
    def instruction(self) -> str:
        return GenerateForScore.instructions

    def forward(
        self, request: str, rubric: str, target_score: int, examples: str
    ) -> dspy.Prediction:
        pred = self.predict(
            request=request, rubric=rubric, target_score=target_score, examples=examples
        )
        return dspy.Prediction(response=str(pred.response or "").strip())


class ScoreValidator(dspy.Module):
    """Scores a response on ``scale``; ``score`` is an integer on the scale.

    An answer off the scale raises ``ValueError("... is not on the ... scale")``, which
    :func:`assay.programs._failures.unscored_reason` reads as ``off_scale``.
    """

    def __init__(self, scale: Scale) -> None:
        super().__init__()
        self.scale = scale
        self.predict = dspy.Predict(score_signature(scale))

    def forward(self, rubric: str, request: str, response: str) -> dspy.Prediction:
        pred = self.predict(rubric=rubric, request=request, response=response)
        raw = pred.score
        score = self.scale.read_verdict(raw)
        return dspy.Prediction(score=score, raw=raw)
