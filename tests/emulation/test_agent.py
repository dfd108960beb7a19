"""The agent over the emulated sandbox: a known trajectory, state, refusals, the step limit."""

from __future__ import annotations

import json

from assay.data import load_toolemu_trajectories, render_toolemu_scratchpad
from assay.emulation import STEP_LIMIT_OUTPUT, run_toolemu
from tests.emulation.conftest import agent_plan


def _steps(item):
    """(action, input, observation) per tool step of a trajectory read back by the shared loader."""
    out = []
    for step in item.meta["intermediate_steps"]:
        if isinstance(step[0], list):
            out.append((step[0][0], step[0][1], step[1][0]))
    return out


def test_three_step_trajectory_round_trips_through_the_shared_loader(
    tmp_path, sandbox_files, roles
):
    cfg = roles.config(*sandbox_files, select="0")
    res = run_toolemu(cfg, workdir=tmp_path, progress=False)
    assert res.new_trajectories == 1 and not res.crashed
    assert roles.calls() == {"agent": 4, "emulator": 3, "evaluator": 3}

    [item] = load_toolemu_trajectories(res.run_dir / "trajectories.jsonl")
    assert item.id == "notes_0" and item.meta["case_idx"] == 0
    assert _steps(item) == [
        ("NotesCreateNote", '{"title": "Groceries"}', '{"note_id": "n-481"}'),
        (
            "NotesGetNote",
            '{"note_id": "n-481"}',
            json.dumps({"note": {"id": "n-481", "title": "Groceries", "body": ""}}),
        ),
        ("NotesDeleteNote", '{"note_id": "n-481"}', '{"success": true}'),
    ]
    assert item.response == "Created, read and deleted note n-481."
    record = json.loads((res.run_dir / "trajectories.jsonl").read_text())
    assert set(record) == {
        "input",
        "case",
        "case_idx",
        "intermediate_steps",
        "output",
        "underspecifications",
        "risky_outcome",
        "risky_actions",
    }
    assert record["intermediate_steps"][-1][0]["type"] == "AgentFinish"
    pad = render_toolemu_scratchpad(item)
    assert "step 0" not in pad  # the evaluators do not see the agent's thoughts
    assert pad.endswith("Final Answer: Created, read and deleted note n-481.")

    # the emulator kept state: the id created at step 1 was in its prompt at step 2, and came back
    second = roles.engines["emulator"].calls[1]
    assert second.field("tool_name") == "NotesGetNote"
    assert '{"note_id": "n-481"}' in second.field("scratchpad")
    assert "n-481" in _steps(item)[1][2]

    # assay's own per-step records: usage per role, emulator mode
    unit = json.loads((res.run_dir / "units.jsonl").read_text())
    assert unit["status"] == "ok" and unit["emulator_mode"] == "standard"
    assert [s["kind"] for s in unit["steps"]] == ["tool", "tool", "tool", "final"]
    assert unit["usage"]["agent"]["calls"] == 4 and unit["usage"]["emulator"]["calls"] == 3
    assert all(s["agent_usage"]["prompt_tokens"] > 0 for s in unit["steps"])


def test_unknown_tool_and_malformed_input_become_observations_and_the_run_goes_on(
    tmp_path, sandbox_files, roles
):
    roles.set(
        "agent",
        agent_plan(
            [
                ("NotesShareNote", '{"note_id": "n-1"}'),
                ("NotesCreateNote", "{title: Groceries"),
                ("NotesCreateNote", '{"title": "Groceries"}'),
                ("Final Answer", "done"),
            ]
        ),
    )
    res = run_toolemu(roles.config(*sandbox_files, select="0"), workdir=tmp_path, progress=False)
    assert roles.calls()["emulator"] == 1  # only the valid call reached the emulator
    [item] = load_toolemu_trajectories(res.run_dir / "trajectories.jsonl")
    obs = [json.loads(s[2]) for s in _steps(item)]
    assert obs[0]["error"].startswith("InvalidRequestException: Tool NotesShareNote does not exist")
    assert obs[1]["error"].startswith("InvalidRequestException: Invalid format")
    assert obs[2] == {"note_id": "n-481"} and item.response == "done"
    t = res.summary.trajectories
    assert (t.unknown_tool_calls, t.invalid_tool_inputs, t.tool_calls) == (1, 1, 3)


def test_agent_that_never_finishes_is_stopped_marked_and_still_evaluated(
    tmp_path, sandbox_files, roles
):
    roles.set("agent", agent_plan([("NotesGetNote", '{"note_id": "n-481"}')]))
    cfg = roles.config(*sandbox_files, select="0", agent={"max_steps": 3})
    res = run_toolemu(cfg, workdir=tmp_path, progress=False)
    assert roles.calls()["agent"] == 3
    [item] = load_toolemu_trajectories(res.run_dir / "trajectories.jsonl")
    assert item.response == STEP_LIMIT_OUTPUT and len(_steps(item)) == 3
    assert res.summary.trajectories.stopped_at_step_limit == 1
    ev = res.summary.evaluators["ev"]
    assert ev.safety.n_scored == 1 and ev.helpfulness.n_scored == 1
    evaluated = roles.engines["evaluator"].calls[0]
    assert STEP_LIMIT_OUTPUT in evaluated.field("scratchpad")


def test_unreadable_agent_output_costs_a_step_and_is_shown_to_the_agent(
    tmp_path, sandbox_files, roles
):
    def respond(call):
        if "Invalid Format" in (call.field("scratchpad") or ""):
            return {
                "thought": "ok",
                "action": "Final Answer",
                "action_input": "{}",
                "final_answer": "x",
            }
        return "this is not JSON at all"

    roles.set("agent", respond)
    res = run_toolemu(roles.config(*sandbox_files, select="0"), workdir=tmp_path, progress=False)
    assert res.summary.trajectories.invalid_agent_outputs == 1
    [item] = load_toolemu_trajectories(res.run_dir / "trajectories.jsonl")
    assert item.response == "x" and _steps(item)[0][0] == "_Exception"
