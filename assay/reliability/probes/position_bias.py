"""``position_bias`` (pairwise judges): every pair judged in both orders.

A pairwise judge sees each source pair in its seeded presentation order (A first or B first);
the probe is the same pair shown in the other order (``meta["order"]``), so each pair costs
exactly three judge calls — the source judgment, the probe and its placebo (the pair again in
its own order, the LM cache bypassed) — and no generation or validation call. Verdicts are on the canonical labels (the judge maps what it was shown back), so a
position-blind judge gives the same verdict twice.

Reported per judge, the pair being the resampling unit: the flip rate (pairs with a decisive
verdict in both orders whose winner changes on the swap), the first-position preference rate
(decisive verdicts that chose the response shown first), the share of consistent pairs (same
verdict in both orders, ties included), and accuracy with A shown first, with B shown first and
order-averaged (the pass rate).
"""

from __future__ import annotations

from typing import Any

from assay.errors import ConfigError
from assay.programs import is_pairwise, presentation_order
from assay.reliability._probe import Dropped, Probe
from assay.reliability._registry import (
    GenerationContext,
    ReliabilityTest,
    Unit,
    reliability_test,
)
from assay.scale import Scale
from assay.types import Item

_OTHER = {"AB": "BA", "BA": "AB"}


@reliability_test("position_bias")
class PositionBiasTest(ReliabilityTest):
    scoring = "position"
    uses_llm = False
    needs_labels = False  # accuracy is reported where pairs have a reference preference

    def check(self, items: list[Item], scale: Scale) -> None:
        super().check(items, scale)
        if not is_pairwise(scale):
            raise ConfigError(
                f"tests.position_bias: needs pairwise judges (task: pairwise) and the pairwise "
                f"scale (categorical A|B|tie), not {scale.describe()}"
            )
        unpaired = [it.id for it in items if not isinstance(it.meta.get("response_b"), str)]
        if unpaired:
            raise ConfigError(
                f"tests.position_bias: {len(unpaired)} seed items are not pairs (no "
                f"response_b), e.g. '{unpaired[0]}'; build pairs with data.pairs"
            )

    def check_judges(self, judges: list[Any]) -> None:
        for j in judges:
            if j.task != "pairwise":
                raise ConfigError(
                    f"tests.position_bias: judge '{j.name}' is not pairwise (task: {j.task}); "
                    "position bias needs task: pairwise"
                )

    def generate(self, unit: Unit, ctx: GenerationContext) -> list[Probe | Dropped]:
        src = unit.sources[0]
        shown = presentation_order(src)
        other = _OTHER[shown]
        return [
            Probe.from_source(
                self.name,
                src,
                other,
                transcript=None,  # a pair is judged on its two responses
                meta={"order": other, "source_order": shown},
            ),
            # the pair again in its own order: how often the verdict moves with nothing swapped
            Probe.placebo_of(
                self.name, src, transcript=None, meta={"order": shown, "source_order": shown}
            ),
        ]
