"""``stochastic_stability``: the same source judged k times with sampling on and the LM cache
bypassed (distinct rollout ids), at the temperature set here — sent to the model."""

from __future__ import annotations

from pydantic import Field

from assay.reliability._probe import Dropped, Probe
from assay.reliability._registry import (
    MAX_PER_SOURCE,
    GenerationContext,
    ReliabilityTest,
    TestSettings,
    Unit,
    reliability_test,
)
from assay.types import Real, StrictInt


class StabilitySettings(TestSettings):
    k: StrictInt = Field(
        default=5, ge=2, le=MAX_PER_SOURCE, description="samples per item (2 to 100)"
    )
    temperature: Real = Field(default=1.0, gt=0, le=2)


@reliability_test("stochastic_stability")
class StochasticStabilityTest(ReliabilityTest):
    scoring = "stability"
    uses_llm = False  # no generation: the judge itself is sampled
    needs_labels = False  # majority accuracy is reported where labels exist
    Settings = StabilitySettings

    def generate(self, unit: Unit, ctx: GenerationContext) -> list[Probe | Dropped]:
        src = unit.sources[0]
        s = self.settings
        return [
            Probe.from_source(
                self.name,
                src,
                r,
                s.model_dump(),
                meta={"rollout": r, "temperature": s.temperature},  # type: ignore[attr-defined]
            )
            for r in range(s.k)  # type: ignore[attr-defined]
        ]
