"""The judging stage on Ray gives the judgments and metrics of a local run (a local Ray
instance started by the test: ``ray.init(num_cpus=2)``), and a Ray run resumes like a local one."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from assay.evaluation import evaluate
from assay.inputs import EvaluateConfig
from assay.lm import StubServer
from assay.report import read_jsonl
from tests.plugin_files import first_sentence_kind
from tests.processes import printed_json

ray = pytest.importorskip("ray", reason="the [ray] extra is not installed")
pytestmark = pytest.mark.ray
ROOT = Path(__file__).resolve().parents[2]
N_ITEMS = 12


@pytest.fixture(scope="module")
def local_ray():
    """A two-CPU Ray instance on this machine; its workers import this checkout's assay."""
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}},
    )
    yield ray
    ray.shutdown()


def verdict(request: dict[str, Any]) -> str:
    """A verdict that depends on the item (so a mix-up between items would show)."""
    text = request["messages"][-1]["content"]
    return json.dumps({"verdict": "True" if "blue" in text else "False"})


def write_items(folder: Path, n: int = N_ITEMS) -> Path:
    """``n`` items, one in three blue, every other one expected True."""
    rows = ["id,request,response,expected"]
    for k in range(n):
        colour = "blue" if k % 3 == 0 else "red"
        rows.append(f"i{k},What colour is item {k}?,Item {k} is {colour}.,{int(k % 2 == 0)}")
    path = folder / "items.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def items_csv(tmp_path: Path) -> Path:
    return write_items(tmp_path)


def config(csv: Path, stub: StubServer, output_dir: str, engine: str) -> EvaluateConfig:
    return EvaluateConfig.model_validate(
        {
            "name": "ray-eval",
            "data": {"path": str(csv), "columns": {"id": "id"}},
            "judge": {
                "name": "stub-judge",
                "model": "openai/stub-model",
                "api_base": stub.base_url,
                "instruction": "Is the item blue?",
                "scale": {"kind": "binary", "labels": ["False", "True"]},
                "price": {"input_per_mtok": 1.0, "output_per_mtok": 2.0},
            },
            "concurrency": 4,
            "output_dir": output_dir,
            "tracking": {"enabled": False},
            "execution": {"engine": engine},
        }
    )


def comparable(judgments) -> list[dict[str, Any]]:
    return [j.model_dump(exclude={"latency_s"}) for j in judgments]


def without_timing(summary: Any) -> dict[str, Any]:
    """A summary without what wall-clock time sets (the mean latency)."""
    summary = summary.model_dump(mode="json")
    return {
        **summary,
        "usage": {k: v for k, v in summary["usage"].items() if k != "mean_latency_s"},
    }


def test_ray_run_gives_the_judgments_and_metrics_of_a_local_run(tmp_path, items_csv, local_ray):
    with StubServer(respond=verdict) as stub:
        local = evaluate(
            config(items_csv, stub, "local", "local"), workdir=tmp_path, progress=False
        )
        assert stub.n_requests == N_ITEMS
        remote = evaluate(config(items_csv, stub, "ray", "ray"), workdir=tmp_path, progress=False)
        assert stub.n_requests == 2 * N_ITEMS  # every item judged once more, in the workers

    assert remote.new_judgments == N_ITEMS
    assert comparable(remote.judgments) == comparable(local.judgments)
    assert {j.score for j in remote.judgments} == {0, 1}
    assert without_timing(remote.summary) == without_timing(local.summary)
    assert remote.summary.usage.calls == N_ITEMS and remote.summary.usage.cost_usd > 0
    # the driver wrote them, one line per judgment, in the same store layout
    lines = (remote.run_dir / "judgments.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["item_id"] for x in lines) == sorted(
        f"i{k}" for k in range(N_ITEMS)
    )


def test_a_ray_run_keeps_a_window_of_work_in_flight_not_all_of_it(tmp_path, local_ray, monkeypatch):
    """Forty items at concurrency 4 (two actors of two threads): the driver sends an actor
    twice its threads' worth and no more until results come back — at most
    ``window(concurrency)`` items sent and unfinished at any time, as a local pool holds —,
    and the run's judgments and metrics are a local run's. Before, every item was sent at once
    (40 unfinished) and the driver waited on all of them for each result."""
    from assay.runs._pool import window
    from assay.runs._ray import _Actors

    unfinished: list[int] = []  # after each send, the items sent and not yet finished
    send = _Actors.send

    def counted(self, *args):
        ref = send(self, *args)
        unfinished.append(len(self.sent))
        return ref

    monkeypatch.setattr(_Actors, "send", counted)
    n = 40
    csv = write_items(tmp_path, n)
    with StubServer(respond=verdict) as stub:
        local = evaluate(config(csv, stub, "local", "local"), workdir=tmp_path, progress=False)
        remote = evaluate(config(csv, stub, "ray", "ray"), workdir=tmp_path, progress=False)
        assert stub.n_requests == 2 * n

    assert len(unfinished) == n  # each item sent once
    assert max(unfinished) == window(4) == 8  # every thread busy and as many queued: no more
    assert remote.new_judgments == n
    assert comparable(remote.judgments) == comparable(local.judgments)
    assert without_timing(remote.summary) == without_timing(local.summary)


def test_a_ray_run_resumes_and_re_runs_like_a_local_one(tmp_path, items_csv, local_ray):
    with StubServer(respond=verdict) as stub:
        cfg = config(items_csv, stub, "runs", "ray")
        first = evaluate(cfg, workdir=tmp_path, progress=False, limit=N_ITEMS // 2)
        # the rest, on Ray; then a local re-run of the finished config makes no call
        # (execution is not part of the run's identity: the same run directory either way)
        lines = (first.run_dir / "judgments.jsonl").read_text().splitlines()
        assert len(lines) == N_ITEMS // 2
        full = evaluate(cfg, workdir=tmp_path, progress=False)
        calls = stub.n_requests
        again = evaluate(config(items_csv, stub, "runs", "local"), workdir=tmp_path, progress=False)
        assert stub.n_requests == calls
    assert again.run_dir == full.run_dir and again.new_judgments == 0
    assert comparable(again.judgments) == comparable(full.judgments)


def test_the_command_line_judges_on_ray(tmp_path, items_csv, local_ray):
    """``--ray`` from the command line joins the running cluster (address auto)."""
    import os
    import subprocess
    import sys

    import yaml

    with StubServer(respond=verdict) as stub:
        cfg = config(items_csv, stub, "cli", "local").model_dump(mode="json")
        path = tmp_path / "config.yaml"
        path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "assay.cli",
                "evaluate",
                str(path),
                "--ray",
                "--json",
                "--quiet",
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert stub.n_requests == N_ITEMS
    out = printed_json(proc.stdout)
    assert out["new_judgments"] == N_ITEMS and out["counts"]["scored"] == N_ITEMS


# -- the harness --------------------------------------------------------------------------------
SUM = re.compile(r"What is (\d+) \+ (\d+)\?")


def sum_verdict(request: dict[str, Any]) -> str:
    """A judge on the wire: 'correct' when the response states the sum the request asks for
    (its last number; read from the prompt DSPy built), so each probe's verdict follows its text."""
    text = request["messages"][-1]["content"]
    asked = SUM.search(text)
    response = text.split("[[ ## response ## ]]", 1)[1].split("Respond with", 1)[0]
    stated = re.findall(r"-?\d+", response)
    ok = bool(asked and stated and int(stated[-1]) == int(asked[1]) + int(asked[2]))
    return json.dumps({"verdict": "correct" if ok else "incorrect"})


def harness_config(tmp_path: Path, stub: StubServer, output_dir: str, engine: str):
    from assay.reliability import HarnessConfig
    from assay.reliability.selftest._selftest import register, write_data

    register()  # the generator and validator are scripted: they run here, in the driver
    return HarnessConfig.model_validate(
        {
            "name": "ray-harness",
            "data": {"path": str(write_data(tmp_path / "data", n=6)), "columns": {"id": "id"}},
            "scale": {"kind": "binary", "labels": ["incorrect", "correct"]},
            "generator": {"model": "scripted:assay-selftest-generator", "temperature": 0.7},
            "validator": {"model": "scripted:assay-selftest-validator"},
            "judges": [
                {
                    "name": "wire",
                    "model": "openai/stub-model",
                    "api_base": stub.base_url,
                    "rubric": "The answer must state the correct sum.",
                    "price": {"input_per_mtok": 1.0, "output_per_mtok": 2.0},
                }
            ],
            "tests": {
                "label_flip": {},
                "format_intraline": {},
                "verbosity_long": {},
                "stochastic_stability": {"k": 2, "temperature": 1.0},
            },
            "retries": 0,
            "concurrency": 4,
            "output_dir": str(tmp_path / output_dir),
            "tracking": {"enabled": False},
            "execution": {"engine": engine},
        }
    )


def test_a_ray_harness_gives_the_judgments_and_metrics_of_a_local_one(tmp_path, local_ray):
    from assay.reliability import run_harness

    with StubServer(respond=sum_verdict) as stub:
        local = run_harness(
            harness_config(tmp_path, stub, "local", "local"), progress=False, workdir=tmp_path
        )
        calls = stub.n_requests
        remote = run_harness(
            harness_config(tmp_path, stub, "ray", "ray"), progress=False, workdir=tmp_path
        )
        assert stub.n_requests == 2 * calls  # every judgment made again, by the actors
        again = run_harness(
            harness_config(tmp_path, stub, "ray", "local"), progress=False, workdir=tmp_path
        )
        assert stub.n_requests == 2 * calls  # a finished Ray run re-run here: no call

    # 6 sources, 6 label flips, 6 intraline, 6 long, 12 stability samples
    assert calls == 36

    def judged(res: Any) -> list[dict[str, Any]]:
        rows = [r for f in (res.run_dir / "judgments").glob("*.jsonl") for r in read_jsonl(f)]
        return sorted(
            ({k: v for k, v in r.items() if k != "latency_s"} for r in rows),
            key=lambda r: r["item_id"],
        )

    assert judged(remote) == judged(local) and len(judged(local)) == calls
    assert {r["label"] for r in judged(local)} == {"correct", "incorrect"}
    # a harness summary holds no wall-clock figure: equal as a whole
    assert remote.summary.model_dump() == local.summary.model_dump()
    assert again.summary.model_dump() == remote.summary.model_dump()
    flips = local.summary.judges["wire"].tests["label_flip"]
    assert flips.pass_rate.n == 6 and flips.pass_rate.value == 1.0  # the wire judge reads the sum


# -- a plug-in judge kind -----------------------------------------------------------------------


def shown_response(request: dict[str, Any]) -> str:
    """The verdict of the response the judge was shown: True when it says blue."""
    text = request["messages"][-1]["content"]
    shown = text.split("[[ ## response ## ]]", 1)[1].split("Respond with", 1)[0]
    return json.dumps({"verdict": "True" if "blue" in shown else "False"})


def test_a_plugin_judge_kind_judges_in_the_ray_actors(tmp_path, local_ray):
    """The kind's file is one of the config's plug-ins: imported here when the config is
    validated, and by every actor before it builds the judge."""
    plugin = tmp_path / "first_sentence.py"
    plugin.write_text(first_sentence_kind("ray_first_sentence"))
    rows = ["id,request,response,expected"]
    for k in range(N_ITEMS):
        colours = ("blue", "red") if k % 3 == 0 else ("red", "blue")
        rows.append(f"i{k},What colour is item {k}?,It is {colours[0]}. Not {colours[1]}.,1")
    (tmp_path / "items.csv").write_text("\n".join(rows) + "\n")

    def plugged(stub: StubServer, engine: str) -> EvaluateConfig:
        cfg = config(tmp_path / "items.csv", stub, engine, engine).model_dump(mode="json")
        cfg["plugins"] = [str(plugin)]
        cfg["judge"]["task"] = "ray_first_sentence"
        return EvaluateConfig.model_validate(cfg)

    with StubServer(respond=shown_response) as stub:
        local = evaluate(plugged(stub, "local"), workdir=tmp_path, progress=False)
        remote = evaluate(plugged(stub, "ray"), workdir=tmp_path, progress=False)
        assert stub.n_requests == 2 * N_ITEMS
    assert remote.new_judgments == N_ITEMS and remote.summary.counts.unscored == 0
    assert comparable(remote.judgments) == comparable(local.judgments)
    assert [j.score for j in remote.judgments] == [int(k % 3 == 0) for k in range(N_ITEMS)]
