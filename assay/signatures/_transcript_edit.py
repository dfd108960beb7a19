"""Signatures of the agent-transcript perturber (``agent_perturbation`` /
``agent_positives``): a planner picks assistant messages and what to do with each, an editor
rewrites one message at a time, a summarizer keeps a short account of the conversation so far,
and a verifier checks the edited transcript against the rubric criterion."""

from __future__ import annotations

from typing import Any

import dspy
from pydantic import BaseModel, Field


class PlanStep(BaseModel):
    """One planned edit: which assistant message (its index in the transcript) and what for."""

    message_index: int = Field(description="the index shown in front of an assistant message")
    intent: str = Field(description="what this edit must change in that message, and why")


class PlanTranscriptEdits(dspy.Signature):
    """You plan edits to an AI agent's transcript so that, judged against the criterion, the
    edited transcript reaches the objective. Choose assistant messages by the index shown in
    front of them and say, for each, what the edit must change. Edit as few messages as the
    objective needs (at most max_steps), keep the conversation coherent and realistic, and
    never plan an edit that mentions the rubric, the criterion, grading or evaluation."""

    criterion: str = dspy.InputField(desc="the rubric criterion the transcript is judged on")
    objective: str = dspy.InputField(desc="what the edited transcript must achieve")
    assistant_messages: str = dspy.InputField(
        desc="the transcript's assistant messages only, each under its index"
    )
    max_steps: int = dspy.InputField(desc="the most edits the plan may have")
    thesis: str = dspy.OutputField(desc="one sentence: how the edits reach the objective")
    steps: list[PlanStep] = dspy.OutputField(desc="the edits in the order to make them")


class EditMessage(dspy.Signature):
    """Rewrite one assistant message of an AI agent's transcript as the planned edit says, so
    that the transcript moves toward the objective under the criterion. Change only what the
    edit's intent needs; keep the message's tone, style, language and format so that it reads
    as if written that way; never mention the rubric, the criterion, grading or that the
    message was edited. Keep its tool calls: give the arguments of each of them, in order, as a
    JSON object (copy the original arguments where the edit does not change them); do not add
    or remove tool calls."""

    criterion: str = dspy.InputField(desc="the rubric criterion the transcript is judged on")
    objective: str = dspy.InputField(desc="what the edited transcript must achieve")
    thesis: str = dspy.InputField(desc="the plan's overall idea")
    intent: str = dspy.InputField(desc="what this edit must change")
    previous_edits: str = dspy.InputField(desc="edits already made to earlier messages")
    summary: str = dspy.InputField(desc="a summary of the conversation as it now stands")
    original_message: str = dspy.InputField(
        desc="the assistant message to rewrite, tool calls shown with their arguments"
    )
    content: str = dspy.OutputField(desc="the full text of the rewritten message")
    tool_arguments: list[dict[str, Any]] = dspy.OutputField(
        desc="one JSON object of arguments per tool call of the message, in order; [] if none"
    )


class SummarizeTranscript(dspy.Signature):
    """Summarize the agent conversation for someone who will edit one of its assistant
    messages: what the user asked, what the agent did step by step (tools called and what they
    returned), and what it concluded. Mention messages marked as edited as they now read. Stay
    within max_words words."""

    transcript: str = dspy.InputField(desc="the conversation's messages, each under its index")
    max_words: int = dspy.InputField()
    summary: str = dspy.OutputField()


class VerifyCriterion(dspy.Signature):
    """Decide whether the AI agent's transcript meets the rubric criterion, judging the
    transcript exactly as it reads."""

    criterion: str = dspy.InputField()
    transcript: str = dspy.InputField(desc="the full agent transcript, tool calls included")
    meets_criterion: bool = dspy.OutputField(desc="true if the transcript meets the criterion")
    reason: str = dspy.OutputField(desc="one sentence")


class ScoreCriterion(dspy.Signature):
    """Give the score level the AI agent's transcript deserves under the rubric criterion,
    judging the transcript exactly as it reads."""

    criterion: str = dspy.InputField(desc="the criterion and its score levels")
    transcript: str = dspy.InputField(desc="the full agent transcript, tool calls included")
    score: int = dspy.OutputField(desc="one of the criterion's score levels")
    reason: str = dspy.OutputField(desc="one sentence")
