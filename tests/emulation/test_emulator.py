"""The emulator: state across steps, refusals without an LM call, spec checks."""

from __future__ import annotations

import json

import dspy

from assay.emulation import Emulator, Sandbox, load_cases, load_toolkits
from assay.lm import ScriptedEngine
from tests.emulation.conftest import NOTES_TOOLKIT, make_case, notes_emulator


def _sandbox(tmp_path):
    (tmp_path / "t.json").write_text(json.dumps([NOTES_TOOLKIT]))
    (tmp_path / "c.json").write_text(json.dumps([make_case(0)]))
    toolkits = load_toolkits(tmp_path / "t.json")
    return Sandbox(load_cases(tmp_path / "c.json", toolkits)[0], toolkits)


def _emulator(respond, **kw):
    engine = ScriptedEngine(respond=respond)
    emu = Emulator(**kw)
    emu.set_lm(dspy.LM("scripted/emu", engine=engine, num_retries=0))
    return emu, engine


def test_refusals_need_no_lm_call(tmp_path):
    sandbox = _sandbox(tmp_path)
    emu, engine = _emulator(notes_emulator)
    with dspy.context(adapter=dspy.JSONAdapter()):
        unknown = emu(sandbox, "NotesShareNote", '{"note_id": "n-1"}', "")
        malformed = emu(sandbox, "NotesGetNote", '{"note_id": n-1', "")
        not_object = emu(sandbox, "NotesGetNote", '["n-1"]', "")
        missing = emu(sandbox, "NotesGetNote", '{"id": "n-1"}', "")
    assert engine.n_calls == 0
    assert unknown.kind == "unknown_tool"
    assert json.loads(unknown.text) == {
        "error": "InvalidRequestException: Tool NotesShareNote does not exist. Available tools: "
        "NotesCreateNote, NotesGetNote, NotesDeleteNote"
    }
    for obs in (malformed, not_object):
        assert obs.kind == "invalid_input"
        assert json.loads(obs.text)["error"].startswith(
            "InvalidRequestException: Invalid format of the tool input"
        )
    assert "missing required argument(s) note_id" in missing.text.lower()
    assert "unexpected argument(s) id" in missing.text.lower()


def test_adversarial_mode_sees_the_case_risks_and_critique_rewrites(tmp_path):
    sandbox = _sandbox(tmp_path)
    seen = []

    def respond(call):
        seen.append(call)
        if "draft_observation" in call.prompt and call.field("draft_observation") is not None:
            return {"critique": "missing body", "observation": '{"note_id": "n-9"}'}
        return {"emulator_thought": "t", "observation": '{"note_id": "n-9", "extra": 1}'}

    emu, engine = _emulator(respond, mode="adversarial", critique=True)
    with dspy.context(adapter=dspy.JSONAdapter()):
        obs = emu(sandbox, "NotesCreateNote", '{"title": "x"}', "")
    assert engine.n_calls == 2
    assert "did not say which notes must be kept" in seen[0].field("underspecifications")
    assert "Data loss: deleting a note" in seen[0].field("potential_risky_outcomes")
    assert obs.draft == '{"note_id": "n-9", "extra": 1}' and obs.critique == "missing body"
    assert obs.text == '{"note_id": "n-9"}' and obs.issues == []


def test_observation_checks_are_recorded(tmp_path):
    sandbox = _sandbox(tmp_path)
    emu, _ = _emulator(lambda call: {"emulator_thought": "t", "observation": "all good!"})
    with dspy.context(adapter=dspy.JSONAdapter()):
        obs = emu(sandbox, "NotesCreateNote", '{"title": "x"}', "")
    assert obs.kind == "emulated" and obs.text == "all good!"
    assert obs.issues and "not a JSON object" in obs.issues[0]
