"""How an ordinal judge uses the scale against the humans, as reported: scale compression
(central tendency) against the reference, and an item response model of the raters — the judge
and the humans — that tells a strict judge (high severity, good discrimination) from one that
cannot tell items apart (discrimination near 0), with each item's latent quality."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from assay.evaluation._results import ItemQualitySpread, RaterModelReport, ScaleUseReport
from assay.evaluation._scoring import metric_kind
from assay.metrics import ItemQuality, fmt, fmt_ci, fmt_level, metric_table
from assay.report import Table
from assay.scale import Scale

MIN_RATER_MODEL_ITEMS = 50
"""Fewest items scored by the judge and by a human for the rater model to be fitted. With three
raters and 50 items a discrimination of 1.5 is known to about ±1: wide, yet in simulations a
judge scoring at random was read so in 20 fits of 20 and a strict one in 17."""
MIN_RATERS = 3
"""Fewest raters (the judge and the humans) for the rater model. With the judge and one
reference only, a judge scoring at random and a reference scoring at random look alike (two
raters whose scores do not go together): the model cannot say which of the two fails to tell
items apart, and gives the items' quality to either."""
MAX_RATER_MODEL_ITEMS = 5000
"""Most items the rater model is fitted on (a seeded sample beyond): its fit holds a
quadrature grid per item, and intervals at this size are already narrower than the readings."""
HARDEST = 10
"""Items of the lowest latent quality the report lists."""


def scale_use_report(
    ids: Sequence[str],
    scores: Sequence[int | None],
    references: Sequence[int | None],
    scale: Scale,
    *,
    judge: str,
    annotations: Mapping[str, Mapping[str, int | None]] | None = None,
    samples: Sequence[str] | None = None,
    n_resamples: int,
    confidence: float,
    seed: int,
) -> ScaleUseReport | None:
    """Scale compression of the judge's ``scores`` against ``references`` (scale values, None
    where there is none) and the rater model of the judge with the humans — each annotator of
    ``annotations`` (``{item: {annotator: score}}``) where given, else the reference. None for
    a scale that is not ordinal with at least three values, or without any reference.
    ``samples``: the sample each item repeats (an Inspect log's epochs; by position, an item of
    no sample its own), resampled together by the compression's intervals."""
    if metric_kind(scale) != "ordinal" or scale.k < 3:
        return None
    paired = [
        (i, scale.index(r), scale.index(s))
        for i, s, r in zip(ids, scores, references, strict=True)
        if r is not None and s is not None
    ]
    clusters = (
        None
        if samples is None
        else [
            c
            for c, s, r in zip(samples, scores, references, strict=True)
            if r is not None and s is not None
        ]
    )
    if not paired and not annotations:
        return None
    humans = _humans(ids, references, annotations, scale)
    judge_name = (
        judge if judge not in {a for h in humans.values() for a in h} else f"{judge} (judge)"
    )
    raters = [judge_name, *sorted({a for h in humans.values() for a in h})]
    notes: list[str] = []
    compression = None
    options = {"n_resamples": n_resamples, "confidence": confidence, "seed": seed}
    try:
        from assay.metrics import scale_compression

        compression = scale_compression(
            [h for _, h, _ in paired],
            [j for _, _, j in paired],
            k=scale.k,
            clusters=clusters,
            **options,
        )
    except ValueError as exc:
        notes.append(f"scale compression not computed: {exc}")
    if annotations:
        notes.append(
            "compression is measured against the annotators' majority, which spreads less than "
            "one annotator's labels: the judge looks less compressed than against any one of them"
        )
    rater_model, why_not = _rater_model(
        ids, scores, scale, humans, judge_name, confidence=confidence, seed=seed
    )
    if why_not:
        notes.append(why_not)
    return ScaleUseReport(
        raters=raters, compression=compression, rater_model=rater_model, notes=notes
    )


def _humans(
    ids: Sequence[str],
    references: Sequence[int | None],
    annotations: Mapping[str, Mapping[str, int | None]] | None,
    scale: Scale,
) -> dict[str, dict[str, int]]:
    """Each item's human scores as scale positions, by rater: every annotator's, or the
    reference as one rater."""
    if annotations:
        return {
            i: {str(a): scale.index(s) for a, s in annotations.get(i, {}).items() if s is not None}
            for i in ids
        }
    return {
        i: {"reference": scale.index(r)}
        for i, r in zip(ids, references, strict=True)
        if r is not None
    }


def _rater_model(
    ids: Sequence[str],
    scores: Sequence[int | None],
    scale: Scale,
    humans: Mapping[str, Mapping[str, int]],
    judge: str,
    *,
    confidence: float,
    seed: int,
) -> tuple[RaterModelReport | None, str | None]:
    """The rater model over the items scored by the judge and a human (a seeded sample of
    :data:`MAX_RATER_MODEL_ITEMS` beyond that many), or why it was not fitted."""
    import numpy as np

    from assay.metrics import AnnotationMatrix, rater_model

    both = [(i, s) for i, s in zip(ids, scores, strict=True) if s is not None and humans.get(i)]
    n_raters = 1 + len({a for i, _ in both for a in humans[i]})
    if n_raters < MIN_RATERS:
        return None, (
            "rater model not fitted: beside one reference it cannot say which of the two "
            "raters fails to tell items apart (it needs two or more annotators per item); the "
            "slope and the mean difference tell a strict judge from one that cannot"
        )
    if len(both) < MIN_RATER_MODEL_ITEMS:
        return None, (
            f"rater model not fitted: {len(both)} items have a judge score and a human one; it "
            f"needs at least {MIN_RATER_MODEL_ITEMS}"
        )
    sampled_from = None
    if len(both) > MAX_RATER_MODEL_ITEMS:
        keep = np.sort(
            np.random.default_rng(seed).choice(len(both), MAX_RATER_MODEL_ITEMS, replace=False)
        )
        sampled_from, both = len(both), [both[k] for k in keep]
    rows = [(i, judge, scale.index(s)) for i, s in both]
    rows += [(i, who, h) for i, _ in both for who, h in sorted(humans[i].items())]
    matrix = AnnotationMatrix.from_long(
        [i for i, _, _ in rows], [r for _, r, _ in rows], [float(v) for *_, v in rows]
    )
    try:
        fit = rater_model(matrix, confidence=confidence)
    except ValueError as exc:
        return None, f"rater model not fitted: {exc}"
    hardest = sorted(fit.items, key=lambda q: (q.quality, str(q.item)))[:HARDEST]
    order = {r: k for k, r in enumerate(matrix.annotator_ids)}
    raters = sorted(fit.raters, key=lambda r: (r.rater != judge, order[r.rater]))
    return (
        RaterModelReport(
            raters=list(raters),
            levels=list(fit.levels),
            thresholds=list(fit.thresholds),
            n_items=len(fit.items),
            n_items_dropped=fit.n_items_dropped,
            sampled_from=sampled_from,
            log_likelihood=fit.log_likelihood,
            converged=fit.converged,
            model=fit.model,
            hardest=hardest,
            item_quality=_spread(fit.items),
            note=fit.note,
        ),
        None,
    )


def _spread(items: Sequence[ItemQuality]) -> ItemQualitySpread:
    """The items' latent quality in four figures (:class:`ItemQualitySpread`); the sd is over
    the fitted items themselves (no sample correction), as the reliability's variances are."""
    import numpy as np

    quality = np.array([q.quality for q in items])
    between = float(quality.var())
    within = float(np.mean([q.sd**2 for q in items]))
    return ItemQualitySpread(
        mean=float(quality.mean()),
        sd=float(np.sqrt(between)),
        reliability=between / (between + within) if between + within > 0 else float("nan"),
        lowest=float(quality.min()),
    )


def compression_reading(report: ScaleUseReport, human: str = "reference") -> str | None:
    """The judge's use of the scale in words, from the intervals of the slope (does it follow
    the humans at all), the SD ratio (spread) and the mean difference (location)."""
    c = report.compression
    if c is None:
        return None
    slope, ratio, shift = c.slope, c.sd_ratio, c.mean_difference
    below = lambda m, x: m.ci_high is not None and m.ci_high < x  # noqa: E731
    above = lambda m, x: m.ci_low is not None and m.ci_low > x  # noqa: E731
    if math.isnan(slope.value):  # the reference's scores do not vary: no slope, no SD ratio
        follows = (
            f"the {human} gave every item the same score, so whether the judge's scores follow "
            "it cannot be told"
        )
    elif not above(slope, 0):
        follows = (
            f"the judge's scores do not follow the {human}'s (the slope's interval reaches 0): "
            "it cannot tell items apart as the humans do"
        )
    elif below(ratio, 1):
        follows = f"the judge compresses the scale (its scores spread less than the {human}'s)"
    elif above(ratio, 1):
        follows = f"the judge spreads its scores more than the {human}"
    else:
        follows = f"the judge uses as much of the scale as the {human} (within the interval)"
    if below(shift, 0):
        return f"{follows}; it is stricter (its mean score is lower)"
    if above(shift, 0):
        return f"{follows}; it is more lenient (its mean score is higher)"
    return follows


def scale_use_tables(
    report: ScaleUseReport, confidence: float, *, human: str = "reference"
) -> list[Table]:
    """Scale compression, the raters under the item response model and the hardest items
    (report.md and report.html)."""
    out = []
    c = report.compression
    notes = " ".join(f"{n[0].upper()}{n[1:]}." for n in report.notes)
    if c is not None:
        figures = {
            "sd_ratio": c.sd_ratio,
            "judge_middle_share": c.judge_middle_share,
            f"{human}_middle_share": c.human_middle_share,
            "middle_share_difference": c.middle_share_difference,
            "slope": c.slope,
            "mean_difference": c.mean_difference,
        }
        reading = compression_reading(report, human) or ""
        out.append(
            metric_table(
                "Scale compression (central tendency)",
                {k: v.to_dict() for k, v in figures.items()},
                confidence,
                lead=f"{reading[:1].upper()}{reading[1:]}. On {c.n} items of {c.k} categories: "
                f"SD of the judge's scores {fmt(c.judge_sd)} against the {human}'s "
                f"{fmt(c.human_sd)} (in categories); the middle is every category but the lowest "
                f"and the highest; the judge's score regressed on the {human}'s has slope "
                f"{fmt(c.slope.value)} and intercept {fmt(c.intercept)}. SD ratio and slope "
                "below 1, middle share difference above 0: compression; a slope near 0: the "
                "judge does not follow the humans; mean difference below 0: stricter.",
            )
        )
    m = report.rater_model
    if m is not None:
        sample = (
            f" (a seeded sample of {m.n_items} of {m.sampled_from} items)" if m.sampled_from else ""
        )
        out.append(
            Table(
                "The raters under an item response model",
                ["rater", "n", "mean score", "discrimination", "severity", "reading", "note"],
                [
                    [
                        r.rater,
                        r.n,
                        fmt(r.mean_score),
                        fmt_ci(r.discrimination),
                        fmt_ci(r.severity),
                        r.reading,
                        r.note or "",
                    ]
                    for r in m.raters
                ],
                lead=f"A {m.model}, fitted on {m.n_items} items{sample}; "
                f"{fmt_level(confidence)} Wald intervals. Discrimination: how much a rater's scores follow the items' latent "
                "quality (near 0: it cannot tell items apart). Severity: how much less likely, in "
                "log-odds, it gives an average item a higher category than the raters' average "
                "(they sum to 0; positive strict, negative lenient). Mean scores are 0-based scale "
                "positions.",
                note=f"Thresholds {', '.join(fmt(t, 2) for t in m.thresholds)}; log likelihood "
                f"{fmt(m.log_likelihood, 1)}; "
                + ("converged." if m.converged else f"**not converged**: {m.note}."),
            )
        )
        out.append(
            Table(
                "Items of the lowest latent quality (hardest to score high on)",
                ["item", "quality", "sd", "scores"],
                [[str(q.item), fmt(q.quality, 2), fmt(q.sd, 2), q.n] for q in m.hardest],
            )
        )
    if notes:
        if out:
            last = out[-1]
            out[-1] = Table(
                last.title,
                last.columns,
                last.rows,
                lead=last.lead,
                note=f"{last.note} {notes}".strip(),
                figure=last.figure,
            )
        else:
            out.append(Table("Scale compression (central tendency)", [], [], lead=notes))
    return out


def scale_use_console(report: ScaleUseReport) -> str:
    """A few lines for the console: the SD ratio and slope, and each rater's reading."""
    lines = []
    c = report.compression
    if c is not None:
        lines.append(
            f"scale use: SD ratio {fmt_ci(c.sd_ratio)}, slope {fmt_ci(c.slope)}, mean "
            f"difference {fmt_ci(c.mean_difference)} — {compression_reading(report)}"
        )
    m = report.rater_model
    if m is not None:
        lines.append(
            "rater model: "
            + "; ".join(
                f"{r.rater} {r.reading} (discrimination {fmt(r.discrimination.value, 2)}, "
                f"severity {fmt(r.severity.value, 2)})"
                for r in m.raters
            )
        )
    lines += [f"note: {n}" for n in report.notes]
    return "\n".join(lines)


def scale_use_metrics(report: ScaleUseReport) -> dict[str, object]:
    """MLflow: ``compression_*`` (each figure with its interval), per rater
    ``rater_discrimination.<rater>``, ``rater_severity.<rater>``, and the items' latent quality
    ``item_quality.mean``, ``.sd``, ``.reliability`` and ``.lowest`` (four figures, not one
    metric per item)."""
    out: dict[str, object] = {}
    c = report.compression
    if c is not None:
        for name in (
            "sd_ratio",
            "judge_middle_share",
            "human_middle_share",
            "middle_share_difference",
            "slope",
            "mean_difference",
        ):
            out[f"compression_{name}"] = getattr(c, name).to_dict()
    m = report.rater_model
    if m is not None:
        out["rater_discrimination"] = {str(r.rater): r.discrimination.to_dict() for r in m.raters}
        out["rater_severity"] = {str(r.rater): r.severity.to_dict() for r in m.raters}
        if m.item_quality is not None:
            out["item_quality"] = m.item_quality.model_dump()
    return out
