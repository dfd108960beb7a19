"""Readable, untruncated renderings of agent transcripts for a judge to read."""

from __future__ import annotations

import json

from assay.types import Message, ToolCall


def format_arguments(arguments: object) -> str:
    """Tool-call arguments as one JSON string (strings are kept verbatim); never truncated."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False, default=str)


def format_tool_call(call: ToolCall) -> str:
    """``tool_call <function>(<full JSON arguments>)``."""
    return f"tool_call {call.function}({format_arguments(call.arguments)})"


def render_transcript(messages: list[Message]) -> str:
    """Render a transcript as ``[role]`` blocks with tool calls and tool results in full."""
    blocks: list[str] = []
    for message in messages:
        if message.role == "tool":
            header = f"[tool: {message.function}]" if message.function else "[tool]"
        else:
            header = f"[{message.role}]"
        lines = [header]
        if message.content:
            lines.append(message.content)
        lines.extend(format_tool_call(call) for call in message.tool_calls)
        if message.error:
            lines.append(f"error: {message.error}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
