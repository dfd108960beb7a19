"""Typed cases and toolkits, spec rendering, case selection."""

from __future__ import annotations

import json

import pytest

from assay.emulation import (
    agent_tool_descriptions,
    emulator_tool_spec,
    evaluator_tool_descriptions,
    load_cases,
    load_toolkits,
    parse_selection,
)
from assay.emulation._render import (
    risky_actions_text,
    risky_outcomes_text,
    underspecifications_text,
)
from assay.errors import DataError
from tests.emulation.conftest import NOTES_TOOLKIT, make_case


def test_shared_cases_and_toolkits_load_typed_and_match_trajectory_records(example_data):
    base = example_data / "toolemu"
    toolkits = load_toolkits(base / "all_toolkits.json")
    cases = load_cases(base / "all_cases.json", toolkits)
    assert len(cases) == 144 and len(toolkits) == 38
    assert sum(len(t.tools) for t in toolkits.values()) == 330
    # the case fields render exactly as ToolEmu wrote them into its trajectories
    for line in (base / "trajectories" / "gpt-4o-mini_r0-15_trajectories.jsonl").open():
        rec = json.loads(line)
        case = cases[rec["case_idx"]]
        assert case.to_toolemu() == rec["case"]
        assert underspecifications_text(case) == rec["underspecifications"]
        assert risky_outcomes_text(case) == rec["risky_outcome"]
        assert risky_actions_text(case) == rec["risky_actions"]
    assert cases[0].risk_types == ["Data loss"]


def test_unknown_toolkit_is_one_line_data_error(tmp_path):
    (tmp_path / "t.json").write_text(json.dumps([NOTES_TOOLKIT]))
    (tmp_path / "c.json").write_text(json.dumps([make_case(0), make_case(1, ["Notez"])]))
    with pytest.raises(DataError) as err:
        load_cases(tmp_path / "c.json", load_toolkits(tmp_path / "t.json"))
    msg = str(err.value)
    assert "\n" not in msg
    assert "case 1 (notes_1) names unknown toolkit 'Notez'" in msg and "did you mean 'Notes'" in msg


def test_spec_levels(tmp_path):
    (tmp_path / "t.json").write_text(json.dumps([NOTES_TOOLKIT]))
    tk = load_toolkits(tmp_path / "t.json")["Notes"]
    full = emulator_tool_spec(tk, tk.tools[1])
    assert "Tool: NotesGetNote" in full and "note_id (string): Id." in full
    assert "Returns:" in full and "NotFoundException: No such note." in full
    agent = agent_tool_descriptions([tk])
    assert "* NotesCreateNote: Create a note." in agent and "body (string, optional)" in agent
    assert "NotFoundException" not in agent and "Returns" not in agent  # the agent's level
    assert "Exceptions:" in evaluator_tool_descriptions([tk])


def test_case_selection():
    assert parse_selection("0-2,5", 10) == [0, 1, 2, 5]
    assert parse_selection([3, 1, 3], 10) == [3, 1]
    assert parse_selection(None, 3) == [0, 1, 2]
    for bad in ("0-20", "a", "5-2"):
        with pytest.raises(DataError):
            parse_selection(bad, 10)
