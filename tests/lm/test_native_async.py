"""The native client's async engine (``await program.acall(...)``, on aiohttp): the same request,
answer, usage and errors as its synchronous engine, on any number of event loops in a row."""

from __future__ import annotations

import asyncio

import dspy
import pytest

from assay.lm import StubServer, TruncatedOutput, make_adapter, make_lm
from assay.lm._http import AsyncHttpEngine
from tests.lm.conftest import Verdict, verdict_for


def _program(stub: StubServer, **settings) -> dspy.Predict:
    program = dspy.Predict(Verdict)
    program.set_lm(make_lm("openai/stub", api_base=stub.base_url, **settings))
    return program


def test_async_calls_send_and_read_what_sync_calls_do():
    answers = ["The sky is blue.", "Sunlight and water.", "No idea."]
    with StubServer(respond=verdict_for) as stub, dspy.context(adapter=make_adapter("json")):
        program = _program(stub, temperature=0.3, seed=7, max_tokens=32)
        assert isinstance(program.lm._async_engine_spec, AsyncHttpEngine)
        with dspy.track_usage() as sync_usage:
            sync = [program(answer=a).verdict for a in answers]
        sync_bodies = list(stub.requests)

        async def judge_all() -> list[bool]:
            preds = await asyncio.gather(*(program.acall(answer=a) for a in answers))
            return [p.verdict for p in preds]

        stub.reset()
        with dspy.track_usage() as async_usage:
            first = asyncio.run(judge_all())
            second = asyncio.run(judge_all())  # a new loop: a new session, same answers
        async_bodies = stub.requests[: len(answers)]
        # each asyncio.run closed its loop's session on the way out: none is left behind
        assert program.lm._async_engine_spec._sessions == {}

    key = lambda b: b["messages"][-1]["content"]  # noqa: E731
    assert sorted(async_bodies, key=key) == sorted(sync_bodies, key=key)
    assert sync_bodies[0]["response_format"] == {"type": "json_object"}
    assert first == second == sync == [False, True, False]
    tokens = lambda u: sum(  # noqa: E731
        v["prompt_tokens"] + v["completion_tokens"] for v in u.get_total_tokens().values()
    )
    assert tokens(async_usage) == 2 * tokens(sync_usage) > 0


def test_async_errors_are_the_sync_errors():
    with (
        StubServer(respond=verdict_for, status_sequence=[400]) as stub,
        dspy.context(adapter=make_adapter("json")),
    ):
        program = _program(stub, retries=0)
        with pytest.raises(Exception) as sync_error:
            program(answer="x")
        stub.status_sequence = [400]
        stub.reset()
        with pytest.raises(Exception) as async_error:
            asyncio.run(program.acall(answer="x"))
    assert type(async_error.value) is type(sync_error.value)
    assert "400" in str(async_error.value) or "invalid" in str(async_error.value).lower()


def test_async_timeout_is_an_lm_timeout():
    with (
        StubServer(respond=verdict_for, latency_s=2.0) as stub,
        dspy.context(adapter=make_adapter("json")),
    ):
        program = _program(stub, timeout=0.3, retries=0)
        with pytest.raises(Exception, match="no answer within 0.3s"):
            asyncio.run(program.acall(answer="x"))


def test_a_cut_verdict_is_truncated_on_both_paths():
    """The strict adapters tell a verdict cut by max_tokens apart (finish_reason "length"),
    awaited or not: the native client's LM notes its finish reasons."""

    def cut(request):
        return '{"verdict": tr'

    with StubServer(respond=cut) as stub, dspy.context(adapter=make_adapter("json")):
        stub_finish = stub._completion

        def length(body, index):
            out = stub_finish(body, index)
            out["choices"][0]["finish_reason"] = "length"
            return out

        stub._completion = length
        program = _program(stub, max_tokens=4, retries=0)
        with pytest.raises(TruncatedOutput):
            program(answer="x")
        with pytest.raises(TruncatedOutput):
            asyncio.run(program.acall(answer="y"))


def test_a_loop_closed_by_hand_leaves_no_session_behind():
    with StubServer(respond=verdict_for) as stub, dspy.context(adapter=make_adapter("json")):
        program = _program(stub)
        engine = program.lm._async_engine_spec
        loop = asyncio.new_event_loop()
        assert loop.run_until_complete(program.acall(answer="Sunlight")).verdict is True
        loop.close()  # without shutting its async generators down: its session stays open
        assert len(engine._sessions) == 1
        assert asyncio.run(program.acall(answer="No idea.")).verdict is False
    assert engine._sessions == {}  # the closed loop's entry dropped, the new one closed
