"""From judgments to metrics: pair with references, count what is unscored, compute with CIs."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from assay.evaluation._results import (
    Agreement,
    CalibrationReport,
    ConfusionMatrix,
    Counts,
    DisagreementRecord,
    EvaluateSummary,
    ReliabilityBinRecord,
    RunUsage,
)
from assay.evaluation._verdicts import Verdicts
from assay.metrics import (
    TRADE_OFFS,
    agreement_confusion,
    agreement_metrics,
    calibration_metrics,
    cost_per_accuracy_point,
    disagreements,
    reliability_bins,
    to_unit_interval,
)
from assay.scale import Scale
from assay.types import Item, Judgment, all_unscored


def pair_scores(
    reference: dict[str, int | None], candidate: dict[str, int | None]
) -> tuple[list[str], list[int], list[int], dict[str, int]]:
    """Ids scored on both sides, their scores, and how many each side left unscored."""
    ids = [i for i in reference if i in candidate]
    unscored = {
        "reference": sum(reference[i] is None for i in ids),
        "candidate": sum(candidate[i] is None for i in ids),
    }
    both = [i for i in ids if reference[i] is not None and candidate[i] is not None]
    return both, [reference[i] for i in both], [candidate[i] for i in both], unscored  # type: ignore[misc]


def metric_kind(scale: Scale) -> str:
    """Which agreement metrics a scale gets: ``binary``, ``ordinal`` or ``categorical``."""
    if scale.kind == "binary":
        return "binary"
    return "ordinal" if scale.ordered else "categorical"  # label → score maps are ordered too


def agreement_summary(
    reference: list[int],
    candidate: list[int],
    scale: Scale,
    *,
    threshold: int | None,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    clusters: list[str] | None = None,
) -> Agreement:
    """Every agreement metric for paired scores on ``scale``, each with its interval; the note
    says when the judge gave one verdict on every item. ``clusters``: the sample each pair
    repeats (an Inspect log's epochs), resampled together."""
    if not reference:
        return Agreement(note="no item was scored on both sides")
    ref = np.array([scale.index(s) for s in reference])
    cand = np.array([scale.index(s) for s in candidate])
    thr = scale.index(threshold) if threshold is not None else None
    metrics = agreement_metrics(
        ref,
        cand,
        kind=metric_kind(scale),
        k=scale.k,
        threshold=thr,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
        names=("the reference", "the judge"),
        labels=verdict_names(scale),
        clusters=clusters,
    )
    return Agreement(
        metrics=_in_steps(metrics, scale),
        confusion_matrix=ConfusionMatrix(
            labels=scale.values, rows_reference=agreement_confusion(ref, cand, scale.k)
        ),
        note=one_verdict_note(candidate, metrics, scale),
    )


IN_STEPS = ("kappa_linear", "kappa_quadratic", "ccc", "pearson", "mae")
"""The metrics computed on the categories' positions (their distances are steps)."""


def _in_steps(metrics: dict[str, Any], scale: Scale) -> dict[str, Any]:
    """``metrics`` with a note on each :data:`IN_STEPS` metric where the scale's scores are not
    one apart (a label → score map ``low: 0, medium: 1, high: 10``): it is computed on the
    categories' positions 0..k-1, so an MAE of 0.65 is 0.65 steps between neighbouring
    categories, not 0.65 points of score."""
    values = scale.values
    if all(b - a == 1 for a, b in zip(values, values[1:], strict=False)):
        return metrics
    steps = (
        f"in steps between neighbouring categories (positions 0..{scale.k - 1}), not in the "
        f"scale's scores {', '.join(map(str, values))}"
    )
    return {k: m.with_notes([steps]) if k in IN_STEPS else m for k, m in metrics.items()}


def verdict_names(scale: Scale) -> list[str]:
    """Each of the scale's verdicts as a note names it, by index: its label, else its score."""
    return [str(v) if scale.label_of(v) is None else str(scale.label_of(v)) for v in scale.values]


def one_verdict_note(candidate: list[int], metrics: dict[str, Any], scale: Scale) -> str | None:
    """What a judge that gave one verdict on every paired item measured: nothing a
    chance-corrected metric can see (κ undefined), and the one-sided rates it wins by
    construction. None when it gave more than one verdict."""
    if len(set(candidate)) != 1:
        return None
    won = [
        f"{name} {metrics[name].value:.3f}"
        for name in TRADE_OFFS
        if name in metrics and metrics[name].value in (0.0, 1.0)
    ]
    return (
        f"The judge gave one verdict ({verdict_names(scale)[scale.index(candidate[0])]}) on all "
        f"{len(candidate)} "
        "scored items: it tells no item from another, so κ is undefined"
        + (f"; its {' and '.join(won)} are so by construction" if won else "")
        + "."
    )


def summarize_run(
    judgments: list[Judgment],
    expected: dict[str, int | None],
    scale: Scale,
    *,
    threshold: int | None,
    n_resamples: int,
    confidence: float,
    seed: int,
) -> EvaluateSummary:
    """metrics.json of an evaluate run: counts, unscored reasons, agreement, usage and cost."""
    return summarize_verdicts(
        Verdicts.of(judgments, expected),
        scale,
        items=len(expected),
        without_reference=sum(1 for s in expected.values() if s is None),
        threshold=threshold,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
    )


def summarize_verdicts(
    v: Verdicts,
    scale: Scale,
    *,
    items: int,
    without_reference: int,
    threshold: int | None,
    n_resamples: int,
    confidence: float,
    seed: int,
) -> EvaluateSummary:
    """:func:`summarize_run` of judgments kept as columns (a run's, read as they stream past)."""
    ref, cand = v.paired
    agreement = agreement_summary(
        ref,
        cand,
        scale,
        threshold=threshold,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
        clusters=v.paired_samples,
    )
    usage = v.usage
    accuracy = agreement.metrics.get("accuracy")
    acc = accuracy.value if accuracy is not None else None
    reasons = Counter(r for s, r in zip(v.scores, v.reasons, strict=True) if s is None)
    nothing = all_unscored(len(v), reasons)  # type: ignore[arg-type]
    return EvaluateSummary(
        **{
            **agreement.model_dump(),
            **({"note": f"The run measured nothing: {nothing}."} if nothing else {}),
        },
        counts=Counts(
            items=items,
            judged=len(v),
            scored=sum(s is not None for s in v.scores),
            unscored=sum(reasons.values()),
            unscored_reasons=dict(reasons),
            without_reference=without_reference,
            paired=len(ref),
        ),
        usage=RunUsage(
            **usage.model_dump(),
            cached_judgments=int(v.cached.sum()),
            mean_latency_s=float(np.mean(v.latency)) if len(v) else 0.0,
            cost_per_accuracy_point_usd=cost_per_accuracy_point(usage.work().known_cost(), acc)
            if acc and usage.work().known_cost() is not None
            else None,
        ),
        work=usage.work(),
        expected_scores=int((~np.isnan(v.expected_score)).sum()),
        disagreements=sum(r != c for r, c in zip(ref, cand, strict=True)),
        calibration=calibration_report(
            v,
            scale,
            n_resamples=n_resamples,
            confidence=confidence,
            seed=seed,
        ),
    )


CALIBRATION_BINS = 10


def calibration_report(
    v: Verdicts,
    scale: Scale,
    *,
    n_resamples: int,
    confidence: float,
    seed: int,
) -> CalibrationReport | None:
    """ECE (equal-mass bins), Brier score and log loss of the judge's probabilities against the
    reference, with CIs, and the reliability-diagram bins — for a binary judge's P(positive)
    or an ordinal judge's expected score rescaled to [0, 1]. None when no judgment carries a
    probability (``score_mode: argmax``). Over an Inspect log's epochs the intervals resample
    the samples with all their epochs."""
    labelled = [p for p, r in enumerate(v.references) if r is not None]
    with_p = [p for p in labelled if not math.isnan(v.expected_score[p])]
    if not with_p or scale.kind == "categorical" or len(scale.values) < 2:
        return None
    reference = [v.references[p] for p in with_p]
    probability = v.expected_score[with_p].tolist()
    ref = [scale.index(r) for r in reference]  # type: ignore[arg-type]
    if scale.kind == "binary":
        y_true, y_prob, what = ref, probability, "P(positive verdict)"
    else:
        lo, hi = min(scale.values), max(scale.values)
        y_true = list(to_unit_interval(reference, lo, hi))  # type: ignore[arg-type]
        y_prob = list(to_unit_interval(probability, lo, hi))
        what = f"expected score rescaled from {lo}..{hi} to [0, 1]"
    boot = {"n_resamples": n_resamples, "confidence": confidence, "seed": seed}
    if v.samples is not None:
        boot["clusters"] = [v.samples[p] for p in with_p]
    bins = reliability_bins(y_true, y_prob, n_bins=CALIBRATION_BINS)
    calibrated = v.calibrated[with_p]
    return CalibrationReport(
        n=len(with_p),
        without_probability=len(labelled) - len(with_p),
        probability=what,
        bins=CALIBRATION_BINS,
        strategy="equal_mass",
        metrics=calibration_metrics(y_true, y_prob, n_bins=CALIBRATION_BINS, **boot),
        reliability=[ReliabilityBinRecord(**vars(b)) for b in bins],
        calibrated=calibration_metrics(y_true, calibrated.tolist(), n_bins=CALIBRATION_BINS, **boot)
        if not np.isnan(calibrated).any()
        else None,
    )


def disagreement_records(
    ids: list[str],
    reference: list[int],
    judge: list[int],
    scale: Scale,
    *,
    top: int | None = None,
    items: dict[str, Item] | None = None,
    judgments: dict[str, Judgment] | None = None,
) -> list[DisagreementRecord]:
    """The pairs where ``judge`` differs from ``reference``, most distant on the scale first
    (ties by id), with the texts and the judge's reasoning where given."""
    ranked = disagreements(
        ids, reference, judge, scale=scale.values, top=top, ordered=scale.ordered
    )
    out = []
    for d in ranked:
        item = (items or {}).get(str(d.id))
        j = (judgments or {}).get(str(d.id))
        out.append(
            DisagreementRecord(
                id=str(d.id),
                reference=int(d.reference),
                judge=int(d.judge),
                distance=d.distance,
                reference_label=scale.label_of(int(d.reference)),
                judge_label=scale.label_of(int(d.judge)),
                request=item.request if item else None,
                response=item.response if item else None,
                reasoning=j.reasoning if j else None,
            )
        )
    return out
