"""``prompt_paraphrase``: the judge's own instruction and rubric in other words, the item
unchanged. A judge whose verdicts move when its task is reworded measures its prompt as much as
the response.

The ``n`` paraphrases come from the test's config (``paraphrases``) or are written once for the
task the judges share by the generator (a :class:`assay.programs.TaskParaphraser`, saved with
the run like every test program), each shown the ones written before so that they differ.
The validator checks each keeps the meaning; a rejected one is written anew (a fresh sample)
up to ``attempts`` times, and one still rejected drops its probes (counted, with the
validator's reason) — it is never used. A probe is a source unchanged, carrying one paraphrase
in ``meta["judge_task"]``: the harness runs each judge on it with that instruction and rubric
(the judgment records that config's hash), and its ``meta["paraphrase"]`` (``p1``, ``p2``, …)
is its cell among the effects against the placebo (the source judged again unchanged).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from assay.errors import ConfigError
from assay.programs import ProbeValidator, TaskParaphraser, is_pairwise
from assay.reliability._probe import Dropped, Generation, Probe, Validation
from assay.reliability._registry import (
    MAX_PER_SOURCE,
    GenerationContext,
    ProgramSettings,
    TestSettings,
    Unit,
    reliability_test,
)
from assay.reliability.probes._task import AsksTask, Rejected, dropped_all, joined, write_task
from assay.scale import Scale
from assay.signatures import CheckTaskParaphrase
from assay.types import Item, StrictInt


class TaskText(BaseModel):
    """One paraphrase of the judges' task, as the config gives it."""

    model_config = ConfigDict(extra="forbid")

    instruction: str | None = Field(default=None, description="the instruction in other words")
    rubric: str = Field(description="the rubric in other words")


class PromptParaphraseSettings(ProgramSettings):
    n: StrictInt = Field(
        default=3, ge=1, le=MAX_PER_SOURCE, description="paraphrases to write (at most 100)"
    )
    paraphrases: list[TaskText] | None = Field(
        default=None,
        description="the paraphrases, given (then none is written or validated, and 'n' is "
        "their number)",
        min_length=1,
        max_length=MAX_PER_SOURCE,
    )
    attempts: StrictInt = Field(
        default=2, ge=1, le=10, description="writings of a paraphrase the validator rejects"
    )
    validate_paraphrases: bool = True  # for written paraphrases


@reliability_test("prompt_paraphrase")
class PromptParaphraseTest(AsksTask):
    scoring = "prompt_paraphrase"
    asked = "a paraphrase of its instruction and rubric"
    needs_labels = False  # the change from the own source verdict; agreement where labelled
    Settings = PromptParaphraseSettings
    settings: PromptParaphraseSettings

    def __init__(self, settings: TestSettings | None = None):
        super().__init__(settings)
        s = self.settings
        if s.paraphrases is not None and "n" in s.model_fields_set and s.n != len(s.paraphrases):
            raise ConfigError(
                f"tests.prompt_paraphrase.n: {s.n}, but {len(s.paraphrases)} paraphrases are "
                "given (leave 'n' out with 'paraphrases')"
            )
        self.uses_llm = s.paraphrases is None  # type: ignore[misc]
        self.generator = TaskParaphraser()
        self.validator = ProbeValidator(CheckTaskParaphrase, "same_meaning")

    def check(self, items: list[Item], scale: Scale) -> None:
        super().check(items, scale)
        if is_pairwise(scale):
            raise ConfigError(
                "tests.prompt_paraphrase: a pairwise judge's task is the comparison itself; "
                "use position_bias for pairs"
            )

    def check_judges(self, judges: list[Any]) -> None:
        super().check_judges(judges)
        given = self.settings.paraphrases or []
        if self.task and self.task[0] and any(p.instruction is None for p in given):
            i = next(i for i, p in enumerate(given) if p.instruction is None)
            raise ConfigError(
                f"tests.prompt_paraphrase.paraphrases.{i}.instruction: the judges have an "
                "instruction; give its paraphrase too"
            )

    def generate(self, unit: Unit, ctx: GenerationContext) -> list[Probe | Dropped]:
        task = self.judges_task(ctx)
        out: list[Probe | Dropped] = []
        written: list[dict[str, str | None]] = []
        for k in range(1, self._count() + 1):
            cell = f"p{k}"
            try:
                text, generation, validation = self._paraphrase(k, task, written, ctx)
            except Rejected as r:
                out += dropped_all(self.name, unit.sources, r, variant=cell)
                continue
            written.append(text)
            asked = {"instruction": text["instruction"], "rubric": text["rubric"]}
            for src in unit.sources:
                out.append(
                    Probe.from_source(
                        self.name,
                        src,
                        [cell, asked],
                        generation=generation,
                        validation=validation,
                        meta={"judge_task": asked, "paraphrase": cell},
                    )
                )
        out += [Probe.placebo_of(self.name, src) for src in unit.sources]
        return out

    def _count(self) -> int:
        given = self.settings.paraphrases
        return len(given) if given is not None else self.settings.n

    def _paraphrase(
        self,
        k: int,
        task: tuple[str | None, str | None],
        written: list[dict[str, str | None]],
        ctx: GenerationContext,
    ) -> tuple[dict[str, str | None], Generation | None, Validation | None]:
        """The ``k``-th paraphrase: given, or written (anew while the validator rejects it, up
        to ``attempts`` writings; :class:`Rejected` with the last reason after that)."""
        s = self.settings
        if s.paraphrases is not None:
            given = s.paraphrases[k - 1]
            return {"instruction": given.instruction, "rubric": given.rubric}, None, None
        earlier = "\n\n---\n\n".join(joined(t) for t in written)
        spent = None
        for attempt in range(1, s.attempts + 1):
            try:
                text, generation, validation = write_task(
                    ctx,
                    self.generator,
                    self.validator,
                    task,
                    validate=s.validate_paraphrases,
                    shown_as="paraphrase",
                    generator_inputs={"earlier": earlier},
                    validator_inputs={},
                    attempt=attempt,
                )
            except Rejected as r:
                spent = r.usage if spent is None else spent + r.usage
                if attempt == s.attempts:
                    raise Rejected(
                        r.reason, f"{r.detail} (after {attempt} writings)", spent
                    ) from None
                continue
            return text, generation, validation
        raise AssertionError("unreachable: attempts >= 1")
