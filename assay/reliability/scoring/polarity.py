"""``polarity``: the rubric's question inverted and the verdicts mirrored back: agreement of the
mirrored verdict with the judge's own source verdict, and how often the two contradict (a probe
whose source the judge left unscored is left out of both and counted: ``source_unscored``); the
pass rate, the mirrored verdict against the probe's target, counts every scored probe."""

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
    source_unscored_note,
)
from assay.report import Table
from assay.scale import Scale


class PolarityMetrics(ScoringMetrics):
    source_unscored: int
    inverted_task: dict[str, str | None]  # the inverted instruction and rubric
    mirrored_agreement: MetricValue | None
    contradiction_rate: MetricValue | None


@scoring_kind("polarity")
class Polarity(ScoringKind):
    Metrics = PolarityMetrics
    order = 40
    headlines = (("contradiction_rate", "contradiction"),)
    tracked = ("mirrored_agreement", "contradiction_rate")

    def score(self, scored: list[Probe], inp: ScoringInput) -> PolarityMetrics:
        rows, source_unscored = inp.with_own(scored)
        values = inp.scale.values
        mid = (values[0] + values[-1]) / 2

        def mirrored(v: int) -> int:
            return self.as_asked(v, None, inp.scale)

        agreement = inp.mean_of(rows, lambda r: mirrored(r[1]) == r[2])
        task = rows[0][0].meta.get("judge_task", {}) if rows else {}
        return PolarityMetrics(
            source_unscored=source_unscored,
            inverted_task={k: task.get(k) for k in ("instruction", "rubric")},
            pass_rate=self.pass_rate(scored, inp),
            consistency=agreement,
            mirrored_agreement=agreement,
            contradiction_rate=inp.mean_of(
                rows, lambda r: (mirrored(r[1]) - mid) * (r[2] - mid) < 0
            ),
        )

    def cue_cell(self, probe: Probe) -> str:
        return "inverted"

    def as_asked(self, verdict: int, probe: Probe | None, scale: Scale) -> int:
        """The verdict on the inverted question mirrored back: ``values[i]`` ↔ ``values[-1 - i]``."""
        values = scale.values
        return values[len(values) - 1 - values.index(verdict)]

    def section(self, rows: list[SectionRow]) -> Table | None:
        if not rows:
            return None
        task = rows[0][2].get("inverted_task") or {}
        return Table(
            "Polarity (the rubric's question inverted, verdicts mirrored back)",
            ["judge", "mirrored-verdict agreement", "contradiction rate", "pass rate"],
            [
                [n, cell(m.get("mirrored_agreement")), cell(m.get("contradiction_rate"))]
                + [cell(m.get("pass_rate"))]
                for _, n, m in rows
            ],
            note=source_unscored_note(rows),
            quotes=[
                (f"Inverted {key}", task[key]) for key in ("instruction", "rubric") if task.get(key)
            ],
        )
