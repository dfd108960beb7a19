"""``agent_positives``: agent transcripts that satisfy a rubric criterion (for an ordinal
criterion, its highest level by default) — the untouched transcript when the verifier confirms
it already does, otherwise one edited until it does.

With ``pass_required: true`` (the default) only probes the verifier confirms are kept; with
``false`` an edited transcript the verifier rejects is kept too, its target set by construction
and the rejection recorded with it.
"""

from __future__ import annotations

from pydantic import Field

from assay.programs import Criterion
from assay.reliability._registry import reliability_test
from assay.reliability.probes._agent import AgentSettings, AgentTest


class PositivesSettings(AgentSettings):
    pass_required: bool = Field(
        default=True, description="keep only probes the verifier confirms as passing"
    )
    untouched: bool = Field(
        default=True,
        description="keep the unedited transcript when the verifier confirms it passes",
    )


@reliability_test("agent_positives")
class AgentPositives(AgentTest):
    objective_kind = "pass"
    Settings = PositivesSettings

    @property
    def try_untouched(self) -> bool:  # type: ignore[override]
        return self.settings.untouched  # type: ignore[attr-defined]

    def keep_rejected(self) -> bool:
        return not self.settings.pass_required  # type: ignore[attr-defined]

    def default_targets(self, criterion: Criterion) -> list[int]:
        return criterion.scores[-1:]
