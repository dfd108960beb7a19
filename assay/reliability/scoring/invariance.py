"""``invariance``: a reliable judge's verdict does not move. Pass = the verdict equals the
probe's target; consistency = it equals the judge's own verdict on the source."""

from __future__ import annotations

from assay.reliability._probe import Probe
from assay.reliability.scoring._kind import (
    ScoringInput,
    ScoringKind,
    ScoringMetrics,
    scoring_kind,
    toward,
)


class TargetMetrics(ScoringMetrics):
    source_unscored: int  # probes whose source the judge left unscored (no consistency)


@scoring_kind("invariance")
class Invariance(ScoringKind):
    Metrics = TargetMetrics
    # consistency: the verdict moved from the own source verdict toward the probe's target
    # (``flip``: on an ordinal scale closer to it — a step the other way is no flip) or equals it
    moves: bool = False

    def score(self, scored: list[Probe], inp: ScoringInput) -> TargetMetrics:
        consistent, consistent_sources = [], []
        source_unscored = 0
        for p in scored:
            own = inp.source_verdicts.get(p.source_id)
            if own is None:
                source_unscored += 1
                continue
            verdict = inp.score(p)
            if self.moves and p.target is not None:  # moved toward the target, not anywhere
                consistent.append(toward(verdict, own, p.target, inp.scale))
            else:
                consistent.append((verdict != own) if self.moves else (verdict == own))
            consistent_sources.append(p.source_id)
        # several probes of one source are not independent: the bootstrap resamples sources
        return TargetMetrics(
            pass_rate=self.pass_rate(scored, inp),
            consistency=inp.mean(consistent, consistent_sources),
            source_unscored=source_unscored,
        )
