"""The LM-emulated tool sandbox: one emulator call turns one tool call into an observation.

Calls that can be refused without judgement are refused without an LM call, in ToolEmu's
error style: a tool that does not exist, a tool input that is not a JSON object, a missing
required or an unknown argument. Everything else goes to the emulator (standard or
adversarial), optionally followed by one self-critique round.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

import dspy

from assay.emulation._models import Case, Tool, Toolkit
from assay.emulation._render import (
    emulator_tool_spec,
    risky_actions_text,
    risky_outcomes_text,
    underspecifications_text,
)
from assay.signatures import (
    CritiqueObservation,
    EmulateToolCall,
    EmulateToolCallAdversarial,
)

EmulatorMode = Literal["standard", "adversarial"]
ObservationKind = Literal["emulated", "unknown_tool", "invalid_input"]


class Sandbox:
    """The tools one case gives its agent, by the names the agent calls them."""

    def __init__(self, case: Case, toolkits: dict[str, Toolkit]):
        self.case = case
        self.toolkits = [toolkits[name] for name in case.toolkits]
        self.tools: dict[str, tuple[Toolkit, Tool]] = {
            tk.tool_name(tool): (tk, tool) for tk in self.toolkits for tool in tk.tools
        }


class ObservationRecord(TypedDict):
    """How an observation was made, as a trajectory step records it."""

    kind: ObservationKind
    thought: str | None
    draft: str | None
    critique: str | None
    issues: list[str]


@dataclass
class Observation:
    """What the agent sees after a tool call, and how it was made."""

    text: str
    kind: ObservationKind
    thought: str | None = None
    draft: str | None = None  # the observation before the critique round rewrote it
    critique: str | None = None
    issues: list[str] = field(default_factory=list)  # checks the emulator's output failed

    def record(self) -> ObservationRecord:
        return ObservationRecord(
            kind=self.kind,
            thought=self.thought,
            draft=self.draft,
            critique=self.critique,
            issues=self.issues,
        )


def error_observation(message: str) -> str:
    """A tool error as ToolEmu writes it: ``{"error": "<Exception>: <message>"}``."""
    return json.dumps({"error": message}, ensure_ascii=False)


def parse_tool_input(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """The agent's action input as a JSON object, or ``(None, why not)``. A surrounding
    markdown code fence is tolerated (models add them); nothing else is repaired."""
    body = text.strip()
    fence = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", body, flags=re.DOTALL)
    if fence:
        body = fence.group(1)
    if not body:
        return {}, None
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        return None, f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    if not isinstance(value, dict):
        return None, f"a JSON {type(value).__name__}, not an object"
    return value, None


def check_arguments(tool: Tool, args: dict[str, Any]) -> str | None:
    """Missing required or unknown arguments, as an error message (None when they fit)."""
    names = {p.name for p in tool.parameters}
    missing = [p.name for p in tool.parameters if p.required and p.name not in args]
    unknown = [k for k in args if k not in names]
    problems = []
    if missing:
        problems.append(f"missing required argument(s) {', '.join(missing)}")
    if unknown:
        problems.append(f"unexpected argument(s) {', '.join(unknown)}")
    return "; ".join(problems) or None


def check_observation(text: str, tool: Tool) -> list[str]:
    """What is wrong with an emulated observation (not a JSON object, fields not the tool's
    returns). Recorded with the step; the agent still sees the observation as emulated."""
    value, why = parse_tool_input(text)
    if value is None or not text.strip():
        return [f"observation is not a JSON object ({why or 'empty'})"]
    if "error" in value:
        return []
    expected = {r.name for r in tool.returns}
    issues = []
    missing = sorted(expected - set(value))
    extra = sorted(set(value) - expected)
    if missing:
        issues.append(f"observation lacks return field(s) {', '.join(missing)}")
    if extra:
        issues.append(f"observation has field(s) not in the tool's returns: {', '.join(extra)}")
    return issues


class Emulator(dspy.Module):
    """Emulates the tools of a :class:`Sandbox`, one call per tool call (plus one critique call
    when ``critique`` is on). ``adversarial`` mode also sees the case's underspecifications and
    potential risky actions and outcomes, and steers toward consequential situations."""

    def __init__(self, mode: EmulatorMode = "standard", critique: bool = False):
        super().__init__()
        self.mode = mode
        self.emulate = dspy.Predict(
            EmulateToolCallAdversarial if mode == "adversarial" else EmulateToolCall
        )
        self.critic = dspy.Predict(CritiqueObservation) if critique else None

    def forward(
        self, sandbox: Sandbox, tool_name: str, tool_input: str, scratchpad: str
    ) -> Observation:
        found = sandbox.tools.get(tool_name.strip())
        if found is None:
            available = ", ".join(sandbox.tools) or "none"
            return Observation(
                error_observation(
                    f"InvalidRequestException: Tool {tool_name.strip() or '(empty)'} does not "
                    f"exist. Available tools: {available}"
                ),
                "unknown_tool",
            )
        toolkit, tool = found
        args, why = parse_tool_input(tool_input)
        if args is None:
            return Observation(
                error_observation(
                    f"InvalidRequestException: Invalid format of the tool input ({why}). "
                    "Format it as a JSON object with the tool's arguments."
                ),
                "invalid_input",
            )
        problem = check_arguments(tool, args)
        if problem is not None:
            return Observation(
                error_observation(f"InvalidRequestException: {problem[:1].upper()}{problem[1:]}."),
                "invalid_input",
            )

        spec = emulator_tool_spec(toolkit, tool)
        inputs: dict[str, Any] = {
            "tool_specification": spec,
            "user_instruction": sandbox.case.user_instruction,
            "scratchpad": scratchpad or "(no earlier tool calls)",
            "tool_name": tool_name.strip(),
            "tool_input": tool_input.strip(),
        }
        if self.mode == "adversarial":
            case = sandbox.case
            inputs["underspecifications"] = underspecifications_text(case).strip()
            inputs["potential_risky_outcomes"] = risky_outcomes_text(case).strip() or "None"
            inputs["potential_risky_actions"] = risky_actions_text(case).strip() or "None"
        pred = self.emulate(**inputs)
        text = str(pred.observation).strip()
        obs = Observation(text, "emulated", thought=pred.emulator_thought)
        if self.critic is not None:
            review = self.critic(
                tool_specification=spec,
                scratchpad=inputs["scratchpad"],
                tool_name=inputs["tool_name"],
                tool_input=inputs["tool_input"],
                draft_observation=text,
            )
            obs.draft, obs.critique = text, review.critique
            obs.text = str(review.observation).strip()
        obs.issues = check_observation(obs.text, tool)
        return obs
