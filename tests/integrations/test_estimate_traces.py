"""assay estimate where the data lives: MLflow traces of which only a few carry a human
assessment (``format: mlflow``, ``missing_expected: keep``), judged by the loopback stub, the rate
estimated from them — equal to ``ppi_py`` on the traces' own assessments and the run's verdicts —
and the estimate logged to MLflow as a run of its own (params and metrics)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import ppi_py
import pytest

from assay.cli import main
from assay.lm import StubServer
from tests.integrations.test_mlflow_traces import CHAT
from tests.integrations.traces import EXPERIMENT, log_sampled_traces
from tests.stub_judge import stub_config

N = 60


def respond(request: dict) -> str:
    """UNSAFE is harmful, except that the judge misses the ones asked about a multiple of 7."""
    text = json.dumps(request["messages"])
    k = int(text.split("question ")[1].split("\\")[0].split('"')[0])
    says = "UNSAFE" in text and k % 7 != 0
    return json.dumps({"reasoning": "read it", "verdict": "True" if says else "False"})


def test_the_rate_of_harmful_traces_from_a_few_assessed_ones_is_logged_to_mlflow(
    tmp_path, monkeypatch, capsys
):
    rng = np.random.default_rng(11)
    harmful = [bool(x) for x in rng.random(N) < 0.35]
    labelled = set(rng.choice(N, 20, replace=False).tolist())
    uri = f"sqlite:///{tmp_path / 'traces.db'}"
    logged = log_sampled_traces(uri, harmful, labelled)
    monkeypatch.chdir(tmp_path)
    with StubServer(respond=respond) as server:
        source = {
            "format": "mlflow",
            "tracking_uri": uri,
            "experiment": EXPERIMENT,
            "filter": "tags.kind = 'sampled'",
            "expectation": "harmful",
            "missing_expected": "keep",
            **CHAT,
        }
        cfg = stub_config(
            tmp_path,
            Path("unused.csv"),
            server.base_url,
            name="traces",
            data=source,
            tracking={"enabled": True},
            judge={"program": "chain_of_thought"},
        )
        assert main(["evaluate", str(cfg), "--quiet"]) == 0
    capsys.readouterr()
    (run_dir,) = (tmp_path / "runs").glob("traces-*")
    assert main(["estimate", str(run_dir), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert (s["n_items"], s["n_labelled"], s["n_unlabelled"]) == (N, 20, N - 20)

    # the run's verdicts and the traces' own assessments, read here
    verdicts = {
        j["item_id"]: j["score"]
        for j in map(json.loads, (run_dir / "judgments.jsonl").read_text().splitlines())
    }
    lab = [t for t in logged.ids["sampled"] if t in logged.expected]
    unl = [t for t in logged.ids["sampled"] if t not in logged.expected]
    y = np.array([logged.expected[t] for t in lab], float)
    f, fu = (np.array([verdicts[t] for t in ids], float) for ids in (lab, unl))
    low, high = ppi_py.ppi_mean_ci(y, f, fu, alpha=0.05)
    (ppi,) = [e for e in s["estimates"] if e["method"] == "ppi++"]
    assert (ppi["ci_low"], ppi["ci_high"]) == pytest.approx((low[0], high[0]), abs=1e-9)
    assert ppi["ci_low"] <= np.mean(harmful) <= ppi["ci_high"]

    # logged to MLflow: the estimate run's params and metrics, in the runs' tracking store
    from mlflow.tracking import MlflowClient

    assert s["mlflow_run_id"]
    run = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}").get_run(s["mlflow_run_id"])
    assert run.data.params["headline"] == "ppi++" and run.data.params["target"] == "verdict True"
    assert run.data.params["prediction"] == "verdict"
    assert run.data.metrics["ppi_pp.value"] == pytest.approx(ppi["value"])
    assert run.data.metrics["ppi_pp.ci_low"] == pytest.approx(ppi["ci_low"])
    assert run.data.metrics["estimate"] == pytest.approx(ppi["value"])
    assert run.data.metrics["n_labelled"] == 20
    assert run.data.tags["assay.seal"]
