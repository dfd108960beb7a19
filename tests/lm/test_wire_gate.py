"""A run's slots of calls in flight, held on the wire (``assay.lm.gate_calls``): the native
client takes a slot around the HTTP exchange alone — so a cache hit takes none, and the calls
the server sees in flight never exceed the slots — and any other engine around its whole call."""

from __future__ import annotations

import threading
from contextlib import contextmanager

import dspy
import pytest

from assay.lm import AssayLM, ScriptedEngine, StubServer, gate_calls, make_adapter, make_lm
from assay.runs import CallSlots
from tests.lm.conftest import Verdict


@pytest.fixture
def json_adapter(memory_cache):
    """DSPy's in-memory cache on, and the JSON adapter (one request per call: the stub answers
    JSON)."""
    with dspy.context(adapter=make_adapter("json")):
        yield


class CountingHold:
    """A ``hold`` for gate_calls that counts how often it was taken and what the server had
    received each time it was (the request is built before the slot is taken)."""

    def __init__(self, stub: StubServer | None = None):
        self.stub = stub
        self.taken = 0
        self.seen_at_take: list[int] = []

    @contextmanager
    def __call__(self):
        self.taken += 1
        if self.stub is not None:
            self.seen_at_take.append(self.stub.n_requests)
        yield


def _program(lm: dspy.LM) -> dspy.Predict:
    program = dspy.Predict(Verdict)
    program.set_lm(lm)
    return program


def test_a_native_call_holds_its_slot_on_the_wire_and_a_cache_hit_holds_none(json_adapter):
    with StubServer(respond=lambda r: '{"verdict": true}') as stub:
        program = _program(make_lm("openai/stub", api_base=stub.base_url))
        hold = CountingHold(stub)
        with gate_calls(hold):
            first = program(answer="Sunlight and water.")
            again = program(answer="Sunlight and water.")  # DSPy's cache: no request
            other = program(answer="No idea.")
        assert first.verdict is True and again.verdict is True and other.verdict is True
        assert stub.n_requests == 2
        assert hold.taken == 2  # one per request sent, none for the cache hit
        assert hold.seen_at_take == [0, 1]  # each taken just before its own request


def test_an_engine_that_does_not_gate_the_wire_holds_the_slot_for_the_whole_call(json_adapter):
    engine = ScriptedEngine(respond=lambda call: {"verdict": True})
    program = _program(AssayLM("scripted/gate", engine=engine))
    hold = CountingHold()
    with gate_calls(hold):
        program(answer="a")
        program(answer="a")  # a cache hit still holds it: the whole call is gated
    assert engine.n_calls == 1
    assert hold.taken == 2


def test_calls_in_flight_never_exceed_the_slots(json_adapter):
    slots = CallSlots(2)
    with StubServer(latency_s=0.05, respond=lambda r: '{"verdict": false}') as stub:
        program = _program(make_lm("openai/stub", api_base=stub.base_url))

        adapter = dspy.settings.adapter

        def worker(k: int) -> None:
            with gate_calls(slots.hold), dspy.context(adapter=adapter):
                for j in range(3):
                    program(answer=f"answer {k}.{j}")

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert stub.n_requests == 24
        assert stub.max_in_flight == 2  # both slots used, never a third
