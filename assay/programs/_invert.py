"""The DSPy program of the ``polarity`` test: it writes a grading task's inverted question once
per rubric (its validator is a :class:`ProbeValidator` over ``CheckInversion``)."""

from __future__ import annotations

import dspy

from assay.signatures import InvertTask


class TaskInverter(dspy.Module):
    """Rewrites an instruction and rubric to ask the opposite question; returns
    ``instruction`` and ``rubric`` (stripped)."""

    def __init__(self) -> None:
        super().__init__()
        self.invert = dspy.Predict(InvertTask)

    @property
    def instruction(self) -> str:
        return self.invert.signature.instructions

    def forward(self, instruction: str, rubric: str, verdicts: str) -> dspy.Prediction:
        pred = self.invert(instruction=instruction, rubric=rubric, verdicts=verdicts)
        return dspy.Prediction(
            instruction=str(pred.get("inverted_instruction") or "").strip(),
            rubric=str(pred.get("inverted_rubric") or "").strip(),
        )
