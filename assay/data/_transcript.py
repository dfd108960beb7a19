"""One transcript model for both agent formats (Inspect logs, ToolEmu trajectories): a list of
:class:`~assay.types.Message` with roles, content, tool calls with their full arguments, tool
results and step indices — and what every consumer needs from it: indexed views, a checked
one-message edit, and the configurable preprocessing applied before planning and judging.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from pydantic import BaseModel, ConfigDict, Field, Strict, model_validator

from assay.data._render import format_tool_call
from assay.types import Message, ToolCall

TOOL_OUTPUT_REMOVED = "[tool output removed by preprocessing]"


def cut_marker(n: int) -> str:
    """The explicit marker that ends a capped tool output."""
    return f"\n[… {n} more characters of tool output cut by preprocessing]"


def steps_marker(n: int) -> str:
    """The explicit marker that stands where ``last_turns`` removed the earlier agent steps."""
    return f"[… {n} earlier agent step{'s' if n != 1 else ''} removed by preprocessing]"


def with_steps(messages: Iterable[Message]) -> list[Message]:
    """Copies of ``messages`` with ``step`` set: each assistant message starts a new step (0, 1,
    …); tool results belong to the step that called them; a user message belongs to the step it
    prompts (the next one); messages before the first step's prompt have ``step=None``."""
    out: list[Message] = []
    current: int | None = None
    seen_assistant = False
    for m in messages:
        if m.role == "assistant":
            current = 0 if current is None else current + 1
            seen_assistant = True
            step: int | None = current
        elif m.role == "user" and seen_assistant:
            step = (current or 0) + 1
        elif m.role == "tool":
            step = current
        else:
            step = None if not seen_assistant else current
        out.append(m.model_copy(update={"step": step}))
    return out


def assistant_indices(messages: list[Message]) -> list[int]:
    """Positions of the assistant messages, in order."""
    return [i for i, m in enumerate(messages) if m.role == "assistant"]


def last_assistant_text_index(messages: list[Message]) -> int | None:
    """Position of the last assistant message with text content (the final answer), if any."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "assistant" and messages[i].content.strip():
            return i
    return None


def _message_block(i: int, m: Message, note: str = "") -> str:
    header = f"[{i}] {m.role}" + (f" ({m.function})" if m.role == "tool" and m.function else "")
    lines = [header + note]
    if m.content:
        lines.append(m.content)
    lines.extend(format_tool_call(c) for c in m.tool_calls)
    if m.error:
        lines.append(f"error: {m.error}")
    return "\n".join(lines)


def assistant_view(messages: list[Message]) -> str:
    """The assistant messages only, each under its index in the whole transcript (what a
    planner picks from), tool calls with their full arguments."""
    return "\n\n".join(
        _message_block(i, m) for i, m in enumerate(messages) if m.role == "assistant"
    )


def indexed_view(
    messages: list[Message], *, edited: Iterable[int] = (), last: int | None = None
) -> str:
    """Every message under its index (edited ones marked); with ``last``, only the last N."""
    marks = set(edited)
    start = 0 if last is None else max(0, len(messages) - last)
    blocks = [
        _message_block(i, messages[i], " (edited)" if i in marks else "")
        for i in range(start, len(messages))
    ]
    if start:
        blocks.insert(0, f"[… {start} earlier messages not shown]")
    return "\n\n".join(blocks)


class EditError(ValueError):
    """An edit that cannot be applied (wrong index, non-assistant message, empty result)."""


def replace_message(
    messages: list[Message],
    index: int,
    *,
    content: str,
    tool_arguments: list[Any] | None = None,
) -> list[Message]:
    """A copy of ``messages`` with message ``index`` (an assistant message) rewritten.

    Only ``content`` and the arguments of its tool calls change: every tool call keeps its id
    and function (so every tool result still answers a call that exists), an argument set the
    editor did not give (or gave as something other than a JSON object where the original was
    one) keeps the original. Every other message is the same object as in ``messages``.
    Raises :class:`EditError` for a non-assistant index or an edit that leaves the message
    empty (no text and no tool call).
    """
    if not 0 <= index < len(messages):
        raise EditError(f"message index {index} is out of range (0..{len(messages) - 1})")
    original = messages[index]
    if original.role != "assistant":
        raise EditError(f"message {index} is a {original.role} message, not an assistant one")
    content = content if isinstance(content, str) else ""
    calls: list[ToolCall] = []
    given = list(tool_arguments or [])
    for k, call in enumerate(original.tool_calls):
        args = given[k] if k < len(given) else None
        if isinstance(call.arguments, dict) and not isinstance(args, dict):
            args = None
        if args is not None and not isinstance(args, dict | str):
            args = None
        calls.append(
            call.model_copy(update={"arguments": call.arguments if args is None else args})
        )
    if not content.strip() and not calls:
        raise EditError("the edited message is empty")
    edited = original.model_copy(update={"content": content, "tool_calls": calls}, deep=True)
    out = list(messages)
    out[index] = edited
    return out


def tool_structure_problem(messages: list[Message]) -> str | None:
    """Why the tool-call structure is invalid (a tool result answering no earlier call, a call
    without a function name), or None when it is valid."""
    ids: set[str] = set()
    for i, m in enumerate(messages):
        for call in m.tool_calls:
            if m.role != "assistant":
                return f"message {i}: a {m.role} message carries a tool call"
            if not call.function:
                return f"message {i}: a tool call without a function name"
            if call.id:
                ids.add(call.id)
        if m.role == "tool" and m.tool_call_id and m.tool_call_id not in ids:
            return f"message {i}: tool result for call {m.tool_call_id!r}, which no earlier message made"
    return None


class MessageChanges(TypedDict):
    """What an edit changed in one message: its text before and after, and its tool calls
    (as text) when they changed."""

    original: str
    replacement: str
    original_tool_calls: NotRequired[list[str]]
    replacement_tool_calls: NotRequired[list[str]]


def message_changes(before: Message, after: Message) -> MessageChanges:
    """What an edit changed in one message (its record in a probe's ``meta``)."""
    out = MessageChanges(original=before.content, replacement=after.content)
    if [c.arguments for c in before.tool_calls] != [c.arguments for c in after.tool_calls]:
        out["original_tool_calls"] = [format_tool_call(c) for c in before.tool_calls]
        out["replacement_tool_calls"] = [format_tool_call(c) for c in after.tool_calls]
    return out


# -- preprocessing -----------------------------------------------------------------------------
PositiveInt = Annotated[int, Strict(), Field(ge=1)]


class TranscriptPrep(BaseModel):
    """Preprocessing applied to every transcript when it is loaded, so planners, editors,
    verifiers and judges all see the same messages; part of the data config (and its hash).

    - ``drop_system``: remove system messages;
    - ``tool_output``: ``keep``, ``strip`` (each tool result replaced by an explicit marker) or
      ``cap`` (cut after ``tool_output_chars`` characters, ending with a marker saying how many
      were cut);
    - ``last_turns``: keep the task (messages before the first assistant message) and only the
      last N agent steps, with a system message saying how many steps were removed where they
      were (:func:`steps_marker`).
    """

    model_config = ConfigDict(extra="forbid")

    drop_system: bool = Field(default=False, description="remove system messages")
    tool_output: Literal["keep", "strip", "cap"] = Field(
        default="keep",
        description="tool results kept, replaced by a marker (strip), or cut after "
        "tool_output_chars characters (cap)",
    )
    tool_output_chars: PositiveInt = Field(
        default=2000, description="tool_output: cap — the characters of each tool result kept"
    )
    last_turns: PositiveInt | None = Field(
        default=None, description="keep the task and only the last N agent steps"
    )

    @model_validator(mode="after")
    def _check(self) -> TranscriptPrep:
        if self.tool_output_chars != 2000 and self.tool_output != "cap":
            raise ValueError("tool_output_chars is for tool_output: cap")
        return self

    def apply(self, messages: list[Message]) -> tuple[list[Message], dict[str, int]]:
        """The preprocessed transcript (steps assigned) and counts of what was changed."""
        counts = {"system_dropped": 0, "tool_outputs_changed": 0, "steps_dropped": 0}
        out = with_steps(messages)
        if self.drop_system:
            kept = [m for m in out if m.role != "system"]
            counts["system_dropped"] = len(out) - len(kept)
            out = kept
        if self.last_turns is not None:
            steps = sorted({m.step for m in out if m.step is not None})
            keep_from = steps[-self.last_turns] if len(steps) > self.last_turns else None
            if keep_from is not None:
                counts["steps_dropped"] = len([s for s in steps if s < keep_from])
                out = [m for m in out if m.step is None or m.step >= keep_from]
                # where the steps were, a marker: else the judge reads the task answered by its
                # last steps alone, as if the agent had done nothing before them
                at = next(i for i, m in enumerate(out) if m.step is not None)
                marker = Message(role="system", content=steps_marker(counts["steps_dropped"]))
                out.insert(at, marker)
        if self.tool_output != "keep":
            changed: list[Message] = []
            for m in out:
                text = m.content
                if m.role == "tool" and self.tool_output == "strip" and text:
                    text = TOOL_OUTPUT_REMOVED
                elif m.role == "tool" and len(text) > self.tool_output_chars:
                    cut = len(text) - self.tool_output_chars
                    text = text[: self.tool_output_chars] + cut_marker(cut)
                if text != m.content:
                    counts["tool_outputs_changed"] += 1
                    m = m.model_copy(update={"content": text})
                changed.append(m)
            out = changed
        return out, counts
