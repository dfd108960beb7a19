"""Signatures of ``synthetic_ordinal``: write a response aimed at a score, then score it.

The validator's ``score`` is typed with the scale's options at build time, exactly like a
judge's verdict (:func:`assay.signatures._judge.verdict_type`).
"""

from __future__ import annotations

import dspy

from assay.scale import Scale
from assay.signatures._judge import verdict_description, verdict_type


class GenerateForScore(dspy.Signature):
    """Write a new response to the request that a careful grader applying the rubric would give
    exactly the target score: no better and no worse. The examples show responses and the
    scores they received; match the quality level of the target score, not the examples' text.
    Write only the response itself, in your own words, without mentioning scores or the rubric."""

    request: str = dspy.InputField(desc="the prompt or user instruction to respond to")
    rubric: str = dspy.InputField(desc="the grading rubric the response will be scored against")
    target_score: int = dspy.InputField(desc="the score the response must earn under the rubric")
    examples: str = dspy.InputField(desc="example responses with the scores they received")
    response: str = dspy.OutputField(desc="the new response")


class ScoreResponse(dspy.Signature):
    """Score the response to the request against the rubric."""

    rubric: str = dspy.InputField(desc="the grading rubric")
    request: str = dspy.InputField(desc="the prompt or user instruction")
    response: str = dspy.InputField(desc="the response to score")
    score: str = dspy.OutputField(desc="the score, one of the allowed values")


def score_signature(scale: Scale) -> type[dspy.Signature]:
    """:class:`ScoreResponse` with its ``score`` typed as the scale's options (``Literal[...]``)."""
    return ScoreResponse.with_updated_fields(
        "score", type_=verdict_type(scale), desc=verdict_description(scale)
    )
