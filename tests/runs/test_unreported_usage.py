"""An answer the server sent without a ``usage`` object is still an answer: a call the run
paid for, counted with its tokens and cost unknown (*untallied*), never a free call and never
a cache hit. The stub counts what it served; the run's usage, its call ledger, its judgments'
``cached`` flags and its cost lines must say the same. Before, such answers counted 0 calls at
$0 and their judgments "taken whole from the LM cache" — 10 answers served, 0 calls reported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.cli import main
from assay.comparison._tables import paid_axis
from assay.lm import StubServer
from assay.lm._stub_server import default_respond
from assay.reliability import HarnessSummary
from assay.reliability.report._report import cost_axis
from tests.runs.test_accounting import PRICE, ledger_rows, write_config
from tests.runs.test_cost_of_work import cli_json, harness_config
from tests.stub_judge import N_ITEMS, write_items


def no_usage(counted: dict[str, Any], body: dict[str, Any]) -> None:
    """The stub's answers carry no ``usage`` object (a server that does not report it)."""
    return None


def judgments(run_dir: str) -> dict[str, dict[str, Any]]:
    lines = (Path(run_dir) / "judgments.jsonl").read_text().splitlines()
    return {(j := json.loads(x))["item_id"]: j for x in lines if x}


def served_200(stub: StubServer) -> int:
    assert stub.statuses.count(200) == len(stub.responses)
    return len(stub.responses)


@pytest.mark.parametrize("client", ["native", "litellm"])
def test_answers_without_usage_are_calls_of_unknown_cost_not_cache_hits(
    client, tmp_path, monkeypatch, capsys
):
    """Four answers served, none with usage, the judge priced: four calls, four untallied, in
    the results and in the ledger; no judgment from the cache; the cost per accuracy point is
    unknown (null); the console and report say the cost is unknown, not $0."""
    monkeypatch.chdir(tmp_path)
    with StubServer(usage=no_usage) as stub:
        cfg = write_config(tmp_path, write_items(tmp_path), stub.base_url, judge={"client": client})
        res = cli_json(["evaluate", str(cfg)], capsys)
        assert all("usage" not in r for r in stub.responses)
        n = served_200(stub)
    assert n == N_ITEMS
    usage, paid = res["usage"], res["spend"]["paid"]
    assert usage["calls"] == usage["untallied_calls"] == n
    assert paid["calls"] == paid["untallied_calls"] == n
    assert (usage["cached_calls"], usage["cached_judgments"]) == (0, 0)
    assert usage["cost_per_accuracy_point_usd"] is None
    assert res["work"]["calls"] == res["work"]["untallied_calls"] == n
    rows = ledger_rows(Path(res["run_dir"]))
    assert len(rows) == n and all(r["untallied_calls"] == 1 for r in rows)
    for j in judgments(res["run_dir"]).values():
        assert j["cached"] is False and j["usage"]["calls"] == j["usage"]["untallied_calls"] == 1

    main(["evaluate", str(cfg)])  # re-read: the console
    out = capsys.readouterr().out
    work = next(x for x in out.splitlines() if x.startswith("cost of the work"))
    assert f"{n} LM answers · tokens and cost unknown for {n} answers without token counts" in work
    assert "$0.000000" not in work and "(none taken from the LM cache)" in work
    assert f"paid in all: {n} calls · tokens and cost unknown for {n} answers" in out
    report = (Path(res["run_dir"]) / "report.md").read_text()
    assert "judgments taken whole from the LM cache: 0" in report
    assert f"unknown ({n} answers without token counts)" in report  # the cost table's USD
    assert f"cost per accuracy point (of the work): unknown ({n} of {n} answers" in report


def test_a_run_where_some_answers_lack_usage_says_how_many_its_cost_leaves_out(
    tmp_path, monkeypatch, capsys
):
    """Two of four answers without usage: the tokens and cost are those of the two reported
    ones (at the judge's price), the other two are calls of unknown cost, and the figure built
    on the cost (per accuracy point) is null."""
    monkeypatch.chdir(tmp_path)

    def half(counted: dict[str, Any], body: dict[str, Any]) -> dict[str, Any] | None:
        return None if "item 0" in json.dumps(body) or "item 1" in json.dumps(body) else counted

    with StubServer(usage=half) as stub:
        cfg = write_config(tmp_path, write_items(tmp_path), stub.base_url)
        res = cli_json(["evaluate", str(cfg)], capsys)
        reported = [r["usage"] for r in stub.responses if "usage" in r]
        n = served_200(stub)
    assert (n, len(reported)) == (N_ITEMS, 2)
    p = sum(u["prompt_tokens"] for u in reported)
    c = sum(u["completion_tokens"] for u in reported)
    cost = (p * PRICE["input_per_mtok"] + c * PRICE["output_per_mtok"]) / 1e6
    for usage in (res["usage"], res["spend"]["paid"]):
        assert (usage["calls"], usage["untallied_calls"]) == (N_ITEMS, 2)
        assert (usage["prompt_tokens"], usage["completion_tokens"]) == (p, c)
        assert usage["cost_usd"] == pytest.approx(cost)
    assert res["usage"]["cost_per_accuracy_point_usd"] is None
    main(["evaluate", str(cfg)])
    out = capsys.readouterr().out
    assert (
        f"cost of the work: {N_ITEMS} LM answers · tokens {p}+{c} · cost ${cost:.6f} · tokens "
        "and cost unknown for 2 answers without token counts" in out
    )


def test_answers_without_usage_from_the_lm_cache_are_cache_hits_by_the_lookup(
    tmp_path, monkeypatch, capsys
):
    """The same judge in a second run directory: the answers (first served without usage) come
    from the LM cache — the stub serves nothing, every judgment is cached, and each is an
    answer of unknown cost in the work, not a call."""
    monkeypatch.chdir(tmp_path)
    csv = write_items(tmp_path)
    with StubServer(usage=no_usage) as stub:
        cli_json(["evaluate", str(write_config(tmp_path, csv, stub.base_url))], capsys)
        stub.reset()
        (tmp_path / "b").mkdir()
        warm_cfg = write_config(tmp_path / "b", csv, stub.base_url, output_dir=str(tmp_path / "rb"))
        warm = cli_json(["evaluate", str(warm_cfg)], capsys)
        assert stub.n_requests == 0
    usage = warm["usage"]
    assert (usage["calls"], warm["spend"]["paid"]["calls"]) == (0, 0)
    assert usage["cached_calls"] == usage["cached_untallied_calls"] == N_ITEMS
    assert usage["cached_judgments"] == N_ITEMS
    assert all(j["cached"] for j in judgments(warm["run_dir"]).values())
    assert warm["work"]["calls"] == warm["work"]["untallied_calls"] == N_ITEMS
    assert usage["cost_per_accuracy_point_usd"] is None


def test_the_chat_adapters_second_call_without_usage_is_counted(tmp_path, monkeypatch, capsys):
    """``adapter: chat``: item 0's first answer is not in the chat format, so DSPy asks again
    in JSON mode — two answers served for one judgment, neither with usage. Both are calls;
    the judgment, which the server answered twice, is no cache hit."""
    monkeypatch.chdir(tmp_path)

    def respond(body: dict[str, Any]) -> str:
        text = default_respond(body)
        if "item 0" in json.dumps(body["messages"]) and text.startswith("[[ ##"):
            return "The response is fine."  # no [[ ## verdict ## ]] section: not parseable
        return text

    with StubServer(respond=respond, usage=no_usage) as stub:
        cfg = write_config(
            tmp_path, write_items(tmp_path), stub.base_url, judge={"adapter": "chat"}
        )
        res = cli_json(["evaluate", str(cfg)], capsys)
        n = served_200(stub)
    assert n == N_ITEMS + 1
    assert res["usage"]["calls"] == res["spend"]["paid"]["calls"] == n
    assert res["usage"]["untallied_calls"] == n and res["usage"]["cached_judgments"] == 0
    first = judgments(res["run_dir"])["i0"]
    assert first["score"] is not None
    assert (first["usage"]["calls"], first["cached"]) == (2, False)


def test_a_harness_judge_counts_every_answer_served_without_usage(tmp_path, monkeypatch, capsys):
    """A harness judge on a server that reports no usage: the judge's calls are what the stub
    served (each untallied), its cost per accuracy point is unknown, and no probe's judgment
    is a cache hit."""
    monkeypatch.chdir(tmp_path)
    with StubServer(usage=no_usage) as stub:
        cfg = harness_config(tmp_path, stub.base_url, [{"name": "a"}])
        res = cli_json(["harness", str(cfg)], capsys)
        n = served_200(stub)
    a = res["judges"]["a"]
    assert n > 0
    assert a["usage"]["calls"] == a["usage"]["untallied_calls"] == n
    assert a["usage"]["cached_calls"] == 0
    assert res["spend"]["paid"]["calls"] == res["spend"]["paid"]["untallied_calls"] == n
    assert a["cost_per_accuracy_point_usd"] is None
    summary = HarnessSummary.model_validate_json(
        (Path(res["run_dir"]) / "metrics.json").read_text()
    )
    label, _ = cost_axis(summary)  # the cost plot: in answers, not a partial (or $0) USD
    assert label.startswith("judge cost of the work in LM answers")
    (path,) = (Path(res["run_dir"]) / "judgments").glob("a-*.jsonl")
    rows = [json.loads(x) for x in path.read_text().splitlines() if x]
    assert sum(j["usage"]["calls"] for j in rows) == n
    assert not any(j["cached"] for j in rows)


def test_compare_counts_the_work_in_answers_when_some_had_no_token_count():
    """The leaderboard's cost axis: a run whose answers came without token counts has no USD or
    token figure to rank on (its 0 would make it the cheapest): the work counts in answers."""
    priced = {"cost_usd": 0.002, "tokens": 900, "calls": 4, "unpriced_calls": 0}
    unreported = {"cost_usd": 0.0, "tokens": 0, "calls": 4, "unpriced_calls": 0}
    assert paid_axis([{**priced, "untallied_calls": 0}]) == "usd"
    assert paid_axis([{**priced, "untallied_calls": None}]) == "usd"  # logged before it was
    assert paid_axis([priced | {"untallied_calls": 0}, unreported | {"untallied_calls": 4}]) == (
        "calls"
    )
