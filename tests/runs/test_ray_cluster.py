"""The Ray engine on a real cluster of two nodes on this machine (``ray start --head`` and ``ray
start --address``, one CPU each, on loopback), driven as a user drives it: ``assay evaluate``
and ``assay harness`` with ``execution: {engine: ray, address: <head>}``, in processes of their
own. The judging spreads over both nodes' actors and gives a local run's judgments, metrics and
calls; a node killed mid-run costs the calls it had in flight, not the run; the harness's
generation runs on the actors too, with the probes of a local run."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from assay.evaluation import evaluate
from assay.inputs import EvaluateConfig
from assay.lm import StubServer
from assay.report import read_jsonl
from tests.processes import assay_process, printed_json
from tests.ray_cluster import RayCluster
from tests.runs.test_ray import sum_verdict, verdict
from tests.runs.test_ray import write_items as ray_items

pytest.importorskip("ray", reason="the [ray] extra is not installed")
pytestmark = [pytest.mark.ray, pytest.mark.slow]
N_ITEMS = 16
CONCURRENCY = 4  # two actors (one per cluster CPU), two calls in flight each


@pytest.fixture(scope="module")
def cluster():
    """A head and a second node, each with one CPU and its own temp dir; stopped (those two
    process groups only) when the module's tests are done."""
    with RayCluster(cpus_per_node=1, object_store_mb=100) as c:
        c.add_node("worker_node")
        yield c


def write_items(folder: Path) -> Path:
    return ray_items(folder, N_ITEMS)


def eval_config(csv: Path, stub: StubServer, output_dir: Path, execution: dict) -> dict:
    return {
        "name": "cluster-eval",
        "data": {"path": str(csv), "columns": {"id": "id"}},
        "judge": {
            "name": "stub-judge",
            "model": "openai/stub-model",
            "api_base": stub.base_url,
            "instruction": "Is the item blue?",
            "scale": {"kind": "binary", "labels": ["False", "True"]},
            "price": {"input_per_mtok": 1.0, "output_per_mtok": 2.0},
        },
        "concurrency": CONCURRENCY,
        "output_dir": str(output_dir),
        "tracking": {"enabled": False},
        "execution": execution,
    }


def start_command(cluster: RayCluster, folder: Path, *args: str):
    """``assay *args`` in ``folder``, a client of ``cluster`` (its token in the environment)."""
    return assay_process(*args, cwd=folder, env=cluster.client_env)


def finish(proc, timeout: float = 600) -> tuple[str, str]:
    """The command's stdout and stderr, once it exited 0."""
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-3000:]
    return out, err


def worker_actors(cluster: RayCluster) -> dict[str, dict[str, Any]]:
    """Every actor of assay's pool the cluster has known (alive or dead), with its node."""
    return cluster.python(
        "from ray._private.state import actors\n"
        "answer({a: v['Address']['NodeID'] for a, v in actors().items()"
        " if v['ActorClassName'] == 'Worker'})"
    )


def local_run(tmp_path: Path, stub: StubServer, csv: Path):
    cfg = EvaluateConfig.model_validate(
        eval_config(csv, stub, tmp_path / "local", {"engine": "local"})
    )
    return evaluate(cfg, workdir=tmp_path, progress=False)


def comparable_lines(path: Path) -> list[dict[str, Any]]:
    rows = [{k: v for k, v in r.items() if k != "latency_s"} for r in read_jsonl(path)]
    return sorted(rows, key=lambda r: r["item_id"])


def metrics_without_timing(run_dir: Path) -> dict[str, Any]:
    metrics = json.loads((run_dir / "metrics.json").read_text())
    metrics["usage"].pop("mean_latency_s", None)
    return metrics


def ledger(run_dir: Path) -> tuple[int, int, int]:
    rows = list(read_jsonl(run_dir / "calls.jsonl"))
    return (
        sum(r["calls"] for r in rows),
        sum(r["prompt_tokens"] for r in rows),
        sum(r["completion_tokens"] for r in rows),
    )


def test_judging_spreads_over_both_nodes_and_equals_a_local_run(tmp_path, cluster):
    csv = write_items(tmp_path)
    nodes = cluster.alive_nodes()
    before = set(worker_actors(cluster))
    with StubServer(respond=verdict) as stub:
        local = local_run(tmp_path, stub, csv)
        assert stub.n_requests == N_ITEMS
        config = tmp_path / "config.json"
        execution = {"engine": "ray", "address": cluster.address}
        config.write_text(json.dumps(eval_config(csv, stub, tmp_path / "ray", execution)))
        out, _ = finish(start_command(cluster, tmp_path, "evaluate", str(config), "--json"))
        assert stub.n_requests == 2 * N_ITEMS  # every item judged once more, on the cluster
    result = printed_json(out)
    remote_dir = Path(result["run_dir"])

    # the judging actors of this run: one on each node
    actors = {a: node for a, node in worker_actors(cluster).items() if a not in before}
    assert sorted(actors.values()) == sorted(nodes.values())

    assert remote_dir.name == local.run_dir.name  # the same run: execution is not in the hash
    assert comparable_lines(remote_dir / "judgments.jsonl") == comparable_lines(
        local.run_dir / "judgments.jsonl"
    )
    assert metrics_without_timing(remote_dir) == metrics_without_timing(local.run_dir)
    assert ledger(remote_dir) == ledger(local.run_dir)
    assert ledger(remote_dir)[0] == N_ITEMS


class Gate:
    """The stub's answers: at once, until :meth:`arm` — then the first ``after`` requests at
    once and each later one only when ``opened``, counted in ``held`` meanwhile."""

    def __init__(self) -> None:
        self.after: int | None = None
        self.seen = 0
        self.held = 0
        self.opened = threading.Event()
        self.lock = threading.Lock()

    def arm(self, after: int) -> None:
        self.after, self.seen = after, 0

    def __call__(self, request: dict[str, Any]) -> str:
        with self.lock:
            self.seen += 1
            hold = self.after is not None and self.seen > self.after
            self.held += hold
        if hold:
            self.opened.wait()
        return verdict(request)


def wait_until(condition, what: str, proc, timeout: float = 300) -> None:
    """Poll ``condition`` (the run's files, the stub's counters) — never a fixed sleep."""
    end = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, f"the run ended while waiting for {what}"
        assert time.monotonic() < end, f"no {what} in {timeout:.0f} s"
        time.sleep(0.2)


def test_a_node_killed_mid_run_costs_its_calls_in_flight_not_the_run(tmp_path, cluster):
    """The worker node is killed while both actors hold calls the stub has not answered: its
    actor is replaced by one on the head, which makes those calls again, and the run finishes with every
    item judged exactly once, the metrics of a local run and a ledger of the calls it received
    (the two killed on the wire are the server's, answered to no one)."""
    csv = write_items(tmp_path)
    gate = Gate()
    nodes = cluster.alive_nodes()
    before = set(worker_actors(cluster))
    try:
        with StubServer(respond=gate) as stub:
            local = local_run(tmp_path, stub, csv)
            served_locally = stub.n_requests
            config = tmp_path / "config.json"
            execution = {"engine": "ray", "address": cluster.address}
            config.write_text(json.dumps(eval_config(csv, stub, tmp_path / "ray", execution)))
            gate.arm(after=6)
            proc = start_command(cluster, tmp_path, "evaluate", str(config), "--json")
            run_dir = tmp_path / "ray" / local.run_dir.name
            judged = run_dir / "judgments.jsonl"
            # both actors full: each holds two calls the stub has not answered (an actor has
            # at least two of its eight items left after the first six answers)
            wait_until(lambda: gate.held == CONCURRENCY, "calls held", proc)
            before_kill = len(judged.read_text().splitlines())
            cluster.kill("worker_node")
            gate.opened.set()
            out, err = finish(proc)
            served = stub.n_requests - served_locally
        actors = worker_actors(cluster)
    finally:
        gate.opened.set()  # no stub thread left waiting
        if not cluster.nodes["worker_node"].alive():  # two nodes again, for the next test
            cluster.add_node("worker_node")

    assert before_kill < N_ITEMS  # killed mid-run
    result = printed_json(out)
    assert Path(result["run_dir"]) == run_dir and result["new_judgments"] == N_ITEMS
    ids = [r["item_id"] for r in read_jsonl(judged)]
    assert sorted(ids) == sorted(
        f"i{k}" for k in range(N_ITEMS)
    )  # each once: none lost, none twice
    assert comparable_lines(judged) == comparable_lines(local.run_dir / "judgments.jsonl")
    assert metrics_without_timing(run_dir) == metrics_without_timing(local.run_dir)

    # one actor on each node, then the worker node's replaced by one on the head (on a busy
    # machine Ray may first place a replacement on the killed node, not yet marked dead: that
    # one never works and is replaced in turn)
    ours = [node for a, node in actors.items() if a not in before]
    assert ours.count(nodes["head"]) == 2 and ours.count(nodes["worker_node"]) >= 1, (
        nodes,
        ours,
        err[-2000:],
    )
    assert set(ours) == set(nodes.values())
    assert "a Ray actor was lost" in err and "Traceback" not in err
    # the calls it held when its node died were sent again: served, and never received
    lost = CONCURRENCY // 2
    assert served == N_ITEMS + lost
    assert ledger(run_dir) == ledger(local.run_dir)  # the ledger: the answers the run received


# -- the harness: generation and judging on the cluster -----------------------------------------
OUTPUT_FIELDS = ("rewritten", "equivalent", "confirmed", "inverted_ok", "inverted_rubric")


def roles_on_the_wire(request: dict[str, Any]) -> str:
    """The self-test's scripted generator and validator (and a judge reading the sum) served
    over HTTP, by the model asked: the harness's roles as a hosted model serves them."""
    from assay.lm import ScriptedCall
    from assay.reliability.selftest._selftest import generator, validator

    model = request["model"]
    if model == "stub-model":
        return sum_verdict(request)
    prompt = "\n\n".join(m["content"] for m in request["messages"])
    asked = prompt.rsplit("Respond with", 1)[-1]  # the output fields DSPy asks for, by name
    fields = tuple(f for f in OUTPUT_FIELDS if f"`{f}`" in asked)
    call = ScriptedCall(prompt, fields, request.get("temperature"), request.get("seed"), 0)
    return json.dumps((generator if model == "gen-model" else validator)(call))


def harness_config(data: Path, stub: StubServer, output_dir: Path, execution: dict) -> dict:
    return {
        "name": "cluster-harness",
        "data": {"path": str(data), "columns": {"id": "id"}},
        "scale": {"kind": "binary", "labels": ["incorrect", "correct"]},
        "generator": {"model": "openai/gen-model", "api_base": stub.base_url, "temperature": 0.7},
        "validator": {"model": "openai/val-model", "api_base": stub.base_url},
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
            "paraphrase": {},
            "verbosity_long": {},
            "format_intraline": {},  # no LLM: generated in the driver
            "stochastic_stability": {"k": 2, "temperature": 1.0},
        },
        "retries": 0,
        "concurrency": CONCURRENCY,
        "output_dir": str(output_dir),
        "tracking": {"enabled": False},
        "execution": execution,
    }


def test_the_harness_generates_and_judges_on_the_cluster_as_a_local_run(tmp_path, cluster):
    """Both runs from the command line, each in a folder of its own (its own LM cache)."""
    from assay.reliability.selftest._selftest import write_data

    data = write_data(tmp_path / "data", n=6)
    nodes = cluster.alive_nodes()
    before = set(worker_actors(cluster))
    runs = {}
    with StubServer(respond=roles_on_the_wire) as stub:
        for engine in ("local", "ray"):
            folder = tmp_path / engine
            folder.mkdir()
            execution = {"engine": engine, "address": cluster.address}
            config = folder / "config.json"
            config.write_text(json.dumps(harness_config(data, stub, folder / "runs", execution)))
            out, _ = finish(start_command(cluster, folder, "harness", str(config), "--json"))
            runs[engine] = Path(printed_json(out)["run_dir"])
            if engine == "local":
                served_locally = stub.n_requests
                generated_locally = sum(r["model"] != "stub-model" for r in stub.requests)
        assert stub.n_requests == 2 * served_locally  # every call made again, on the cluster
    local, run_dir = runs["local"], runs["ray"]
    assert run_dir.name == local.name  # the same run: execution is not in its hash
    assert generated_locally > 0

    # generation, then judging: a pool of two actors each, one actor of each on each node
    actors = [node for a, node in worker_actors(cluster).items() if a not in before]
    assert sorted(actors) == sorted(2 * list(nodes.values()))

    # the same probes (ids bound to the same keys, the same texts), units, judgments, metrics
    def probes(run: Path) -> list[dict[str, Any]]:
        return sorted(read_jsonl(run / "probes.jsonl"), key=lambda p: p["id"])

    def units(run: Path) -> list[dict[str, Any]]:
        rows = [
            {k: v for k, v in r.items() if k != "finished"} for r in read_jsonl(run / "units.jsonl")
        ]
        return sorted(rows, key=lambda r: r["unit_id"])

    def judged(run: Path) -> list[dict[str, Any]]:
        rows = [r for f in (run / "judgments").glob("*.jsonl") for r in read_jsonl(f)]
        return sorted(
            ({k: v for k, v in r.items() if k != "latency_s"} for r in rows),
            key=lambda r: r["item_id"],
        )

    assert probes(run_dir) == probes(local)
    assert {p["test"] for p in probes(run_dir)} >= {"paraphrase", "label_flip", "verbosity_long"}
    assert units(run_dir) == units(local)
    assert judged(run_dir) == judged(local)
    assert json.loads((run_dir / "metrics.json").read_text()) == json.loads(
        (local / "metrics.json").read_text()
    )
    assert ledger(run_dir) == ledger(local)
    assert ledger(run_dir)[0] == served_locally
