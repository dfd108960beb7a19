"""``position``: position bias of a pairwise judge, each pair judged in both orders (the pair is
the resampling unit): consistency, flip rate on decisive pairs, first-position preference and
the accuracy in either order and averaged over both (the pass rate)."""

from __future__ import annotations

from assay.metrics import MetricValue
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
from assay.scale import Scale


class PositionMetrics(ScoringMetrics):
    source_unscored: int
    pairs: int
    decisive_pairs: int
    flip_rate: MetricValue | None
    first_position_rate: MetricValue | None
    accuracy_ab: MetricValue | None
    accuracy_ba: MetricValue | None
    accuracy_order_averaged: MetricValue | None


POSITION_NOTE = (
    "A deterministic judge that is blind to position has first-position preference 0.5 and "
    "flip rate 0; one that samples its verdicts also flips pairs by chance (a fair judge "
    "answering a coin on 30% of pairs flips about a quarter of them), so its flip rate is no "
    "measure of position bias — the placebo-corrected effect against its own flips on an "
    "unchanged pair is."
)
"""The position table's note: what a position-blind judge shows, deterministic or not."""


@scoring_kind("position")
class Position(ScoringKind):
    Metrics = PositionMetrics
    order = 10
    headlines = (("flip_rate", "flip"), ("first_position_rate", "first-position"))
    tracked = (
        "flip_rate",
        "first_position_rate",
        "accuracy_ab",
        "accuracy_ba",
        "accuracy_order_averaged",
    )

    def score(self, scored: list[Probe], inp: ScoringInput) -> PositionMetrics:
        # when it scores, not at import: the console's headlines load every scoring kind, and
        # the judge kinds import DSPy
        from assay.programs import mirror_preference

        rows, source_unscored = inp.with_own(scored)
        scale = inp.scale
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
        averaged = inp.mean(acc_avg, acc_ids)
        return PositionMetrics(
            source_unscored=source_unscored,
            pairs=len(rows),
            decisive_pairs=len(decisive),
            pass_rate=averaged,  # accuracy averaged over the two orders
            consistency=inp.mean(consistent, ids),  # share of pairs with the same verdict
            flip_rate=inp.mean_of(decisive, lambda r: r[1] != r[2]),
            first_position_rate=inp.mean(first, first_ids),
            accuracy_ab=inp.mean(acc_ab, acc_ids),
            accuracy_ba=inp.mean(acc_ba, acc_ids),
            accuracy_order_averaged=averaged,
        )

    def cue_cell(self, probe: Probe) -> str:
        return "swapped"

    # a judge may prefer the answer shown first or the one shown second: both are a position
    # bias, so the swap's effect is signed and tested two-sided
    poles = ("first", "second")

    def cue_toward(self, probe: Probe, scale: Scale) -> int | None:
        """The answer shown first in the swapped order (a primacy bias pushes toward it)."""
        return scale.label_scores["A" if probe.meta["order"] == "AB" else "B"]

    def cue_away(self, probe: Probe, scale: Scale) -> int | None:
        """The answer shown second in the swapped order (a recency bias pushes toward it)."""
        return scale.label_scores["B" if probe.meta["order"] == "AB" else "A"]

    def section(self, rows: list[SectionRow]) -> Table | None:
        """The report's position-bias table; its note says what a position-blind judge shows
        (:data:`POSITION_NOTE`)."""
        if not rows:
            return None
        return Table(
            "Position bias (pairwise, both orders; the pair is the resampling unit)",
            [
                "judge",
                "pairs",
                "consistent pairs",
                "flip rate (decisive pairs)",
                "first-position preference",
                "accuracy, A first",
                "accuracy, B first",
                "accuracy, order-averaged",
            ],
            [
                [
                    n,
                    m.get("pairs"),
                    cell(m.get("consistency")),
                    f"{cell(m.get('flip_rate'))} (of {m.get('decisive_pairs')})",
                    cell(m.get("first_position_rate")),
                    cell(m.get("accuracy_ab")),
                    cell(m.get("accuracy_ba")),
                    cell(m.get("accuracy_order_averaged")),
                ]
                for _, n, m in rows
            ],
            note=POSITION_NOTE,
        )
