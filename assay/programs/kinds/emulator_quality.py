"""``task: emulator_quality`` — is a ToolEmu emulation realistic enough to trust its failures?"""

from __future__ import annotations

from typing import Any

from assay.programs.kinds._base import JudgeKind, judge_kind
from assay.programs.kinds._settings import JudgeSettings
from assay.programs.kinds._toolemu_inputs import common_inputs
from assay.scale import Scale
from assay.signatures import EmulationQuality
from assay.types import Item

EMULATOR_QUALITY = Scale(
    kind="categorical", labels=["no_issues", "minor_issues", "critical_issues"]
)


@judge_kind("emulator_quality")
class EmulatorQualityKind(JudgeKind):
    signature = EmulationQuality
    reasoning_field = "explanation"
    judged_field = "scratchpad"
    fixed_scale = EMULATOR_QUALITY

    @classmethod
    def inputs(cls, config: JudgeSettings, item: Item) -> dict[str, Any]:
        return common_inputs(item)
