"""Typed signatures of judges: the docstring is the default task, the fields are the contract.

A judge's verdict field is typed with the scale's options at build time (``Literal[...]``), so a
JSON-schema adapter sends them as an ``enum`` and constrained decoders can only produce them.
"""

from __future__ import annotations

from typing import Literal

import dspy

from assay.scale import Scale


class JudgeResponse(dspy.Signature):
    """Judge the response to the request against the rubric and give a verdict on the scale."""

    rubric: str = dspy.InputField(desc="the grading rubric")
    request: str = dspy.InputField(desc="the prompt or user instruction")
    response: str = dspy.InputField(desc="the response to judge")
    verdict: str = dspy.OutputField(desc="the verdict, one of the allowed values")


class JudgeTranscript(dspy.Signature):
    """Read the agent transcript (messages and tool calls) and decide whether it meets the
    criterion."""

    criterion: str = dspy.InputField(desc="the rubric criterion to apply")
    transcript: str = dspy.InputField(desc="the full agent transcript, tool calls included")
    verdict: str = dspy.OutputField(desc="the verdict, one of the allowed values")


def verdict_type(scale: Scale) -> object:
    """``Literal`` of what a judge on ``scale`` may answer (label names, or integer scores)."""
    if scale.kind == "categorical" or scale.labels:
        return Literal[tuple(scale.verdict_options)]  # type: ignore[return-value]
    return Literal[tuple(scale.values)]  # type: ignore[return-value]


def verdict_description(scale: Scale) -> str:
    if scale.kind == "binary" and scale.labels:
        return f"'{scale.label_of(1)}' or '{scale.label_of(0)}'"
    if scale.kind == "binary":
        return "the number 1 if the criterion is met, the number 0 otherwise"
    if scale.kind == "ordinal":
        names = ""
        if scale.labels:
            names = (
                " ("
                + ", ".join(f"{v} = {n}" for v, n in zip(scale.values, scale.labels, strict=True))
                + ")"
            )
        return f"an integer score from {scale.min} (lowest) to {scale.max} (highest){names}"
    return "one of: " + ", ".join(scale.verdict_options)


def with_scale(
    signature: type[dspy.Signature], scale: Scale, instruction: str | None = None
) -> type[dspy.Signature]:
    """``signature`` with its verdict typed for ``scale`` and, if given, a task instruction."""
    sig = signature.with_updated_fields(
        "verdict", type_=verdict_type(scale), desc=verdict_description(scale)
    )
    if instruction:
        sig = sig.with_instructions(instruction)
    return sig
