"""``stability``: k samples of the source; an item passes when all k agree. Also the flip rate,
the majority's accuracy, and the samples-needed curve: how many samples a majority vote needs
to agree with the item's other samples 95% of the time."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, TypedDict

from assay.metrics import MetricValue, fmt
from assay.reliability._probe import Probe
from assay.reliability.scoring._kind import (
    ScoringInput,
    ScoringKind,
    ScoringMetrics,
    SectionRow,
    cell,
    scoring_kind,
)
from assay.report import Table

SAMPLES_TARGET = 0.95


class StabilityMetrics(ScoringMetrics):
    items: int
    # items left out: a sample unscored, so whether all k agree cannot be told
    items_incomplete: int = 0
    flip_rate: float | None  # mean share of minority verdicts
    # share of the items with a target whose majority verdict is the target; an item whose k
    # verdicts tie (no majority) counts as not right, and how many did is ``majority_ties``
    majority_accuracy: MetricValue | None
    majority_ties: int = 0
    # absent when no item was scored
    samples_needed: dict[str, MetricValue | None] | None = None
    samples_needed_95: int | None = None
    samples_needed_95_ci_low: int | None = None
    samples_k: int | None = None


class SamplesNeeded(TypedDict, total=False):
    """The samples-needed fields of :class:`StabilityMetrics`: all of them, or none when no item
    was scored."""

    samples_needed: dict[str, MetricValue | None]
    samples_needed_95: int | None
    samples_needed_95_ci_low: int | None
    samples_k: int


@scoring_kind("stability")
class Stability(ScoringKind):
    Metrics = StabilityMetrics
    order = 50
    headlines = (("flip_rate", "flip"), ("samples_needed_95", "samples for 95%"))
    tracked = (
        "majority_accuracy",
        "majority_ties",
        "flip_rate",
        "samples_needed",
        "samples_needed_95",
    )

    def score(self, scored: list[Probe], inp: ScoringInput) -> StabilityMetrics:
        import numpy as np  # not on the way to a run's first LM call (this file's ``needed`` is)

        by_source: dict[str, list] = defaultdict(list)
        targets: dict[str, int | None] = {}
        for p in scored:
            by_source[p.source_id].append(inp.score(p))
            targets[p.source_id] = p.target
        # an item is its k samples: one unscored, and "all k agree" cannot be told (the scored
        # rest agree more often the fewer they are; one alone always "agrees") — left out
        samples = Counter(p.source_id for p in inp.judged)
        incomplete = {sid for sid, s in by_source.items() if len(s) < samples.get(sid, 0)}
        incomplete |= {sid for sid in samples if sid not in by_source}
        by_source = defaultdict(list, {k: v for k, v in by_source.items() if k not in incomplete})
        stable, majority_right, flips, ties = [], [], [], 0
        labelled: list[str] = []  # the sources of majority_right
        agree_with_source: list[float] = []
        agreeing_sources: list[str] = []  # k samples per source: clustered
        for sid, scores in by_source.items():
            counts = Counter(scores)
            stable.append(len(counts) == 1)
            flips.append(1.0 - counts.most_common(1)[0][1] / len(scores))
            top = counts.most_common()
            if targets[sid] is not None:
                # a tie has no majority verdict: not right (left out, the rate rose with the
                # judge's instability — with k = 2, every item whose two samples differ)
                tied = len(top) > 1 and top[0][1] == top[1][1]
                ties += tied
                majority_right.append(not tied and top[0][0] == targets[sid])
                labelled.append(sid)
            own = inp.source_verdicts.get(sid)
            if own is not None:
                agree_with_source.extend(float(s == own) for s in scores)
                agreeing_sources.extend(sid for _ in scores)
        return StabilityMetrics(
            items=len(by_source),
            items_incomplete=len(incomplete),
            # share of items whose k verdicts all agree: one outcome per item, an exact interval
            pass_rate=per_item_rate(stable, list(by_source), inp),
            flip_rate=float(np.mean(flips)) if flips else None,
            majority_accuracy=per_item_rate(majority_right, labelled, inp),
            majority_ties=ties,
            consistency=inp.mean(agree_with_source, agreeing_sources),
            **samples_needed(by_source, inp.boot, inp.clustered(list(by_source))),
        )

    def section(self, rows: list[SectionRow]) -> Table | None:
        rows = [(n, m) for _, n, m in rows if m.get("samples_needed")]
        if not rows:
            return None
        ms = list(dict.fromkeys(k for _, m in rows for k in m["samples_needed"]))
        return Table(
            "Samples needed (stochastic_stability)",
            [
                "judge",
                *(f"m={k[1:]}" for k in ms),
                "smallest m ≥ 95%",
                "smallest m with CI low ≥ 95%",
            ],
            [
                [n, *(cell(m["samples_needed"].get(k)) for k in ms)]
                + [needed(m), needed(m, "samples_needed_95_ci_low")]
                for n, m in rows
            ],
            lead="P(the majority of m samples agrees with the majority of the item's other "
            "k − m samples): out of sample (exact over every split), item = unit of the CI. A "
            "judge answering at random stays near 0.5 at every m; the curve falls again as the "
            "held-out rest shrinks (m and k − m play the same part), so it is a conservative "
            "estimate.",
            figure=("Samples needed for a stable majority", "samples_needed.png"),
        )

    def headline(self, metrics: dict[str, Any]) -> list[str]:
        parts = super().headline(metrics)
        if metrics.get("samples_needed") and metrics.get("samples_needed_95") is None:
            parts.append(f"samples for 95% {needed(metrics)}")
        if metrics.get("items_incomplete"):
            parts.append(f"items left out (a sample unscored) {metrics['items_incomplete']}")
        return parts


def needed(m: dict[str, Any], key: str = "samples_needed_95") -> str:
    """The smallest m of the samples-needed curve, or that no m below k reached 95%."""
    if m.get(key) is not None:
        return fmt(m[key])
    k = m.get("samples_k")
    return f"not reached within k = {k}" if k is not None else "not reached"


def per_item_rate(
    outcomes: list[bool], sources: list[str], inp: ScoringInput
) -> MetricValue | None:
    """The share of true ``outcomes``, one per source item (``sources``): its exact interval
    over independent items; where sources are epochs of one Inspect sample
    (:meth:`ScoringInput.clustered`), the cluster bootstrap over the samples instead (the
    exact interval over the samples where every outcome is one value), as every other rate."""
    clustered = inp.clustered(sources) if outcomes else None
    if clustered is None:
        from assay.metrics import rate

        return rate(outcomes, confidence=inp.boot["confidence"])
    from assay.metrics import cluster_mean

    clusters, what = clustered
    return cluster_mean([float(o) for o in outcomes], clusters, what=what, **inp.boot)


def samples_needed(
    by_source: dict[str, list[int]],
    boot: dict[str, Any],
    clustered: tuple[list[str], str] | None = None,
) -> SamplesNeeded:
    """For m = 1, 3, 5, … below k, the fewest scored samples of an item: the probability that a
    majority of m samples agrees with the majority of the item's *other* samples (out of
    sample, exact per item — :func:`assay.metrics.held_out_majority_agreement` —, averaged over
    items, item bootstrap CI; where every item's agreement is 1 (or 0) the resamples cannot
    vary, and the interval is the exact Clopper–Pearson one over the items, as for a pass
    rate), and the smallest m whose estimate (and whose CI's lower bound) reaches 95%:
    ``None`` when no m below k does ("not reached within k"). An interval of no width is no
    lower bound: it does not decide the second. ``clustered``: the items' clusters and what
    they are, where items are epochs of one Inspect sample (:meth:`ScoringInput.clustered`;
    default: each item alone)."""
    if not by_source:
        return {}
    from assay.metrics import cluster_mean, held_out_majority_agreement

    clusters, what = clustered or (list(by_source), "source items")
    k = min(len(s) for s in by_source.values())
    curve: dict[str, MetricValue | None] = {}
    for m in range(1, k, 2):
        agreement = [held_out_majority_agreement(s, m) for s in by_source.values()]
        curve[f"m{m}"] = cluster_mean(agreement, clusters, what=what, **boot)

    def smallest(key: str) -> int | None:
        for name, mv in curve.items():
            bound = None if mv is None else getattr(mv, key)
            no_width = mv is not None and mv.ci_low == mv.ci_high
            if bound is not None and bound >= SAMPLES_TARGET and not (key == "ci_low" and no_width):
                return int(name[1:])
        return None

    return {
        "samples_needed": curve,
        "samples_needed_95": smallest("value"),
        "samples_needed_95_ci_low": smallest("ci_low"),
        "samples_k": k,
    }
