"""A price is part of what decides the reuse of a run's results, not of a judge's identity.

Every cost a command prints is the cost at its config's price: change a price (a judge's, a
panel member's, the harness's generator or validator) and the command does the work again
through the LM cache — no call, nothing paid — and prints the tokens the server first served
priced at the new price; the same price again re-reads the finished run with no call. The
judge's ``config_hash`` — what certify, conformal, compare and drift call "the same judge" — is
the same at any price: a price changes no verdict."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from assay.cli import main
from assay.lm import StubServer
from assay.lm._stub_server import default_respond
from assay.programs import JudgeConfig
from assay.reliability.review import record_decision
from assay.reliability.selftest._selftest import write_data
from assay.scale import Scale
from tests.stub_judge import N_ITEMS, stub_config, write_items

DEAR = {"input_per_mtok": 1000.0, "output_per_mtok": 1000.0}
CHEAP = {"input_per_mtok": 1.0, "output_per_mtok": 2.0}
PAID = ("calls", "prompt_tokens", "completion_tokens")
SCALE = {"kind": "binary", "labels": ["incorrect", "correct"]}


def tokens(responses: list[dict[str, Any]]) -> tuple[int, int]:
    """Prompt and completion tokens of what the stub served."""
    p = sum(r["usage"]["prompt_tokens"] for r in responses)
    c = sum(r["usage"]["completion_tokens"] for r in responses)
    return p, c


def at(price: dict[str, float], p: int, c: int) -> float:
    """``p`` prompt and ``c`` completion tokens at ``price`` (USD)."""
    return (p * price["input_per_mtok"] + c * price["output_per_mtok"]) / 1e6


def cli_json(argv: list[str], capsys) -> dict[str, Any]:
    capsys.readouterr()
    assert main([*argv, "--json", "--quiet"]) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def console(argv: list[str], capsys) -> str:
    capsys.readouterr()
    assert main([*argv, "--quiet"]) == 0
    return capsys.readouterr().out


def assert_cost(usage: dict[str, Any], want: float) -> None:
    assert usage["unpriced_calls"] == 0
    assert math.isclose(usage["cost_usd"], want, rel_tol=1e-9), (usage["cost_usd"], want)


# -- the judge's identity ---------------------------------------------------------------------
def test_a_price_changes_no_judges_config_hash():
    """A judge, and a panel whose members are priced, at two prices: the same judge (the same
    ``config_hash``, which certify, conformal, compare and drift compare); not the same results."""
    judge = {"model": "openai/x", "api_base": "http://127.0.0.1:1/v1", "scale": "binary"}
    a, b, none = (
        JudgeConfig.model_validate({**judge, "price": DEAR}),
        JudgeConfig.model_validate({**judge, "price": CHEAP}),
        JudgeConfig.model_validate(judge),
    )
    assert a.config_hash() == b.config_hash() == none.config_hash()
    assert len({a.results_hash(), b.results_hash(), none.results_hash()}) == 3
    assert none.results_hash() == none.config_hash()  # unpriced: as before prices counted

    def panel(price: dict[str, float]) -> JudgeConfig:
        members = [{**judge, "name": "m1", "price": DEAR}, {**judge, "name": "m2", "price": price}]
        return JudgeConfig.model_validate({"program": "panel", "members": members})

    assert panel(DEAR).config_hash() == panel(CHEAP).config_hash()
    assert panel(DEAR).results_hash() != panel(CHEAP).results_hash()
    # a price written as an integer is the same price
    same = JudgeConfig.model_validate(
        {**judge, "price": {"input_per_mtok": 1, "output_per_mtok": 2}}
    )
    assert same.results_hash() == b.results_hash()


# -- evaluate ---------------------------------------------------------------------------------
def test_evaluate_at_another_price_prints_the_cost_at_that_price(tmp_path, monkeypatch, capsys):
    """The same config at a dear price, then a cheap one: the second run asks the LM cache
    (nothing paid) and prints the served tokens at the cheap price — not the first run's cost
    read back; each price again re-reads its run with no call."""
    monkeypatch.chdir(tmp_path)
    csv = write_items(tmp_path)
    with StubServer() as stub:

        def config(price: dict[str, float]) -> Path:
            return stub_config(tmp_path, csv, stub.base_url, name="priced", judge={"price": price})

        dear = cli_json(["evaluate", str(config(DEAR))], capsys)
        assert stub.n_requests == N_ITEMS
        p, c = tokens(stub.responses)
        assert_cost(dear["work"], at(DEAR, p, c))

        cheap = cli_json(["evaluate", str(config(CHEAP))], capsys)
        assert stub.n_requests == N_ITEMS  # from the LM cache: no call
        assert [cheap["work"][k] for k in PAID] == [N_ITEMS, p, c]
        assert_cost(cheap["work"], at(CHEAP, p, c))
        assert cheap["usage"]["calls"] == cheap["spend"]["paid"]["calls"] == 0
        assert cheap["run_dir"] != dear["run_dir"]
        out = console(["evaluate", str(config(CHEAP))], capsys)  # unchanged: re-read, no call
        assert "re-read (finished before; no LM call)" in out
        assert f"cost ${at(CHEAP, p, c):.6f}" in out and f"{at(DEAR, p, c):.6f}" not in out
        out = console(["evaluate", str(config(DEAR))], capsys)
        assert "re-read (finished before; no LM call)" in out
        assert f"cost ${at(DEAR, p, c):.6f}" in out
        assert stub.n_requests == N_ITEMS
    report = (Path(cheap["run_dir"]) / "report.md").read_text(encoding="utf-8")
    assert f"{at(CHEAP, p, c):.6f}" in report and f"{at(DEAR, p, c):.6f}" not in report


def test_a_priced_run_made_before_prices_counted_is_made_again_from_the_lm_cache(
    tmp_path, monkeypatch, capsys
):
    """A priced evaluate run finished by code whose run hash left the price out: the same config
    now makes one more run, from the LM cache (no call), costed at its price, and re-reads that
    one after; the old run is still read as the run it was by certify (its items checked by
    the hash it was made under), not refused as if its data had changed."""
    monkeypatch.chdir(tmp_path)
    csv = write_items(tmp_path)
    with StubServer() as stub:
        cfg = stub_config(tmp_path, csv, stub.base_url, name="old", judge={"price": CHEAP})
        with monkeypatch.context() as old_code:
            old_code.setattr(JudgeConfig, "results_hash", JudgeConfig.config_hash)
            old = cli_json(["evaluate", str(cfg)], capsys)
        for pointer in (tmp_path / ".assay" / "finished").iterdir():
            pointer.unlink()  # recorded by other code: another digest of the inputs
        p, c = tokens(stub.responses)
        now = cli_json(["evaluate", str(cfg)], capsys)
        assert now["run_dir"] != old["run_dir"]
        assert stub.n_requests == N_ITEMS and now["usage"]["cached_calls"] == N_ITEMS
        assert_cost(now["work"], at(CHEAP, p, c))
        assert "re-read (finished before; no LM call)" in console(["evaluate", str(cfg)], capsys)
        assert stub.n_requests == N_ITEMS
    policy = tmp_path / "policy.yaml"
    policy.write_text(json.dumps({"name": "p", "confidence": 0.9, "bars": {"accuracy": 0.1}}))
    capsys.readouterr()
    code = main(["certify", old["run_dir"], "--policy", str(policy)])
    out = capsys.readouterr()
    assert code in (0, 1), out.err
    assert "changed since the run" not in out.out + out.err


def test_a_panel_costs_each_members_answers_at_that_members_price(tmp_path, monkeypatch, capsys):
    """A panel with no price of its own, its members priced apart: each answer is costed at the
    price of the member that asked (as the call ledger prices it), not at the panel's (none: the
    answers were counted unpriced). A member's price changed: the new cost, no call."""
    monkeypatch.chdir(tmp_path)
    csv = write_items(tmp_path)
    with StubServer() as stub:

        def config(price_b: dict[str, float]) -> Path:
            member = {
                "api_base": stub.base_url,
                "scale": {"kind": "binary", "labels": ["False", "True"]},
            }
            members = [
                {**member, "name": "a", "model": "openai/model-a", "price": DEAR},
                {**member, "name": "b", "model": "openai/model-b", "price": price_b},
            ]
            judge = {"program": "panel", "members": members, "model": "openai/unused"}
            return stub_config(tmp_path, csv, stub.base_url, name="panel", judge=judge)

        def want(price_b: dict[str, float]) -> float:
            served = {
                m: tokens([r for r in stub.responses if r["model"] == f"model-{m}"]) for m in "ab"
            }
            return at(DEAR, *served["a"]) + at(price_b, *served["b"])

        first = cli_json(["evaluate", str(config(DEAR))], capsys)
        served = stub.n_requests
        assert served == 2 * N_ITEMS
        assert {r["model"] for r in stub.responses} == {"model-a", "model-b"}
        assert_cost(first["work"], want(DEAR))
        assert math.isclose(first["spend"]["paid"]["cost_usd"], want(DEAR), rel_tol=1e-9)
        assert first["spend"]["paid_not_used"]["cost_usd"] == 0

        second = cli_json(["evaluate", str(config(CHEAP))], capsys)
        assert stub.n_requests == served
        assert_cost(second["work"], want(CHEAP))


# -- harness ----------------------------------------------------------------------------------
def harness_config(folder: Path, api_base: str, *, judge: dict, gen: dict, tests: dict) -> Path:
    """A harness on four arithmetic seeds, its judge (and generator, validator) on the stub."""
    on_stub = {"model": "openai/stub-model", "api_base": api_base}
    config = {
        "name": "priced",
        "data": {"path": str(write_data(folder / "data", n=4)), "columns": {"id": "id"}},
        "scale": SCALE,
        "generator": {**on_stub, **gen},
        "validator": {**on_stub, **gen},
        "judges": [{**on_stub, "name": "j", "rubric": "The answer states the sum.", **judge}],
        "tests": tests,
        "concurrency": 2,
        "retries": 0,
        "tracking": {"enabled": False},
    }
    path = folder / "harness.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def test_a_harness_judge_at_another_price_is_costed_at_that_price(tmp_path, monkeypatch, capsys):
    """A deterministic test (no generator call), the judge priced dear then cheap: the second
    run judges through the LM cache and costs the judge's work at the cheap price; the same
    price again re-reads the run, no call."""
    monkeypatch.chdir(tmp_path)
    tests = {"format_vertical": {}}
    with StubServer() as stub:

        def config(price: dict[str, float]) -> Path:
            return harness_config(
                tmp_path, stub.base_url, judge={"price": price}, gen={}, tests=tests
            )

        dear = cli_json(["harness", str(config(DEAR))], capsys)
        served = stub.n_requests
        assert served > 0
        p, c = tokens(stub.responses)
        assert_cost(dear["judges"]["j"]["work"], at(DEAR, p, c))

        cheap = cli_json(["harness", str(config(CHEAP))], capsys)
        assert stub.n_requests == served
        assert [cheap["judges"]["j"]["work"][k] for k in PAID] == [served, p, c]
        assert_cost(cheap["judges"]["j"]["work"], at(CHEAP, p, c))
        assert cheap["judges"]["j"]["usage"]["calls"] == 0
        out = console(["harness", str(config(CHEAP))], capsys)  # unchanged: re-read
        work = (
            f"cost of the work: {served} LM answers · tokens {p}+{c} · cost ${at(CHEAP, p, c):.6f}"
        )
        assert f"judge j (openai/stub-model) · {work}" in out
        assert stub.n_requests == served
    # what was paid stays costed as it was paid: the dear run's calls, which no result uses now
    unused = cheap["spend"]["paid_not_used"]
    assert [unused[k] for k in PAID] == [served, p, c]
    assert math.isclose(unused["cost_usd"], at(DEAR, p, c), rel_tol=1e-9)
    # the review app and report.html show the run's judge once: the dear price's judgments
    # file, left in the directory, is no judge of the run (it was a second column, j-<hash>)
    from assay.reliability.review import ReviewRun

    run_dir = Path(cheap["run_dir"])
    assert len(list((run_dir / "judgments").glob("*.jsonl"))) == 2
    assert list(ReviewRun(run_dir).judgments()) == ["j"]


def test_a_harness_generator_at_another_price_is_costed_at_that_price(
    tmp_path, monkeypatch, capsys
):
    """Paraphrases generated and validated at a dear price, then at a cheap one: the second
    run makes them again through the LM cache — the same probes under the same ids, so the
    review decision made on one still holds — and costs generation at the cheap price."""
    monkeypatch.chdir(tmp_path)
    tests = {"paraphrase": {}}
    judge = {"price": DEAR}
    with StubServer(respond=paraphrasing) as stub:

        def config(price: dict[str, float]) -> Path:
            gen = {"price": price}
            return harness_config(tmp_path, stub.base_url, judge=judge, gen=gen, tests=tests)

        dear = cli_json(["harness", str(config(DEAR))], capsys)
        served = stub.n_requests
        run_dir = Path(dear["run_dir"])
        probes = made(run_dir)
        generation = [r for r, q in zip(stub.responses, stub.requests, strict=True) if asks(q)]
        p, c = tokens(generation)
        assert p > 0
        assert_cost(total(dear["generation_usage"]), at(DEAR, p, c))
        first = next(iter(probes))
        decision = {"probe_id": first, "decision": "accept", "reviewer": "me"}
        record_decision(run_dir, decision, Scale.model_validate(SCALE))

        cheap = cli_json(["harness", str(config(CHEAP))], capsys)
        assert stub.n_requests == served  # through the LM cache
        assert cheap["run_dir"] == dear["run_dir"]
        assert made(run_dir) == probes
        work = total(cheap["generation_usage"])
        assert [work[k] for k in PAID] == [len(generation), p, c]
        assert_cost(work, at(CHEAP, p, c))
        assert cheap["review"]["accepted"] == 1
        again = cli_json(["harness", str(config(CHEAP))], capsys)  # unchanged: no call
        assert_cost(total(again["generation_usage"]), at(CHEAP, p, c))
        assert stub.n_requests == served


def paraphrasing(request: dict[str, Any]) -> str:
    """The stub's answers, with a paraphrase where one is asked for (the response reworded),
    and the validator's confirmation that it is one."""
    asked = request["messages"][-1]["content"]
    if "`equivalent`" in asked:
        return json.dumps({"equivalent": True, "reason": "the same sum"})
    response = re.search(r"\[\[ ## response ## \]\]\n(.*?)\n\n", asked, re.S)
    if "`rewritten`" in asked and response:
        return json.dumps({"rewritten": response.group(1).replace("I added", "Adding")})
    return default_respond(request)


def made(run_dir: Path) -> dict[str, tuple[str, str]]:
    """The probes of a harness run: id → source and response."""
    lines = (run_dir / "probes.jsonl").read_text(encoding="utf-8").splitlines()
    return {p["id"]: (p["source_id"], p["response"]) for p in map(json.loads, lines)}


def asks(request: dict[str, Any]) -> bool:
    """Whether a request to the stub is the generator's or the validator's (not the judge's)."""
    return "The answer states the sum." not in json.dumps(request["messages"])


def total(usages: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The cost of the work of several usages (``generation_usage``, by stage and test)."""
    keys = (*PAID, "cost_usd", "unpriced_calls")
    return {k: sum(u[k] + u[f"cached_{k}"] for u in usages.values()) for k in keys}


def test_a_unit_made_again_at_another_price_keeps_its_probe_ids_only_for_the_same_probes():
    """A unit made again only because its prices changed: its probes keep the stored ids when
    they are the same probes (whatever their usage), and get ids of their own when their text
    differs (a cache that lost the answers), so that no judgment or review of the old text
    carries over to the new one."""
    from assay.reliability._probe import Generation, Probe
    from assay.reliability.engine._generation import UnitRecord, _settled
    from assay.types import Usage

    def record(response: str, cost: float) -> UnitRecord:
        usage = Usage(prompt_tokens=10, completion_tokens=2, cost_usd=cost, calls=1)
        probe = Probe(
            id="paraphrase:a1:0123456789.abcdef01",
            test="paraphrase",
            source_id="a1",
            response=response,
            generation=Generation(model="openai/m", usage=usage),
        )
        return UnitRecord(unit_id="paraphrase:a1", test="paraphrase", probes=[probe], key="k" * 32)

    stored = _settled(record("It is 3.", 1.0), "dear", "code", None)
    assert stored.priced == "dear" and stored.probes[0].id.endswith(".abcdef01")
    same = _settled(record("It is 3.", 0.001), "cheap", "code", stored)
    assert same.priced == "cheap" and same.probes[0].id == stored.probes[0].id
    other = _settled(record("Three.", 0.001), "cheap", "code", stored)
    assert other.probes[0].id.startswith("paraphrase:a1:0123456789.")
    assert other.probes[0].id != stored.probes[0].id
    assert (
        _settled(record("Three.", 0.001), "cheap", "code", stored).probes[0].id
        == other.probes[0].id
    )
