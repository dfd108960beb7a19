"""What an agent probe changed: transcripts diffed message by message (the review app), with
the word diffs of :mod:`assay.report`."""

from __future__ import annotations

from dataclasses import dataclass

from assay.data import format_tool_call
from assay.report import Segment, diff_texts
from assay.types import Message


@dataclass(frozen=True)
class MessageDiff:
    """One message of a transcript next to the same position in the other transcript."""

    index: int
    role_source: str | None
    role_probe: str | None
    source: list[Segment]
    probe: list[Segment]

    @property
    def changed(self) -> bool:
        return any(s.kind != "same" for s in self.source + self.probe)


def message_text(message: Message) -> str:
    """A message as a reviewer reads it: content, tool calls with full arguments, error."""
    lines = [message.content] if message.content else []
    lines += [format_tool_call(c) for c in message.tool_calls]
    if message.error:
        lines.append(f"error: {message.error}")
    return "\n".join(lines)


def diff_transcripts(source: list[Message], probe: list[Message]) -> list[MessageDiff]:
    """Per-message diffs, messages paired by position (the editors rewrite messages in place);
    a message only one side has is shown wholly deleted or inserted."""
    out: list[MessageDiff] = []
    for i in range(max(len(source), len(probe))):
        s = source[i] if i < len(source) else None
        p = probe[i] if i < len(probe) else None
        left, right = diff_texts(message_text(s) if s else "", message_text(p) if p else "")
        out.append(MessageDiff(i, s.role if s else None, p.role if p else None, left, right))
    return out
