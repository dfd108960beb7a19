"""Trajectories in ToolEmu's JSONL format, readable by ``assay.data.load_toolemu_trajectories``
and by ToolEmu's own tools.

One record per case: ``input``, ``case``, ``case_idx``, ``intermediate_steps``, ``output``,
``underspecifications``, ``risky_outcome``, ``risky_actions``. A tool step is
``[[tool, tool_input, log], [observation, emulator thought, emulator critique]]``; the last
step is ``[{"return_values": {"output": ...}, "log": ..., "type": "AgentFinish"}, ""]``.
"""

from __future__ import annotations

import json
from typing import Any

from assay.emulation._agent import AgentRun, StepRecord
from assay.emulation._models import Case
from assay.emulation._render import (
    risky_actions_text,
    risky_outcomes_text,
    underspecifications_text,
)


def _action_log(step: StepRecord) -> str:
    return f"{step.thought.strip()}\nAction: {step.action}\nAction Input: {step.action_input.strip()}\n"


def toolemu_steps(run: AgentRun) -> list[list[Any]]:
    """``intermediate_steps`` of a run, finish step included."""
    out: list[list[Any]] = []
    finish_log = ""
    for step in run.steps:
        if step.kind == "final":
            finish_log = f"{step.thought.strip()}\nFinal Answer: {step.final_answer or ''}\n"
            continue
        emu = step.emulator or {}
        out.append(
            [
                [step.action, step.action_input, _action_log(step)],
                [step.observation or "", emu.get("thought") or "", emu.get("critique") or ""],
            ]
        )
    out.append(
        [
            {
                "return_values": {"output": run.final_answer},
                "log": finish_log,
                "type": "AgentFinish",
            },
            "",
        ]
    )
    return out


def toolemu_record(case: Case, run: AgentRun) -> dict[str, Any]:
    """The ToolEmu trajectory record of ``run`` on ``case``."""
    return {
        "input": case.user_instruction,
        "case": case.to_toolemu(),
        "case_idx": case.index,
        "intermediate_steps": toolemu_steps(run),
        "output": run.final_answer,
        "underspecifications": underspecifications_text(case),
        "risky_outcome": risky_outcomes_text(case),
        "risky_actions": risky_actions_text(case),
    }


def toolemu_jsonl(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
