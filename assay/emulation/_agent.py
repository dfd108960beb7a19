"""The agent under test: a ReAct-style DSPy program calling the emulated tools of a case.

Each step is one LM call (thought → action → action input, or a final answer); each tool call
is answered by the :class:`Emulator`. At most ``max_steps`` agent steps: an agent that has not
finished by then is stopped, and its trajectory is marked so (it is still evaluated). An agent
answer that cannot be parsed becomes an ``Invalid Format`` observation, as in LangChain's
ReAct loop that ToolEmu ran on, and costs a step.
"""

from __future__ import annotations

import time
from typing import Any, Literal

import dspy
from pydantic import BaseModel, Field

from assay.emulation._emulator import Emulator, Sandbox
from assay.emulation._render import agent_tool_descriptions
from assay.lm import TruncatedOutput, make_adapter, usage_of_tracker
from assay.signatures import FINAL_ANSWER, AgentStep
from assay.types import Usage

STEP_LIMIT_OUTPUT = "Agent stopped: step limit exceeded"
"""The final output of a trajectory whose agent did not finish in ``max_steps`` (ToolEmu writes
``Agent stopped: token limit exceeded`` for its own limit)."""

INVALID_ACTION = "_Exception"
"""The action name a step gets when the agent's answer could not be parsed (LangChain's)."""

Price = tuple[float, float] | None


class StepRecord(BaseModel):
    """One agent step: what the agent said, what the sandbox answered, what it cost."""

    index: int
    kind: Literal["tool", "final", "invalid_output"]
    thought: str = ""
    action: str = ""
    action_input: str = ""
    observation: str | None = None
    final_answer: str | None = None
    emulator: dict[str, Any] | None = None  # how the observation was made (mode, kind, issues...)
    agent_usage: Usage = Field(default_factory=Usage)
    emulator_usage: Usage = Field(default_factory=Usage)
    error: str | None = None
    latency_s: float = 0.0


class AgentRun(BaseModel):
    steps: list[StepRecord]
    final_answer: str
    stopped: Literal["final_answer", "step_limit"]


def is_final(action: str) -> bool:
    return action.strip().strip(":").strip().lower().replace("_", " ") in ("final answer", "finish")


def agent_scratchpad(steps: list[StepRecord]) -> str:
    """The agent's own view of its earlier steps: thoughts, actions, inputs, observations."""
    blocks = []
    for s in steps:
        if s.kind == "final":
            continue
        blocks.append(
            f"Thought: {s.thought.strip()}\nAction: {s.action.strip()}\n"
            f"Action Input: {s.action_input.strip()}\nObservation: {s.observation or ''}"
        )
    return "\n\n".join(blocks) or "(nothing yet)"


def emulator_scratchpad(steps: list[StepRecord]) -> str:
    """The sandbox history the emulator keeps consistent with: actions, inputs, observations."""
    return "\n\n".join(
        f"Action: {s.action.strip()}\nAction Input: {s.action_input.strip()}\n"
        f"Observation: {s.observation or ''}"
        for s in steps
        if s.kind == "tool"
    )


class ToolAgent(dspy.Module):
    """The agent program plus the emulator that answers its tool calls.

    ``run`` appends each finished step to ``steps`` as it goes, so a caller that catches a
    crash still holds every step made before it.
    """

    def __init__(
        self,
        emulator: Emulator,
        *,
        max_steps: int = 15,
        agent_adapter: str = "json",
        emulator_adapter: str = "json",
        agent_price: Price = None,
        emulator_price: Price = None,
    ):
        super().__init__()
        self.step = dspy.Predict(AgentStep)
        self.emulator = emulator
        self.max_steps = max_steps
        self._adapters = (agent_adapter, emulator_adapter)
        self._prices = (agent_price, emulator_price)

    def run(self, sandbox: Sandbox, steps: list[StepRecord] | None = None) -> AgentRun:
        from dspy.utils.exceptions import AdapterParseError

        steps = [] if steps is None else steps
        descriptions = agent_tool_descriptions(sandbox.toolkits)
        for n in range(self.max_steps):
            start = time.perf_counter()
            with (
                dspy.context(adapter=make_adapter(self._adapters[0])),
                dspy.track_usage() as tracker,
            ):
                try:
                    pred = self.step(
                        user_instruction=sandbox.case.user_instruction,
                        tool_descriptions=descriptions,
                        scratchpad=agent_scratchpad(steps),
                    )
                except (AdapterParseError, TruncatedOutput) as exc:  # the agent is asked again
                    pred, parse_error = None, exc
            agent_usage = usage_of_tracker(tracker, self._prices[0])
            if pred is None:
                raw = str(getattr(parse_error, "lm_response", "") or "")
                steps.append(
                    StepRecord(
                        index=n,
                        kind="invalid_output",
                        action=INVALID_ACTION,
                        action_input=raw,
                        observation=(
                            "Invalid Format: the response could not be read. Give a thought, "
                            f"an action (a tool name or '{FINAL_ANSWER}') and an action input "
                            "(a JSON object)."
                        ),
                        agent_usage=agent_usage,
                        error=f"{type(parse_error).__name__}: {parse_error}"[:2000],
                        latency_s=round(time.perf_counter() - start, 4),
                    )
                )
                continue
            thought, action = str(pred.thought or ""), str(pred.action or "").strip()
            action_input = str(pred.action_input or "")
            if is_final(action):
                answer = str(pred.final_answer or "").strip()
                steps.append(
                    StepRecord(
                        index=n,
                        kind="final",
                        thought=thought,
                        action=FINAL_ANSWER,
                        final_answer=answer,
                        agent_usage=agent_usage,
                        latency_s=round(time.perf_counter() - start, 4),
                    )
                )
                return AgentRun(steps=steps, final_answer=answer, stopped="final_answer")
            with (
                dspy.context(adapter=make_adapter(self._adapters[1])),
                dspy.track_usage() as tracker,
            ):
                obs = self.emulator(sandbox, action, action_input, emulator_scratchpad(steps))
            steps.append(
                StepRecord(
                    index=n,
                    kind="tool",
                    thought=thought,
                    action=action,
                    action_input=action_input,
                    observation=obs.text,
                    emulator={"mode": self.emulator.mode, **obs.record()},
                    agent_usage=agent_usage,
                    emulator_usage=usage_of_tracker(tracker, self._prices[1]),
                    latency_s=round(time.perf_counter() - start, 4),
                )
            )
        return AgentRun(steps=steps, final_answer=STEP_LIMIT_OUTPUT, stopped="step_limit")
