"""The run's sidecar: jobs answered in order from another process, errors raised here, a dead
sidecar's work done here, the child ended with the run; and a harness / evaluate run ending in
a sidecar writes what one ending in-process writes."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

from assay.runs._sidecar import Sidecar, SidecarError, wanted


@pytest.fixture
def sidecar(monkeypatch):
    monkeypatch.setenv("ASSAY_SIDECAR", "1")
    car = Sidecar.start()
    assert car is not None
    yield car
    car.close()


def test_jobs_run_in_another_process_in_the_order_sent(sidecar):
    first = sidecar.submit("os:getpid")
    second = sidecar.submit("json:dumps", obj={"b": 1, "a": [2]}, sort_keys=True)
    assert first.result() != os.getpid()
    assert second.result() == '{"a": [2], "b": 1}'
    assert sidecar.call("os:getpid") == first.result()  # one child, kept


def test_a_failing_job_raises_its_type_and_message_here(sidecar):
    with pytest.raises(SidecarError, match=r"^JSONDecodeError: Expecting"):
        sidecar.call("json:loads", s="{")
    assert sidecar.call("json:loads", s="[1]") == [1]  # the child lives on


def test_a_job_imports_the_run_s_plugins_first_and_only_those(sidecar, tmp_path, monkeypatch):
    """The run's plug-ins (the sidecar's ``plugins``) are imported before each job; a plug-in
    this process imported for something else is not sent; a module only this process's
    ``sys.path`` finds is found there too (the job carries it); one the child cannot import is
    the job's error, naming it."""
    from assay._registry import load_plugins

    kind = (
        "from assay.programs import JudgeKind, judge_kind\n"
        "from assay.signatures import JudgeResponse\n\n\n"
        "@judge_kind({name!r})\n"
        "class Kind(JudgeKind):\n"
        "    signature = JudgeResponse\n"
        "    judged_field = 'response'\n"
    )
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "elsewhere_only.py").write_text(kind.format(name="elsewhere_kind"))
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    load_plugins(["elsewhere_only"])
    plugin = tmp_path / "kind_plugin.py"
    plugin.write_text(kind.format(name="sidecar_only_kind"))
    assert "sidecar_only_kind" not in sidecar.call("assay.programs:known_kinds")
    sidecar.plugins = [str(plugin)]
    known = sidecar.call("assay.programs:known_kinds")
    assert "sidecar_only_kind" in known and "elsewhere_kind" not in known
    sidecar.plugins = [str(plugin), "elsewhere_only"]
    assert "elsewhere_kind" in sidecar.call("assay.programs:known_kinds")
    sidecar.plugins = [str(plugin), "no_such_plugin_module"]
    with pytest.raises(
        SidecarError, match="^ConfigError: plugin no_such_plugin_module cannot be imported"
    ):
        sidecar.call("os:getpid")


def test_what_a_job_prints_does_not_reach_the_replies(sidecar):
    assert sidecar.call("builtins:print", *(), end="\n") is None
    noise = json.dumps({"id": 1, "value": "forged"})
    assert sidecar.call("builtins:print", sep="", end=noise + "\n") is None
    assert sidecar.call("json:loads", s='"real"') == "real"


def test_a_dead_sidecar_means_the_job_runs_here(sidecar):
    sidecar._proc.kill()
    sidecar._proc.wait()
    deadline = time.monotonic() + 10
    while sidecar._gone is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sidecar.call("os:getpid") == os.getpid()
    with pytest.raises(Exception, match="exited"):
        sidecar.submit("os:getpid").result()


def test_close_ends_the_child_even_in_the_middle_of_a_job(monkeypatch):
    monkeypatch.setenv("ASSAY_SIDECAR", "1")
    car = Sidecar.start()
    assert car is not None
    car.submit("time:sleep", secs=60)
    started = time.monotonic()
    car.close()
    assert car._proc.poll() is not None
    assert time.monotonic() - started < 30  # killed, not waited for


@pytest.mark.parametrize(
    ("flag", "expected"), [("1", True), ("on", True), ("0", False), ("off", False)]
)
def test_the_flag_decides(monkeypatch, flag, expected):
    monkeypatch.setenv("ASSAY_SIDECAR", flag)
    assert wanted() is expected


def test_by_default_only_a_process_without_mlflow_loaded_starts_one(monkeypatch):
    import sys

    monkeypatch.delenv("ASSAY_SIDECAR", raising=False)
    monkeypatch.setitem(sys.modules, "mlflow", sys.modules.get("mlflow") or object())
    assert wanted() is False
    monkeypatch.delitem(sys.modules, "mlflow")
    assert wanted() is True


def _mlflow_run(uri: str, run_id: str) -> tuple[dict, dict, set[str]]:
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=uri)
    run = client.get_run(run_id)
    artifacts = {a.path for a in client.list_artifacts(run_id)}
    # what differs between any two runs: where the data was copied to, how long calls took
    params = {k: v for k, v in run.data.params.items() if k != "data.path"}
    metrics = {k: v for k, v in run.data.metrics.items() if "latency" not in k}
    return params, metrics, artifacts


def test_a_harness_ending_in_the_sidecar_writes_what_one_ending_here_writes(tmp_path, monkeypatch):
    from assay.reliability import run_harness
    from assay.reliability.selftest._selftest import (
        register,
        selftest_config,
        write_data,
    )

    register()
    data = write_data(tmp_path / "data", n=6)
    out = {}
    for flag in ("0", "1"):
        monkeypatch.setenv("ASSAY_SIDECAR", flag)
        workdir = tmp_path / f"sidecar-{flag}"
        workdir.mkdir()
        uri = f"sqlite:///{workdir / 'mlflow.db'}"
        res = run_harness(
            selftest_config(data, tracking=True),
            workdir=workdir,
            tests=["format_indent"],
            judges=["clean"],
            progress=False,
            tracking_uri=uri,
        )
        out[flag] = (res, _mlflow_run(uri, res.mlflow_run_id))
    (here, (p0, m0, a0)), (there, (p1, m1, a1)) = out["0"], out["1"]
    assert there.summary == here.summary
    assert (there.run_dir / "report.md").read_text() == (here.run_dir / "report.md").read_text()
    for name in ("heatmap.png", "cost_accuracy.png"):  # drawn side by side in forked copies
        assert (there.run_dir / name).read_bytes() == (here.run_dir / name).read_bytes()
    assert (there.run_dir / "report.html").stat().st_size > 0
    page = (there.run_dir / "report.html").read_text()
    assert 'class="ins"' in page or "<ins" in page  # the probes' word diffs, made in the sidecar
    assert (p1, m1) == (p0, m0)
    assert {"report.md", "report.html", "heatmap.png", "probes.jsonl"} <= a1 == a0


def test_an_evaluate_run_logs_the_same_mlflow_run_from_the_sidecar(tmp_path, monkeypatch):
    import shutil
    from pathlib import Path

    from assay.evaluation import evaluate
    from assay.inputs import load_config

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "evaluate"
    logged = {}
    for flag in ("0", "1"):
        monkeypatch.setenv("ASSAY_SIDECAR", flag)
        project = tmp_path / f"sidecar-{flag}"
        shutil.copytree(fixture, project / "cfg")
        config, base = load_config(project / "cfg" / "config.yaml")
        config.tracking.enabled = True
        uri = f"sqlite:///{project / 'mlflow.db'}"
        res = evaluate(config, workdir=project, config_dir=base, progress=False, tracking_uri=uri)
        logged[flag] = _mlflow_run(uri, res.mlflow_run_id)
    assert logged["1"] == logged["0"]
    assert logged["1"][1]["accuracy"] == pytest.approx(10 / 12)


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its new parent to reap it has exited)."""
    from pathlib import Path

    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


@pytest.mark.slow
def test_a_killed_run_takes_its_sidecar_with_it(tmp_path):
    import signal
    import subprocess
    import sys

    from tests.processes import REPO

    script = tmp_path / "hold.py"
    script.write_text(
        "import time\n"
        "from assay.runs._sidecar import Sidecar\n"
        "car = Sidecar.start()\n"
        "car.call('os:getpid')\n"
        "print(car._proc.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    env = {**os.environ, "ASSAY_SIDECAR": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    assert _alive(child)
    proc.send_signal(signal.SIGKILL)  # no cleanup runs: the child sees its input close
    proc.wait(timeout=30)
    deadline = time.monotonic() + 30
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_a_run_starts_one_when_it_logs_to_mlflow_or_offloads_its_reports(tmp_path, monkeypatch):
    import shutil
    from pathlib import Path

    from assay.evaluation import evaluate
    from assay.inputs import load_config
    from assay.reliability import run_harness
    from assay.reliability.selftest._selftest import (
        register,
        selftest_config,
        write_data,
    )

    started: list[str] = []
    monkeypatch.setattr(  # returns None: the run then does the work itself
        Sidecar, "start", classmethod(lambda cls, lane="tracking": started.append(lane))
    )
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "evaluate"
    for tracked in (False, True):
        project = tmp_path / f"evaluate-{tracked}"
        shutil.copytree(fixture, project / "cfg")
        config, base = load_config(project / "cfg" / "config.yaml")
        config.tracking.enabled = tracked
        uri = f"sqlite:///{project / 'mlflow.db'}"
        evaluate(config, workdir=project, config_dir=base, progress=False, tracking_uri=uri)
    assert started == ["tracking"]  # evaluate writes its reports itself
    register()
    data = write_data(tmp_path / "data", n=4)
    for tracked in (False, True):
        run_harness(  # its reports are the sidecar's work, tracked or not
            selftest_config(data, tracking=tracked),
            workdir=tmp_path / f"harness-{tracked}",
            tests=["format_indent"],
            judges=["clean"],
            progress=False,
            tracking_uri=f"sqlite:///{tmp_path / f'harness-{tracked}.db'}",
        )
    assert started == ["tracking", "reports", "reports", "tracking"]


def test_unknown_lane_is_refused():
    with pytest.raises(ValueError, match="lanes: tracking, reports"):
        Sidecar.start("plots")


def _open_run(tmp_path, *, sidecar: bool, tracked: bool, hold: bool = False):
    from assay.inputs import RunConfig
    from assay.runs import Run

    config = RunConfig(name="lanes", tracking={"enabled": tracked})
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    return Run.open(
        config,
        "0123456789abcdef",
        command="test",
        workdir=tmp_path,
        tracking_uri=uri,
        reports_aside=sidecar,
        after_first_answer=hold,
    )


def test_tracking_and_reports_run_in_two_processes_side_by_side(tmp_path, monkeypatch):
    """MLflow's seconds of set-up do not queue in front of the reports' warm-ups."""
    monkeypatch.setenv("ASSAY_SIDECAR", "1")
    with _open_run(tmp_path, sidecar=True, tracked=True) as run:
        assert run.execution.reports is not None and run.execution.tracker is not None
        pids = {os.getpid(), run.execution.reports._proc.pid, run.execution.tracker._proc.pid}
        assert len(pids) == 3
        # the tracking lane is busy loading MLflow (seconds); the reports lane answers meanwhile
        run.calls_flowing()
        assert run.at_end("os:getpid") == run.execution.reports._proc.pid
        assert (
            run.execution._store_ready is not None and not run.execution._store_ready._done.is_set()
        )


def test_warm_ups_wait_for_the_calls_and_go_before_an_offloaded_job(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_SIDECAR", "1")
    marks = tmp_path / "marks"
    marks.mkdir()
    src = tmp_path / "src.txt"
    src.write_text("x")
    with _open_run(tmp_path, sidecar=True, tracked=False, hold=True) as run:
        assert run.execution.tracker is None
        run.ahead("shutil:copyfile", src=str(src), dst=str(marks / "warm"))
        assert run.execution.reports.call("os:listdir", path=str(marks)) == []  # held, not sent
        run.calls_flowing()
        run.ahead("shutil:copyfile", src=str(src), dst=str(marks / "later"))  # sent at once
        assert sorted(run.execution.reports.call("os:listdir", path=str(marks))) == [
            "later",
            "warm",
        ]
    with _open_run(tmp_path / "b", sidecar=True, tracked=False, hold=True) as run:
        run.ahead("shutil:copyfile", src=str(src), dst=str(marks / "held"))
        # no call ever ended (a resumed run with nothing left to send): the offloaded job
        # still finds its warm-ups done before it
        assert "held" in run.at_end("os:listdir", path=str(marks))


def broken_store(folder: Path) -> str:
    """An SQLite store MLflow cannot open although it passes the checks made before a run
    (SQLite's header, then garbage): a folder that is a file, or a scheme MLflow has no store
    for, is refused before the run (tests/runners/test_refuse_early.py)."""
    (folder / "broken.db").write_bytes(b"SQLite format 3\x00" + b"\xff" * 4096)
    return f"sqlite:///{folder / 'broken.db'}"


@pytest.mark.parametrize("flag", ["0", "1"])
def test_an_mlflow_failure_is_one_line_naming_the_store_and_a_rerun_logs_without_calls(
    tmp_path, monkeypatch, flag
):
    import shutil
    from pathlib import Path

    from assay.errors import RunError
    from assay.evaluation import evaluate
    from assay.inputs import load_config

    monkeypatch.setenv("ASSAY_SIDECAR", flag)
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "evaluate", tmp_path / "c")
    config, base = load_config(tmp_path / "c" / "config.yaml")
    config.tracking.enabled = True
    run = {"workdir": tmp_path, "config_dir": base, "progress": False}
    broken = broken_store(tmp_path)
    with pytest.raises(RunError) as failed:
        evaluate(config, tracking_uri=broken, **run)
    assert str(failed.value).startswith(f"MLflow at {broken}: ")
    assert "\n" not in str(failed.value).strip()
    monkeypatch.setenv("ASSAY_SIDECAR", "0")  # the re-run's own path is not the point here
    again = evaluate(config, tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}", **run)
    assert again.new_judgments == 0 and again.mlflow_run_id


def test_a_prestarted_sidecar_is_the_one_the_next_run_takes(monkeypatch):
    import assay.runs._sidecar as module

    monkeypatch.setenv("ASSAY_SIDECAR", "1")
    monkeypatch.setattr(module, "_spare", None)
    Sidecar.prestart()
    spare = module._spare
    assert spare is not None and Sidecar.spare() is spare
    reports = Sidecar.start("reports")  # a lane of its own: not the tracking lane's spare
    try:
        assert reports is not None and reports is not spare and module._spare is spare
        assert Sidecar.start("tracking") is spare and module._spare is None
        assert spare.call("json:loads", s="1") == 1
        assert reports.call("os:getpid") != spare.call("os:getpid")
    finally:
        for car in (spare, reports):
            car.close()
            car.close()  # twice is harmless (the exit handler closes it again)


@pytest.mark.slow
def test_a_prestarted_sidecar_no_run_took_ends_with_the_process(tmp_path):
    import subprocess
    import sys

    from tests.processes import REPO

    script = tmp_path / "spare.py"
    script.write_text(
        "from assay.runs import _sidecar\n"
        "_sidecar.Sidecar.prestart()\n"
        "print(_sidecar._spare._proc.pid, flush=True)\n"  # then exit, as a zero-call re-run
    )
    env = {**os.environ, "ASSAY_SIDECAR": "1", "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env)
    child = int(out.stdout)
    deadline = time.monotonic() + 30
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_without_hold_the_warm_ups_go_at_once(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_SIDECAR", "1")
    marks = tmp_path / "marks"
    marks.mkdir()
    with _open_run(tmp_path, sidecar=True, tracked=False) as run:
        run.ahead("shutil:copyfile", src=__file__, dst=str(marks / "now"))
        assert run.execution.reports.call("os:listdir", path=str(marks)) == ["now"]


def test_held_mlflow_store_is_prepared_when_the_calls_flow_or_at_the_end(tmp_path, monkeypatch):
    from assay.runs import TrackedRun

    monkeypatch.setenv("ASSAY_SIDECAR", "1")
    with _open_run(tmp_path / "a", sidecar=True, tracked=True, hold=True) as run:
        assert (
            run.execution._store_ready is None
        )  # held: MLflow is not loading beside the first calls
        run.calls_flowing()
        assert run.execution._store_ready is not None
    with _open_run(tmp_path / "b", sidecar=False, tracked=True, hold=True) as run:
        assert run.execution._store_ready is None
        # a run that made no LM call: the end prepares the store, and logs
        run_id = run.finish(TrackedRun(name="no-calls", params={"a": "1"}))
    assert run_id
    assert (tmp_path / "b" / "mlflow.db").is_file()


@pytest.mark.parametrize("flag", ["0", "1"])
def test_files_written_meanwhile_are_logged_and_a_failure_marks_the_mlflow_run_failed(
    tmp_path, monkeypatch, flag
):
    """Run.log(meanwhile=...): MLflow logs the rest while the reports are written (with the
    tracking sidecar; without it, the reports first), then the reports; reports that raise
    leave a FAILED MLflow run (never one FINISHED without them) and their own error."""
    import mlflow

    from assay.runs import TrackedRun

    monkeypatch.setenv("ASSAY_SIDECAR", flag)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with _open_run(tmp_path, sidecar=False, tracked=True) as run:
        assert (run.execution.tracker is not None) == (flag == "1")
        (run.dir / "metrics.json").write_text("{}")
        report = run.dir / "report.md"
        tracked = TrackedRun(
            name="lanes",
            params={"p": "1"},
            metrics={"m": 0.5},
            artifacts=[run.dir / "metrics.json"],
            late=[report],
        )
        run_id = run.finish(tracked, meanwhile=lambda: report.write_text("# report"))
    client = mlflow.MlflowClient(tracking_uri=uri)
    logged = client.get_run(run_id)
    assert logged.info.status == "FINISHED"
    assert logged.data.params == {"p": "1"} and logged.data.metrics == {"m": 0.5}
    assert {a.path for a in client.list_artifacts(run_id)} == {"metrics.json", "report.md"}

    def broken() -> None:
        raise OSError("disk full")

    with _open_run(tmp_path / "b", sidecar=False, tracked=True) as run:
        tracked = TrackedRun(name="broken", late=[run.dir / "report.md"])
        with pytest.raises(OSError, match="disk full"):
            run.finish(tracked, meanwhile=broken)
        assert not run.finished  # a re-run writes the reports and logs again
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'b' / 'mlflow.db'}")
    exp = client.get_experiment_by_name(run.tracking.experiment)
    broken_runs = (
        []
        if exp is None
        else client.search_runs([exp.experiment_id], "attributes.run_name = 'broken'")
    )
    # with the sidecar, the MLflow run raced the reports: it exists, FAILED; without it, the
    # reports went first and nothing was logged
    assert [r.info.status for r in broken_runs] == (["FAILED"] if flag == "1" else [])


@pytest.mark.parametrize("flag", ["0", "1"])
def test_the_reports_are_written_even_when_mlflow_fails(tmp_path, monkeypatch, flag):
    from assay.errors import RunError
    from assay.inputs import RunConfig
    from assay.runs import Run, TrackedRun

    monkeypatch.setenv("ASSAY_SIDECAR", flag)
    config = RunConfig(name="bogus", tracking={"enabled": True})
    broken = broken_store(tmp_path)
    with Run.open(
        config, "0123456789abcdef", command="test", workdir=tmp_path, tracking_uri=broken
    ) as run:
        report = run.dir / "report.md"
        tracked = TrackedRun(name="bogus", late=[report])
        with pytest.raises(RunError, match=f"^MLflow at {re.escape(broken)}: "):
            run.finish(tracked, meanwhile=lambda: report.write_text("# report"))
        assert report.read_text() == "# report"
        assert not run.finished
