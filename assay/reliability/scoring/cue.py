"""``cue``: a cue (authority, bandwagon, distraction) added, the content unchanged; the measure is
consistency with the judge's own source verdict, and whether a change went toward the cue. Those
figures need the source verdict: a probe whose source the judge left unscored is left out of them
and counted (``source_unscored``). The pass rate (the verdict is the probe's target, the source's
reference) needs none and counts every scored probe."""

from __future__ import annotations

from assay.metrics import MetricValue
from assay.reliability._probe import Probe
from assay.reliability.scoring._kind import (
    ScoringInput,
    ScoringKind,
    ScoringMetrics,
    SectionRow,
    cell,
    ordered,
    scoring_kind,
    source_unscored_note,
    toward,
)
from assay.report import Table
from assay.scale import Scale


class CueMetrics(ScoringMetrics):
    source_unscored: int
    changed: MetricValue | None
    toward_cue: MetricValue | None
    away_from_cue: MetricValue | None
    # ordered scales only
    moved_up: MetricValue | None = None
    moved_down: MetricValue | None = None


@scoring_kind("cue")
class Cue(ScoringKind):
    Metrics = CueMetrics
    order = 30
    headlines = (("toward_cue", "toward cue"), ("away_from_cue", "away"))
    tracked = ("changed", "toward_cue", "away_from_cue", "moved_up", "moved_down")

    def score(self, scored: list[Probe], inp: ScoringInput) -> CueMetrics:
        rows, source_unscored = inp.with_own(scored)
        scale = inp.scale
        directed = [r for r in rows if r[0].meta.get("cue_verdict") is not None]
        out = CueMetrics(
            source_unscored=source_unscored,
            pass_rate=self.pass_rate(scored, inp),
            consistency=inp.mean_of(rows, lambda r: r[1] == r[2]),
            changed=inp.mean_of(rows, lambda r: r[1] != r[2]),
            toward_cue=inp.mean_of(
                directed, lambda r: toward(r[1], r[2], r[0].meta["cue_verdict"], scale)
            ),
            away_from_cue=inp.mean_of(
                directed,
                lambda r: r[1] != r[2] and not toward(r[1], r[2], r[0].meta["cue_verdict"], scale),
            ),
        )
        if ordered(scale):
            out.moved_up = inp.mean_of(rows, lambda r: r[1] > r[2])
            out.moved_down = inp.mean_of(rows, lambda r: r[1] < r[2])
        return out

    def cue_toward(self, probe: Probe, scale: Scale) -> int | None:
        return probe.meta.get("cue_verdict")

    def section(self, rows: list[SectionRow]) -> Table | None:
        if not rows:
            return None
        return Table(
            "Cues (content unchanged; the measure is consistency with the own source verdict)",
            [
                "test",
                "judge",
                "consistency",
                "changed",
                "toward the cue",
                "away from it",
                "moved up",
                "moved down",
            ],
            [
                [t, n]
                + [
                    cell(m.get(k))
                    for k in ("consistency", "changed", "toward_cue", "away_from_cue")
                    + ("moved_up", "moved_down")
                ]
                for t, n, m in rows
            ],
            note=source_unscored_note(rows),
        )
