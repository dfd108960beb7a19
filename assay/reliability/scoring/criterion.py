"""``criterion``: agent probes, each made for one rubric criterion (``meta['criterion']``),
scored on the judge's verdict for that criterion: pass = the target; consistency (defined where
the judge's own verdict on the unperturbed transcript is not already the target, and the probe
is not that transcript untouched) = the verdict moved toward the target. Per criterion too;
ordinal targets also exact / within one / MAE per target score. CIs resample source items (a
source's probes come along). Its tables are the per-judge "per rubric criterion" ones."""

from __future__ import annotations

from typing import Any

from assay.reliability._probe import Probe, criterion_verdict
from assay.reliability._results import CriterionScores, TargetScores
from assay.reliability.scoring._kind import (
    ScoringInput,
    ScoringKind,
    ScoringMetrics,
    scoring_kind,
)


class CriterionMetrics(ScoringMetrics):
    consistency_undefined: int  # already at the target, or the untouched transcript
    source_unscored: int
    criteria: dict[str, CriterionScores]
    by_target: dict[str, TargetScores] | None = None  # ordinal criteria only


@scoring_kind("criterion")
class Criterion(ScoringKind):
    Metrics = CriterionMetrics
    tracked = ("criteria", "by_target")  # per rubric criterion; ordinal: per target score

    def score(self, scored: list[Probe], inp: ScoringInput) -> CriterionMetrics:
        rows = []
        source_unscored = 0
        for p in scored:
            c = p.meta.get("criterion")
            v = criterion_verdict(p, inp.verdicts[p.id])
            per_source = inp.source_criteria.get(p.source_id) or {}
            own = per_source.get(c) if c in per_source else inp.source_verdicts.get(p.source_id)
            if v is None or p.target is None:
                continue
            source_unscored += own is None
            # an untouched probe is the source itself: its verdict cannot move
            undefined = own is None or own == p.target or p.meta.get("untouched")
            moved = None if undefined else abs(v - p.target) < abs(own - p.target)
            rows.append((p, c, v, moved))

        def block(sub) -> dict[str, Any]:
            passes = [float(v == p.target) for p, _, v, _ in sub]
            moved = [(float(m), p.source_id) for p, _, _, m in sub if m is not None]
            return {
                "pass_rate": inp.mean(passes, [p.source_id for p, *_ in sub]),
                "consistency": inp.mean([m for m, _ in moved], [s for _, s in moved]),
                "consistency_undefined": len(sub) - len(moved),
            }

        out: dict[str, Any] = {**block(rows), "source_unscored": source_unscored}
        out["criteria"] = {
            c: CriterionScores(probes=len(sub), **block(sub))
            for c in sorted({c for _, c, _, _ in rows if c})
            for sub in [[r for r in rows if r[1] == c]]
        }
        ordinal = [r for r in rows if r[0].meta.get("objective") == "score"]
        if ordinal:
            out["by_target"] = {}
            for t in sorted({p.target for p, *_ in ordinal}):
                sub = [r for r in ordinal if r[0].target == t]
                sources = [p.source_id for p, *_ in sub]
                err = [abs(v - t) for _, _, v, _ in sub]
                out["by_target"][str(t)] = TargetScores(
                    probes=len(sub),
                    exact=inp.mean([float(e == 0) for e in err], sources),
                    within_one=inp.mean([float(e <= 1) for e in err], sources),
                    mae=inp.mean([float(e) for e in err], sources),
                )
        return CriterionMetrics(**out)
