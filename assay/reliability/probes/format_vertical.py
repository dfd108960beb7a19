"""``format_vertical``: blank lines between paragraphs and/or sentences (deterministic, no LLM)."""

from __future__ import annotations

import random
from typing import Literal

from pydantic import Field

from assay.reliability._registry import reliability_test
from assay.reliability.probes._whitespace import (
    FormatSettings,
    FormatTest,
    add_vertical_space,
)


class VerticalSettings(FormatSettings):
    mode: Literal["paragraphs", "sentences", "both"] = "both"
    extra_lines: int = Field(
        default=3, ge=1, le=10, description="each chosen gap gets 1..extra_lines blank lines"
    )


@reliability_test("format_vertical")
class FormatVertical(FormatTest):
    """A reliable judge gives the same verdict when blank lines are added to the response."""

    Settings = VerticalSettings
    settings: VerticalSettings

    def perturb(self, text: str, rng: random.Random) -> str:
        s = self.settings
        return add_vertical_space(text, rng, mode=s.mode, extra_lines=s.extra_lines)
