"""``format_intraline``: runs of extra spaces between words (deterministic, no LLM)."""

from __future__ import annotations

import random

from pydantic import Field, model_validator

from assay.reliability._registry import reliability_test
from assay.reliability.probes._whitespace import (
    FormatSettings,
    FormatTest,
    add_intraline_space,
)
from assay.types import StrictInt


class IntralineSettings(FormatSettings):
    min_run: StrictInt = Field(
        default=2, ge=2, le=100, description="shortest widened gap, in spaces"
    )
    max_run: StrictInt = Field(
        default=6, ge=2, le=100, description="longest widened gap, in spaces (at most 100)"
    )
    rate: float = Field(default=0.3, gt=0.0, le=1.0, description="share of word gaps widened")

    @model_validator(mode="after")
    def _check_runs(self) -> IntralineSettings:
        if self.max_run < self.min_run:
            raise ValueError("max_run must be >= min_run")
        return self


@reliability_test("format_intraline")
class FormatIntraline(FormatTest):
    """A reliable judge gives the same verdict when spaces between words are widened."""

    Settings = IntralineSettings
    settings: IntralineSettings

    def perturb(self, text: str, rng: random.Random) -> str:
        s = self.settings
        return add_intraline_space(text, rng, min_run=s.min_run, max_run=s.max_run, rate=s.rate)
