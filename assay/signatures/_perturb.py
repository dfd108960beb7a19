"""Signatures of the LLM perturbers and validators that make reliability probes."""

from __future__ import annotations

import dspy


class Paraphrase(dspy.Signature):
    """Reword the response so that it keeps exactly the same meaning, facts, claims, errors and
    quality, with the same structure and about the same length. Change the wording only: do not
    add, remove, fix or soften anything."""

    request: str = dspy.InputField(desc="the prompt the response answers")
    response: str = dspy.InputField()
    rewritten: str = dspy.OutputField(desc="the reworded response")


class Expand(dspy.Signature):
    """Make the response about twice as long without adding any new fact, claim, step or
    opinion: restate, elaborate the wording, add transitions. Keep its meaning, correctness and
    quality exactly as they are."""

    request: str = dspy.InputField(desc="the prompt the response answers")
    response: str = dspy.InputField()
    rewritten: str = dspy.OutputField(desc="the longer response")


class Condense(dspy.Signature):
    """Make the response about half as long while keeping every fact, claim and step: remove
    repetition and filler only. Keep its meaning, correctness and quality exactly as they are."""

    request: str = dspy.InputField(desc="the prompt the response answers")
    response: str = dspy.InputField()
    rewritten: str = dspy.OutputField(desc="the shorter response")


class CheckEquivalence(dspy.Signature):
    """Decide whether the rewritten response keeps the meaning, facts and quality of the original
    — a grader applying any rubric would give both the same verdict — and makes the requested
    change."""

    request: str = dspy.InputField()
    original: str = dspy.InputField()
    rewritten: str = dspy.InputField()
    change: str = dspy.InputField(desc="the change that was requested")
    equivalent: bool = dspy.OutputField(
        desc="true if same meaning and quality and the change was made"
    )
    reason: str = dspy.OutputField(desc="one sentence")


class FlipVerdict(dspy.Signature):
    """Rewrite the response so that, under the rubric, it deserves the target verdict instead of
    its current one. Keep the same topic, structure, style and about the same length; change only
    what decides the verdict."""

    rubric: str = dspy.InputField()
    request: str = dspy.InputField()
    response: str = dspy.InputField()
    current_verdict: str = dspy.InputField()
    target_verdict: str = dspy.InputField()
    rewritten: str = dspy.OutputField(desc="the rewritten response")


class ConfirmVerdict(dspy.Signature):
    """Decide whether the response deserves the given verdict under the rubric."""

    rubric: str = dspy.InputField()
    request: str = dspy.InputField()
    response: str = dspy.InputField()
    verdict: str = dspy.InputField(desc="the verdict to confirm")
    confirmed: bool = dspy.OutputField(desc="true if the response deserves this verdict")
    reason: str = dspy.OutputField(desc="one sentence")
