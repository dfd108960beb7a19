"""Probes: perturbed copies of seed items with the verdict a reliable judge should give."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidatorFunctionWrapHandler, WrapValidator

from assay.types import Item, Judgment, Message, Usage, stable_hash

TargetSource = Literal["human", "validator", "construction"]
PLACEBO = "placebo"
"""The variant name of a placebo probe (``Probe.placebo_of``)."""
ReviewStatus = Literal["pending", "accepted", "edited", "rejected"]


class Generation(BaseModel):
    """How an LLM-made probe was produced: enough to reproduce and audit it."""

    model: str
    temperature: float | None = None
    prompt: str = ""  # the generator program's instruction (signature docstring)
    attempt: int = 1
    usage: Usage = Field(default_factory=Usage)


class Validation(BaseModel):
    """The validator's verdict on a generated probe."""

    model: str
    verdict: bool
    score: int | None = None  # for validators that score (synthetic_ordinal)
    reason: str | None = None
    usage: Usage = Field(default_factory=Usage)


class Review(BaseModel):
    """A person's decision on a probe; edits keep the original text and target."""

    status: ReviewStatus = "pending"
    reviewer: str | None = None
    note: str | None = None
    timestamp: str | None = None
    original_response: str | None = None
    original_target: int | None = None
    # an edited transcript probe: message index → its content before the person's edit
    original_messages: dict[int, str] | None = None


def _bool_kept(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """A bool target as given (pydantic would make ``True`` the score 1): a bool is no score,
    and the harness drops a plug-in's probe with one as ``off_scale_target``, never scores it."""
    return value if isinstance(value, bool) else handler(value)


class Probe(BaseModel):
    """One probe. ``id`` is stable: a hash of the test, source, variant and test settings."""

    model_config = ConfigDict(extra="forbid")

    id: str
    test: str
    source_id: str
    request: str = ""
    response: str = ""
    transcript: list[Message] | None = None
    target: Annotated[int | None, WrapValidator(_bool_kept)] = None
    target_source: TargetSource = "construction"
    generation: Generation | None = None
    validation: Validation | None = None
    review: Review = Field(default_factory=Review)
    meta: dict[str, Any] = Field(default_factory=dict)

    @staticmethod
    def make_id(test: str, source_id: str, variant: object, settings: object = None) -> str:
        return f"{test}:{source_id}:{stable_hash([variant, settings], 10)}"

    @classmethod
    def from_source(
        cls, test: str, source: Item, variant: object, settings: object = None, **fields: Any
    ) -> Probe:
        """A probe ``test`` made from ``source``: its id from the test, the source, the variant
        and the settings; the source's request, response and transcript, and its human label as
        the target — unless ``fields`` say otherwise (a rewritten response, a constructed
        target, the generation and validation, ``meta``)."""
        return cls(
            **{
                "id": cls.make_id(test, source.id, variant, settings),
                "test": test,
                "source_id": source.id,
                "request": source.request,
                "response": source.response,
                "transcript": source.transcript,
                "target": source.expected,
                "target_source": "human",
                **fields,
            }
        )

    @classmethod
    def placebo_of(cls, test: str, source: Item, settings: object = None, **fields: Any) -> Probe:
        """The placebo of ``test`` for ``source``: the source unchanged, judged again with the
        judge's own sampling and the LM cache bypassed (a rollout id of the test's own, so each
        test's placebo is a fresh sample, and a resumed run reuses it). A bias test's effect is
        measured against it: it moves only by the judge's noise."""
        # a source whose text another repeats under another id asks the same prompt: its
        # placebo is served the other's from the cache. Harmless: the two are one item, one
        # cluster of every interval and test (ScoringInput.samples), so the copy adds nothing
        # it could bias; sources of other texts never share a placebo's prompt
        meta = {"placebo": True, "rollout": placebo_rollout(test), **fields.pop("meta", {})}
        return cls.from_source(test, source, PLACEBO, settings, meta=meta, **fields)

    def as_item(self) -> Item:
        """The probe as an item to judge (its id is the probe id, its expected the target)."""
        return Item(
            id=self.id,
            request=self.request,
            response=self.response,
            transcript=self.transcript,
            expected=self.target,
            meta={"test": self.test, "source_id": self.source_id, **self.meta},
        )


DropReason = Literal[
    "generation_failed",
    "validator_rejected",
    "not_applicable",
    "duplicate",
    # agent tests: why a transcript yielded no probe
    "no_assistant_message",
    "empty_plan",
    "planner_failed",
    "editor_failed",
    "summarizer_failed",
    "verifier_failed",
    # a plug-in test: its generate raised; a probe's target off the harness scale
    "plugin_error",
    "off_scale_target",
]
"""Why a probe was not made or not confirmed (a :class:`Dropped`'s ``reason``)."""


class Dropped(BaseModel):
    """A probe that could not be made or was not confirmed: counted, never judged."""

    test: str
    source_id: str
    variant: Any = None
    reason: DropReason
    detail: str | None = None
    usage: Usage = Field(default_factory=Usage)


def is_placebo(probe: Probe) -> bool:
    """Whether ``probe`` is a test's placebo (its source unchanged, judged again)."""
    return bool(probe.meta.get("placebo"))


def placebo_rollout(test: str) -> int:
    """The rollout id of ``test``'s placebo judgments: above the stability samples' and their
    retries' (``rollout + 1000 * attempt``), and distinct per test."""
    return 1_000_000 * (1 + int(stable_hash(["placebo", test], 6), 16))


def criterion_verdict(probe: Probe, judgment: Judgment) -> int | None:
    """The verdict of ``judgment`` (on the probe, or on its source) that the probe is about:
    for a probe made for one rubric criterion (``meta["criterion"]``), the judgment's score on
    that criterion — the source's overall score is the lowest of all its criteria — and the
    overall score for any other probe (or a judgment with no score per criterion)."""
    criterion = probe.meta.get("criterion")
    if not criterion:
        return judgment.score
    return (judgment.criteria or {}).get(criterion, judgment.score)


def judged_id(probe: Probe) -> str:
    """The id a probe's judgment is stored under; an edited probe gets a new one."""
    if probe.review.status == "edited":
        parts: list[Any] = [probe.response, probe.target]
        if probe.review.original_messages and probe.transcript:
            parts.append([m.content for m in probe.transcript])
        return f"{probe.id}@{stable_hash(parts, 8)}"
    return probe.id
