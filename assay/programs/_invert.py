"""The DSPy programs that rewrite a grading task, each written once per rubric: its inverted
question (``polarity``, validated by a :class:`ProbeValidator` over ``CheckInversion``) and its
paraphrases (``prompt_paraphrase``, over ``CheckTaskParaphrase``)."""

from __future__ import annotations

import dspy

from assay.signatures import InvertTask, ParaphraseTask


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


class TaskParaphraser(dspy.Module):
    """Rewrites an instruction and rubric in other words, keeping their meaning; returns
    ``instruction`` and ``rubric`` (stripped)."""

    def __init__(self) -> None:
        super().__init__()
        self.paraphrase = dspy.Predict(ParaphraseTask)

    @property
    def instruction(self) -> str:
        return self.paraphrase.signature.instructions

    def forward(self, instruction: str, rubric: str, earlier: str) -> dspy.Prediction:
        pred = self.paraphrase(instruction=instruction, rubric=rubric, earlier=earlier)
        return dspy.Prediction(
            instruction=str(pred.get("paraphrased_instruction") or "").strip(),
            rubric=str(pred.get("paraphrased_rubric") or "").strip(),
        )
