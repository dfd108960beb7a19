"""``ordinal``: generated items per scale bucket, scored against their target like ratings:
exact match (the pass rate), CCC, Pearson, Spearman, MAE and quadratic kappa."""

from __future__ import annotations

from assay.metrics import MetricValue
from assay.reliability._probe import Probe
from assay.reliability.scoring._kind import (
    ScoringInput,
    ScoringKind,
    ScoringMetrics,
    scoring_kind,
)


class OrdinalMetrics(ScoringMetrics):
    # absent when no probe has a target
    ccc: MetricValue | None = None
    pearson: MetricValue | None = None
    spearman: MetricValue | None = None
    mae: MetricValue | None = None
    kappa_quadratic: MetricValue | None = None


@scoring_kind("ordinal")
class Ordinal(ScoringKind):
    Metrics = OrdinalMetrics
    tracked = ("ccc", "pearson", "spearman", "mae")

    def score(self, scored: list[Probe], inp: ScoringInput) -> OrdinalMetrics:
        import numpy as np  # on first scoring: printing a run's headlines loads every kind

        from assay.metrics import agreement_metrics

        with_target = [p for p in scored if p.target is not None]
        if not with_target:
            return OrdinalMetrics(pass_rate=None, consistency=None)
        scale = inp.scale
        ref = np.array([scale.index(p.target) for p in with_target])
        cand = np.array([scale.index(inp.score(p)) for p in with_target])
        clustered = inp.clustered([p.source_id for p in with_target])
        clusters = None if clustered is None else clustered[0]
        m = agreement_metrics(ref, cand, kind="ordinal", k=scale.k, clusters=clusters, **inp.boot)
        metrics = {
            k: v
            for k, v in m.items()
            if k in ("accuracy", "ccc", "pearson", "spearman", "mae", "kappa_quadratic")
        }
        return OrdinalMetrics(pass_rate=metrics.pop("accuracy"), consistency=None, **metrics)
