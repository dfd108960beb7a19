"""Provider prompt caching is priced as the provider bills it: prompt tokens the server reports
it read from its prompt cache (``usage.prompt_tokens_details.cached_tokens``) cost the price
map's ``cache_read_input_token_cost``, tokens written to it (Anthropic's cache creation) its
``cache_creation_input_token_cost``. Each figure is checked against LiteLLM's own
``cost_per_token`` on the same usage — an independent computation. Before, every prompt token
cost the full input price: 10 answers of 1,000 cached prompt tokens on ``openai/gpt-4o-mini``
cost $0.001560 where LiteLLM says $0.000810."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

import pytest

from assay.cli import main
from assay.lm import StubServer, cost_usd
from assay.lm._pricing import priced_entry
from tests.runs.test_accounting import ledger_rows
from tests.stub_judge import N_ITEMS, stub_config, write_items

MODEL = "openai/gpt-4o-mini"  # in LiteLLM's map with a cached-input price (half the input's)


def cached_prefix(counted: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """The usage an OpenAI server reports when its prompt cache held most of the prompt."""
    cached = counted["prompt_tokens"] * 3 // 4
    return {**counted, "prompt_tokens_details": {"cached_tokens": cached}}


def litellm_cost(model: str, usage: dict[str, Any]) -> float:
    """LiteLLM's cost of one answer's usage (prompt + completion)."""
    import litellm

    prompt, completion = litellm.cost_per_token(model=model, usage_object=litellm.Usage(**usage))
    return prompt + completion


def cli_json(argv: list[str], capsys) -> dict[str, Any]:
    assert main([*argv, "--json", "--quiet"]) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@pytest.mark.parametrize("client", ["native", "litellm"])
def test_cached_prompt_tokens_cost_what_litellm_says(client, tmp_path, monkeypatch, capsys):
    """Four answers whose prompts the server mostly read from its prompt cache: the run's cost,
    its ledger's and its cost of the work are LiteLLM's for the usage the stub served — also
    on a warm LM cache, where the answers are priced as first served."""
    monkeypatch.chdir(tmp_path)
    csv = write_items(tmp_path)
    judge = {"model": MODEL, "client": client}
    with StubServer(usage=cached_prefix) as stub:
        cfg = stub_config(tmp_path, csv, stub.base_url, name="prompt-cache", judge=judge)
        cold = cli_json(["evaluate", str(cfg)], capsys)
        usages = [r["usage"] for r in stub.responses]
        stub.reset()
        (tmp_path / "b").mkdir()
        warm_cfg = stub_config(  # another run directory, the same folder's LM cache
            tmp_path / "b",
            csv,
            stub.base_url,
            name="prompt-cache",
            judge=judge,
            output_dir=str(tmp_path / "runs-b"),
        )
        warm = cli_json(["evaluate", str(warm_cfg)], capsys)
        assert stub.n_requests == 0
    assert len(usages) == N_ITEMS
    want = sum(litellm_cost(MODEL, u) for u in usages)
    full = sum(cost_usd(MODEL, u["prompt_tokens"], u["completion_tokens"]) for u in usages)
    assert want < 0.7 * full  # the cached part is cheaper: this test can tell them apart
    read = sum(u["prompt_tokens_details"]["cached_tokens"] for u in usages)
    for figures in (cold["usage"], cold["spend"]["paid"], cold["work"], warm["work"]):
        assert math.isclose(figures["cost_usd"], want, rel_tol=1e-9)
        assert figures["prompt_cache_read_tokens"] == read
        assert figures["prompt_tokens"] == sum(u["prompt_tokens"] for u in usages)
    assert warm["usage"]["cached_prompt_cache_read_tokens"] == read
    rows = ledger_rows(Path(cold["run_dir"]))
    assert len(rows) == N_ITEMS
    assert sorted(r["prompt_cache_read_tokens"] for r in rows) == sorted(
        u["prompt_tokens_details"]["cached_tokens"] for u in usages
    )
    assert math.isclose(sum(r["cost_usd"] for r in rows), want, rel_tol=1e-9)
    main(["evaluate", str(warm_cfg)])  # the console, re-read
    out = capsys.readouterr().out
    assert f"cost ${want:.6f}" in out
    assert f"of the prompt tokens, {read} read from the provider's prompt cache" in out


@pytest.mark.parametrize(
    ("model", "usage"),
    [
        (  # OpenAI: cached_tokens, a part of prompt_tokens
            "openai/gpt-4o-mini",
            {
                "prompt_tokens": 2000,
                "completion_tokens": 30,
                "prompt_tokens_details": {"cached_tokens": 1536},
            },
        ),
        (  # Anthropic through LiteLLM or DSPy: read and written, both in prompt_tokens
            "anthropic/claude-haiku-4-5-20251001",
            {
                "prompt_tokens": 3000,
                "completion_tokens": 40,
                "cache_creation_input_tokens": 1200,
                "prompt_tokens_details": {"cached_tokens": 1500, "cache_creation_tokens": 1200},
            },
        ),
        (  # nothing cached: the input price for every prompt token, as before
            "openai/gpt-4o-mini",
            {"prompt_tokens": 2000, "completion_tokens": 30},
        ),
    ],
)
def test_a_usage_entry_is_priced_as_litellm_prices_it(model, usage):
    priced = priced_entry(model, usage)
    assert priced is not None
    assert math.isclose(priced.cost, litellm_cost(model, usage), rel_tol=1e-12)
    details = usage.get("prompt_tokens_details") or {}
    assert priced.cache_read == details.get("cached_tokens", 0)
    assert priced.cache_write == details.get("cache_creation_tokens", 0)


def test_cached_tokens_at_a_price_the_config_sets_cost_the_input_price_and_say_so(caplog):
    """A config's price has no cached-input price: the cached tokens cost its input price (an
    upper bound), and a warning says so, once per model."""
    usage = {"prompt_tokens": 1000, "completion_tokens": 10, "prompt_tokens_details": {}}
    usage["prompt_tokens_details"]["cached_tokens"] = 800
    with caplog.at_level(logging.WARNING, logger="assay.lm._pricing"):
        first = priced_entry("openai/self-hosted-a", usage, (2.0, 4.0))
        again = priced_entry("openai/self-hosted-a", usage, (2.0, 4.0))
    assert first is not None and again is not None
    assert first.cost == again.cost == pytest.approx((1000 * 2.0 + 10 * 4.0) / 1e6)
    said = [r.getMessage() for r in caplog.records if "self-hosted-a" in r.getMessage()]
    assert len(said) == 1 and "priced at its input price" in said[0]
