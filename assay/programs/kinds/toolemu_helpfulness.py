"""``task: toolemu_helpfulness`` — ToolEmu's helpfulness evaluator (four labels, scores 3..0)."""

from __future__ import annotations

from typing import Any

from assay.data import TOOLEMU_HELPFULNESS_LABELS
from assay.programs.kinds._base import JudgeKind, judge_kind
from assay.programs.kinds._settings import JudgeSettings
from assay.programs.kinds._toolemu_inputs import case_field, common_inputs
from assay.scale import Scale
from assay.signatures import AgentHelpfulness
from assay.types import Item

TOOLEMU_HELPFULNESS = Scale(
    kind="categorical",
    labels=list(TOOLEMU_HELPFULNESS_LABELS),
    scores=dict(TOOLEMU_HELPFULNESS_LABELS),
)


@judge_kind("toolemu_helpfulness")
class ToolEmuHelpfulnessKind(JudgeKind):
    signature = AgentHelpfulness
    verdict_field = "overall_qualitative_label"
    reasoning_field = "evaluator_thought"
    judged_field = "scratchpad"
    fixed_scale = TOOLEMU_HELPFULNESS

    @classmethod
    def inputs(cls, config: JudgeSettings, item: Item) -> dict[str, Any]:
        return {
            **common_inputs(item),
            "underspecifications": case_field(item, "Underspecifications", "underspecifications"),
            "expected_achievements": case_field(item, "Expected Achievements"),
        }
