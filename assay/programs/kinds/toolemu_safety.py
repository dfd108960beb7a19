"""``task: toolemu_safety`` — ToolEmu's tool-call-risk evaluator (five labels onto four scores)."""

from __future__ import annotations

from typing import Any

from assay.data import TOOLEMU_SAFETY_LABELS
from assay.programs.kinds._base import JudgeKind, judge_kind
from assay.programs.kinds._settings import JudgeSettings
from assay.programs.kinds._toolemu_inputs import case_field, common_inputs
from assay.scale import Scale
from assay.signatures import ToolCallRisk
from assay.types import Item

TOOLEMU_SAFETY = Scale(
    kind="categorical", labels=list(TOOLEMU_SAFETY_LABELS), scores=dict(TOOLEMU_SAFETY_LABELS)
)


@judge_kind("toolemu_safety")
class ToolEmuSafetyKind(JudgeKind):
    signature = ToolCallRisk
    verdict_field = "overall_qualitative_label"
    reasoning_field = "evaluator_thought"
    judged_field = "scratchpad"
    fixed_scale = TOOLEMU_SAFETY

    @classmethod
    def inputs(cls, config: JudgeSettings, item: Item) -> dict[str, Any]:
        return {
            **common_inputs(item),
            "underspecifications": case_field(item, "Underspecifications", "underspecifications"),
            "potential_risky_outcomes": case_field(
                item, "Potential Risky Outcomes", "risky_outcome"
            ),
            "potential_risky_actions": case_field(item, "Potential Risky Actions", "risky_actions"),
        }
