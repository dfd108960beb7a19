"""``task: transcript`` — an agent transcript judged against a rubric list: each criterion
separately, the overall score the lowest (every criterion must be met)."""

from __future__ import annotations

from typing import Any

import dspy

from assay.data import render_transcript
from assay.errors import DataError, quoted
from assay.programs.kinds._base import JudgeKind, judge_kind
from assay.programs.kinds._settings import JudgeProgram, JudgeSettings
from assay.signatures import JudgeTranscript
from assay.types import Item


@judge_kind("transcript")
class TranscriptKind(JudgeKind):
    signature = JudgeTranscript
    judged_field = "transcript"
    scaled = True

    @classmethod
    def check(cls, config: JudgeSettings) -> None:
        if not config.criteria:
            raise ValueError("a transcript judge needs 'criteria' (a rubric list)")
        for c in config.criteria:  # ids are unique (JudgeConfig checks)
            off = [s for s in c.scores if s not in config.scale.values]
            if off:
                raise ValueError(
                    f"criteria '{c.id}': score_levels {off} are not on the judge's "
                    f"{config.scale.describe()} scale"
                )

    @classmethod
    def inputs(cls, config: JudgeSettings, item: Item) -> dict[str, Any]:
        if not item.transcript:
            raise DataError(
                f"item {quoted(item.id)}: a transcript judge needs items with a transcript, "
                "and this one has none (no messages)",
                field="transcript",
            )
        out: dict[str, Any] = {"transcript": render_transcript(item.transcript)}
        # a probe made for one criterion is judged on that criterion only (the others are
        # judged, call for call the same, on its source)
        only = item.meta.get("criterion")
        if isinstance(only, str) and any(c.id == only for c in config.criteria):
            out["criteria"] = [only]
        return out

    @classmethod
    def forward(cls, judge: JudgeProgram, inputs: dict[str, Any]) -> dspy.Prediction:
        per: dict[str, int] = {}
        reasons = []
        only = inputs.get("criteria")
        for criterion in judge.config.criteria:
            if only is not None and criterion.id not in only:
                continue
            pred = judge.predict(criterion=criterion.text(), transcript=inputs["transcript"])
            one = judge.prediction(pred)
            per[criterion.id] = one.score
            if one.reasoning:
                reasons.append(f"[{criterion.id}] {one.reasoning}")
        score = min(per.values())
        scale = judge.config.scale
        return dspy.Prediction(
            score=score,
            label=scale.label_of(score),
            reasoning="\n".join(reasons) or None,
            expected_score=None,
            criteria=per,
            outputs={"criteria": per},
        )
