"""``prompt_paraphrase``: the judge's own instruction and rubric in other words, the item
unchanged: per paraphrase, how often the verdict changed from the judge's own source verdict
and its agreement with the reference, and the paraphrase that moved it most. The change beyond
the judge's noise is the test's effect against its placebo, one cell per paraphrase."""

from __future__ import annotations

from typing import Any

from assay.metrics import MetricValue
from assay.reliability._probe import Probe
from assay.reliability._results import AskedScores
from assay.reliability.scoring._asked import ORIGINAL, value, ways_asked, ways_table
from assay.reliability.scoring._kind import (
    ScoringInput,
    ScoringKind,
    ScoringMetrics,
    SectionRow,
    cell,
    scoring_kind,
)
from assay.report import Table


class PromptParaphraseMetrics(ScoringMetrics):
    source_unscored: int
    # the judge's own task on the same sources (``original``), then each paraphrase
    paraphrases: dict[str, AskedScores]
    # the paraphrase whose verdicts changed most often (None: none changed any)
    worst_paraphrase: str | None
    worst_change_rate: MetricValue | None


@scoring_kind("prompt_paraphrase")
class PromptParaphrase(ScoringKind):
    Metrics = PromptParaphraseMetrics
    order = 42
    tracked = ("paraphrases", "worst_change_rate")

    def score(self, scored: list[Probe], inp: ScoringInput) -> PromptParaphraseMetrics:
        rows, source_unscored = inp.with_own(scored)
        ways = ways_asked(scored, inp, self.cue_cell, lambda v, p: v)
        for name, p in {self.cue_cell(p): p for p in scored}.items():
            task = p.meta["judge_task"]
            ways[name].instruction, ways[name].rubric = task.get("instruction"), task["rubric"]
        asked = {k: w for k, w in ways.items() if k != ORIGINAL and value(w.changed)}
        worst = max(asked, key=lambda k: (value(asked[k].changed), k), default=None)
        return PromptParaphraseMetrics(
            source_unscored=source_unscored,
            pass_rate=self.pass_rate(scored, inp),  # every scored probe, as the agreements
            consistency=inp.mean_of(rows, lambda r: r[1] == r[2]),
            paraphrases=ways,
            worst_paraphrase=worst,
            worst_change_rate=asked[worst].changed if worst else None,
        )

    def cue_cell(self, probe: Probe) -> str:
        return probe.meta["paraphrase"]

    def headline(self, metrics: dict[str, Any]) -> list[str]:
        worst = metrics.get("worst_paraphrase")
        if not worst:
            return []
        return [f"worst paraphrase {worst}: changed {cell(metrics.get('worst_change_rate'))}"]

    def section(self, rows: list[SectionRow]) -> Table | None:
        texts = {
            k: w
            for _, _, m in rows
            for k, w in (m.get("paraphrases") or {}).items()
            if k != ORIGINAL
        }

        def task(name: str, w: AskedScores, m: dict[str, Any]) -> list[str]:
            return [name + (" (worst)" if name == m.get("worst_paraphrase") else "")]

        return ways_table(
            "Prompt paraphrase (the judge's own instruction and rubric in other words)",
            rows,
            "paraphrases",
            (["task"], task),
            note="The change beyond the judge's own noise, per paraphrase, is in the table of "
            "effects against a placebo (its cells p1, p2, ...).",
            quotes=[
                (f"Paraphrase {name} ({part})", text)
                for name, w in texts.items()
                for part, text in (("instruction", w.instruction), ("rubric", w.rubric))
                if text
            ],
        )
