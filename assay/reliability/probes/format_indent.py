"""``format_indent``: leading tabs/spaces on lines (deterministic, no LLM)."""

from __future__ import annotations

import random
from typing import Literal

from pydantic import Field

from assay.reliability._registry import reliability_test
from assay.reliability.probes._whitespace import (
    FormatSettings,
    FormatTest,
    add_indentation,
)
from assay.types import StrictInt


class IndentSettings(FormatSettings):
    indent: Literal["tabs", "spaces", "mixed"] = "mixed"
    max_depth: StrictInt = Field(
        default=3, ge=1, le=10, description="an indented line gets 1..max_depth levels (at most 10)"
    )


@reliability_test("format_indent")
class FormatIndent(FormatTest):
    """A reliable judge gives the same verdict when lines of the response are indented."""

    Settings = IndentSettings
    settings: IndentSettings

    def perturb(self, text: str, rng: random.Random) -> str:
        s = self.settings
        return add_indentation(text, rng, indent=s.indent, max_depth=s.max_depth)
