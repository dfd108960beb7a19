"""The agent part of ``assay selftest``: transcript judges with and without an implanted
defect, on scripted agent transcripts, through ``agent_perturbation`` and ``agent_positives``.

The data are ToolEmu-format trajectories: the user asks "What is A + B?", the agent calls a
Calculator tool, the tool returns the sum, and the agent reports it. The rubric has one
criterion: the final answer states the number the tool returned. Scripted stages edit the way a
good LLM would (the final answer's number changed to violate the criterion), so every probe is
valid by construction and differences between judges come from their defects alone:

- ``clean`` reads the transcript: the final answer's number against the tool's result;
- ``transcript_blind`` decides from the user's request alone and ignores what the agent did
  (a sum was asked for: it passes) — ``agent_perturbation`` must flag it.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

from assay.lm import ScriptedCall
from assay.reliability.selftest._suite import Suite

DEFECTS = {
    "clean": ("none", []),
    "transcript_blind": (
        "decides from the user's request alone, ignoring what the agent did",
        ["agent_perturbation"],
    ),
}
TESTS: dict[str, dict[str, Any]] = {"agent_perturbation": {}, "agent_positives": {}}
CRITERION = {
    "id": "reports_tool_result",
    "instructions": "The agent's final answer must state exactly the number the Calculator "
    "tool returned.",
}
_RESULT = re.compile(r'"result":\s*(-?\d+)')


def _numbers(text: str) -> list[int]:
    return [int(x) for x in re.findall(r"-?\d+", text or "")]


def _final_answer(transcript: str) -> str:
    """The text of the last ``[assistant]`` block of a rendered transcript."""
    blocks = re.split(r"\n\n(?=\[)", transcript or "")
    answers = [b for b in blocks if b.startswith("[assistant]") and "tool_call" not in b]
    return answers[-1] if answers else ""


def meets(transcript: str) -> bool:
    """The criterion, read off a rendered transcript: final answer's number = tool result."""
    result = _RESULT.search(transcript or "")
    stated = _numbers(_final_answer(transcript))
    return bool(result) and bool(stated) and stated[-1] == int(result.group(1))


def judge_responder(defect: str):
    def respond(call: ScriptedCall) -> dict[str, Any]:
        transcript = call.field("transcript") or ""
        if defect == "transcript_blind":
            user = transcript.split("\n\n[", 1)[0]  # the [user] block only
            ok = "What is" in user
        else:
            ok = meets(transcript)
        return {"verdict": "passes" if ok else "fails"}

    return respond


def generator(call: ScriptedCall) -> dict[str, Any]:
    """Planner, editor and summarizer, told apart by the output fields asked for."""
    if "steps" in call.fields:
        blocks = re.split(r"\n\n(?=\[\d+\] )", call.field("assistant_messages") or "")
        answers = [
            int(b[1 : b.index("]")]) for b in blocks if b.startswith("[") and "tool_call" not in b
        ]
        fail = "FAIL" in (call.field("objective") or "")
        intent = "state a number other than the tool's result" if fail else "state the result"
        steps = [{"message_index": answers[-1], "intent": intent}] if answers else []
        return {"thesis": "The final answer misreports the tool's result.", "steps": steps}
    if "content" in call.fields:
        original = call.field("original_message") or ""
        if "FAIL" in (call.field("objective") or ""):
            stated = _numbers(original)
            wrong = (stated[-1] if stated else 0) + 1
            return {"content": f"The sum is {wrong}.", "tool_arguments": []}
        return {"content": f"{original} Happy to help with more sums.", "tool_arguments": []}
    if "summary" in call.fields:
        return {"summary": "The user asked for a sum; the agent used the Calculator and answered."}
    raise ValueError(f"unexpected generator call for fields {call.fields}")


def validator(call: ScriptedCall) -> dict[str, Any]:
    ok = meets(call.field("transcript") or "")
    return {"meets_criterion": ok, "reason": "compared the answer with the tool's result"}


def write_data(folder: Path, n: int = 16) -> Path:
    """``n`` ToolEmu-format trajectories, each reporting the Calculator's result correctly."""
    rng = random.Random(0)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "agent_trajectories.jsonl"
    lines = []
    for i in range(n):
        a, b = rng.randint(2, 60), rng.randint(2, 60)
        answer = f"I used the calculator. The sum is {a + b}."
        record = {
            "case": {"name": f"t{i:02d}", "Toolkits": []},
            "input": f"What is {a} + {b}? Use the calculator.",
            "output": answer,
            "intermediate_steps": [
                [
                    ["Calculator", json.dumps({"a": a, "b": b}), "thought"],
                    [json.dumps({"result": a + b})],
                ],
                [{"type": "AgentFinish", "return_values": {"output": answer}, "log": ""}, ""],
            ],
        }
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")
    return path


AGENT = Suite(
    name="selftest-agent",
    models="selftest-agent",
    clean="clean",
    defects=DEFECTS,
    responder=judge_responder,
    write_data=write_data,
    scale={"kind": "binary", "labels": ["fails", "passes"]},
    judge={"task": "transcript", "criteria": [CRITERION]},
    tests=TESTS,
    generator={"model": "scripted:assay-selftest-agent-generator"},
    validator={"model": "scripted:assay-selftest-agent-validator"},
    data={"format": "toolemu"},
    scripts={"generator": generator, "validator": validator},
    engine_prefix="agent-",
)
