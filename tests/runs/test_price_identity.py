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


# -- evaluate ---------------------------------------------------------------------------------
def test_a_panel_costs_each_members_answers_at_that_members_price(tmp_path, monkeypatch, capsys):
    """A panel with no price of its own, its members priced apart: each answer is costed at the
    price of the member that asked (as the call ledger prices it), not at the panel's (none: the
    answers were counted unpriced)."""
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
