"""A server that repeats the key it was sent in its error ("incorrect API key provided: …"):
the key reaches no file of the run directory, no MLflow artifact or store, and not the console,
through either client; the error itself is kept, the key replaced by ``[redacted]``."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from assay.cli import main
from assay.lm import StubServer, note_key_variable, redact
from tests.stub_judge import N_ITEMS, stub_config, write_items


def files_holding(folder: Path, secret: str) -> list[Path]:
    needle = secret.encode()
    return [p for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes()]


@pytest.mark.parametrize("client", ["native", "litellm"])
def test_a_key_echoed_by_the_server_is_stored_nowhere(client, tmp_path, monkeypatch, capsys):
    # a variable whose name says nothing: redacted because the config names it (api_key_env)
    key = f"stub-credential-{secrets.token_hex(16)}"
    monkeypatch.setenv("STUB_CREDENTIAL", key)
    monkeypatch.chdir(tmp_path)  # MLflow's artifacts land here (./mlartifacts)
    with StubServer(status_sequence=[401] * 50, echo_key=True) as stub:
        cfg = stub_config(
            tmp_path,
            write_items(tmp_path),
            stub.base_url,
            name="echo",
            judge={"api_key_env": "STUB_CREDENTIAL", "client": client},
            tracking={"enabled": True, "uri": f"sqlite:///{tmp_path / 'mlflow.db'}"},
            retries=0,
        )
        code = main(["evaluate", str(cfg)])
        assert stub.n_requests == N_ITEMS  # each item's request sent the key, and was refused
    out = capsys.readouterr()
    assert code == 1  # every item unscored: lm_error
    assert key not in out.out and key not in out.err
    assert files_holding(tmp_path, key) == []
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert (tmp_path / "mlartifacts").is_dir() and (tmp_path / "mlflow.db").is_file()
    judgments = [json.loads(x) for x in (run_dir / "judgments.jsonl").read_text().splitlines()]
    assert len(judgments) == N_ITEMS
    for j in judgments:  # the failure is kept, with the server's words, the key replaced
        assert j["unscored"] == "lm_error"
        assert "401: incorrect API key provided: [redacted]" in j["error"]
    assert "incorrect API key provided: [redacted]" in (run_dir / "report.html").read_text()
    ledger = [json.loads(x) for x in (run_dir / "calls.jsonl").read_text().splitlines()]
    assert all(r["failed"] == "HTTP 401" for r in ledger)  # the native client notes each
    assert len(ledger) == (N_ITEMS if client == "native" else 0)


def test_what_is_redacted(monkeypatch):
    """The values of the variables models read keys from — noted, or named as the providers
    name theirs — and anything shaped like a key; not ordinary text."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "anthropic-value-0123456789")
    monkeypatch.setenv("MY_SERVICE_LOGIN", "login-value-0123456789")
    monkeypatch.setenv("SHORT_KEY", "abc")
    note_key_variable("MY_SERVICE_LOGIN")
    text = (
        "401: anthropic-value-0123456789 / login-value-0123456789 / sk-proj-AbC123_xyz-789 / "
        "Authorization: Bearer eyJhbGciOi.J9x-y_z / a task-force of abc / sk-learn"
    )
    assert redact(text) == (
        "401: [redacted] / [redacted] / [redacted] / Authorization: Bearer [redacted] / "
        "a task-force of abc / sk-learn"
    )
