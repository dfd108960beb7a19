"""``agent_perturbation``: an agent transcript edited, message by message, so that it violates
a rubric criterion (or, for an ordinal criterion, deserves a given lower level).

A planner picks assistant messages and what to change, an editor rewrites one message at a
time (tool calls kept valid), a summarizer keeps a capped account of the conversation, and a
verifier must confirm the violation: a probe is kept only then. Every transcript that yields no
probe is counted with its reason (no assistant message, empty plan, editor failed, verifier
rejected...).
"""

from __future__ import annotations

from assay.programs import Criterion
from assay.reliability._registry import reliability_test
from assay.reliability.probes._agent import AgentTest


@reliability_test("agent_perturbation")
class AgentPerturbation(AgentTest):
    objective_kind = "fail"

    def default_targets(self, criterion: Criterion) -> list[int]:
        """Every level below the highest: each is a violation of some degree."""
        return criterion.scores[:-1]
