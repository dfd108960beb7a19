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
from pathlib import Path
from typing import Any

from assay.cli import main
from assay.lm import StubServer
from assay.programs import JudgeConfig
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
