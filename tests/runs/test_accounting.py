"""Calls, tokens and cost are what the server answered: the stub counts what
it served — under retries of unscored items, HTTP 500s and a kill mid-run — and the run's
``spend`` must equal it: used + paid-not-used = every answered call, failed attempts apart."""

from __future__ import annotations

import _thread
import json
import logging
import math
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from assay.cli import main
from assay.errors import RunError
from assay.evaluation._evaluate import evaluate_metrics
from assay.lm import StubServer
from assay.lm._ledger import ABANDONED, ledger_tracker, record_calls
from assay.runs import run_pool
from tests.processes import assay_process
from tests.stub_judge import N_ITEMS, stub_config, write_items

PRICE = {"input_per_mtok": 3.0, "output_per_mtok": 7.0}  # the stub's model has no list price


def write_config(folder: Path, csv: Path, api_base: str, **extra: object) -> Path:
    judge = {"price": PRICE, **extra.pop("judge", {})}  # type: ignore[dict-item]
    extra.setdefault("concurrency", 1)
    return stub_config(folder, csv, api_base, name="accounting", judge=judge, **extra)


def served(stub: StubServer) -> dict[str, float]:
    """What the stub answered with a result: calls, tokens and their cost at ``PRICE``."""
    p = sum(r["usage"]["prompt_tokens"] for r in stub.responses)
    c = sum(r["usage"]["completion_tokens"] for r in stub.responses)
    cost = (p * PRICE["input_per_mtok"] + c * PRICE["output_per_mtok"]) / 1e6
    return {"calls": len(stub.responses), "prompt_tokens": p, "completion_tokens": c, "cost": cost}


def assert_spend_is_what_was_served(summary: dict, stub: StubServer) -> dict:
    """used + paid-not-used = paid = the stub's answers (calls, tokens, cost)."""
    spend, used = summary["spend"], summary["usage"]
    paid, unused = spend["paid"], spend["paid_not_used"]
    want = served(stub)
    assert stub.statuses.count(200) == want["calls"]
    assert paid["calls"] == used["calls"] + unused["calls"] == want["calls"]
    for key in ("prompt_tokens", "completion_tokens"):
        assert paid[key] == used[key] + unused[key] == want[key]
    assert math.isclose(paid["cost_usd"], want["cost"], rel_tol=1e-9)
    assert math.isclose(used["cost_usd"] + unused["cost_usd"], want["cost"], rel_tol=1e-9)
    return spend


def ledger_rows(run_dir: Path | None) -> list[dict]:
    """The answered calls in a run directory's call ledger, as far as written (none before)."""
    path = None if run_dir is None else run_dir / "calls.jsonl"
    lines = path.read_text().splitlines() if path is not None and path.exists() else []
    rows = [json.loads(x) for x in lines if x.endswith("}")]  # a line being written: not yet
    return [r for r in rows if r.get("failed") is None]


def wait_for(predicate, what: str, timeout: float = 120.0) -> None:
    """Wait until ``predicate()`` holds (what another process writes), polling."""
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


def cold_warm_panel(base_url: str) -> dict:
    """A panel judge of two members on the stub, each item two calls: ``cold`` at temperature
    0 and ``warm`` at 0.7 (another request, so no answer of one is the other's cache hit)."""
    member = {
        "model": "openai/stub-model",
        "api_base": base_url,
        "price": PRICE,
        "rubric": "A good response names a colour.",
        "scale": {"kind": "binary", "labels": ["False", "True"]},
    }
    return {
        "program": "panel",
        "members": [
            {**member, "name": "cold", "temperature": 0.0},
            {**member, "name": "warm", "temperature": 0.7},
        ],
    }


def test_results_replaced_by_retry_unscored_stay_paid_not_used(tmp_path, monkeypatch, capsys):
    """Four unparseable answers (paid), judged again with ``--retry-unscored``: the report holds
    4 used calls, 4 paid and not used, and 8 in all — what the server answered."""
    monkeypatch.chdir(tmp_path)
    answers = {"n": 0}

    def respond(request):
        answers["n"] += 1
        return "not JSON" if answers["n"] <= N_ITEMS else json.dumps({"verdict": "True"})

    with StubServer(respond=respond) as stub:
        cfg = write_config(tmp_path, write_items(tmp_path), stub.base_url, retries=0)
        main(["evaluate", str(cfg), "--quiet"])
        capsys.readouterr()
        code = main(["evaluate", str(cfg), "--json", "--quiet", "--retry-unscored", "parse_error"])
        assert code == 0
        summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        spend = assert_spend_is_what_was_served(summary, stub)
    assert (summary["usage"]["calls"], spend["paid_not_used"]["calls"]) == (N_ITEMS, N_ITEMS)
    assert spend["paid"]["calls"] == 2 * N_ITEMS == stub.n_requests
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert json.loads((run_dir / "metrics.json").read_text())["spend"] == spend
    report = (run_dir / "report.md").read_text()
    assert f"paid, not used: {N_ITEMS} calls" in report
    assert f"paid in all: {2 * N_ITEMS} calls" in report
    metrics = evaluate_metrics(json.loads((run_dir / "metrics.json").read_text()))  # MLflow
    assert metrics["spend_paid.calls"] == 2 * N_ITEMS
    assert metrics["spend_paid_not_used.calls"] == N_ITEMS
    assert metrics["usage_calls"] == N_ITEMS


def test_http_500_retries_are_counted_as_failed_attempts_not_paid(tmp_path, monkeypatch, capsys):
    """Two HTTP 500s, each retried by the client: every answered call is counted once, and the
    two failed attempts are counted apart (no usage came back: not paid)."""
    monkeypatch.chdir(tmp_path)
    with StubServer(status_sequence=[500, 500]) as stub:
        cfg = write_config(tmp_path, write_items(tmp_path), stub.base_url, retries=2)
        assert main(["evaluate", str(cfg), "--json", "--quiet"]) == 0
        summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        spend = assert_spend_is_what_was_served(summary, stub)
        assert stub.statuses == [500, 500] + [200] * N_ITEMS
    assert spend["failed_attempts"] == 2
    assert spend["paid"]["calls"] == summary["usage"]["calls"] == N_ITEMS
    assert spend["paid_not_used"]["calls"] == 0
    main(["evaluate", str(cfg), "--quiet"])  # re-read: the console says it too
    assert "2 failed attempts" in capsys.readouterr().out


@pytest.mark.slow
def test_calls_answered_before_a_kill_are_paid_not_used_after_the_resume(
    tmp_path, monkeypatch, capsys
):
    """A panel of two members judges each item with two calls. The run is killed (SIGKILL)
    while an item's second call is on the wire: its first answer was paid but no judgment
    holds it. After the resume, used + paid-not-used is every answer the stub served."""
    monkeypatch.chdir(tmp_path)
    n_items, kill_at = 6, 8  # request 8: the second member's call on the fourth item
    proc: dict[str, object] = {}
    seen = {"n": 0}

    def respond(request):
        seen["n"] += 1
        if seen["n"] == kill_at and "pid" in proc:
            os.kill(proc["pid"], signal.SIGKILL)  # type: ignore[arg-type]
            raise RuntimeError("killed while this request was in flight")  # answered 500
        return json.dumps({"verdict": "True"})

    with StubServer(respond=respond) as stub:
        panel = cold_warm_panel(stub.base_url)
        cfg = write_config(
            tmp_path, write_items(tmp_path, n_items), stub.base_url, retries=0, judge=panel
        )
        first = assay_process("evaluate", str(cfg), "--quiet", cwd=tmp_path)
        proc["pid"] = first.pid
        first.wait(timeout=120)
        assert first.returncode == -signal.SIGKILL, first.stderr.read()[-800:]
        time.sleep(0.2)  # the stub's answer to the dead client has gone out
        (run_dir,) = (tmp_path / "runs").iterdir()
        kept = [x for x in (run_dir / "judgments.jsonl").read_text().splitlines() if x]
        assert 0 < len(kept) < n_items

        assert main(["evaluate", str(cfg), "--json", "--quiet"]) == 0  # the resume
        summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        spend = assert_spend_is_what_was_served(summary, stub)
    assert summary["counts"]["scored"] == n_items
    assert spend["paid_not_used"]["calls"] >= 1  # the first member's answer before the kill


class CtrlCOnTheWire:
    """A stub's answers: the first ``free`` at once; the next ``held`` wait on the wire until
    :meth:`release`, and Ctrl-C reaches the command (in this process's main thread) once they
    are all there — a run interrupted with ``held`` calls in flight."""

    def __init__(self, free: int, held: int):
        self.free, self.held = free, held
        self.released = threading.Event()
        self._lock = threading.Lock()
        self._n = 0

    def __call__(self, request: dict) -> str:
        with self._lock:
            self._n += 1
            n = self._n
        if n > self.free and not self.released.is_set():
            if n == self.free + self.held:  # every slot holds a call on the wire
                _thread.interrupt_main()  # as Ctrl-C in the terminal
            self.released.wait()
        return json.dumps({"verdict": "True"})

    def release(self) -> None:
        self.released.set()


def pool_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("ThreadPoolExecutor")}


def interrupted_run(tmp_path: Path, stub: StubServer, on_the_wire: CtrlCOnTheWire) -> Path:
    """``assay evaluate`` of eight items, four at a time, Ctrl-C'd with ``on_the_wire.held``
    calls in flight; their answers are released once the run's close waits for them (when it
    does: else when the command has returned) and have reached it when this returns."""
    cfg = write_config(tmp_path, write_items(tmp_path, 8), stub.base_url, retries=0, concurrency=4)
    waiting = threading.Event()  # the run's close waits for its calls in flight

    class Waits(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            waiting.set()

    ledger_log = logging.getLogger("assay.lm._ledger")
    handler, level = Waits(logging.INFO), ledger_log.level
    ledger_log.addHandler(handler)
    ledger_log.setLevel(logging.INFO)
    threading.Thread(target=lambda: waiting.wait() and on_the_wire.release(), daemon=True).start()
    before = pool_threads()
    try:
        assert main(["evaluate", str(cfg), "--quiet"]) == 130  # interrupted
    finally:
        ledger_log.removeHandler(handler)
        ledger_log.setLevel(level)
        waiting.set()
    for thread in pool_threads() - before:  # the calls the run left in flight, answered
        thread.join()
    return cfg


def test_answers_in_flight_at_ctrl_c_are_paid_before_the_lm_cache_keeps_them(
    tmp_path, monkeypatch, capsys
):
    """Ctrl-C with four calls on the wire: the run's close waits for them, and their answers
    are in its call ledger before the LM cache keeps them. The resume takes them from the cache,
    and what the run paid is every answer the stub served: none in the cache unpaid."""
    monkeypatch.chdir(tmp_path)  # the CLI keeps DSPy's response cache on, under ./.assay
    # the answers are released once the close waits: the bound only stops a test that fails
    monkeypatch.setattr("assay.runs._run.SETTLE_S", 600.0)
    on_the_wire = CtrlCOnTheWire(free=2, held=4)
    with StubServer(respond=on_the_wire) as stub:
        cfg = interrupted_run(tmp_path, stub, on_the_wire)
        assert len(stub.responses) == 6
        capsys.readouterr()
        assert main(["evaluate", str(cfg), "--json", "--quiet"]) == 0  # the resume
        summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        spend = assert_spend_is_what_was_served(summary, stub)
    kept = 8 - summary["new_judgments"]  # of the free answers, those judged before the Ctrl-C
    assert kept <= 2
    assert len(stub.responses) == 8  # the two items never sent, and nothing asked again
    assert summary["counts"]["scored"] == 8
    # the answers the interrupted run paid and kept in no judgment: the four held, and the
    # free ones the Ctrl-C came before writing
    assert summary["usage"]["cached_calls"] == spend["paid_not_used"]["calls"] == 6 - kept
    assert spend["failed_attempts"] == 0


def test_answers_that_outlive_the_close_of_a_run_are_not_kept_in_the_lm_cache(
    tmp_path, monkeypatch, capsys
):
    """A run closed without waiting for its calls in flight (their wait bounded at 0 s): each
    is in the ledger as an attempt without an answer, their answers, come later, are kept in
    no cache, and the resume asks for them again — what it reports paid is what it holds."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("assay.runs._run.SETTLE_S", 0.0)
    on_the_wire = CtrlCOnTheWire(free=2, held=4)
    with StubServer(respond=on_the_wire) as stub:
        cfg = interrupted_run(tmp_path, stub, on_the_wire)
        assert len(stub.responses) == 6  # four answered after the run closed
        capsys.readouterr()
        assert main(["evaluate", str(cfg), "--json", "--quiet"]) == 0
        summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        kept = 8 - summary["new_judgments"]
        assert len(stub.responses) == 12  # the four asked again: none from the cache
        # from the cache: only the free answers the Ctrl-C came before writing (paid)
        assert summary["usage"]["cached_calls"] == 2 - kept
        spend = summary["spend"]
        assert spend["paid"]["calls"] == 8 and spend["paid_not_used"]["calls"] == 2 - kept
        assert spend["failed_attempts"] == 4  # the calls abandoned in flight, said apart
    (run_dir,) = (tmp_path / "runs").iterdir()
    rows = [json.loads(x) for x in (run_dir / "calls.jsonl").read_text().splitlines()]
    assert [r["failed"] for r in rows if r["failed"]] == [ABANDONED] * 4


HARNESS_SCRIPT = """
import json, os, signal, sys
from pathlib import Path
import dspy
dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)  # every call is real
from assay.reliability import HarnessConfig, run_harness
from assay.reliability.selftest._selftest import generator, judge_responder, validator, write_data
from assay.lm import ScriptedEngine, register_script
folder, kill_at = Path(sys.argv[1]), int(sys.argv[2])
validations = {"n": 0}

class Served(ScriptedEngine):
    # the model server: each answer it gives, with its usage, in served.log
    def complete(self, request):
        response = super().complete(request)
        with open(folder / "served.log", "a") as fh:
            fh.write(f"{response.usage.input_tokens} {response.usage.output_tokens}\\n")
        return response

def validate(call):
    validations["n"] += 1
    if validations["n"] == kill_at:  # killed while this unit's validation is on the wire
        os.kill(os.getpid(), signal.SIGKILL)
    return validator(call)

register_script("a-gen", lambda: Served(respond=generator))
register_script("a-val", lambda: Served(respond=validate))
register_script("a-judge", lambda: Served(respond=judge_responder("clean")))
price = {"input_per_mtok": 3.0, "output_per_mtok": 7.0}
cfg = HarnessConfig.model_validate({
    "name": "a", "data": {"path": str(write_data(folder / "data", n=4))},
    "scale": {"kind": "binary", "labels": ["incorrect", "correct"]},
    "generator": {"model": "scripted:a-gen", "price": price},
    "validator": {"model": "scripted:a-val", "price": price},
    "judges": [{"name": "j", "model": "scripted:a-judge", "price": price}],
    "tests": {"paraphrase": {}},
    "concurrency": 1, "retries": 0, "tracking": {"enabled": False},
    "output_dir": str(folder / "runs"),
})
res = run_harness(cfg, workdir=folder, progress=False)
print(json.dumps(res.summary.model_dump(mode="json")))
"""


@pytest.mark.slow
def test_a_harness_killed_during_generation_reports_every_call_it_paid(tmp_path):
    """A paraphrase unit is a generation call, then a validation: the run is killed while the
    second validation is on the wire, so a generation answer was paid and no unit holds it.
    After the resume the harness's spend is every answer the model gave, tokens and cost."""
    import subprocess
    import sys

    from tests.processes import REPO

    script = tmp_path / "run.py"
    script.write_text(HARNESS_SCRIPT, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def run(kill_at: int) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, str(script), str(tmp_path), str(kill_at)],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )

    killed = run(kill_at=2)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-800:]
    resumed = run(kill_at=0)
    assert resumed.returncode == 0, resumed.stderr[-800:]
    summary = json.loads(resumed.stdout.strip().splitlines()[-1])
    served_calls = [line.split() for line in (tmp_path / "served.log").read_text().splitlines()]
    p, c = (sum(int(x[i]) for x in served_calls) for i in (0, 1))
    spend = summary["spend"]
    assert spend["paid"]["calls"] == len(served_calls)
    assert (spend["paid"]["prompt_tokens"], spend["paid"]["completion_tokens"]) == (p, c)
    want_cost = (p * PRICE["input_per_mtok"] + c * PRICE["output_per_mtok"]) / 1e6
    assert math.isclose(spend["paid"]["cost_usd"], want_cost, rel_tol=1e-9)
    used = [*summary["generation_usage"].values(), summary["judges"]["j"]["usage"]]
    assert sum(u["calls"] for u in used) + spend["paid_not_used"]["calls"] == len(served_calls)
    assert spend["paid_not_used"]["calls"] >= 1  # the generation answer the kill orphaned


@pytest.mark.slow
def test_selective_apply_prints_what_its_call_ledger_holds(tmp_path, monkeypatch, capsys):
    """``selective apply`` killed after three unparseable answers, resumed with those items
    judged again (``retry.unscored``): its console prints the lines evaluate prints (one
    function: the cost of the work, then paid and not used, paid in all), and the calls it
    says were paid in all are the rows of its call ledger and the answers the stub served."""
    from tests.decisions.test_selective import respond as persona_answer
    from tests.decisions.test_selective import verdict_probs
    from tests.decisions.test_selective import write_config as selective_config

    monkeypatch.chdir(tmp_path)
    proc: dict[str, object] = {}
    applying = {"n": 0}

    def respond(request):
        if "pid" in proc:  # the apply run
            applying["n"] += 1
            if applying["n"] <= 3:
                return "not JSON"
            if applying["n"] == 6:  # once every answer served so far is in the ledger
                so_far = len(stub.responses)
                runs = [  # the apply run (not the calibration run, nor the ledger's folder)
                    d
                    for d in (tmp_path / "runs").iterdir()
                    if d.name != Path(calibration).name and (d / "run.json").exists()
                ]
                wait_for(lambda: len(ledger_rows(next(iter(runs), None))) == so_far, "ledger")
                os.kill(proc["pid"], signal.SIGKILL)  # type: ignore[arg-type]
                raise RuntimeError("killed while this request was in flight")  # answered 500
        return persona_answer(request)

    with StubServer(respond=respond, verdict_probs=verdict_probs) as stub:
        cfg = selective_config(
            tmp_path, stub.base_url, concurrency=1, retries=0, retry={"unscored": ["parse_error"]}
        )
        assert main(["selective", "calibrate", str(cfg), "--quiet", "--json"]) == 0
        calibration = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["run_dir"]
        stub.reset()
        apply = ["selective", "apply", str(cfg), "--calibration", calibration]
        first = assay_process(*apply, "--quiet", cwd=tmp_path)
        proc["pid"] = first.pid
        first.wait(timeout=120)
        assert first.returncode == -signal.SIGKILL, first.stderr.read()[-800:]
        assert main([*apply, "--quiet"]) == 0  # the resume: the three judged again
        out = capsys.readouterr().out
        answered = len(stub.responses)
    (run_dir,) = [d for d in (tmp_path / "runs").iterdir() if (d / "abstained.jsonl").exists()]
    ledger = [json.loads(x) for x in (run_dir / "calls.jsonl").read_text().splitlines()]
    paid_rows = [r for r in ledger if r.get("failed") is None]
    summary = json.loads((run_dir / "metrics.json").read_text())
    assert len(paid_rows) == answered == summary["spend"]["paid"]["calls"]
    assert f"paid in all: {answered} calls" in out
    # not used: the three unparseable answers (replaced), and any answer the kill left in no
    # result — which the resume then took from the LM cache
    orphaned = summary["usage"]["cached_calls"]
    assert summary["spend"]["paid_not_used"]["calls"] == 3 + orphaned
    assert summary["usage"]["calls"] + 3 + orphaned == answered
    from assay.decisions.selective import SelectiveSummary
    from assay.types import cost_lines

    s = SelectiveSummary.model_validate(summary)
    assert all(line in out.splitlines() for line in cost_lines(s.usage, s.spend))


def test_work_still_busy_after_its_run_closed_makes_no_call_the_ledger_misses():
    """From the Python API a stopped run's pool does not wait for its tasks: one whose LM call
    ended while the run's ledger closed, and which then begins another call, is refused — the
    call would be noted in no ledger (its run's is closed) and its answer kept in the LM cache,
    where a resume would take it as "no call made"."""
    noted: list = []
    closed, done = threading.Event(), threading.Event()
    second: list[str] = []
    recording: list = []

    def task(_: int) -> None:
        with ledger_tracker("openai/stub", None):  # the first call, in flight at Ctrl-C
            _thread.interrupt_main()
            while not recording[0].closing:  # the run's close waits for it
                time.sleep(0.01)
        closed.wait()  # the run has closed: its ledger takes no more records
        try:
            with ledger_tracker("openai/stub", None):
                second.append("made")
        except RunError as e:
            second.append(str(e))
        done.set()

    with pytest.raises(KeyboardInterrupt):
        with record_calls(noted.append, settle_s=600.0) as rec:
            recording.append(rec)
            run_pool([0], task, concurrency=1, progress=False)
    closed.set()
    done.wait()
    assert second == ["the run this LM call was made for has closed: it makes no new call"]
    assert noted == []  # the first call ended before its close without an answer to note


def test_the_call_ledger_is_read_as_it_streams_past(tmp_path):
    """A run's spend and the opening of its ledger read ``calls.jsonl`` a record at a time: a
    ledger of 40,000 calls costs what one of 2,000 does (it was a list of every record, about
    1 KB each, twice at the end of an evaluate run), and the totals are those of the lines
    summed by hand (exactly, with ``math.fsum``), a torn last line left out."""
    import random
    import tracemalloc

    from assay.lm import CallRecord, ledger_usage
    from assay.runs import RunStore

    def ledger(n: int) -> tuple[RunStore, list[CallRecord]]:
        store = RunStore(tmp_path / f"n{n}", run_hash="h")
        store.path.mkdir()
        rng = random.Random(n)
        calls = [
            CallRecord(
                model="m",
                prompt_tokens=rng.randrange(500),
                completion_tokens=rng.randrange(50),
                cost_usd=rng.random() / 1e3,
                failed="HTTP 500" if k % 97 == 0 else None,
            )
            for k in range(n)
        ]
        lines = "".join(c.model_dump_json() + "\n" for c in calls)
        (store.path / "calls.jsonl").write_text(lines + '{"model": "m", "pro', encoding="utf-8")
        return store, calls

    def peak(read) -> tuple[object, int]:
        tracemalloc.start()
        try:
            out = read()
            return out, tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, big = ledger(2_000), ledger(40_000)
    for store, calls in (small, big):
        (paid, failed), _ = peak(lambda store=store: ledger_usage(store.calls()))
        answered = [c for c in calls if c.failed is None]
        assert failed == len(calls) - len(answered) > 0
        assert paid.calls == len(answered)
        assert paid.prompt_tokens == sum(c.prompt_tokens for c in answered)
        assert paid.cost_usd == math.fsum(c.cost_usd for c in answered)
    grown = (
        peak(lambda: ledger_usage(big[0].calls()))[1]
        - peak(lambda: ledger_usage(small[0].calls()))[1]
    )
    assert grown < 3e6, f"{grown / 1e6:.1f} MB more for 38,000 more calls"
    _, opened = peak(lambda: big[0].open_ledger().close())
    assert opened < 3e6, f"{opened / 1e6:.1f} MB"
    assert (big[0].path / "calls.jsonl").read_text().endswith("}\n")  # the torn line cut
