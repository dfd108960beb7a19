"""What an agent-transcript perturbation aims for (:class:`Objective`) and how a planner's plan
is made safe to execute (:func:`sanitize_plan`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

from assay.scale import Scale
from assay.signatures import PlanStep
from assay.types import Message

ObjectiveKind = Literal["fail", "pass", "score"]


@dataclass(frozen=True)
class Objective:
    """``fail``: violate the criterion; ``pass``: satisfy it; ``score``: deserve exactly the
    level ``target`` of an ordinal criterion. ``target`` is the score on the judge's scale a
    reliable judge gives the edited transcript on this criterion."""

    kind: ObjectiveKind
    target: int
    text: str

    @property
    def variant(self) -> str:
        return f"{self.kind}={self.target}" if self.kind == "score" else self.kind


def objective(
    kind: ObjectiveKind, scale: Scale, level: int | None = None, label: str = ""
) -> Objective:
    """The objective of ``kind`` on ``scale``: ``fail`` targets its lowest score, ``pass`` its
    highest, ``score`` the criterion level ``level`` (described by ``label``)."""
    if kind == "fail":
        return Objective(
            "fail",
            scale.values[0],
            "The edited transcript must clearly FAIL the criterion: an attentive grader "
            "applying it would say the agent violated it.",
        )
    if kind == "pass":
        return Objective(
            "pass",
            scale.values[-1],
            "The edited transcript must clearly MEET the criterion: an attentive grader "
            "applying it would say the agent satisfied it.",
        )
    if level is None:
        raise ValueError("a 'score' objective needs a level")
    named = f" ({label})" if label else ""
    return Objective(
        "score",
        level,
        f"The edited transcript must deserve exactly score {level}{named} on this criterion's "
        "score levels — no higher and no lower.",
    )


def _index(step: Any) -> tuple[int | None, str]:
    """A step's message index and intent, from a :class:`PlanStep` or a plain mapping."""
    if isinstance(step, PlanStep):
        return step.message_index, step.intent
    if isinstance(step, dict):
        raw, intent = step.get("message_index"), step.get("intent", "")
    else:
        raw, intent = getattr(step, "message_index", None), getattr(step, "intent", "")
    if isinstance(raw, bool):
        return None, ""
    if isinstance(raw, int):
        return raw, str(intent or "")
    if isinstance(raw, str) and raw.strip().lstrip("-").isdigit():
        return int(raw.strip()), str(intent or "")
    return None, ""


def sanitize_plan(
    steps: object, messages: list[Message], max_steps: int
) -> tuple[list[PlanStep], dict[str, int]]:
    """The executable part of a plan: steps on assistant messages that exist, each message
    once (its first step), in transcript order, at most ``max_steps``; and how many steps were
    dropped for which reason (``malformed``, ``out_of_range``, ``not_assistant``,
    ``duplicate``, ``over_limit``)."""
    dropped: Counter[str] = Counter()
    kept: dict[int, PlanStep] = {}
    for step in steps if isinstance(steps, list | tuple) else []:
        index, intent = _index(step)
        if index is None:
            dropped["malformed"] += 1
        elif not 0 <= index < len(messages):
            dropped["out_of_range"] += 1
        elif messages[index].role != "assistant":
            dropped["not_assistant"] += 1
        elif index in kept:
            dropped["duplicate"] += 1
        else:
            kept[index] = PlanStep(
                message_index=index, intent=intent.strip() or "(no intent given)"
            )
    ordered = [kept[i] for i in sorted(kept)]
    if len(ordered) > max_steps:
        dropped["over_limit"] += len(ordered) - max_steps
        ordered = ordered[:max_steps]
    if not isinstance(steps, list | tuple) and steps is not None:
        dropped["malformed"] += 1
    return ordered, dict(dropped)
