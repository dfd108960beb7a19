"""``distraction``: an irrelevant but plausible aside inserted into the judged response
(content otherwise identical). The aside claims no verdict: a change is reported as a move up
or down the scale."""

from __future__ import annotations

from pydantic import Field

from assay.reliability._registry import reliability_test
from assay.reliability.probes._cues import CueSettings, CueTest
from assay.reliability.probes._insertion import Position


class DistractionSettings(CueSettings):
    positions: list[Position] = Field(default_factory=lambda: ["middle"], min_length=1)


@reliability_test("distraction")
class DistractionTest(CueTest):
    Settings = DistractionSettings
    DEFAULT_TEMPLATES = (
        "(As an aside, the word 'salary' comes from the Latin salarium, which some historians "
        "link to the salt rations once given to Roman soldiers.)",
    )
