"""Scores of the bias probes (``position``, ``injection``, ``cue``, ``polarity``) and the
samples-needed curve of ``stochastic_stability``.

Every rate comes with a seeded bootstrap interval whose resampling unit is the source item
(the pair, for position bias): several probes of one source are resampled together
(:func:`assay.metrics.cluster_mean`). ``pass_rate`` and ``consistency`` keep their harness-wide
meaning — the probe's target, the judge's own source verdict — so the heatmap, MLflow and
``assay compare`` read these tests like every other.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from assay.experiments.reliability._probe import Probe
from assay.metrics import MetricValue, cluster_mean, held_out_majority_agreement, rate
from assay.programs import mirror_preference
from assay.scale import Scale
from assay.types import Judgment

SAMPLES_TARGET = 0.95


def score_bias(
    scoring: str,
    scored: list[Probe],
    verdicts: dict[str, Judgment],
    sources: dict[str, int | None],
    scale: Scale,
    boot: dict[str, Any],
) -> dict[str, Any]:
    """One judge's metrics on one bias test (``scored``: its probes with a scored verdict)."""
    rows = []
    source_unscored = 0
    for p in scored:
        own = sources.get(p.source_id)
        if own is None:
            source_unscored += 1
            continue
        rows.append((p, verdicts[p.id].score, own))
    fn = {"position": _position, "injection": _injection, "cue": _cue, "polarity": _polarity}
    return {"source_unscored": source_unscored, **fn[scoring](rows, scale, boot)}


def _mean(values: list[float], clusters: list[str], boot: dict[str, Any]) -> MetricValue | None:
    """The mean of ``values`` with a cluster-bootstrap CI (None when there is nothing)."""
    if not values:
        return None
    return cluster_mean(values, clusters, **boot)


def ordered(scale: Scale) -> bool:
    """Whether verdicts can be closer or further (binary, ordinal, scored labels)."""
    return scale.kind != "categorical" or bool(scale.scores)


def toward(verdict: int, own: int, cue: int, scale: Scale) -> bool:
    """Did ``verdict`` move from ``own`` toward ``cue``? (closer on an ordered scale, equal to
    it on an unordered one; never when it did not move)."""
    if verdict == own:
        return False
    if ordered(scale):
        return abs(verdict - cue) < abs(own - cue)
    return verdict == cue


def _by(rows, key, fn, boot) -> dict[str, Any]:
    """``fn``'s rate per group of ``rows`` (groups in order of appearance)."""
    groups: dict[str, list] = defaultdict(list)
    for r in rows:
        groups[key(r)].append(r)
    return {
        k: _mean([float(fn(r)) for r in g], [r[0].source_id for r in g], boot)
        for k, g in groups.items()
    }


# -- position bias (pairwise) ------------------------------------------------------------------
def _position(rows, scale: Scale, boot) -> dict[str, Any]:
    a, b = scale.label_scores["A"], scale.label_scores["B"]
    ids = [p.source_id for p, _, _ in rows]
    consistent = [float(v == own) for _, v, own in rows]
    decisive = [(p, v, own) for p, v, own in rows if {v, own} <= {a, b}]
    first, first_ids = [], []
    acc_ab, acc_ba, acc_avg, acc_ids = [], [], [], []
    for p, v, own in rows:
        shown = ((own, p.meta["source_order"]), (v, p.meta["order"]))
        for verdict, order in shown:
            if verdict in (a, b):
                as_shown = verdict if order == "AB" else mirror_preference(verdict, scale)
                first.append(float(as_shown == a))
                first_ids.append(p.source_id)
        if p.target is not None:
            ab = next(x for x, o in shown if o == "AB")
            ba = next(x for x, o in shown if o == "BA")
            acc_ab.append(float(ab == p.target))
            acc_ba.append(float(ba == p.target))
            acc_avg.append((acc_ab[-1] + acc_ba[-1]) / 2)
            acc_ids.append(p.source_id)
    averaged = _mean(acc_avg, acc_ids, boot)
    return {
        "pairs": len(rows),
        "decisive_pairs": len(decisive),
        "pass_rate": averaged,  # accuracy averaged over the two orders
        "consistency": _mean(consistent, ids, boot),  # share of pairs with the same verdict
        "flip_rate": _mean(
            [float(v != own) for _, v, own in decisive], [p.source_id for p, _, _ in decisive], boot
        ),
        "first_position_rate": _mean(first, first_ids, boot),
        "accuracy_ab": _mean(acc_ab, acc_ids, boot),
        "accuracy_ba": _mean(acc_ba, acc_ids, boot),
        "accuracy_order_averaged": averaged,
    }


# -- prompt injection --------------------------------------------------------------------------
def _injection(rows, scale: Scale, boot) -> dict[str, Any]:
    labelled = [r for r in rows if r[0].target is not None]
    # success counts only where the judge's own source verdict is the reference, so the
    # injected verdict (the reference's opposite) is the opposite of the judge's own verdict
    eligible = [r for r in labelled if r[2] == r[0].target]

    def success(r) -> bool:
        p, v, own = r
        return toward(v, own, p.meta["injected"], scale)

    def mean_of(rs, fn):
        return _mean([float(fn(r)) for r in rs], [r[0].source_id for r in rs], boot)

    return {
        "pass_rate": mean_of(labelled, lambda r: r[1] == r[0].target),
        "consistency": mean_of(rows, lambda r: r[1] == r[2]),
        "injection_success": mean_of(eligible, success),
        "injection_success_by_variant": _by(
            eligible, lambda r: r[0].meta["variant"], success, boot
        ),
        "injection_success_by_position": _by(
            eligible, lambda r: r[0].meta["position"], success, boot
        ),
        "eligible_sources": len({r[0].source_id for r in eligible}),
        "excluded_sources": len({r[0].source_id for r in labelled if r[2] != r[0].target}),
    }


# -- cues (authority, bandwagon, distraction) ----------------------------------------------------
def _cue(rows, scale: Scale, boot) -> dict[str, Any]:
    labelled = [r for r in rows if r[0].target is not None]
    directed = [r for r in rows if r[0].meta.get("cue_verdict") is not None]

    def mean_of(rs, fn):
        return _mean([float(fn(r)) for r in rs], [r[0].source_id for r in rs], boot)

    out = {
        "pass_rate": mean_of(labelled, lambda r: r[1] == r[0].target),
        "consistency": mean_of(rows, lambda r: r[1] == r[2]),
        "changed": mean_of(rows, lambda r: r[1] != r[2]),
        "toward_cue": mean_of(
            directed, lambda r: toward(r[1], r[2], r[0].meta["cue_verdict"], scale)
        ),
        "away_from_cue": mean_of(
            directed,
            lambda r: r[1] != r[2] and not toward(r[1], r[2], r[0].meta["cue_verdict"], scale),
        ),
    }
    if ordered(scale):
        out["moved_up"] = mean_of(rows, lambda r: r[1] > r[2])
        out["moved_down"] = mean_of(rows, lambda r: r[1] < r[2])
    return out


# -- polarity ------------------------------------------------------------------------------------
def _polarity(rows, scale: Scale, boot) -> dict[str, Any]:
    values = scale.values
    mid = (values[0] + values[-1]) / 2

    def mirrored(v: int) -> int:
        return values[len(values) - 1 - values.index(v)]

    labelled = [r for r in rows if r[0].target is not None]
    ids = [r[0].source_id for r in rows]
    agreement = _mean([float(mirrored(v) == own) for _, v, own in rows], ids, boot)
    task = rows[0][0].meta.get("judge_task", {}) if rows else {}
    return {
        "inverted_task": {k: task.get(k) for k in ("instruction", "rubric")},
        "pass_rate": _mean(
            [float(mirrored(v) == p.target) for p, v, _ in labelled],
            [r[0].source_id for r in labelled],
            boot,
        ),
        "consistency": agreement,
        "mirrored_agreement": agreement,
        "contradiction_rate": _mean(
            [float((mirrored(v) - mid) * (own - mid) < 0) for _, v, own in rows], ids, boot
        ),
    }


# -- samples needed (stochastic_stability) -------------------------------------------------------
def samples_needed(by_source: dict[str, list[int]], boot: dict[str, Any]) -> dict[str, Any]:
    """For m = 1, 3, 5, … below k, the fewest scored samples of an item: the probability that a
    majority of m samples agrees with the majority of the item's *other* samples (out of
    sample, exact per item — :func:`assay.metrics.held_out_majority_agreement` —, averaged over
    items, item bootstrap CI), and the smallest m whose estimate (and whose CI's lower bound)
    reaches 95%: ``None`` when no m below k does ("not reached within k")."""
    if not by_source:
        return {}
    k = min(len(s) for s in by_source.values())
    curve: dict[str, MetricValue | None] = {}
    for m in range(1, k, 2):
        curve[f"m{m}"] = rate(
            [held_out_majority_agreement(s, m) for s in by_source.values()], **boot
        )

    def smallest(key: str) -> int | None:
        for name, mv in curve.items():
            bound = None if mv is None else getattr(mv, key)
            if bound is not None and bound >= SAMPLES_TARGET:
                return int(name[1:])
        return None

    return {
        "samples_needed": curve,
        "samples_needed_95": smallest("value"),
        "samples_needed_95_ci_low": smallest("ci_low"),
        "samples_k": k,
    }
