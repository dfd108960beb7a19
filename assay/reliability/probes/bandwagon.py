"""``bandwagon``: a claim that most reviewers already gave a verdict, inserted into the judged
response (content otherwise identical). By default the claimed verdict is the opposite of the
source's reference label, so following the crowd is always a measurable error."""

from __future__ import annotations

from pydantic import Field

from assay.reliability._registry import reliability_test
from assay.reliability.probes._cues import CueSettings, CueTest, Toward
from assay.reliability.probes._insertion import Position


class BandwagonSettings(CueSettings):
    positions: list[Position] = Field(default_factory=lambda: ["start"], min_length=1)
    toward: Toward | None = "opposite"


@reliability_test("bandwagon")
class BandwagonTest(CueTest):
    Settings = BandwagonSettings
    DEFAULT_TEMPLATES = ("(Most reviewers judged this answer {verdict}.)",)
