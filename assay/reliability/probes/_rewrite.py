"""Shared machinery of the LLM rewrite tests: generate a rewrite, have a validator check it,
keep it only if confirmed; every failure is a counted :class:`Dropped`, never probe text."""

from __future__ import annotations

from typing import ClassVar

import dspy
from pydantic import Field

from assay.data import last_assistant_text_index, message_changes, replace_message
from assay.lm import error_text
from assay.programs import JudgeConfig, Perturber, ProbeValidator, unscored_reason
from assay.reliability._probe import Dropped, Generation, Probe, Validation
from assay.reliability._registry import (
    MAX_PER_SOURCE,
    GenerationContext,
    ProgramSettings,
    ReliabilityTest,
    TestSettings,
    Unit,
)
from assay.signatures import CheckEquivalence
from assay.types import Item, StrictInt, Usage


class RewriteSettings(ProgramSettings):
    variants: StrictInt = Field(
        default=1, ge=1, le=MAX_PER_SOURCE, description="probes per seed item (at most 100)"
    )
    validate_probes: bool = True


def collapse(text: str) -> str:
    return " ".join(text.split())


class Failed(Exception):
    """A generation or validation call that failed (LM error, unparseable output)."""

    def __init__(self, detail: str, usage: Usage):
        super().__init__(detail)
        self.usage = usage


def guarded_call(
    ctx: GenerationContext, role: str, program: dspy.Module, *, stage: str, **kw
) -> tuple[dspy.Prediction, Usage]:
    """``ctx.call`` with LM and parse failures turned into :class:`Failed` (bugs propagate)."""
    before = ctx.usage.get(stage, Usage())
    try:
        return ctx.call(role, program, stage=stage, **kw)
    except Exception as exc:
        if unscored_reason(exc) is None:
            raise
        spent = ctx.usage.get(stage, Usage())
        # every count the failed call added (an answer without token counts, one from the
        # LM cache: each of them, not only the tokens and cost)
        used = Usage(**{k: getattr(spent, k) - getattr(before, k) for k in Usage.model_fields})
        raise Failed(error_text(exc, 500), used) from None


class RewriteTest(ReliabilityTest):
    """A probe = an LLM rewrite of the source response that must not change its verdict.

    Its programs: a :class:`Perturber` over ``rewriter`` and a :class:`ProbeValidator` over
    ``checker`` (whose boolean output ``verdict_field`` confirms the probe)."""

    scoring = "invariance"
    Settings = RewriteSettings
    rewriter: ClassVar[type[dspy.Signature]]
    checker: ClassVar[type[dspy.Signature]] = CheckEquivalence
    verdict_field: ClassVar[str] = "equivalent"
    change: ClassVar[str]

    def __init__(self, settings: TestSettings | None = None):
        super().__init__(settings)
        self.generator = Perturber(self.rewriter)
        self.validator = ProbeValidator(self.checker, self.verdict_field)

    def programs(self) -> dict[str, dspy.Module]:
        return {"generator": self.generator, "validator": self.validator}

    def target(self, src: Item, ctx: GenerationContext) -> int | None:
        return src.expected

    def rewrite_inputs(self, src: Item, ctx: GenerationContext) -> dict:
        return {"request": src.request, "response": src.response}

    def validate(
        self, src: Item, text: str, target: int | None, ctx: GenerationContext
    ) -> tuple[bool, str | None, Usage]:
        pred, usage = guarded_call(
            ctx,
            "validator",
            self.validator,
            stage="validate",
            request=src.request,
            original=src.response,
            rewritten=text,
            change=self.change,
        )
        return pred.ok, pred.reason, usage

    def check_judges(self, judges: list[JudgeConfig]) -> None:
        self._transcripts = any(j.task == "transcript" for j in judges)

    def notes(self) -> list[str]:
        if not getattr(self, "_transcripts", False):
            return []
        return [
            f"{self.name}: on transcripts, only the final assistant message is rewritten (and "
            "validated); every other message is kept as it was"
        ]

    def generate(self, unit: Unit, ctx: GenerationContext) -> list[Probe | Dropped]:
        source = self._rewritable(unit.sources[0])
        if isinstance(source, Dropped):
            return [source]
        src, final = source
        target = self.target(src, ctx)
        return [
            self._variant(src, final, target, i, ctx)
            for i in range(self.settings.variants)  # type: ignore[attr-defined]
        ]

    def _rewritable(self, src: Item) -> tuple[Item, int | None] | Dropped:
        """The source with the text to rewrite as its response — on a transcript, the final
        assistant message (whose index comes along) — or why there is none."""
        final: int | None = None
        if src.transcript:  # rewrite the final assistant message, keep the rest
            final = last_assistant_text_index(src.transcript)
            if final is None:
                return Dropped(
                    test=self.name,
                    source_id=src.id,
                    reason="not_applicable",
                    detail="the transcript has no assistant message with text to rewrite",
                )
            src = src.model_copy(update={"response": src.transcript[final].content})
        if not src.response.strip():
            return Dropped(
                test=self.name,
                source_id=src.id,
                reason="not_applicable",
                detail="empty response",
            )
        return src, final

    def _variant(
        self, src: Item, final: int | None, target: int | None, i: int, ctx: GenerationContext
    ) -> Probe | Dropped:
        """Variant ``i``: a rewrite, confirmed by the validator (if asked), or why not."""
        dropped = dict(test=self.name, source_id=src.id, variant=i)
        try:
            pred, gen_usage = guarded_call(
                ctx,
                "generator",
                self.generator,
                stage="generate",
                rollout=i,
                **self.rewrite_inputs(src, ctx),
            )
        except Failed as f:
            return Dropped(**dropped, reason="generation_failed", detail=str(f), usage=f.usage)
        text = pred.rewritten
        if not text or collapse(text) == collapse(src.response):
            return Dropped(
                **dropped,
                reason="generation_failed",
                detail="empty or unchanged rewrite",
                usage=gen_usage,
            )
        validation = None
        if self.settings.validate_probes:  # type: ignore[attr-defined]
            try:
                ok, reason, val_usage = self.validate(src, text, target, ctx)
            except Failed as f:
                return Dropped(
                    **dropped,
                    reason="generation_failed",
                    detail=f"validator: {f}",
                    usage=gen_usage + f.usage,
                )
            if not ok:
                return Dropped(
                    **dropped,
                    reason="validator_rejected",
                    detail=reason,
                    usage=gen_usage + val_usage,
                )
            validation = Validation(
                model=ctx.model_of("validator"), verdict=True, reason=reason, usage=val_usage
            )
        return self._probe(src, final, target, i, text, gen_usage, validation, ctx)

    def _probe(
        self,
        src: Item,
        final: int | None,
        target: int | None,
        i: int,
        text: str,
        gen_usage: Usage,
        validation: Validation | None,
        ctx: GenerationContext,
    ) -> Probe:
        """The kept rewrite as a probe; on a transcript, the source transcript with its final
        assistant message replaced (the edit listed in ``meta["edits"]``, for the review)."""
        transcript, meta = None, {"variant": i}
        if final is not None and src.transcript:
            transcript = replace_message(src.transcript, final, content=text)
            meta["edits"] = [
                {
                    "message_index": final,
                    "intent": self.change,
                    **message_changes(src.transcript[final], transcript[final]),
                }
            ]
        return Probe.from_source(
            self.name,
            src,
            i,
            self.settings.model_dump(),
            response=text,
            transcript=transcript,
            target=target,
            target_source="human" if self.scoring == "invariance" else "construction",
            generation=Generation(
                model=ctx.model_of("generator"),
                temperature=ctx.temperatures.get("generator"),
                prompt=self.generator.instruction,
                attempt=i + 1,
                usage=gen_usage,
            ),
            validation=validation,
            meta=meta,
        )
