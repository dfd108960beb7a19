"""Tests for assay.data.render_transcript."""

from __future__ import annotations

import json

from assay.data import render_transcript
from assay.types import Message, ToolCall


def test_roles_tool_calls_and_results():
    messages = [
        Message(role="system", content="Be brief."),
        Message(role="user", content="Find my notes about lunch."),
        Message(
            role="assistant",
            content="Searching.",
            tool_calls=[
                ToolCall(
                    id="c1", function="search_notes", arguments={"query": "lunch", "limit": 3}
                ),
                ToolCall(id="c2", function="clock", arguments={}),
            ],
        ),
        Message(role="tool", content='{"notes": []}', tool_call_id="c1", function="search_notes"),
        Message(role="tool", content="", tool_call_id="c2", function="clock", error="timed out"),
        Message(role="assistant", content="You have no notes about lunch."),
    ]
    assert render_transcript(messages) == (
        "[system]\nBe brief.\n\n"
        "[user]\nFind my notes about lunch.\n\n"
        "[assistant]\nSearching.\n"
        'tool_call search_notes({"query": "lunch", "limit": 3})\n'
        "tool_call clock({})\n\n"
        '[tool: search_notes]\n{"notes": []}\n\n'
        "[tool: clock]\nerror: timed out\n\n"
        "[assistant]\nYou have no notes about lunch."
    )


def test_nothing_is_truncated_and_string_arguments_stay_verbatim():
    long_value = "é" + "x" * 20000
    call = ToolCall(function="write_file", arguments={"path": "a.txt", "text": long_value})
    raw = ToolCall(function="shell", arguments='{"cmd": "ls -la"} trailing text')
    rendered = render_transcript(
        [
            Message(role="assistant", tool_calls=[call, raw]),
            Message(role="tool", content="y" * 30000),
        ]
    )
    args = json.dumps({"path": "a.txt", "text": long_value}, ensure_ascii=False)
    assert f"tool_call write_file({args})" in rendered
    assert 'tool_call shell({"cmd": "ls -la"} trailing text)' in rendered
    assert rendered.endswith("[tool]\n" + "y" * 30000)  # a result without a function name


def test_empty_transcript():
    assert render_transcript([]) == ""
