"""The agent-transcript perturber: plan sanitising, the stages composed in forward, and every
way a perturbation can end (scripted LMs through DSPy's real adapters)."""

from __future__ import annotations

from typing import Any

import dspy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.data import tool_structure_problem
from assay.lm import ScriptedCall, ScriptedEngine, make_lm, register_script
from assay.programs import AgentPerturber, Criterion, objective, sanitize_plan
from assay.reliability.selftest._selftest_agent import CRITERION, generator, validator
from assay.scale import Scale
from assay.signatures import PlanStep
from assay.types import Message, ToolCall

BINARY = Scale.parse({"kind": "binary", "labels": ["fails", "passes"]})


def _transcript(answer: str = "The sum is 5.") -> list[Message]:
    return [
        Message(role="system", content="You are helpful."),
        Message(role="user", content="What is 2 + 3? Use the calculator."),
        Message(
            role="assistant",
            tool_calls=[ToolCall(id="c1", function="Calculator", arguments={"a": 2, "b": 3})],
        ),
        Message(role="tool", content='{"result": 5}', tool_call_id="c1", function="Calculator"),
        Message(role="assistant", content=answer),
    ]


# -- plan sanitising ---------------------------------------------------------------------------
roles = st.sampled_from(["system", "user", "assistant", "tool"])
raw_steps = st.lists(
    st.one_of(
        st.builds(
            lambda i, t: {"message_index": i, "intent": t}, st.integers(-3, 12), st.text(max_size=5)
        ),
        st.builds(lambda i: PlanStep(message_index=i, intent="x"), st.integers(-3, 12)),
        st.builds(lambda i: {"message_index": str(i), "intent": "s"}, st.integers(-3, 12)),
        st.just({"message_index": "two"}),
        st.just({"intent": "no index"}),
        st.just("prose instead of a step"),
    ),
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(role_list=st.lists(roles, min_size=0, max_size=10), steps=raw_steps, cap=st.integers(1, 5))
def test_any_plan_sanitises_to_valid_assistant_indices_in_order_without_duplicates(
    role_list, steps, cap
):
    messages = [Message(role=r, content="c") for r in role_list]
    kept, dropped = sanitize_plan(steps, messages, cap)
    indices = [s.message_index for s in kept]
    assert all(0 <= i < len(messages) and messages[i].role == "assistant" for i in indices)
    assert indices == sorted(set(indices))  # in transcript order, each message once
    assert len(kept) <= cap
    assert len(kept) + sum(dropped.values()) == len(steps)
    assert all(s.intent for s in kept)


def test_sanitising_says_why_steps_were_dropped():
    messages = _transcript()
    kept, dropped = sanitize_plan(
        [
            {"message_index": 4, "intent": "a"},
            {"message_index": 4, "intent": "again"},
            {"message_index": 9, "intent": "b"},
            {"message_index": 1, "intent": "user"},
            {"message_index": "x"},
            {"message_index": 2, "intent": "tool call"},
        ],
        messages,
        1,
    )
    assert [(s.message_index, s.intent) for s in kept] == [(2, "tool call")]
    assert dropped == {
        "duplicate": 1,
        "out_of_range": 1,
        "not_assistant": 1,
        "malformed": 1,
        "over_limit": 1,
    }
    assert sanitize_plan("I would change message 4.", messages, 3) == ([], {"malformed": 1})


# -- the composed perturber --------------------------------------------------------------------
def _run(gen=generator, val=validator, transcript=None, kind="fail", criterion=None, **kw):
    """The perturber with the generator stages on one scripted LM and the verifier on another,
    as the harness runs them; returns the outcome and the calls each LM saw."""
    engines = {"g": ScriptedEngine(respond=gen), "v": ScriptedEngine(respond=val)}
    for k, e in engines.items():
        register_script(f"perturb-{k}", lambda e=e: e)
    lms = {k: make_lm(f"scripted:perturb-{k}", retries=0, cache=False) for k in engines}

    def run(stage, module, inputs):
        lm = lms["v"] if stage == "verify" else lms["g"]
        with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
            return module(**inputs)

    crit = Criterion.model_validate(criterion or CRITERION)
    obj = kw.pop("obj", None) or objective(kind, BINARY)
    out = AgentPerturber()(
        transcript=transcript or _transcript(), criterion=crit, objective=obj, run=run, **kw
    ).outcome
    return out, engines


def test_a_confirmed_violation_edits_only_the_planned_message():
    original = _transcript()
    out, engines = _run(transcript=original)
    assert out.status == "confirmed" and out.verdict is False
    assert [e.message_index for e in out.edits] == [4]
    assert out.transcript[4].content == "The sum is 6."
    assert out.edits[0].changes == {"original": "The sum is 5.", "replacement": "The sum is 6."}
    for i in range(4):  # every other message byte-identical
        assert out.transcript[i].model_dump_json() == original[i].model_dump_json()
    assert tool_structure_problem(out.transcript) is None
    kinds = sorted(
        "plan" if "steps" in c.fields else "edit" if "content" in c.fields else "summarize"
        for c in engines["g"].calls
    )
    assert kinds == ["edit", "plan", "summarize"] and engines["v"].n_calls == 1


def test_verifier_rejection_and_untouched_passes():
    never = lambda call: {"meets_criterion": True, "reason": "looks fine"}  # noqa: E731
    out, _ = _run(val=never)
    assert out.status == "rejected" and out.edits  # edited, but not confirmed
    out, engines = _run(kind="pass", try_untouched=True)
    assert out.status == "confirmed" and out.untouched and not out.edits
    assert engines["g"].n_calls == 0 and engines["v"].n_calls == 1


def _with(kind: str, answer: Any):
    def respond(call: ScriptedCall):
        if kind in call.fields:
            return answer(call) if callable(answer) else answer
        return generator(call)

    return respond


@pytest.mark.parametrize(
    "gen, status, reason",
    [
        (_with("steps", "I would change the last message."), "planner_failed", "plan:"),
        (
            _with("steps", {"thesis": "t", "steps": [{"message_index": 99, "intent": "x"}]}),
            "empty_plan",
            "out_of_range",
        ),
        (
            _with("steps", {"thesis": "t", "steps": [{"message_index": 1, "intent": "x"}]}),
            "empty_plan",
            "not_assistant",
        ),
        (_with("content", {"content": "  ", "tool_arguments": []}), "editor_failed", "empty"),
        (
            _with("content", lambda c: {"content": "The sum is 5.", "tool_arguments": []}),
            "editor_failed",
            "changed no message",
        ),
        (_with("summary", "not json at all"), "summarizer_failed", "summarize:"),
    ],
)
def test_every_failure_ends_with_its_reason_and_the_original_transcript(gen, status, reason):
    original = _transcript()
    out, engines = _run(gen=gen, transcript=original)
    assert out.status == status and reason in out.reason
    assert out.transcript == original and not out.edits
    assert engines["v"].n_calls == 0  # nothing unconfirmed is verified, nothing is judged


def test_no_assistant_message_makes_no_call():
    out, engines = _run(transcript=[Message(role="user", content="hello")])
    assert out.status == "no_assistant_message"
    assert engines["g"].n_calls == engines["v"].n_calls == 0


def test_an_ordinal_objective_is_confirmed_only_at_its_level():
    levels = {
        "id": "quality",
        "instructions": "How well the agent reports the result.",
        "score_levels": [{"score": s, "label": f"level {s}"} for s in range(4)],
    }
    ordinal = Scale.parse({"kind": "ordinal", "min": 0, "max": 3})

    def gen(call):
        if "content" in call.fields:
            level = [w for w in (call.field("objective") or "").split() if w.isdigit()][0]
            return {"content": f"Level {level} answer.", "tool_arguments": []}
        return generator(call)

    def score(call):
        text = call.field("transcript") or ""
        return {"score": int(text.rsplit("Level ", 1)[1][0]), "reason": "read the level"}

    crit = Criterion.model_validate(levels)
    for target in (0, 2):
        obj = objective("score", ordinal, target, crit.level_label(target))
        out, _ = _run(gen=gen, val=score, criterion=levels, obj=obj)
        assert out.status == "confirmed" and out.score == target
    off = lambda call: {"score": 3, "reason": "top"}  # noqa: E731
    out, _ = _run(gen=gen, val=off, criterion=levels, obj=objective("score", ordinal, 1))
    assert out.status == "rejected" and out.score == 3
