"""One writer per run directory, and a MLflow store that two runs can create together:
separate ``assay evaluate`` processes on one fresh folder, with a slow scripted model."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.processes import assay_process

pytestmark = pytest.mark.slow  # separate processes, each importing assay

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "evaluate"


def finish(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        proc.kill()
    return proc.returncode, out, err


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A fresh folder holding the fixture config: slow answers, MLflow on (the default store,
    ``./mlflow.db``, which does not exist yet)."""
    cfg = tmp_path / "cfg"
    shutil.copytree(FIXTURE, cfg)
    sheet = json.loads((cfg / "sheet.json").read_text())
    sheet["delay_s"] = 0.4
    (cfg / "sheet.json").write_text(json.dumps(sheet))
    text = (cfg / "config.yaml").read_text()
    (cfg / "config.yaml").write_text(text.replace("enabled: false", "enabled: true"))
    return tmp_path


def mlflow_runs(folder: Path) -> list:
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("assay")
    return client.search_runs([experiment.experiment_id]) if experiment else []


def test_a_second_process_on_the_same_run_stops_at_once(folder):
    config = str(folder / "cfg" / "config.yaml")
    first = assay_process("evaluate", config, "--quiet", "--json", cwd=folder)
    deadline = time.monotonic() + 180
    judgments: list[Path] = []
    while not judgments and time.monotonic() < deadline:
        assert first.poll() is None, finish(first)
        judgments = list(folder.glob("runs/*/judgments.jsonl"))
        time.sleep(0.05)
    assert judgments, "the first run never started judging"
    # the first run held still while the second starts (a second process can take seconds to
    # start on a busy machine, and the first would have finished meanwhile): still its run's
    # writer, a process that is stopped, not gone
    os.kill(first.pid, signal.SIGSTOP)
    try:
        assert first.poll() is None, finish(first)
        second = assay_process("evaluate", config, "--quiet", "--json", cwd=folder)
        code, out, err = finish(second)
    finally:
        os.kill(first.pid, signal.SIGCONT)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and out == "", (code, out, err)
    assert len(lines) == 1 and "in use by another assay process (pid " in lines[0], err
    assert f"(pid {first.pid})" in lines[0]

    code, out, err = finish(first)
    assert code == 0, err
    ids = [json.loads(x)["item_id"] for x in judgments[0].read_text().splitlines()]
    assert sorted(ids) == [f"q{i:02d}" for i in range(12)]  # judged once each, by the first

    # the store stays usable: a third run (another run directory) logs to it
    code, out, err = finish(
        assay_process("evaluate", config, "--quiet", "--json", "--limit", "3", cwd=folder)
    )
    assert code == 0, err
    assert len(mlflow_runs(folder)) == 2


def test_two_configs_create_one_new_mlflow_store_together(folder):
    config = str(folder / "cfg" / "config.yaml")
    assert not (folder / "mlflow.db").exists()
    procs = [
        assay_process("evaluate", config, "--quiet", "--json", "--limit", str(n), cwd=folder)
        for n in (2, 3)
    ]
    results = [finish(p) for p in procs]
    for code, _, err in results:
        assert code == 0, err
    run_ids = {json.loads(out.strip().splitlines()[-1])["mlflow_run_id"] for _, out, _ in results}
    assert len(run_ids) == 2 and None not in run_ids
    assert {r.info.run_id for r in mlflow_runs(folder)} == run_ids
    assert len(list(folder.glob("runs/*/metrics.json"))) == 2
