"""``scale_granularity``: the judge's rubric answered on a coarser and a finer scale, each verdict
mapped back onto the judge's scale: per granularity, the agreement with the reference (the
metrics ``assay evaluate`` reports, with their intervals), the verdicts as answered and mapped
back, and how often the mapped verdict differs from the judge's own source verdict."""

from __future__ import annotations

from typing import Any

from assay.reliability._probe import Probe
from assay.reliability._results import AskedScores
from assay.reliability.scoring._asked import (
    ORIGINAL,
    SHORT,
    agreement_cell,
    main_agreement,
    ways_asked,
    ways_table,
)
from assay.reliability.scoring._kind import (
    ScoringInput,
    ScoringKind,
    ScoringMetrics,
    SectionRow,
    scoring_kind,
)
from assay.report import Table
from assay.scale import Scale


class ScaleGranularityMetrics(ScoringMetrics):
    source_unscored: int
    # the judge's own scale on the same sources (``original``), then each granularity
    granularities: dict[str, AskedScores]


@scoring_kind("scale_granularity")
class ScaleGranularity(ScoringKind):
    Metrics = ScaleGranularityMetrics
    order = 44
    tracked = ("granularities",)

    def score(self, scored: list[Probe], inp: ScoringInput) -> ScaleGranularityMetrics:
        rows, source_unscored = inp.with_own(scored)

        def back(verdict: int, probe: Probe) -> int:
            return self.as_asked(verdict, probe, inp.scale)

        ways = ways_asked(scored, inp, self.cue_cell, back)
        ways[ORIGINAL].points = inp.scale.k
        for name, p in {self.cue_cell(p): p for p in scored}.items():
            ways[name].points = p.meta["points"]
            ways[name].maps_back = p.meta["maps_back"]
        return ScaleGranularityMetrics(
            source_unscored=source_unscored,
            pass_rate=self.pass_rate(scored, inp),  # every scored probe, as the agreements
            consistency=inp.mean_of(rows, lambda r: back(r[1], r[0]) == r[2]),
            granularities=ways,
        )

    def cue_cell(self, probe: Probe) -> str:
        return f"{probe.meta['points']}-point"

    def as_asked(self, verdict: int, probe: Probe | None, scale: Scale) -> int:
        """The verdict on the probe's scale mapped back onto the judge's (the probe's
        ``maps_back``)."""
        assert probe is not None
        return probe.meta["maps_back"][str(verdict)]

    def headline(self, metrics: dict[str, Any]) -> list[str]:
        ways: dict[str, AskedScores] = metrics.get("granularities") or {}
        if not ways:
            return []
        metric = main_agreement(ways)  # type: ignore[arg-type]
        shown = [
            f"{'own ' if name == ORIGINAL else ''}{w.points}-point {agreement_cell(w, metric)}"
            for name, w in ways.items()
        ]
        return [f"{SHORT[metric]} " + " · ".join(shown)]

    def section(self, rows: list[SectionRow]) -> Table | None:
        def scale(name: str, w: AskedScores, m: dict[str, Any]) -> list[str]:
            if name == ORIGINAL:
                return [f"the judge's ({w.points} points)", "—"]
            return [f"1-{w.points}", ", ".join(f"{a}→{b}" for a, b in (w.maps_back or {}).items())]

        return ways_table(
            "Scale granularity (the judge's rubric on a coarser and a finer scale, mapped back)",
            rows,
            "granularities",
            (["scale", "mapped to the judge's"], scale),
            note="A point of the asked scale maps back to the judge's score at the same "
            "position, end to end, rounded to the nearest.",
            quotes=[],
        )
