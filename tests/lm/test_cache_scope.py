"""DSPy's response cache keys an answer by the model it came from, not only by the request
: two servers serving the same model name, judged from the same folder, do not
share answers — DSPy's own key leaves ``api_base`` out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.cli import main
from assay.lm import StubServer
from assay.lm._stub_server import prompt_output_fields
from tests.stub_judge import N_ITEMS, stub_config, write_items


def always(verdict: str):
    """A server whose judge answers ``verdict`` to every item."""

    def respond(request: dict) -> str:
        return json.dumps({**prompt_output_fields(request), "verdict": verdict})

    return respond


def config(folder: Path, api_base: str, client: str) -> Path:
    """The same model name on every server; ``client``: the engine that calls it."""
    return stub_config(
        folder,
        write_items(folder),
        api_base,
        name="two-servers",
        file=f"config-{client}.yaml",
        judge={"client": client},
        concurrency=2,
        retries=0,
    )


@pytest.mark.parametrize("client", ["native", "litellm"])
def test_a_second_server_with_the_same_model_name_is_asked_not_read_from_the_cache(
    tmp_path, monkeypatch, capsys, client
):
    monkeypatch.chdir(tmp_path)  # the CLI keeps DSPy's response cache on disk, under ./.assay
    with StubServer(respond=always("True")) as a, StubServer(respond=always("False")) as b:
        assert main(["evaluate", str(config(tmp_path, a.base_url, client)), "--json"]) == 0
        first = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert a.n_requests == N_ITEMS

        assert main(["evaluate", str(config(tmp_path, b.base_url, client)), "--json"]) == 0
        second = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert b.n_requests == N_ITEMS  # B judged every item itself, none from A's answers
        assert a.n_requests == N_ITEMS
    assert first["new_judgments"] == second["new_judgments"] == N_ITEMS
    assert first["run_dir"] != second["run_dir"]  # the run identity holds api_base too
    scores = {
        name: [json.loads(x)["score"] for x in (Path(run["run_dir"]) / "judgments.jsonl").open()]
        for name, run in (("a", first), ("b", second))
    }
    assert scores == {"a": [1] * N_ITEMS, "b": [0] * N_ITEMS}  # each server's own verdicts


def test_the_same_server_again_is_read_from_the_cache(tmp_path, monkeypatch, capsys):
    """What the scope must not break: a re-run against the same endpoint, in another run
    directory (another name), costs no call."""
    monkeypatch.chdir(tmp_path)
    with StubServer(respond=always("True")) as a:
        path = config(tmp_path, a.base_url, "native")
        assert main(["evaluate", str(path), "--quiet"]) == 0
        assert a.n_requests == N_ITEMS
        renamed = json.loads(path.read_text())
        renamed["name"] = "renamed"
        path.write_text(json.dumps(renamed), encoding="utf-8")
        assert main(["evaluate", str(path), "--json"]) == 0
        out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert a.n_requests == N_ITEMS  # no new call: every answer came from the cache
        assert out["new_judgments"] == N_ITEMS


def test_an_endpoint_from_the_environment_is_the_model_s_endpoint(tmp_path, monkeypatch, capsys):
    """``client: litellm`` and no ``api_base``: LiteLLM sends the calls where
    ``OPENAI_BASE_URL`` says. That address is the model's endpoint — in the run's identity, the
    finished run's inputs and the LM cache scope — as a config's ``api_base`` is: another
    server is asked, never read from the first one's run or answers; the first found again."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    cfg = stub_config(
        tmp_path, write_items(tmp_path), None, name="env", judge={"client": "litellm"}
    )

    def evaluate(server: StubServer) -> dict:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        assert main(["evaluate", str(cfg), "--json", "--quiet"]) == 0
        return json.loads(capsys.readouterr().out.strip().splitlines()[-1])

    with StubServer(respond=always("True")) as a, StubServer(respond=always("False")) as b:
        first = evaluate(a)
        assert a.n_requests == N_ITEMS
        second = evaluate(b)
        assert b.n_requests == N_ITEMS  # none of A's answers, from its run or the cache
        assert second["run_dir"] != first["run_dir"]
        assert _scores(second) == [0] * N_ITEMS and _scores(first) == [1] * N_ITEMS
        again = evaluate(a)
        assert again["run_dir"] == first["run_dir"] and a.n_requests == N_ITEMS


def _scores(summary: dict) -> list[int]:
    lines = (Path(summary["run_dir"]) / "judgments.jsonl").read_text().splitlines()
    return [json.loads(line)["score"] for line in lines]


def test_with_no_endpoint_in_the_environment_a_model_s_identity_is_its_fields(monkeypatch):
    """The endpoint is taken from the environment only where LiteLLM would take it, so a
    model's identity — and the hash of every run made before it counted — stays what its
    fields say when no such variable is set, for a native client (which reads none), for a
    config's own ``api_base`` and for the in-process models."""
    from assay._endpoints import every_variable
    from assay.lm import NOT_IN_IDENTITY, ModelSpec
    from assay.lm._cache import cache_scope
    from assay.types import stable_hash

    for name in every_variable():
        monkeypatch.delenv(name)
    specs = [
        ModelSpec(model="openai/gpt-4o-mini", client="litellm"),
        ModelSpec(model="anthropic/claude-3-5-haiku-latest"),
        ModelSpec(model="openai/gpt-4o-mini"),
        ModelSpec(model="local"),
    ]
    for spec in specs:
        fields = spec.model_dump(mode="json", exclude=set(NOT_IN_IDENTITY))
        assert spec.resolved(fields) == fields
        scope = stable_hash({"spec": fields, "engine": "hosted"})
        assert cache_scope(spec, "hosted") == scope
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:8/v1")
    litellm, anthropic, native, local = specs
    assert litellm.identity()["api_base"] == "http://127.0.0.1:9/v1"
    assert anthropic.identity()["api_base"] == "http://127.0.0.1:8/v1"
    assert native.identity()["api_base"] is None  # the native client reads no variable
    assert "api_base" not in local.identity() or local.identity()["api_base"] is None
    given = litellm.model_copy(update={"api_base": "http://127.0.0.1:7/v1"})
    assert given.identity()["api_base"] == "http://127.0.0.1:7/v1"  # the config's, as LiteLLM
