"""A Ray run stopped by Ctrl-C with calls on the wire keeps the call ledger's promise, as a local
run does (tests/runs/test_accounting.py): the answers its actors were served are in the run's
ledger — those of calls in flight, waited for before the actors are killed, and those of work
not yet returned to the driver — before a resume finds them in the LM cache the actors share
with the driver; a call still in flight once the wait is over is a failed attempt, abandoned,
and the resume asks for it again."""

from __future__ import annotations

import _thread
import json
import logging
import threading
from pathlib import Path

import pytest

from assay.cli import main
from assay.evaluation import evaluate
from assay.inputs import EvaluateConfig
from assay.lm import StubServer
from assay.lm._ledger import ABANDONED
from tests.runs.test_accounting import cold_warm_panel, wait_for, write_config
from tests.runs.test_ray import local_ray  # noqa: F401  (the fixture)
from tests.stub_judge import write_items

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("local_ray")]
N_ITEMS = 8
HELD = 4  # concurrency 4 on two CPUs: two actors, two threads each, every one on the wire


class CtrlCOnTheWire:
    """A stub's answers: those ``held(request)`` says are held wait on the wire until
    :meth:`release`, the rest come at once; Ctrl-C reaches the driver (this process's main
    thread) once ``HELD`` are held — every thread of the actors holds one."""

    def __init__(self, held=lambda request: True, free: int = 0):
        self.held, self.free = held, free
        self.released = threading.Event()
        self._lock = threading.Lock()
        self._n = self._on_the_wire = 0

    def __call__(self, request: dict) -> str:
        with self._lock:
            self._n += 1
            hold = self._n > self.free and self.held(request) and not self.released.is_set()
            self._on_the_wire += hold
            interrupt = hold and self._on_the_wire == HELD
        if interrupt:
            _thread.interrupt_main()  # as Ctrl-C in the terminal
        if hold:
            self.released.wait()
        return json.dumps({"verdict": "True"})

    def release(self) -> None:
        self.released.set()


def interrupted_ray_run(
    tmp_path: Path,
    stub: StubServer,
    wire: CtrlCOnTheWire,
    said: list[str],
    again: bool = False,
    **judge,
) -> Path:
    """``assay evaluate`` of eight items on Ray, four at a time, Ctrl-C'd with four calls held
    on the wire; they are released once the driver says it waits for the actors' calls (when
    it does, in ``said``: else once the command has returned) — or, ``again``, Ctrl-C'd a
    second time then, and released once the command has returned."""
    cfg = write_config(
        tmp_path,
        write_items(tmp_path, N_ITEMS),
        stub.base_url,
        retries=0,
        concurrency=HELD,
        execution={"engine": "ray"},
        judge=judge,
    )
    waiting = threading.Event()

    class Waits(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(record.getMessage())
            waiting.set()

    ray_log = logging.getLogger("assay.runs._ray")
    handler = Waits(logging.WARNING)
    ray_log.addHandler(handler)

    def when_it_waits() -> None:
        waiting.wait()
        if again and said:
            _thread.interrupt_main()  # Ctrl-C again
        else:
            wire.release()

    reacting = threading.Thread(target=when_it_waits, daemon=True)
    reacting.start()
    try:
        assert main(["evaluate", str(cfg), "--quiet"]) == 130  # interrupted
    finally:
        ray_log.removeHandler(handler)
        waiting.set()
        reacting.join()
        wire.release()
    return cfg


def resume(cfg: Path, tmp_path: Path) -> dict:
    """The interrupted run resumed (on Ray: the API, which leaves the cluster joined); its
    summary, with its new judgments."""
    config = EvaluateConfig.model_validate(json.loads(cfg.read_text()))
    result = evaluate(config, workdir=tmp_path, progress=False)
    return {**result.summary.model_dump(mode="json"), "new_judgments": result.new_judgments}


def abandoned(run_dir: Path) -> list[str]:
    rows = [json.loads(x) for x in (run_dir / "calls.jsonl").read_text().splitlines()]
    return [r["failed"] for r in rows if r["failed"]]


def test_answers_in_flight_on_ray_actors_at_ctrl_c_are_paid_before_the_lm_cache_keeps_them(
    tmp_path, monkeypatch
):
    """Ctrl-C with four calls held on the actors' wire: the actors' close waits for them, and
    their answers reach the run's ledger before the actors are killed. The resume takes them
    from the LM cache, and what the run paid is every answer the stub served."""
    monkeypatch.chdir(tmp_path)  # the CLI keeps DSPy's response cache on, under ./.assay
    # the answers are released once the driver waits: the bound only stops a test that fails
    monkeypatch.setattr("assay.runs._run.SETTLE_S", 600.0)
    wire = CtrlCOnTheWire(free=2)
    with StubServer(respond=wire) as stub:
        said: list[str] = []
        cfg = interrupted_ray_run(tmp_path, stub, wire, said)
        # the two free answers and the four held (and a call an actor started before its close
        # reached it, if one did); the held ones came before the command returned
        wait_for(lambda: len(stub.responses) >= 2 + HELD, "the held answers", timeout=60)
        before = len(stub.responses)
        summary = resume(cfg, tmp_path)
        spend = summary["spend"]
        served = len(stub.responses)
    kept = N_ITEMS - summary["new_judgments"]  # the free answers judged before the Ctrl-C
    assert kept <= 2
    assert summary["counts"]["scored"] == N_ITEMS
    # before the fix the actors were killed with the held answers: 6 or 7 paid of 10 or 11
    # served, one or two held answers in the cache (a dying actor's) and paid nowhere
    assert spend["paid"]["calls"] == served
    assert spend["paid"]["calls"] == summary["usage"]["calls"] + spend["paid_not_used"]["calls"]
    # the answers the interrupted run paid and kept in no judgment: the resume's from the cache
    assert summary["usage"]["cached_calls"] == spend["paid_not_used"]["calls"] == before - kept
    assert spend["failed_attempts"] == 0
    assert said == [  # on the console, as a local run says it
        "assay: stopping: waiting up to 600 s for the LM calls in flight on 2 Ray actors, "
        "whose answers are paid (Ctrl-C again to stop waiting)"
    ]


def test_calls_made_in_ray_work_not_yet_returned_are_paid_and_those_left_in_flight_abandoned(
    tmp_path, monkeypatch
):
    """A panel judges each item with a call per member, one after the other: Ctrl-C once every
    actor thread has its first member's answer (in the LM cache the actors share with the
    driver) and its second member's call held on the wire. With no wait for the calls in flight
    (``SETTLE_S = 0``), the first answers reach the run's ledger all the same — the actors give
    the records no result took them — and each held call is a failed attempt, abandoned, its
    answer kept in no cache: the resume takes the first answers from the cache, paid and not
    used, and asks for the second ones again."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("assay.runs._run.SETTLE_S", 0.0)
    wire = CtrlCOnTheWire(held=lambda request: request.get("temperature") == 0.7)
    with StubServer(respond=wire) as stub:
        panel = cold_warm_panel(stub.base_url)
        said: list[str] = []
        cfg = interrupted_ray_run(tmp_path, stub, wire, said, **panel)
        assert said == []  # no wait: the calls in flight are abandoned at once
        # the four held answers go out once released, to actors killed meanwhile
        wait_for(lambda: len(stub.responses) == 2 * HELD, "the held answers", timeout=60)
        summary = resume(cfg, tmp_path)
        spend = summary["spend"]
        served = len(stub.responses)
    assert summary["new_judgments"] == summary["counts"]["scored"] == N_ITEMS
    # the resume: 4 items' warm calls again, the 4 unstarted items' two calls each
    assert served == 2 * HELD + HELD + 2 * (N_ITEMS - HELD)
    # paid: what reached the actors (the four held answers went to no one); before the fix,
    # the first answers were lost with the actors: 17 or 19 served, 9 or 11 paid, 7 or 5 from
    # the cache unpaid
    assert spend["paid"]["calls"] == served - HELD
    assert summary["usage"]["cached_calls"] == spend["paid_not_used"]["calls"] == HELD
    assert spend["failed_attempts"] == HELD  # the calls abandoned in flight, said apart
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert abandoned(run_dir) == [ABANDONED] * HELD


def test_a_second_ctrl_c_on_ray_abandons_the_actors_calls_in_flight_at_once(tmp_path, monkeypatch):
    """Ctrl-C, then Ctrl-C again while the actors wait for their four calls held on the wire:
    each actor stops waiting, notes its calls still in flight as abandoned (failed attempts)
    and keeps their answers, when they come, in no LM cache, as a local run does; the resume
    asks for them again, and what it reports paid is what it holds."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("assay.runs._run.SETTLE_S", 600.0)  # only the second Ctrl-C ends it
    wire = CtrlCOnTheWire(free=2)
    with StubServer(respond=wire) as stub:
        said: list[str] = []
        cfg = interrupted_ray_run(tmp_path, stub, wire, said, again=True)
        wait_for(lambda: len(stub.responses) == 2 + HELD, "the held answers", timeout=60)
        summary = resume(cfg, tmp_path)
        spend = summary["spend"]
        served = len(stub.responses)
    kept = N_ITEMS - summary["new_judgments"]
    assert kept <= 2 and summary["counts"]["scored"] == N_ITEMS
    # the four held asked again, none from the cache, and the two never sent
    assert served == 2 + HELD + HELD + 2
    # paid: every answer but the four held, which reached no cache and no result; before the
    # fix, 10 served, 6 paid, 2 held answers in the cache unpaid and no attempt abandoned
    assert spend["paid"]["calls"] == served - HELD
    assert summary["usage"]["cached_calls"] == spend["paid_not_used"]["calls"] == 2 - kept
    assert spend["failed_attempts"] == HELD
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert abandoned(run_dir) == [ABANDONED] * HELD
    assert len(said) == 1  # the first Ctrl-C's wait, which the second stopped
