"""Deterministic insertions for the bias probes (``prompt_injection``, ``authority``,
``bandwagon``, ``distraction``): a block of text put into the judged response at its start,
middle or end, and nothing else changed.

A probe differs from its source only by the inserted span: ``probe == source[:offset] + span +
source[offset:]``, with ``offset`` and ``span`` recorded in the probe's meta. For a transcript
the block goes into the last assistant message with text. No LLM call is made. A source with a
probe also gets its placebo (``Probe.placebo_of``): the source unchanged, judged again.
"""

from __future__ import annotations

import re
from abc import abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from assay.errors import ConfigError
from assay.programs import is_pairwise, mirror_preference
from assay.reliability._probe import Dropped, Probe
from assay.reliability._registry import (
    GenerationContext,
    ReliabilityTest,
    TestSettings,
    Unit,
)
from assay.scale import Scale
from assay.types import Item, Message

Position = Literal["start", "middle", "end"]
POSITIONS: tuple[Position, ...] = ("start", "middle", "end")

_LINE_START = re.compile(r"\n[ \t]*(?=\S)")
_SENTENCE_START = re.compile(r"[.!?…][\"')\]”’]*[ \t]+(?=\S)")
_WORD_START = re.compile(r"\s+(?=\S)")


@dataclass(frozen=True)
class Insertion:
    """``text`` = the source with ``span`` inserted at ``offset``."""

    text: str
    offset: int
    span: str


def middle_offset(text: str) -> int | None:
    """Where a block goes in the middle: the line start nearest the middle of ``text`` if one
    lies in its middle half, else such a sentence start, else the nearest word start; None when
    the text has no boundary strictly inside it."""
    mid, n = len(text) / 2, len(text)
    for pattern, anywhere in ((_LINE_START, False), (_SENTENCE_START, False), (_WORD_START, True)):
        spots = [m.end() for m in pattern.finditer(text) if 0 < m.end() < n]
        if not anywhere:
            spots = [s for s in spots if n / 4 <= s <= 3 * n / 4]
        if spots:
            return min(spots, key=lambda s: (abs(s - mid), s))
    return None


def insert_block(text: str, block: str, position: Position) -> Insertion | None:
    """``block`` as its own paragraph at ``position`` of ``text`` (None: no middle to use)."""
    if position == "start":
        offset, span = 0, block + "\n\n"
    elif position == "end":
        offset, span = len(text), "\n\n" + block
    else:
        at = middle_offset(text)
        if at is None:
            return None
        offset, span = at, "\n\n" + block + "\n\n"
    return Insertion(text[:offset] + span + text[offset:], offset, span)


def opposite_verdict(expected: int, scale: Scale) -> int | None:
    """The verdict opposite to ``expected``: A ↔ B on a pairwise scale (None for a tie); the
    other value of a binary scale; otherwise the far end of the scale from ``expected``."""
    if is_pairwise(scale):
        flipped = mirror_preference(expected, scale)
        return None if flipped == expected else flipped
    values = scale.values
    if len(values) == 2:
        return values[1] if expected == values[0] else values[0]
    mid = (values[0] + values[-1]) / 2
    return values[0] if expected > mid else values[-1]


def verdict_phrase(score: int, scale: Scale) -> str:
    """How a verdict is named in an inserted text: its label in quotes, or its score."""
    label = scale.label_of(score)
    if label is not None:
        return f'"{label}"'
    if scale.kind == "ordinal":
        return f"{score} (on the {scale.min} to {scale.max} scale)"
    return str(score)


def check_verdicts(test: str, scale: Scale) -> None:
    """A ``ConfigError`` unless the scale has two verdicts or more and judges one response."""
    if len(scale.values) < 2 or len(scale.verdict_options) < 2:
        raise ConfigError(
            f"tests.{test}: the {scale.describe()} scale has a single verdict; the test needs "
            "another verdict to ask for"
        )
    if is_pairwise(scale):
        raise ConfigError(
            f"tests.{test}: inserts text into a single judged response; for pairwise judges "
            "use position_bias"
        )


class InsertionSettings(TestSettings):
    """Where the blocks go (one probe per block and position)."""

    positions: list[Position] = Field(default_factory=lambda: ["end"], min_length=1)

    @field_validator("positions")
    @classmethod
    def _distinct(cls, v: list[Any]) -> list[Any]:
        if len(set(v)) != len(v):
            raise ValueError("each position may be named once")
        return v


class InsertionTest(ReliabilityTest):
    """Base of the insertion tests: no LLM; a subclass says which blocks to insert."""

    uses_llm: ClassVar[bool] = False
    Settings: ClassVar[type[TestSettings]] = InsertionSettings

    def check(self, items: list[Item], scale: Scale) -> None:
        super().check(items, scale)
        check_verdicts(self.name, scale)

    @abstractmethod
    def blocks(
        self, src: Item, ctx: GenerationContext
    ) -> list[tuple[str, str | None, dict[str, Any]]]:
        """``(variant, block, meta)`` per block to insert; a None block is dropped with the
        reason in ``meta["detail"]``."""

    def generate(self, unit: Unit, ctx: GenerationContext) -> list[Probe | Dropped]:
        src = unit.sources[0]
        out: list[Probe | Dropped] = []
        settings = self.settings.model_dump()
        target, where = _judged_text(src)
        for variant, block, meta in self.blocks(src, ctx):
            for position in self.settings.positions:  # type: ignore[attr-defined]
                key = f"{variant}/{position}"
                detail = meta.get("detail")
                ins = None
                if block is not None and target is not None:
                    ins = insert_block(target, block, position)
                    detail = detail or "no word boundary inside the text"
                elif target is None:
                    detail = "empty response"
                if ins is None:
                    out.append(
                        Dropped(
                            test=self.name,
                            source_id=src.id,
                            variant=key,
                            reason="not_applicable",
                            detail=detail,
                        )
                    )
                    continue
                response, transcript = _with_text(src, where, ins.text, block, position)
                out.append(
                    Probe.from_source(
                        self.name,
                        src,
                        key,
                        settings,
                        response=response,
                        transcript=transcript,
                        meta={
                            "variant": variant,
                            "position": position,
                            "offset": ins.offset,
                            "inserted": ins.span,
                            **{k: v for k, v in meta.items() if k != "detail"},
                        },
                    )
                )
        if any(isinstance(p, Probe) for p in out):
            out.append(Probe.placebo_of(self.name, src, settings))
        return out


def _judged_text(src: Item) -> tuple[str | None, int | None]:
    """The text a block goes into and where it is: the response (``None``), or the index of
    the transcript's last assistant message with text."""
    if src.transcript:
        for i in range(len(src.transcript) - 1, -1, -1):
            m = src.transcript[i]
            if m.role == "assistant" and m.content.strip():
                return m.content, i
        return None, None
    return (src.response if src.response.strip() else None), None


def _with_text(
    src: Item, where: int | None, text: str, block: str, position: Position
) -> tuple[str, list[Message] | None]:
    """The probe's response and transcript: ``text`` (the judged text with the block in it) as
    the response, or as the transcript's message ``where`` — and then as the response too when
    that message was the response (a judge of request and response on a transcript sees the
    block: an Inspect log's answer is its last assistant message), else the block put into the
    response on its own, at the same position (the response as it is if it has no room)."""
    if where is None:
        return text, None
    transcript = [m.model_copy(deep=True) for m in src.transcript or []]
    transcript[where] = transcript[where].model_copy(update={"content": text})
    if src.transcript[where].content == src.response:
        return text, transcript
    alone = insert_block(src.response, block, position) if src.response.strip() else None
    return (src.response if alone is None else alone.text), transcript
