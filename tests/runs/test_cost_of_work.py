"""The cost of the work against what a run paid: an answer taken from the LM cache is no call
and is not paid, but the work needed it. Each run reports its cost of the work — every answer
its results used, those from the cache priced as the server first answered them — apart from
what it paid (the calls the stub server served). A warm cache changes what was paid, never the
cost of the work: the same config costs the same work whether its answers were paid now, by
an earlier run, or by the judge beside it."""

from __future__ import annotations

import json
import math
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from assay.cli import main
from assay.evaluation._evaluate import evaluate_metrics
from assay.lm import StubServer
from assay.reliability import HarnessSummary
from assay.reliability.engine._tracking import judge_metrics
from assay.reliability.report._report import cost_axis
from assay.reliability.selftest._selftest import write_data
from tests.processes import assay_process
from tests.runs.test_accounting import PRICE, ledger_rows, served, wait_for, write_config
from tests.stub_judge import N_ITEMS, write_items

PAID = ("calls", "prompt_tokens", "completion_tokens")


def cli_json(argv: list[str], capsys) -> dict[str, Any]:
    assert main([*argv, "--json", "--quiet"]) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def assert_paid_is_served(summary: dict[str, Any], stub: StubServer) -> None:
    """What the run says it paid (its call ledger) is what the stub served: calls, tokens, USD."""
    want, paid = served(stub), summary["spend"]["paid"]
    assert [paid[k] for k in PAID] == [want[k] for k in PAID]
    assert math.isclose(paid["cost_usd"], want["cost"], rel_tol=1e-9, abs_tol=1e-15)


def assert_same_work(a: dict[str, Any], b: dict[str, Any]) -> None:
    """Two costs of the work: the same answers and tokens, the same USD (summed in another
    order when some came from the cache: equal to the last bits)."""
    assert [a[k] for k in PAID] == [b[k] for k in PAID]
    assert math.isclose(a["cost_usd"], b["cost_usd"], rel_tol=1e-12)


# -- evaluate -------------------------------------------------------------------------------------
@pytest.mark.parametrize("client", ["native", "litellm"])
def test_an_evaluate_run_on_a_warm_cache_pays_nothing_and_costs_the_same_work(
    client, tmp_path, monkeypatch, capsys
):
    """The same judge on the same items, in a second run directory of the same folder: every
    answer comes from the LM cache. It paid nothing (the stub served nothing), and its cost of
    the work is the first run's, priced from what the stub first served — through assay's
    client (DSPy's cache record keeps the usage) and through LiteLLM (whose cached response
    DSPy hands back with its usage emptied: assay keeps a copy)."""
    monkeypatch.chdir(tmp_path)
    csv = write_items(tmp_path)
    judge = {"client": client}
    with StubServer() as stub:
        cfg = write_config(tmp_path, csv, stub.base_url, judge=judge)
        cold = cli_json(["evaluate", str(cfg)], capsys)
        assert_paid_is_served(cold, stub)
        first = served(stub)
        stub.reset()
        other = tmp_path / "other"
        other.mkdir()
        warm_cfg = write_config(
            other, csv, stub.base_url, judge=judge, output_dir=str(tmp_path / "runs-b")
        )
        warm = cli_json(["evaluate", str(warm_cfg)], capsys)
        assert stub.n_requests == 0
        assert_paid_is_served(warm, stub)  # nothing
    assert cold["run_dir"] != warm["run_dir"]
    assert (cold["usage"]["calls"], cold["usage"]["cached_calls"]) == (N_ITEMS, 0)
    assert (warm["usage"]["calls"], warm["usage"]["cached_calls"]) == (0, N_ITEMS)
    assert warm["usage"]["cost_usd"] == 0
    for run in (cold, warm):  # the cost of the work: what the stub served the first time
        assert [run["work"][k] for k in PAID] == [first[k] for k in PAID]
        assert math.isclose(run["work"]["cost_usd"], first["cost"], rel_tol=1e-12)
    assert warm["usage"]["cost_per_accuracy_point_usd"] == pytest.approx(
        cold["usage"]["cost_per_accuracy_point_usd"]
    )
    assert [j["cached"] for j in read_jsonl(Path(warm["run_dir"]) / "judgments.jsonl")] == [
        True
    ] * N_ITEMS

    metrics = evaluate_metrics(json.loads((Path(warm["run_dir"]) / "metrics.json").read_text()))
    assert metrics["usage_calls"] == metrics["spend_paid.calls"] == 0  # MLflow
    assert (metrics["usage_cached_calls"], metrics["work_calls"]) == (N_ITEMS, N_ITEMS)
    assert metrics["work_cost_usd"] == pytest.approx(first["cost"])

    main(["evaluate", str(warm_cfg)])  # re-read: the console says where the answers came from
    out = capsys.readouterr().out
    assert f"cost of the work: {N_ITEMS} LM answers" in out
    assert f"0 answered by the server for these results, {N_ITEMS} taken from the LM cache" in out
    assert "paid in all: 0 calls" in out
    for page in ("report.md", "report.html"):
        text = (Path(warm["run_dir"]) / page).read_text()
        assert "from the LM cache" in text and "paid in all: 0 calls" in text, page
        assert f"{first['cost']:.6f}" in text, page  # the cost of the work, in the table


def test_a_served_answer_is_in_the_ledger_before_the_cache_holds_it(tmp_path):
    """The ledger notes an answer before DSPy stores it in the LM cache: a process killed
    between the two has the answer in its ledger (paid) and not in the cache (asked again),
    never in the cache with no ledger row (answers reused that nobody accounted for)."""
    import dspy

    from assay.lm import configure_cache, make_lm, record_calls

    configure_cache(tmp_path)
    held_when_noted: list[int] = []

    def ledger(record) -> None:  # what the cache holds when the answer is noted
        held_when_noted.append(len(dspy.cache.memory_cache))

    with StubServer() as stub, record_calls(ledger):
        lm = make_lm("openai/stub-model", api_base=stub.base_url, price=PRICE)
        lm("What colour is the sky?")
        assert len(dspy.cache.memory_cache) == 1  # then stored
        lm("What colour is the sky?")  # from the cache: no call, nothing noted
    assert held_when_noted == [0]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


# -- harness --------------------------------------------------------------------------------------
def harness_config(folder: Path, api_base: str, judges: list[dict], **extra: Any) -> Path:
    """A harness of one deterministic test (no generator call) on four arithmetic seeds, its
    judges on the stub at ``api_base``, one call on the wire at a time."""
    base = {
        "model": "openai/stub-model",
        "api_base": api_base,
        "price": PRICE,
        "rubric": "The answer must state the correct sum.",
    }
    config = {
        "name": "work",
        "data": {"path": str(write_data(folder / "data", n=4)), "columns": {"id": "id"}},
        "scale": {"kind": "binary", "labels": ["incorrect", "correct"]},
        "judges": [{**base, **j} for j in judges],
        "tests": {"format_vertical": {}},
        "concurrency": 1,
        "retries": 0,
        "tracking": {"enabled": False},
        **extra,
    }
    path = folder / "harness.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


TWINS = [{"name": "a"}, {"name": "b"}]  # the same judge twice: the same requests


def test_a_harness_reports_the_cost_of_the_work_whatever_the_cache_held(
    tmp_path, monkeypatch, capsys
):
    """Judges a and b send the same requests: in one run, the answers one paid the other takes
    from the cache. The same config run in two fresh folders, then again in the first folder
    (a warm cache): each judge's cost of the work is the same every time and a's equals b's;
    what was paid is what the stub served each time (nothing at all on the warm cache)."""
    runs: dict[str, dict[str, Any]] = {}
    with StubServer() as stub:
        for name, folder, output in (
            ("fresh", tmp_path / "one", "runs"),
            ("fresh again", tmp_path / "two", "runs"),
            ("warm", tmp_path / "one", "runs-warm"),  # another run directory, the same cache
        ):
            folder.mkdir(exist_ok=True)
            monkeypatch.chdir(folder)
            stub.reset()
            cfg = harness_config(folder, stub.base_url, TWINS, output_dir=str(folder / output))
            runs[name] = cli_json(["harness", str(cfg)], capsys)
            assert_paid_is_served(runs[name], stub)
            runs[name]["served"] = served(stub)
    fresh = runs["fresh"]
    assert runs["warm"]["served"]["calls"] == 0 and runs["warm"]["spend"]["paid"]["calls"] == 0
    assert fresh["served"]["calls"] > 0
    for name, run in runs.items():
        a, b = run["judges"]["a"], run["judges"]["b"]
        assert_same_work(a["work"], b["work"])  # the same work, whoever paid for it
        assert_same_work(a["work"], fresh["judges"]["a"]["work"])
        for j in (a, b):  # every answer: served for these results, or from the cache
            assert j["work"]["calls"] == j["usage"]["calls"] + j["usage"]["cached_calls"]
        paid = a["usage"]["calls"] + b["usage"]["calls"]
        assert paid == run["served"]["calls"], name
        summary = HarnessSummary.model_validate_json(
            (Path(run["run_dir"]) / "metrics.json").read_text()
        )
        label, cost = cost_axis(summary)  # the plot's x: the cost of the work, and it says so
        assert label.startswith("judge cost of the work (USD")
        assert cost["a"] == pytest.approx(cost["b"]) == pytest.approx(a["work"]["cost_usd"])
        tracked = judge_metrics(summary.judges["b"])  # what MLflow logs of judge b
        assert tracked["work_cost_usd"] == pytest.approx(fresh["judges"]["b"]["work"]["cost_usd"])
        assert tracked["usage_cached_calls"] == b["usage"]["cached_calls"]
    # the fresh run: an answer one twin paid, the other took from the cache (what made one
    # judge look half the price of the other); the warm run took every answer from it
    assert sum(j["usage"]["cached_calls"] for j in fresh["judges"].values()) >= 1
    for j in runs["warm"]["judges"].values():
        assert (j["usage"]["calls"], j["usage"]["cost_usd"]) == (0, 0)

    warm_dir = Path(runs["warm"]["run_dir"])
    report = (warm_dir / "report.md").read_text()
    assert "## Cost of the work and what was paid" in report and "paid in all: 0 calls" in report
    from PIL import Image

    assert Image.open(warm_dir / "cost_accuracy.png").text["Description"] == label
    monkeypatch.chdir(tmp_path / "one")
    main(["harness", str(tmp_path / "one" / "harness.yaml")])  # the console, re-read
    out = capsys.readouterr().out
    assert "taken from the LM cache" in out and "cost of the work:" in out


def panel(api_base: str) -> list[dict[str, Any]]:
    """One judge, a panel of two members on the stub: two calls per item, one after the other."""
    member = {
        "model": "openai/stub-model",
        "api_base": api_base,
        "price": PRICE,
        "rubric": "The answer must state the correct sum.",
        "scale": {"kind": "binary", "labels": ["incorrect", "correct"]},
    }
    members = [
        {**member, "name": "cold", "temperature": 0.0},
        {**member, "name": "warm", "temperature": 0.7},  # another request: no cache hit
    ]
    return [{"name": "p", "program": "panel", "members": members}]


@pytest.mark.slow
def test_a_harness_killed_mid_judging_accounts_for_every_answer_after_the_resume(
    tmp_path, monkeypatch, capsys
):
    """A panel judges each item with two calls, one after the other. The harness (a process
    of its own) is killed with SIGKILL while a panel's second call is on the wire: the first
    member's answer was paid and stored in the LM cache, its judgment lost. After the resume
    every judgment's two answers are accounted for — answered by the server (now, or before
    the kill: the ledger holds them) or taken from the cache with the usage it was first
    served with — the ledger's answered calls are the stub's, and each judge's cost of the
    work is that of a run nobody killed."""
    monkeypatch.chdir(tmp_path)
    proc: dict[str, Any] = {}
    warm_calls = {"n": 0}

    def respond(request: dict) -> str:
        if request.get("temperature") == 0.7 and "pid" in proc:
            warm_calls["n"] += 1
            if warm_calls["n"] == 3:  # a panel's second call: the first member answered
                served_so_far = len(stub.responses)
                run = next(tmp_path.glob("runs/*"))  # its first answers made it
                wait_for(lambda: len(ledger_rows(run)) == served_so_far, "the ledger")
                os.kill(proc["pid"], signal.SIGKILL)
                raise RuntimeError("killed while this request was in flight")  # answered 500
        return json.dumps({"verdict": "correct"})

    with StubServer(respond=respond) as stub:
        cfg = harness_config(tmp_path, stub.base_url, panel(stub.base_url))
        first = assay_process("harness", str(cfg), "--quiet", cwd=tmp_path)
        proc["pid"] = first.pid
        first.wait(timeout=300)
        assert first.returncode == -signal.SIGKILL, first.stderr.read()[-800:]
        assert stub.n_requests == len(stub.responses) + 1  # the last one: answered 500
        (run_dir,) = (tmp_path / "runs").iterdir()
        paid_before = ledger_rows(run_dir)
        # the judgments that reached their file before the kill: none, when it came first
        kept = {j["item_id"] for f in (run_dir / "judgments").glob("*") for j in read_jsonl(f)}
        assert paid_before and len(paid_before) == len(stub.responses)

        resumed = cli_json(["harness", str(cfg)], capsys)
        assert_paid_is_served(resumed, stub)
        assert len(ledger_rows(run_dir)) == len(stub.responses)
        served_with_kill = served(stub)

        stub.reset()  # the same config, nobody killing it, in a folder of its own
        clean_dir = tmp_path / "clean"
        clean_dir.mkdir()
        monkeypatch.chdir(clean_dir)
        clean_cfg = harness_config(clean_dir, stub.base_url, panel(stub.base_url))
        clean = cli_json(["harness", str(clean_cfg)], capsys)
    judgments = read_jsonl(next((run_dir / "judgments").iterdir()))
    latest = {j["item_id"]: j for j in judgments}  # an item judged again: its latest judgment
    assert set(latest) > kept  # the resume judged what the kill left
    for j in latest.values():  # two answers each: paid (now, or before the kill) or cached
        u = j["usage"]
        assert u["calls"] + u["cached_calls"] == 2, j["item_id"]
        if u["cached_calls"]:  # priced as first served, not free
            assert u["cached_prompt_tokens"] > 0 and u["cached_cost_usd"] > 0
    cached = sum(j["usage"]["cached_calls"] for j in latest.values())
    assert cached >= 1  # the first member's answer the kill orphaned, taken from the cache
    spend = resumed["spend"]
    used = sum(j["usage"]["calls"] for j in latest.values())
    assert used + spend["paid_not_used"]["calls"] == spend["paid"]["calls"]
    assert spend["paid"]["calls"] == served_with_kill["calls"]
    assert_same_work(resumed["judges"]["p"]["work"], clean["judges"]["p"]["work"])


def test_compare_ranks_a_run_on_a_warm_cache_at_the_cost_of_its_work(tmp_path, monkeypatch, capsys):
    """Two evaluate runs of the same judge, the second on a warm cache (it paid nothing),
    logged to MLflow: the leaderboard's cost and its Pareto front count the cost of the work,
    so the second is not drawn as free."""
    from assay.comparison import compare

    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    tracking = {"enabled": True, "uri": uri, "experiment": "work"}
    csv = write_items(tmp_path)
    ids = []
    with StubServer() as stub:
        for output in ("runs-a", "runs-b"):
            cfg = write_config(tmp_path, csv, stub.base_url, tracking=tracking, output_dir=output)
            ids.append(cli_json(["evaluate", str(cfg)], capsys)["mlflow_run_id"])
        cost = served(stub)["cost"]  # every answer served once, for the first run
    rows = compare(ids, tracking_uri=uri, log=False).model_dump()["leaderboard"]
    assert len(rows) == 2 and rows[0]["paid_in"] == "usd"
    assert [r["cost_usd"] for r in rows] == [pytest.approx(cost)] * 2
    assert rows[0]["paid"] == rows[1]["paid"]


def test_work_with_an_unpriced_answer_has_no_cost_per_accuracy_point(tmp_path, monkeypatch, capsys):
    """The stub's model has no price (no ``price``, not in LiteLLM's map): its answers are
    counted apart (unpriced), not free. The cost per accuracy point of that work is unknown
    (null, and the report says why), not 0.000000 USD — which ranked an unpriced judge the
    most cost-effective. With a price, the figure is the cost over the accuracy points."""
    from tests.stub_judge import stub_config

    monkeypatch.chdir(tmp_path)
    csv = write_items(tmp_path)
    with StubServer() as stub:
        cfg = stub_config(tmp_path, csv, stub.base_url, name="unpriced")
        res = cli_json(["evaluate", str(cfg)], capsys)
        assert res["work"]["unpriced_calls"] == res["work"]["calls"] == N_ITEMS
        assert res["work"]["cost_usd"] == 0 and res["metrics"]["accuracy"]["value"] > 0
        assert res["usage"]["cost_per_accuracy_point_usd"] is None
        report = (Path(res["run_dir"]) / "report.md").read_text(encoding="utf-8")
        why = f"cost per accuracy point (of the work): unknown ({N_ITEMS} of {N_ITEMS} answers"
        assert why in report
        (tmp_path / "p").mkdir()
        priced = write_config(tmp_path / "p", csv, stub.base_url, output_dir=str(tmp_path / "rp"))
        res = cli_json(["evaluate", str(priced)], capsys)
    point = res["work"]["cost_usd"] / (res["metrics"]["accuracy"]["value"] * 100)
    assert res["usage"]["cost_per_accuracy_point_usd"] == pytest.approx(point)
