"""Score probe verdicts per test and judge (SPEC §4): accuracy against the probe's target and
consistency with the same judge's verdict on the unperturbed source, each with a bootstrap CI."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import numpy as np

from assay.experiments.reliability._bias_scoring import samples_needed, score_bias
from assay.experiments.reliability._probe import Probe
from assay.experiments.reliability._results import ReliabilityScores
from assay.metrics import MetricValue, agreement_metrics, cluster_mean, rate
from assay.scale import Scale
from assay.types import Judgment


def score_test(
    scoring: str,
    probes: list[Probe],
    verdicts: dict[str, Judgment],
    source_verdicts: dict[str, int | None],
    scale: Scale,
    *,
    source_criteria: dict[str, dict[str, int | None]] | None = None,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> ReliabilityScores:
    """Metrics of one test for one judge. ``verdicts`` maps probe id → judgment,
    ``source_verdicts`` maps source id → the judge's score on the source (None = unscored),
    ``source_criteria`` source id → its per-criterion scores (transcript judges)."""
    return ReliabilityScores.model_validate(
        _scores(
            scoring,
            probes,
            verdicts,
            source_verdicts,
            scale,
            source_criteria,
            boot=dict(n_resamples=n_resamples, confidence=confidence, seed=seed),
        )
    )


def _scores(
    scoring, probes, verdicts, source_verdicts, scale, source_criteria, boot
) -> dict[str, Any]:
    """The envelope every scoring kind reports, then what ``scoring`` adds."""
    judged = [p for p in probes if p.id in verdicts]
    unscored = Counter(verdicts[p.id].unscored for p in judged if verdicts[p.id].score is None)
    scored = [p for p in judged if verdicts[p.id].score is not None]
    out: dict[str, Any] = {
        "probes": len(probes),
        "judged": len(judged),
        "unscored": sum(unscored.values()),
        "unscored_reasons": dict(unscored),
    }
    if scoring == "stability":
        return {**out, **_stability(scored, verdicts, source_verdicts, boot)}
    if scoring == "ordinal":
        return {**out, **_ordinal(scored, verdicts, scale, boot)}
    if scoring in ("position", "injection", "cue", "polarity"):
        return {**out, **score_bias(scoring, scored, verdicts, source_verdicts, scale, boot)}
    if scoring == "criterion":
        return {**out, **_criterion(scored, verdicts, source_verdicts, source_criteria, boot)}
    with_target = [p for p in scored if p.target is not None]
    passes = [verdicts[p.id].score == p.target for p in with_target]
    consistent, consistent_sources = [], []
    source_unscored = 0
    for p in scored:
        own = source_verdicts.get(p.source_id)
        if own is None:
            source_unscored += 1
            continue
        same = verdicts[p.id].score == own
        consistent.append(not same if scoring == "flip" else same)
        consistent_sources.append(p.source_id)
    # several probes of one source are not independent: the bootstrap resamples source items
    out["pass_rate"] = _clustered(passes, [p.source_id for p in with_target], boot)
    out["consistency"] = _clustered(consistent, consistent_sources, boot)
    out["source_unscored"] = source_unscored
    return out


def _clustered(values: list[bool], sources: list[str], boot: dict) -> MetricValue | None:
    """The share of ``values`` that are true, with a CI that resamples source items (all of a
    drawn source's probes come along); None when there is nothing to rate."""
    if not values:
        return None
    return cluster_mean([float(v) for v in values], sources, **boot)


def _stability(scored, verdicts, source_verdicts, boot) -> dict[str, Any]:
    by_source: dict[str, list] = defaultdict(list)
    targets: dict[str, int | None] = {}
    for p in scored:
        by_source[p.source_id].append(verdicts[p.id].score)
        targets[p.source_id] = p.target
    stable, majority_right, agree_with_source, flips = [], [], [], []
    for sid, scores in by_source.items():
        counts = Counter(scores)
        stable.append(len(counts) == 1)
        flips.append(1.0 - counts.most_common(1)[0][1] / len(scores))
        top = counts.most_common()
        if targets[sid] is not None and (len(top) == 1 or top[0][1] > top[1][1]):
            majority_right.append(top[0][0] == targets[sid])
        own = source_verdicts.get(sid)
        if own is not None:
            agree_with_source.extend(s == own for s in scores)
    return {
        "items": len(by_source),
        "pass_rate": rate(stable, **boot),  # share of items whose k verdicts all agree
        "flip_rate": float(np.mean(flips)) if flips else None,  # mean share of minority verdicts
        "majority_accuracy": rate(majority_right, **boot),
        "consistency": rate(agree_with_source, **boot),
        **samples_needed(by_source, boot),
    }


def _ordinal(scored, verdicts, scale: Scale, boot) -> dict[str, Any]:
    with_target = [p for p in scored if p.target is not None]
    if not with_target:
        return {"pass_rate": None, "consistency": None}
    ref = np.array([scale.index(p.target) for p in with_target])
    cand = np.array([scale.index(verdicts[p.id].score) for p in with_target])
    m = agreement_metrics(ref, cand, kind="ordinal", k=scale.k, **boot)
    metrics = {
        k: v
        for k, v in m.items()
        if k in ("accuracy", "ccc", "pearson", "spearman", "mae", "kappa_quadratic")
    }
    return {"pass_rate": metrics.pop("accuracy"), "consistency": None, **metrics}


def _criterion(scored, verdicts, source_verdicts, source_criteria, boot) -> dict[str, Any]:
    """Agent probes, each made for one rubric criterion (``meta['criterion']``), scored on the
    judge's verdict for that criterion: pass = the target; consistency (defined where the
    judge's own verdict on the unperturbed transcript is not already the target, and the probe
    is not that transcript untouched) = the verdict moved toward the target. Per criterion too; ordinal targets also exact / within one / MAE
    per target score. CIs resample source items (a source's probes come along)."""
    rows = []
    source_unscored = 0
    for p in scored:
        c = p.meta.get("criterion")
        j = verdicts[p.id]
        v = (j.criteria or {}).get(c, j.score) if c else j.score
        per_source = (source_criteria or {}).get(p.source_id) or {}
        own = per_source.get(c) if c in per_source else source_verdicts.get(p.source_id)
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
            "pass_rate": _cluster(passes, [p.source_id for p, *_ in sub], boot),
            "consistency": _cluster([m for m, _ in moved], [s for _, s in moved], boot),
            "consistency_undefined": len(sub) - len(moved),
        }

    out = {**block(rows), "source_unscored": source_unscored}
    out["criteria"] = {
        c: {"probes": len(sub), **block(sub)}
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
            out["by_target"][str(t)] = {
                "probes": len(sub),
                "exact": _cluster([float(e == 0) for e in err], sources, boot),
                "within_one": _cluster([float(e <= 1) for e in err], sources, boot),
                "mae": _cluster([float(e) for e in err], sources, boot),
            }
    return out


def _cluster(values: list[float], sources: list[str], boot) -> MetricValue | None:
    if not values:
        return None
    return cluster_mean(values, sources, **boot)
