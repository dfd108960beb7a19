"""Deterministic whitespace perturbations for the ``format_*`` reliability tests.

Every perturbation is *content-preserving by construction*: it only inserts ASCII whitespace
(spaces, tabs, newlines) next to existing whitespace or at the start of a line, and at most
turns the ASCII spaces between two sentences into newlines. So
``collapse_whitespace(perturbed) == collapse_whitespace(text)`` for any text, and no
non-whitespace character is ever removed, changed or split off from its neighbour.

Randomness comes only from the ``random.Random`` passed in; :func:`variant_rng` derives it
from (test name, source id, variant index), so the same seed item always yields the same probe.
"""

from __future__ import annotations

import hashlib
import random
import re
from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import Field

from assay.reliability._probe import Dropped, Probe
from assay.reliability._registry import (
    MAX_PER_SOURCE,
    GenerationContext,
    ReliabilityTest,
    TestSettings,
    Unit,
)
from assay.types import Item, Message, StrictInt

T = TypeVar("T")

# The characters ``str.splitlines`` breaks lines on ("\r\n" counts as one break).
LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
# What may end a sentence, and what may follow that mark before the gap (quotes, brackets).
SENTENCE_END = frozenset(".!?…‽。！？")
CLOSERS = frozenset("\"')]}»”’")
# Share of candidate gaps / lines that receive a perturbation in vertical and indent mode.
_CHOOSE_RATE = 0.5
SPACES_PER_LEVEL = 4

_WHITESPACE_RUN = re.compile(r"\s+")  # \s on str patterns is exactly str.isspace()


def collapse_whitespace(text: str) -> str:
    """``text`` with every whitespace run (any unicode whitespace) turned into one space, trimmed."""
    return " ".join(text.split())


def variant_rng(test: str, source_id: str, variant: int) -> random.Random:
    """The random generator of one probe: a pure function of test name, source id and variant."""
    digest = hashlib.sha256(f"{test}:{source_id}:{variant}".encode()).hexdigest()
    return random.Random(int(digest[:16], 16))


def add_vertical_space(
    text: str,
    rng: random.Random,
    *,
    mode: Literal["paragraphs", "sentences", "both"] = "both",
    extra_lines: int = 3,
) -> str:
    """Blank lines between paragraphs (line breaks) and/or sentences.

    Each candidate gap is chosen with probability 1/2 (at least one when any exists) and gets
    ``1..extra_lines`` blank lines. A paragraph gap keeps its whitespace and gains line breaks
    after its first one; a sentence gap (a run without line break after ``.!?`` and optional
    closing quotes/brackets, not followed by a lowercase letter) has its leading ASCII spaces
    replaced by line breaks. Line breaks follow the text's style (CRLF when it uses CRLF).
    """
    if extra_lines < 1:
        raise ValueError("extra_lines must be at least 1")
    newline = "\r\n" if "\r\n" in text else "\n"
    gaps: list[tuple[int, int, int]] = []  # (start, end, offset after first break or -1)
    for start, end in _inner_runs(text):
        after_break = _after_first_break(text, start, end)
        if after_break >= 0:
            if mode in ("paragraphs", "both"):
                gaps.append((start, end, after_break))
        elif mode in ("sentences", "both") and _ends_sentence(text, start):
            if not text[end].islower():
                gaps.append((start, end, -1))
    edits: list[tuple[int, int, str]] = []
    for start, end, after_break in _choose(gaps, rng, _CHOOSE_RATE):
        blank = rng.randint(1, extra_lines)
        if after_break >= 0:
            edits.append((after_break, after_break, newline * blank))
        else:
            spaces = len(text[start:end]) - len(text[start:end].lstrip(" "))
            edits.append((start, start + spaces, newline * (blank + 1)))
    return _apply(text, edits)


def add_intraline_space(
    text: str,
    rng: random.Random,
    *,
    min_run: int = 2,
    max_run: int = 6,
    rate: float = 0.3,
) -> str:
    """Runs of extra spaces between words on the same line.

    Each word gap is widened with probability ``rate`` (at least one when any exists): a
    single-space gap becomes a run of ``min_run..max_run`` spaces (``n - 1`` spaces are inserted
    in front of whatever whitespace the gap already has).
    """
    if not 2 <= min_run <= max_run:
        raise ValueError("need 2 <= min_run <= max_run")
    gaps = [(s, e) for s, e in _inner_runs(text) if _after_first_break(text, s, e) < 0]
    edits = [(s, s, " " * (rng.randint(min_run, max_run) - 1)) for s, _ in _choose(gaps, rng, rate)]
    return _apply(text, edits)


def add_indentation(
    text: str,
    rng: random.Random,
    *,
    indent: Literal["tabs", "spaces", "mixed"] = "mixed",
    max_depth: int = 3,
) -> str:
    """Leading tabs/spaces on lines that have content.

    Each non-blank line is indented with probability 1/2 (at least one when any exists) by
    ``1..max_depth`` levels; a level is a tab, ``SPACES_PER_LEVEL`` spaces, or (``mixed``)
    either, drawn per level. Indentation goes in front of any whitespace the line already has.
    """
    if max_depth < 1:
        raise ValueError("max_depth must be at least 1")
    lines = text.splitlines(keepends=True)
    candidates = [i for i, line in enumerate(lines) if line.split()]
    for i in _choose(candidates, rng, _CHOOSE_RATE):
        levels = rng.randint(1, max_depth)
        if indent == "tabs":
            prefix = "\t" * levels
        elif indent == "spaces":
            prefix = " " * (SPACES_PER_LEVEL * levels)
        else:
            prefix = "".join(rng.choice(("\t", " " * SPACES_PER_LEVEL)) for _ in range(levels))
        lines[i] = prefix + lines[i]
    return "".join(lines)


class FormatSettings(TestSettings):
    """Settings shared by the ``format_*`` tests."""

    variants: StrictInt = Field(
        default=1, ge=1, le=MAX_PER_SOURCE, description="probes per seed item (at most 100)"
    )


def whitespace_probes(
    test: str,
    src: Item,
    *,
    variants: int,
    settings: dict[str, Any],
    perturb: Callable[[str, random.Random], str],
) -> list[Probe | Dropped]:
    """``variants`` probes of ``src`` with ``perturb`` applied to its response, or to every
    message of its transcript (copied) — and then the response is the transcript's answer as
    perturbed there (its last assistant message that was the response), so that a judge of the
    request and response sees the reformatted answer as a transcript judge does; a response no
    message holds is perturbed on its own.

    A variant that leaves the text unchanged is ``Dropped(not_applicable)``; one identical to an
    earlier variant is ``Dropped(duplicate)``, so no text is judged twice.
    """
    out: list[Probe | Dropped] = []
    seen: set[tuple[str, ...]] = set()
    for i in range(variants):
        rng = variant_rng(test, src.id, i)
        response, transcript = src.response, None
        if src.transcript:
            transcript = [
                m.model_copy(update={"content": perturb(m.content, rng)}, deep=True)
                for m in src.transcript
            ]
            response = _answer_as_perturbed(src, transcript, perturb, rng)
            key = (*(m.content for m in transcript), response)
            changed = key != (*(m.content for m in src.transcript), src.response)
        else:
            response = perturb(src.response, rng)
            key = (response,)
            changed = response != src.response
        if not changed:
            detail = "no place to add whitespace"
            out.append(
                Dropped(
                    test=test, source_id=src.id, variant=i, reason="not_applicable", detail=detail
                )
            )
        elif key in seen:
            detail = "same text as an earlier variant"
            out.append(
                Dropped(test=test, source_id=src.id, variant=i, reason="duplicate", detail=detail)
            )
        else:
            seen.add(key)
            out.append(
                Probe.from_source(
                    test,
                    src,
                    i,
                    settings,
                    response=response,
                    transcript=transcript,
                    meta={"variant": i},
                )
            )
    return out


def _answer_as_perturbed(
    src: Item,
    perturbed: list[Message],
    perturb: Callable[[str, random.Random], str],
    rng: random.Random,
) -> str:
    """``src``'s response as its transcript's ``perturbed`` copy holds it: the last assistant
    message whose content was the response; else the response perturbed on its own."""
    for before, after in zip(reversed(src.transcript or []), reversed(perturbed), strict=True):
        if before.role == "assistant" and before.content == src.response:
            return after.content
    return perturb(src.response, rng)


class FormatTest(ReliabilityTest):
    """Base of the ``format_*`` tests: no LLM, the source's human label is the target, and a
    reliable judge's verdict does not move (``invariance``). Subclasses define ``perturb``."""

    scoring: ClassVar[str] = "invariance"
    uses_llm: ClassVar[bool] = False
    needs_labels: ClassVar[bool] = True
    Settings: ClassVar[type[TestSettings]] = FormatSettings

    @abstractmethod
    def perturb(self, text: str, rng: random.Random) -> str:
        """``text`` with whitespace added, using only ``rng`` for randomness."""

    def generate(self, unit: Unit, ctx: GenerationContext) -> list[Probe | Dropped]:
        settings = self.settings.model_dump()
        variants = settings["variants"]
        return [
            probe
            for src in unit.sources
            for probe in whitespace_probes(
                self.name, src, variants=variants, settings=settings, perturb=self.perturb
            )
        ]


# -- helpers ------------------------------------------------------------------------------


def _inner_runs(text: str) -> list[tuple[int, int]]:
    """Maximal whitespace runs with a non-whitespace character on both sides."""
    return [
        m.span() for m in _WHITESPACE_RUN.finditer(text) if m.start() > 0 and m.end() < len(text)
    ]


def _after_first_break(text: str, start: int, end: int) -> int:
    """Index just after the first line break in ``text[start:end]`` (CRLF as one), or -1."""
    for i in range(start, end):
        if text[i] in LINE_BREAKS:
            return i + 2 if text.startswith("\r\n", i) else i + 1
    return -1


def _ends_sentence(text: str, pos: int) -> bool:
    """Whether the text before ``pos`` ends with a sentence mark (then optional closers)."""
    i = pos - 1
    while i >= 0 and text[i] in CLOSERS:
        i -= 1
    return i >= 0 and text[i] in SENTENCE_END


def _choose(items: Sequence[T], rng: random.Random, rate: float) -> list[T]:
    """Each item with probability ``rate``; one at random if that picked none (and any exist)."""
    chosen = [x for x in items if rng.random() < rate]
    if not chosen and items:
        chosen = [rng.choice(items)]
    return chosen


def _apply(text: str, edits: list[tuple[int, int, str]]) -> str:
    """Replace ``text[start:end]`` by ``new`` for non-overlapping ``(start, end, new)`` edits."""
    parts: list[str] = []
    last = 0
    for start, end, new in sorted(edits):
        parts += [text[last:start], new]
        last = end
    parts.append(text[last:])
    return "".join(parts)
