"""Both clients end to end, offline: an assay judge calls a loopback OpenAI-compatible stub
through LiteLLM (``client: litellm``) and through assay's native httpx client
(``client: native``, the default for ``openai/...``) — every test runs on both.

What reaches the wire (model, temperature, seed), what comes back (usage, cost), and what
failures become (a retried 429 is still scored; a persistent 500 is ``lm_error``), plus DSPy's
response cache and the missing-key errors of hosted models.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from assay.errors import ModelError
from assay.evaluation import EvaluateResult, evaluate
from assay.inputs import EvaluateConfig
from assay.lm import StubServer, make_lm

N_ITEMS = 5
PRICE_IN, PRICE_OUT = 1.5, 6.0  # USD per million tokens, the config's override
CLIENTS = ("native", "litellm")
_client = {"name": "native"}


@pytest.fixture(autouse=True, params=CLIENTS)
def client(request) -> str:
    """Every test of this file runs once per client; ``make_config`` uses it."""
    _client["name"] = request.param
    return request.param


@pytest.fixture
def items_csv(tmp_path: Path) -> Path:
    path = tmp_path / "items.csv"
    rows = ["id,request,response,expected"]
    rows += [f"i{k},What colour is item {k}?,Item {k} is blue.,{k % 2}" for k in range(N_ITEMS)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def make_config(
    csv: Path,
    stub: StubServer,
    *,
    output_dir: str = "runs",
    tracking: dict[str, Any] | None = None,
    retries: int = 3,
    **judge: Any,
) -> EvaluateConfig:
    return EvaluateConfig.model_validate(
        {
            "name": "stub-eval",
            "data": {"path": str(csv), "columns": {"id": "id"}},
            "judge": {
                "name": "stub-judge",
                "model": "openai/stub-model",
                "api_base": stub.base_url,
                "instruction": "Decide whether the response answers the request.",
                "rubric": "A good response names a colour.",
                "scale": {"kind": "binary", "labels": ["False", "True"]},
                "price": {"input_per_mtok": PRICE_IN, "output_per_mtok": PRICE_OUT},
                "client": _client["name"],
                **judge,
            },
            "concurrency": 3,
            "retries": retries,
            "output_dir": output_dir,
            "tracking": tracking or {"enabled": False},
        }
    )


def run(config: EvaluateConfig, workdir: Path) -> EvaluateResult:
    return evaluate(config, workdir=workdir, progress=False)


def reported_tokens(stub: StubServer) -> tuple[int, int]:
    """Prompt and completion tokens the stub put in the usage of its answers."""
    return (
        sum(r["usage"]["prompt_tokens"] for r in stub.responses),
        sum(r["usage"]["completion_tokens"] for r in stub.responses),
    )


# -- the happy path ---------------------------------------------------------------------------


def test_every_item_scored_with_the_stub_usage_and_priced_cost(tmp_path, items_csv):
    with StubServer() as stub:
        result = run(make_config(items_csv, stub), tmp_path)

    assert stub.n_requests == N_ITEMS
    assert stub.statuses == [200] * N_ITEMS
    assert [j.item_id for j in result.judgments] == [f"i{k}" for k in range(N_ITEMS)]
    # the stub answers the first label of the scale: "False" -> 0
    assert [j.score for j in result.judgments] == [0] * N_ITEMS
    assert all(j.unscored is None and not j.cached for j in result.judgments)
    assert result.summary.counts.scored == N_ITEMS

    prompt, completion = reported_tokens(stub)
    assert prompt > 0 and completion == 2 * N_ITEMS  # '{"verdict": "False"}': two words
    usage = result.summary.usage.model_dump()
    assert (usage["prompt_tokens"], usage["completion_tokens"], usage["calls"]) == (
        prompt,
        completion,
        N_ITEMS,
    )
    answers = answers_by_item(stub)
    for j in result.judgments:
        answer = answers[j.item_id]
        assert j.usage.prompt_tokens == answer["usage"]["prompt_tokens"]
        assert j.usage.completion_tokens == answer["usage"]["completion_tokens"]
    expected_usd = (prompt * PRICE_IN + completion * PRICE_OUT) / 1_000_000
    assert usage["cost_usd"] == pytest.approx(expected_usd, rel=1e-9)
    assert expected_usd > 0


def answers_by_item(stub: StubServer) -> dict[str, dict[str, Any]]:
    """Each answer the stub sent, keyed by the item its request was about."""
    out = {}
    for answer in stub.responses:
        body = stub.requests[int(answer["id"].rsplit("-", 1)[1])]  # chatcmpl-stub-<arrival>
        user = body["messages"][-1]["content"]
        (k,) = [k for k in range(N_ITEMS) if f"item {k}?" in user]
        out[f"i{k}"] = answer
    return out


def test_temperature_seed_and_model_reach_the_server(tmp_path, items_csv):
    with StubServer() as stub:
        run(make_config(items_csv, stub, temperature=0.7, seed=1234, max_tokens=77), tmp_path)

    assert stub.n_requests == N_ITEMS
    for body in stub.requests:
        assert body["model"] == "stub-model"  # LiteLLM strips the provider prefix
        assert body["temperature"] == 0.7
        assert body["seed"] == 1234
        assert body["max_tokens"] == 77
    prompts = {body["messages"][-1]["content"] for body in stub.requests}
    assert len(prompts) == N_ITEMS  # one call per item, each with its own item


def test_mlflow_tracking_on_a_sqlite_store(tmp_path, items_csv):
    tracking = {"enabled": True, "uri": f"sqlite:///{tmp_path}/mlflow.db", "experiment": "stub"}
    with StubServer() as stub:
        result = run(make_config(items_csv, stub, tracking=tracking), tmp_path)

    assert result.mlflow_run_id
    import mlflow

    run_info = mlflow.MlflowClient(tracking_uri=tracking["uri"]).get_run(result.mlflow_run_id)
    assert run_info.data.params["judge.model"] == "openai/stub-model"
    prompt, completion = reported_tokens(stub)
    logged = run_info.data.metrics
    # the judgments' usage, the cost of their work (none from the cache here) and every call
    # the server answered (the same here: none was lost)
    tokens = {k: v for k, v in logged.items() if k.endswith("prompt_tokens")}
    assert tokens == {
        "usage_prompt_tokens": prompt,
        "usage_cached_prompt_tokens": 0,
        "work_prompt_tokens": prompt,
        "spend_paid.prompt_tokens": prompt,
        "spend_paid_not_used.prompt_tokens": 0,
    }
    cost = pytest.approx((prompt * PRICE_IN + completion * PRICE_OUT) / 1e6)
    assert logged["usage_cost_usd"] == logged["spend_paid.cost_usd"] == cost


# -- failures -----------------------------------------------------------------------------------


def test_a_rate_limited_first_request_is_retried_and_still_scored(tmp_path, items_csv):
    with StubServer(fail_first=1) as stub:
        result = run(make_config(items_csv, stub, retries=2), tmp_path)

    assert stub.n_requests == N_ITEMS + 1
    assert stub.statuses.count(429) == 1
    assert all(j.score == 0 and j.unscored is None for j in result.judgments)
    # the failed attempt reported no usage, so it costs nothing
    assert result.summary.usage.prompt_tokens == reported_tokens(stub)[0]


def test_a_persistent_server_error_is_an_unscored_lm_error(tmp_path, items_csv):
    with StubServer(status_sequence=[500] * 100) as stub:
        result = run(make_config(items_csv, stub, retries=1), tmp_path)

    assert stub.n_requests == N_ITEMS * 2  # one call and one retry per item
    assert [j.score for j in result.judgments] == [None] * N_ITEMS
    assert {j.unscored for j in result.judgments} == {"lm_error"}
    assert all("500" in (j.error or "") for j in result.judgments)
    assert result.summary.counts.unscored_reasons == {"lm_error": N_ITEMS}
    assert result.summary.usage.cost_usd == 0.0


def test_one_server_error_then_success_is_scored(tmp_path, items_csv):
    with StubServer(status_sequence=[500]) as stub:
        result = run(make_config(items_csv, stub, retries=1), tmp_path)

    assert stub.statuses.count(500) == 1 and stub.n_requests == N_ITEMS + 1
    assert all(j.score == 0 for j in result.judgments)


def test_without_retries_a_rate_limit_is_an_lm_error(tmp_path, items_csv):
    with StubServer(fail_first=1) as stub:
        result = run(make_config(items_csv, stub, retries=0), tmp_path)

    assert stub.n_requests == N_ITEMS
    assert sorted(str(j.unscored) for j in result.judgments) == ["None"] * 4 + ["lm_error"]


# -- DSPy's response cache ----------------------------------------------------------------------


def test_a_repeated_evaluation_is_served_from_the_dspy_cache(tmp_path, items_csv, memory_cache):
    with StubServer() as stub:
        first = run(make_config(items_csv, stub, output_dir="first"), tmp_path)
        assert stub.n_requests == N_ITEMS
        second = run(make_config(items_csv, stub, output_dir="second"), tmp_path)
        assert stub.n_requests == N_ITEMS  # no new request: every call was a cache hit

    assert first.run_dir != second.run_dir and second.new_judgments == N_ITEMS
    assert [j.score for j in second.judgments] == [j.score for j in first.judgments]
    assert all(j.cached and j.usage.calls == 0 for j in second.judgments)
    assert second.summary.usage.cost_usd == 0.0
    assert not any(j.cached for j in first.judgments)


def test_without_the_cache_a_repeated_evaluation_calls_again(tmp_path, items_csv):
    with StubServer() as stub:
        run(make_config(items_csv, stub, output_dir="first"), tmp_path)
        run(make_config(items_csv, stub, output_dir="second"), tmp_path)
    assert stub.n_requests == 2 * N_ITEMS


# -- hosted models without their key -------------------------------------------------------------


def test_a_hosted_model_without_its_key_names_the_variable(monkeypatch, client):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelError, match="ANTHROPIC_API_KEY"):
        make_lm("anthropic/claude-3-5-haiku-latest", client="litellm")
    with pytest.raises(ModelError, match="OPENAI_API_KEY"):
        make_lm("openai/gpt-4o-mini", client=client)


def test_a_custom_key_variable_unset_is_named(monkeypatch, client):
    monkeypatch.delenv("MY_KEY", raising=False)
    with pytest.raises(ModelError, match="MY_KEY"):
        make_lm("openai/gpt-4o-mini", api_key_env="MY_KEY", client=client)


def test_the_native_client_speaks_only_the_openai_wire():
    with pytest.raises(ModelError, match="client native"):
        make_lm("anthropic/claude-3-5-haiku-latest", client="native", api_base="http://x")
    with pytest.raises(ModelError, match="client: native"):
        make_lm("anthropic/claude-3-5-haiku-latest", client="litellm", rpm=10)


def test_both_clients_send_the_same_body(tmp_path, items_csv):
    """The native client sends what LiteLLM sends (model, messages, sampling, JSON mode)."""
    bodies = {}
    for name in CLIENTS:
        _client["name"] = name
        with StubServer() as stub:
            cfg = make_config(items_csv, stub, output_dir=name, temperature=0.3, seed=7)
            run(cfg, tmp_path)
        bodies[name] = sorted(stub.requests, key=lambda b: b["messages"][-1]["content"])
    assert bodies["native"] == bodies["litellm"]
    assert bodies["native"][0]["response_format"] == {"type": "json_object"}


# -- the stub itself ------------------------------------------------------------------------------


def post(
    stub: StubServer, body: dict[str, Any], path: str = "/chat/completions"
) -> tuple[int, dict]:
    req = urllib.request.Request(
        stub.base_url + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        assert exc.headers["Retry-After"] == "0"
        return exc.code, json.loads(exc.read())


def test_stub_answers_a_json_schema_with_first_enum_values():
    schema = {
        "type": "object",
        "properties": {
            "verdict": {"type": "string", "enum": ["unsafe", "safe"]},
            "score": {"anyOf": [{"$ref": "#/$defs/Level"}, {"type": "null"}]},
            "note": {"type": "string"},
        },
        "$defs": {"Level": {"enum": [3, 2, 1]}},
    }
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "three words here"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}},
    }
    with StubServer(status_sequence=[503, 200]) as stub:
        assert post(stub, body)[0] == 503
        status, answer = post(stub, body)
    assert status == 200
    assert json.loads(answer["choices"][0]["message"]["content"]) == {
        "verdict": "unsafe",
        "score": 3,
        "note": "ok",
    }
    assert answer["usage"] == {"prompt_tokens": 3, "completion_tokens": 6, "total_tokens": 9}
    assert stub.statuses == [503, 200] and stub.requests[1] == body


def test_stub_answers_a_forced_function_with_that_tool_call():
    """As an OpenAI server does (instructor's tools mode reads only ``tool_calls``); a request
    that forces nothing, or offers tools without forcing one, gets plain content."""
    tools = [{"type": "function", "function": {"name": "Verdict", "parameters": {}}}]
    forced = {"type": "function", "function": {"name": "Verdict"}}
    base = {"model": "m", "messages": [{"role": "user", "content": "judge this"}]}
    with StubServer(respond=lambda _: '{"verdict": "safe"}') as stub:
        _, called = post(stub, {**base, "tools": tools, "tool_choice": forced})
        _, offered = post(stub, {**base, "tools": tools, "tool_choice": "auto"})
    choice = called["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
    [call] = choice["message"]["tool_calls"]
    assert call["type"] == "function" and call["function"]["name"] == "Verdict"
    assert json.loads(call["function"]["arguments"]) == {"verdict": "safe"}
    assert offered["choices"][0]["message"] == {
        "role": "assistant",
        "content": '{"verdict": "safe"}',
    }
    assert called["usage"]["completion_tokens"] == offered["usage"]["completion_tokens"] == 2


def test_stub_uses_a_custom_responder_and_tracks_requests_in_flight(tmp_path, items_csv):
    def respond(request: dict[str, Any]) -> str:
        return json.dumps({"verdict": "True"})

    with StubServer(latency_s=0.3, respond=respond) as stub:
        config = make_config(items_csv, stub).model_copy(update={"concurrency": N_ITEMS})
        result = run(config, tmp_path)
    assert [j.score for j in result.judgments] == [1] * N_ITEMS
    assert 3 <= stub.max_in_flight <= N_ITEMS


def test_a_broken_responder_is_a_500_not_a_hung_connection():
    def respond(request: dict[str, Any]) -> str:
        raise KeyError("boom")

    with StubServer(respond=respond, retry_after=None) as stub:
        req = urllib.request.Request(stub.base_url + "/chat/completions", data=b"{}")
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=5)
    assert err.value.code == 500 and "boom" in err.value.read().decode()
    assert stub.statuses == [500]
