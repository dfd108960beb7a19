"""The agent-transcript perturber: a planner, an editor, a summarizer and a verifier (typed DSPy
signatures, each wrapped in a small module) composed by :class:`AgentPerturber` in ``forward``.

One call edits one transcript toward one :class:`Objective` on one rubric criterion and says
how it ended: ``confirmed`` (the verifier agrees the objective is reached) or why not. The
perturber is one DSPy program: its state (instructions, demos of all four stages) is saved with
a run and can be loaded or optimized like a judge's. A caller that needs per-stage accounting
(the reliability harness) passes ``run``, which executes each stage's module.
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

import dspy

from assay.data import (
    EditError,
    MessageChanges,
    assistant_indices,
    assistant_view,
    format_tool_call,
    indexed_view,
    message_changes,
    render_transcript,
    replace_message,
    tool_structure_problem,
)
from assay.lm import error_text
from assay.programs._agent_plan import Objective, sanitize_plan
from assay.programs._config import Criterion
from assay.programs._failures import unscored_reason
from assay.signatures import (
    EditMessage,
    PlanTranscriptEdits,
    ScoreCriterion,
    SummarizeTranscript,
    VerifyCriterion,
)
from assay.types import Message

Stage = Literal["plan", "edit", "summarize", "verify"]
StageRunner = Callable[[Stage, dspy.Module, dict[str, Any]], dspy.Prediction]
Status = Literal[
    "confirmed",
    "rejected",
    "no_assistant_message",
    "empty_plan",
    "planner_failed",
    "editor_failed",
    "summarizer_failed",
    "verifier_failed",
]


_FAILED: dict[str, Status] = {
    "plan": "planner_failed",
    "edit": "editor_failed",
    "summarize": "summarizer_failed",
    "verify": "verifier_failed",
}


def _direct(stage: Stage, module: dspy.Module, inputs: dict[str, Any]) -> dspy.Prediction:
    return module(**inputs)


class StageFailed(Exception):
    """A stage's LM call failed (error, timeout, unparseable output)."""

    def __init__(self, stage: Stage, detail: str):
        super().__init__(f"{stage}: {detail}")
        self.stage = stage


# -- the four stages ---------------------------------------------------------------------------
class TranscriptPlanner(dspy.Module):
    """Criterion + objective + the assistant-only view → a thesis and ordered steps."""

    def __init__(self) -> None:
        super().__init__()
        self.plan = dspy.Predict(PlanTranscriptEdits)

    def forward(self, **inputs: Any) -> dspy.Prediction:
        pred = self.plan(**inputs)
        return dspy.Prediction(
            thesis=str(pred.get("thesis") or "").strip(), steps=pred.get("steps")
        )


class MessageEditor(dspy.Module):
    """Criterion, plan step, previous edits, summary and the original message → its
    replacement text and tool-call arguments."""

    def __init__(self) -> None:
        super().__init__()
        self.edit = dspy.Predict(EditMessage)

    def forward(self, **inputs: Any) -> dspy.Prediction:
        pred = self.edit(**inputs)
        args = pred.get("tool_arguments")
        return dspy.Prediction(
            content=str(pred.get("content") or ""),
            tool_arguments=list(args) if isinstance(args, list | tuple) else [],
        )


class TranscriptSummarizer(dspy.Module):
    """The conversation (its last messages) → a summary of at most ``max_words`` words."""

    def __init__(self) -> None:
        super().__init__()
        self.summarize = dspy.Predict(SummarizeTranscript)

    def forward(self, transcript: str, max_words: int) -> dspy.Prediction:
        words = str(
            self.summarize(transcript=transcript, max_words=max_words).get("summary") or ""
        ).split()
        capped = " ".join(words[:max_words]) + (" […]" if len(words) > max_words else "")
        return dspy.Prediction(summary=capped)


class CriterionVerifier(dspy.Module):
    """Does the transcript meet the criterion (pass/fail), or which level does it deserve
    (ordinal criteria)."""

    def __init__(self) -> None:
        super().__init__()
        self.check = dspy.Predict(VerifyCriterion)
        self.score = dspy.Predict(ScoreCriterion)

    def forward(self, criterion: str, transcript: str, ordinal: bool = False) -> dspy.Prediction:
        if ordinal:
            pred = self.score(criterion=criterion, transcript=transcript)
            return dspy.Prediction(meets=None, score=int(pred.score), reason=pred.get("reason"))
        pred = self.check(criterion=criterion, transcript=transcript)
        return dspy.Prediction(
            meets=bool(pred.meets_criterion), score=None, reason=pred.get("reason")
        )


# -- the composed perturber --------------------------------------------------------------------
class EditMeta(MessageChanges):
    """An applied edit as a probe's ``meta`` records it."""

    message_index: int
    intent: str


@dataclass
class EditRecord:
    """One applied edit: the message, the planner's intent, the text before and after."""

    message_index: int
    intent: str
    changes: MessageChanges

    def as_meta(self) -> EditMeta:
        return {"message_index": self.message_index, "intent": self.intent, **self.changes}


@dataclass
class Outcome:
    """How one perturbation ended; ``transcript`` is the edited one (or the original)."""

    status: Status
    transcript: list[Message]
    edits: list[EditRecord] = field(default_factory=list)
    thesis: str = ""
    plan: list[dict[str, Any]] = field(default_factory=list)
    plan_dropped: dict[str, int] = field(default_factory=dict)
    verdict: bool | None = None  # the verifier's meets_criterion
    score: int | None = None  # the verifier's level (ordinal criteria)
    reason: str | None = None  # the verifier's reason, or why the perturbation stopped
    untouched: bool = False


class AgentPerturber(dspy.Module):
    """Plan → (summarize → edit) per step → verify, toward an objective on one criterion.

    Settings: ``max_edit_rounds`` (the most edits), ``summary_messages`` (the summary reads the
    last N messages), ``summary_words`` (its cap). With ``try_untouched`` the verifier first
    checks the unedited transcript and, if it already reaches the objective, returns it as is.
    """

    def __init__(self) -> None:
        super().__init__()
        self.planner = TranscriptPlanner()
        self.editor = MessageEditor()
        self.summarizer = TranscriptSummarizer()
        self.verifier = CriterionVerifier()

    @property
    def instruction(self) -> str:
        return self.planner.plan.signature.instructions

    def forward(
        self,
        transcript: list[Message],
        criterion: Criterion,
        objective: Objective,
        *,
        max_edit_rounds: int = 3,
        summary_messages: int = 40,
        summary_words: int = 150,
        try_untouched: bool = False,
        run: StageRunner | None = None,
    ) -> dspy.Prediction:
        run = run or _direct
        try:
            outcome = self._perturb(
                transcript,
                criterion,
                objective,
                run,
                max_edit_rounds=max_edit_rounds,
                summary_messages=summary_messages,
                summary_words=summary_words,
                try_untouched=try_untouched,
            )
        except StageFailed as exc:
            outcome = Outcome(_FAILED[exc.stage], transcript, reason=str(exc))
        return dspy.Prediction(outcome=outcome)

    # -- steps ---------------------------------------------------------------------------------
    def _perturb(
        self,
        transcript,
        criterion,
        objective,
        run,
        *,
        max_edit_rounds,
        summary_messages,
        summary_words,
        try_untouched,
    ) -> Outcome:
        if not assistant_indices(transcript):
            return Outcome(
                "no_assistant_message", transcript, reason="the transcript has no assistant message"
            )
        if try_untouched:
            ok, meets, score, reason = self._verify(transcript, criterion, objective, run)
            if ok:
                return Outcome(
                    "confirmed",
                    transcript,
                    verdict=meets,
                    score=score,
                    reason=reason,
                    untouched=True,
                )

        def summarize(messages: list[Message], edited: set[int]) -> str:
            view = indexed_view(messages, edited=edited, last=summary_messages)
            return _stage(
                run, "summarize", self.summarizer, {"transcript": view, "max_words": summary_words}
            ).summary

        plan_inputs = {
            "criterion": criterion.text(),
            "objective": objective.text,
            "assistant_messages": assistant_view(transcript),
            "max_steps": max_edit_rounds,
        }
        # the first summary does not depend on the plan: ask for both at once
        plan, summary = _both(
            lambda: _stage(run, "plan", self.planner, plan_inputs),
            lambda: summarize(transcript, set()),
        )
        if isinstance(plan, StageFailed):
            raise plan
        steps, dropped = sanitize_plan(plan.steps, transcript, max_edit_rounds)
        base = {
            "thesis": plan.thesis,
            "plan": [s.model_dump() for s in steps],
            "plan_dropped": dropped,
        }
        if not steps:
            detail = "the plan has no usable step" + (f" (dropped: {dropped})" if dropped else "")
            return Outcome("empty_plan", transcript, reason=detail, **base)
        if isinstance(summary, StageFailed):
            raise summary

        current, edits, failure = self._edit(
            transcript, steps, plan.thesis, criterion, objective, run, summary, summarize
        )
        if failure is not None:
            return Outcome("editor_failed", transcript, reason=failure, **base)
        if not edits:
            return Outcome(
                "editor_failed", transcript, reason="the editor changed no message", **base
            )
        ok, meets, score, reason = self._verify(current, criterion, objective, run)
        return Outcome(
            "confirmed" if ok else "rejected",
            current,
            edits,
            verdict=meets,
            score=score,
            reason=reason,
            **base,
        )

    def _edit(self, transcript, steps, thesis, criterion, objective, run, summary, summarize):
        """Apply the plan's steps one message at a time: ``(edited transcript, edits, None)``,
        or ``(.., .., why)`` when an edit cannot be applied."""
        current, edits, edited = transcript, [], set()
        for step in steps:
            i = step.message_index
            if summary is None:  # invalidated by the previous edit
                summary = summarize(current, edited)
            pred = _stage(
                run,
                "edit",
                self.editor,
                {
                    "criterion": criterion.text(),
                    "objective": objective.text,
                    "thesis": thesis,
                    "intent": step.intent,
                    "previous_edits": _previous(edits) or "(none yet)",
                    "summary": summary,
                    "original_message": _message_text(current[i]),
                },
            )
            try:
                updated = replace_message(
                    current, i, content=pred.content, tool_arguments=pred.tool_arguments
                )
            except EditError as exc:
                return current, edits, f"message {i}: {exc}"
            if updated[i] == current[i]:
                continue  # nothing changed: not an edit, the summary stays valid
            problem = tool_structure_problem(updated)
            if problem is not None:  # cannot happen by construction; never pass it on
                return current, edits, problem
            edits.append(EditRecord(i, step.intent, message_changes(transcript[i], updated[i])))
            current, summary = updated, None
            edited.add(i)
        return current, edits, None

    def _verify(
        self, messages, criterion: Criterion, objective: Objective, run
    ) -> tuple[bool, bool | None, int | None, str | None]:
        ordinal = objective.kind == "score"
        pred = _stage(
            run,
            "verify",
            self.verifier,
            {
                "criterion": criterion.text(),
                "transcript": render_transcript(messages),
                "ordinal": ordinal,
            },
        )
        if ordinal:
            return pred.score == objective.target, None, pred.score, pred.reason
        return pred.meets == (objective.kind == "pass"), pred.meets, None, pred.reason


def _stage(
    run: StageRunner, stage: Stage, module: dspy.Module, inputs: dict[str, Any]
) -> dspy.Prediction:
    """Run one stage; an LM or parse failure becomes :class:`StageFailed` (bugs propagate)."""
    try:
        return run(stage, module, inputs)
    except Exception as exc:
        if unscored_reason(exc) is None:
            raise
        raise StageFailed(stage, error_text(exc, 500)) from None


def _both(first: Callable[[], Any], second: Callable[[], Any]) -> tuple[Any, Any]:
    """Run two independent calls at once (the second in a thread that sees this thread's DSPy
    context); a :class:`StageFailed` is returned in place of its result."""

    def guarded(fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except StageFailed as exc:
            return exc

    context = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1) as pool:
        later = pool.submit(context.run, guarded, second)
        a = guarded(first)
        b = later.result()
    return a, b


def _message_text(m: Message) -> str:
    lines = [m.content] if m.content else []
    lines += [format_tool_call(c) for c in m.tool_calls]
    return "\n".join(lines) or "(empty)"


def _previous(edits: list[EditRecord]) -> str:
    return "\n".join(
        f"- message {e.message_index}: {e.intent} — now reads: {json.dumps(e.changes['replacement'])[:300]}"
        for e in edits
    )
