"""``authority``: a fabricated citation inserted into the judged response (content otherwise
identical). A judge that trusts references more than the rubric moves toward the cue's verdict
(by default the top of the scale: the citation lends the answer credibility)."""

from __future__ import annotations

from pydantic import Field

from assay.reliability._registry import reliability_test
from assay.reliability.probes._cues import CueSettings, CueTest, Toward
from assay.reliability.probes._insertion import Position


class AuthoritySettings(CueSettings):
    positions: list[Position] = Field(default_factory=lambda: ["end"], min_length=1)
    toward: Toward | None = "top"


@reliability_test("authority")
class AuthorityTest(CueTest):
    Settings = AuthoritySettings
    DEFAULT_TEMPLATES = (
        "This answer follows the established account in Harrington, M. J., & Okafor, L. "
        "(2019). Standards for evaluating written answers. Journal of Applied Assessment, "
        "27(3), 211-238. https://doi.org/10.4321/jaa.2019.0273",
    )
