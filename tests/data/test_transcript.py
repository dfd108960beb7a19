"""The common transcript model: ToolEmu and Inspect read into it, one-message edits that keep
every other message byte-identical and every tool call valid, and the preprocessors."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.data import (
    TOOL_OUTPUT_REMOVED,
    EditError,
    TranscriptPrep,
    assistant_indices,
    assistant_view,
    load_inspect_log,
    load_toolemu_trajectories,
    replace_message,
    tool_structure_problem,
    toolemu_transcript,
)
from assay.errors import DataError
from assay.types import Message, ToolCall


def _toolemu(example_data):
    return load_toolemu_trajectories(
        example_data / "toolemu" / "trajectories" / "gpt-4o-mini_r0-15_trajectories.jsonl"
    )


def _agentharm(example_data):
    return load_inspect_log(example_data / "jrh" / "agentharm" / "agentharm.eval")


def test_toolemu_trajectories_become_transcripts_with_tool_calls_and_results(example_data):
    items = _toolemu(example_data)
    assert len(items) == 15
    for item in items:
        t = item.transcript
        assert t and t[0].role == "user" and t[0].content == item.request
        assert t[-1].role == "assistant" and t[-1].content == item.response
        assert tool_structure_problem(t) is None
        calls = [c for m in t for c in m.tool_calls]
        results = [m for m in t if m.role == "tool"]
        assert len(calls) == len(results) == sum(1 for s in item.meta["intermediate_steps"]) - 1
        for m in t:
            if m.role == "assistant" and m.tool_calls:
                assert m.content == ""  # the agent's private thoughts are left out
        assert [m.step for m in t if m.role == "assistant"] == list(
            range(len(assistant_indices(t)))
        )
    first = items[0].transcript
    assert first[1].tool_calls[0].arguments == {"keywords": "Test"}
    assert first[2].tool_call_id == first[1].tool_calls[0].id and first[2].step == 0


def test_an_unreadable_toolemu_step_names_the_step():
    with pytest.raises(ValueError, match="step 1: unrecognised intermediate step"):
        toolemu_transcript("q", [42])


def test_inspect_transcripts_have_steps(example_data):
    for item in _agentharm(example_data):
        t = item.transcript
        assert [m.step for m in t[:2]] == [None, None]  # system prompt and the task
        assert all(m.step is not None for m in t[2:])


def test_an_unsupported_inspect_log_version_names_the_field(tmp_path, example_data):
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(example_data / "jrh" / "agentharm" / "agentharm.eval"))
    path = tmp_path / "log.json"
    write_eval_log(log, str(path))
    data = json.loads(path.read_text())
    data["version"] = 99
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match=r"field 'version': .*version 99 is not supported") as err:
        load_inspect_log(path)
    assert "\n" not in str(err.value) and str(path) in str(err.value)


# -- edits -------------------------------------------------------------------------------------
def _dump(messages: list[Message]) -> list[str]:
    return [m.model_dump_json() for m in messages]


def test_an_edit_changes_one_message_and_keeps_the_tool_call_structure(example_data):
    item = next(i for i in _agentharm(example_data) if i.id == "37-3")
    t = item.transcript
    i = next(k for k in assistant_indices(t) if t[k].tool_calls)
    edited = replace_message(t, i, content="On it.", tool_arguments=[{"x": 1}, {"extra": 2}])
    before, after = _dump(t), _dump(edited)
    assert [k for k in range(len(t)) if before[k] != after[k]] == [i]
    assert edited[i].content == "On it."
    assert [(c.id, c.function) for c in edited[i].tool_calls] == [
        (c.id, c.function) for c in t[i].tool_calls
    ]
    assert edited[i].tool_calls[0].arguments == {"x": 1}
    assert tool_structure_problem(edited) is None
    # arguments that are not a JSON object keep the original
    kept = replace_message(t, i, content="x", tool_arguments=["not an object"])
    assert kept[i].tool_calls[0].arguments == t[i].tool_calls[0].arguments


def test_edits_that_cannot_be_applied_are_refused():
    t = [
        Message(role="user", content="q"),
        Message(role="assistant", content="a"),
        Message(role="tool", content="r", tool_call_id="x"),
    ]
    with pytest.raises(EditError, match="out of range"):
        replace_message(t, 7, content="b")
    with pytest.raises(EditError, match="user message, not an assistant"):
        replace_message(t, 0, content="b")
    with pytest.raises(EditError, match="empty"):
        replace_message(t, 1, content="   ")
    assert "no earlier message made" in tool_structure_problem(t)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_sequence_of_edits_keeps_untouched_messages_identical_and_tool_calls_valid(data):
    n_steps = data.draw(st.integers(1, 5))
    t = [Message(role="system", content="sys"), Message(role="user", content="task")]
    for k in range(n_steps):
        calls = [
            ToolCall(id=f"c{k}.{j}", function=f"f{j}", arguments={"a": j})
            for j in range(data.draw(st.integers(0, 2)))
        ]
        t.append(
            Message(role="assistant", content=data.draw(st.text(max_size=5)), tool_calls=calls)
        )
        t += [
            Message(role="tool", content="ok", tool_call_id=c.id, function=c.function)
            for c in calls
        ]
    original = _dump(t)
    current, touched = t, set()
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(-1, len(t)))
        args = data.draw(
            st.lists(
                st.one_of(
                    st.none(),
                    st.integers(),
                    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
                ),
                max_size=3,
            )
        )
        try:
            current = replace_message(
                current, i, content=data.draw(st.text(max_size=8)), tool_arguments=args
            )
        except EditError:
            continue
        touched.add(i)
    assert len(current) == len(t)
    now = _dump(current)
    assert all(now[k] == original[k] for k in range(len(t)) if k not in touched)
    assert tool_structure_problem(current) is None
    assert [m.role for m in current] == [m.role for m in t]


def test_the_assistant_view_shows_indices_of_the_whole_transcript(example_data):
    item = next(i for i in _agentharm(example_data) if i.id == "2-2")
    view = assistant_view(item.transcript)
    for k in assistant_indices(item.transcript):
        assert f"[{k}] assistant" in view
    assert "[0] system" not in view and "[1] user" not in view


# -- preprocessing -----------------------------------------------------------------------------
def test_preprocessors_drop_system_strip_or_cap_tool_output_with_a_marker(example_data):
    item = next(i for i in _agentharm(example_data) if i.id == "37-3")
    t = item.transcript
    out, counts = TranscriptPrep(drop_system=True).apply(t)
    assert counts["system_dropped"] == 1 and all(m.role != "system" for m in out)
    out, counts = TranscriptPrep(tool_output="strip").apply(t)
    assert all(m.content in ("", TOOL_OUTPUT_REMOVED) for m in out if m.role == "tool")
    assert counts["tool_outputs_changed"] == sum(1 for m in t if m.role == "tool" and m.content)
    out, _ = TranscriptPrep(tool_output="cap", tool_output_chars=50).apply(t)
    long = max((m for m in t if m.role == "tool"), key=lambda m: len(m.content))
    capped = out[t.index(long)]
    assert capped.content.startswith(long.content[:50])
    assert f"{len(long.content) - 50} more characters of tool output cut" in capped.content


def test_last_turns_keeps_the_task_and_the_last_steps_whole(example_data):
    item = next(i for i in _agentharm(example_data) if i.id == "37-3")
    out, counts = TranscriptPrep(last_turns=2).apply(item.transcript)
    assert [m.role for m in out[:2]] == ["system", "user"]
    assert sorted({m.step for m in out if m.step is not None}) == [4, 5]
    assert counts["steps_dropped"] == 4
    assert tool_structure_problem(out) is None
    assert out[-1].content == item.transcript[-1].content


def test_the_steps_last_turns_removed_are_marked_where_they_were(example_data):
    """``last_turns`` cut the earlier steps with nothing in their place: the judge read the
    task answered by the last steps alone, as if the agent had done nothing before them (the
    count was in the item's meta, which no judge reads). A system message says how many."""
    from assay.data import render_transcript

    item = next(i for i in _agentharm(example_data) if i.id == "37-3")
    out, counts = TranscriptPrep(last_turns=2).apply(item.transcript)
    assert counts["steps_dropped"] == 4
    marker = out[2]
    assert (marker.role, marker.content, marker.step) == (
        "system",
        "[… 4 earlier agent steps removed by preprocessing]",
        None,
    )
    assert out[3].step == 4 and [m.role for m in out[:2]] == ["system", "user"]
    assert "[system]\n[… 4 earlier agent steps removed by preprocessing]" in render_transcript(out)
    out, counts = TranscriptPrep(last_turns=10).apply(item.transcript)  # nothing cut: no marker
    assert counts["steps_dropped"] == 0 and len(out) == len(item.transcript)


def test_preprocessing_is_part_of_the_data_config(tmp_path, example_data):
    from assay.inputs._config import DataConfig
    from assay.inputs._items import load_items
    from assay.scale import Scale

    scale = Scale.parse({"kind": "binary", "labels": ["fails", "passes"]})
    path = str(example_data / "jrh" / "agentharm" / "agentharm.eval")
    plain = load_items(DataConfig(path=path, format="inspect"), scale)
    prepped = load_items(
        DataConfig(path=path, format="inspect", transcript={"drop_system": True}), scale
    )
    assert all(m.role != "system" for it in prepped for m in it.transcript)
    assert prepped[0].meta["transcript_prep"] == {"system_dropped": 1}
    assert "transcript_prep" not in plain[0].meta
    with pytest.raises(ValueError, match="tool_output"):
        DataConfig(path=path, transcript={"tool_output": "hide"})
