"""Faults of the model server and of the user's patience: a server that never
answers, Ctrl-C while requests hang, a deadline, a server that fails and comes back.

Servers are on the loopback interface only: the project's stub (``assay.lm.StubServer``) and a
"black hole" that accepts connections and never answers.
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from assay.cli import main
from assay.evaluation import evaluate
from assay.inputs import EvaluateConfig
from assay.lm import StubServer
from tests.processes import assay_process
from tests.stub_judge import N_ITEMS, stub_config, write_items

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "evaluate"


class BlackHole:
    """A TCP server on 127.0.0.1 that accepts every connection and never sends a byte."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.connections: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections.append(conn)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def close(self) -> None:
        self.sock.close()
        for conn in self.connections:
            conn.close()


@pytest.fixture
def black_hole():
    hole = BlackHole()
    yield hole
    hole.close()


@pytest.fixture
def items_csv(tmp_path: Path) -> Path:
    return write_items(tmp_path)


def stub_yaml(folder: Path, csv: Path, api_base: str, **extra: object) -> Path:
    """A config judging ``csv`` with ``openai/stub-model`` at ``api_base``."""
    return stub_config(folder, csv, api_base, name="faults", **extra)


# -- D: timeouts --------------------------------------------------------------------------------
def test_a_server_that_never_answers_times_out_every_item(tmp_path, items_csv, black_hole):
    """``judge.timeout`` bounds each attempt (it reaches LiteLLM); the failure is ``timeout``."""
    config = EvaluateConfig.model_validate(
        json.loads(
            stub_yaml(
                tmp_path, items_csv, black_hole.base_url, judge={"timeout": 1}, retries=0
            ).read_text()
        )
    )
    import litellm  # noqa: F401  (imported before the clock starts: tens of seconds on a busy machine)

    started = time.monotonic()
    result = evaluate(config, workdir=tmp_path, progress=False)
    elapsed = time.monotonic() - started

    assert [j.unscored for j in result.judgments] == ["timeout"] * N_ITEMS
    assert all(j.score is None for j in result.judgments)
    assert len(black_hole.connections) == N_ITEMS  # one attempt each: retries 0
    # the 1 s timeout, not the 120 s default, ended each attempt (a bound far from both, so a
    # busy machine cannot fail it)
    assert all(j.latency_s < 60 for j in result.judgments), [j.latency_s for j in result.judgments]
    assert elapsed < 60 * N_ITEMS, f"a 1 s timeout took {elapsed:.1f} s"
    assert result.summary.counts.unscored_reasons == {"timeout": N_ITEMS}


@pytest.mark.slow
def test_ctrl_c_ends_the_command_at_once_while_requests_hang(tmp_path, items_csv, black_hole):
    """Workers blocked in requests (default 120 s timeout) do not keep the process alive."""
    cfg = stub_yaml(tmp_path, items_csv, black_hole.base_url)
    # a command still alive at the end is made to print every thread's stack (SIGABRT)
    proc = assay_process(
        "evaluate", str(cfg), "--quiet", cwd=tmp_path, env={"PYTHONFAULTHANDLER": "1"}
    )
    deadline = time.monotonic() + 120
    while len(black_hole.connections) < N_ITEMS and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    assert len(black_hole.connections) == N_ITEMS, "the requests never reached the server"
    time.sleep(2)  # every worker is blocked in its request
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        # the requests would end only at their 120 s timeout: an exit well before it is the
        # Ctrl-C's (a bound far from both, so a busy machine cannot fail it)
        _, err = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        _, stacks = proc.communicate(timeout=60)
        raise AssertionError(f"still running 90 s after Ctrl-C:\n{stacks[-8000:]}") from None
    finally:
        proc.kill()
    exited = time.monotonic() - sent
    assert exited < 60, f"exited {exited:.1f} s after Ctrl-C"
    assert proc.returncode == 130
    lines = [ln for ln in err.splitlines() if ln.strip() and "LiteLLM" not in ln]
    # the hung calls waited for a while (their answers would be paid), said as it waits
    waiting = (
        f"assay: stopping: waiting up to 10 s for {N_ITEMS} LM calls in flight, whose answers "
        "are paid (Ctrl-C again to stop waiting)"
    )
    assert lines == [waiting, "assay: interrupted; re-run the same command to resume"], err


@pytest.mark.slow
def test_a_deadline_stops_the_run_and_a_rerun_resumes(tmp_path, monkeypatch, capsys):
    """``--deadline`` on a slow model: one line, the finished judgments kept, a re-run judges
    only the rest."""
    cfg = tmp_path / "cfg"
    shutil.copytree(FIXTURE, cfg)
    sheet = json.loads((cfg / "sheet.json").read_text())
    sheet["delay_s"] = 0.5  # 12 items, one at a time: at least 6 s, past the 4 s deadline
    (cfg / "sheet.json").write_text(json.dumps(sheet))
    (cfg / "config.yaml").write_text(
        (cfg / "config.yaml").read_text().replace("concurrency: 3", "concurrency: 1")
    )
    monkeypatch.chdir(tmp_path)

    # a deadline the first judgment meets on a loaded machine too (at 2 s, under load, none was
    # written by then: no judgments file to keep), which at most 8 of the 12 can meet
    code = main(["evaluate", str(cfg / "config.yaml"), "--quiet", "--deadline", "4"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("assay: error: deadline reached with ")
    assert err[0].endswith("everything finished is saved: re-run to resume")
    (judgments,) = (tmp_path / "runs").glob("*/judgments.jsonl")
    kept = [json.loads(x)["item_id"] for x in judgments.read_text().splitlines()]
    assert 1 <= len(kept) < 12 and len(set(kept)) == len(kept)
    assert not (judgments.parent / "metrics.json").exists()

    time.sleep(1)  # the call abandoned at the deadline ends; it writes nothing
    assert main(["evaluate", str(cfg / "config.yaml"), "--quiet", "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["new_judgments"] == 12 - len(kept)
    ids = [json.loads(x)["item_id"] for x in judgments.read_text().splitlines()]
    assert sorted(ids) == [f"q{i:02d}" for i in range(12)]  # none lost, none twice


# -- F: failures are not frozen ----------------------------------------------------------------
def test_server_errors_then_retry_unscored_judges_only_those_again(
    tmp_path, items_csv, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)  # the CLI keeps DSPy's response cache on, under ./.assay
    with StubServer(status_sequence=[500] * 100) as stub:
        cfg = stub_yaml(tmp_path, items_csv, stub.base_url, retries=0)
        assert main(["evaluate", str(cfg), "--quiet"]) == 1  # nothing could be judged
        out = capsys.readouterr().out
        assert f"unscored {N_ITEMS} {{'lm_error': {N_ITEMS}}}" in out
        assert "re-run with --retry-unscored" in out
        assert stub.n_requests == N_ITEMS

        stub.status_sequence = []  # the server is back
        stub.reset()
        assert main(["evaluate", str(cfg), "--quiet"]) == 1  # a finished run is re-read
        capsys.readouterr()
        assert stub.n_requests == 0  # ... without a call: failures stay until asked

        assert main(["evaluate", str(cfg), "--quiet", "--json", "--retry-unscored"]) == 0
        result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert stub.n_requests == N_ITEMS  # only the failed items, once each
    assert result["retried"] == N_ITEMS and result["new_judgments"] == N_ITEMS
    assert result["counts"]["scored"] == N_ITEMS and result["counts"]["unscored"] == 0
    (judgments,) = (tmp_path / "runs").glob("*/judgments.jsonl")
    lines = [json.loads(x) for x in judgments.read_text().splitlines()]
    assert [(x["attempt"], x["unscored"]) for x in lines[N_ITEMS:]] == [(2, None)] * N_ITEMS
    report = (judgments.parent / "report.md").read_text()
    assert f"{N_ITEMS} unscored items were judged again on this run" in report


def test_a_retry_is_a_fresh_sample_not_the_cached_answer(tmp_path, items_csv, monkeypatch, capsys):
    """A cached unparseable answer is not served again to the retry (``--retry-unscored
    parse_error``): the retry reaches the server."""
    monkeypatch.chdir(tmp_path)
    answers = {"n": 0}

    def respond(request):
        answers["n"] += 1
        return "not JSON" if answers["n"] <= N_ITEMS else json.dumps({"verdict": "True"})

    with StubServer(respond=respond) as stub:
        cfg = stub_yaml(tmp_path, items_csv, stub.base_url, retries=0, concurrency=1)
        main(["evaluate", str(cfg), "--quiet"])
        capsys.readouterr()
        first = stub.n_requests  # the JSON adapter may ask twice per item before giving up
        assert main(["evaluate", str(cfg), "--quiet", "--retry-unscored", "parse_error"]) == 0
        out = capsys.readouterr().out
        assert stub.n_requests == first + N_ITEMS  # each retry went to the server
    assert f"({N_ITEMS} unscored items judged again)" in out
