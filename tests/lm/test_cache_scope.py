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
