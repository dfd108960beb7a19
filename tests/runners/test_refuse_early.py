"""What can be checked before the first call is refused before it: an unknown
LiteLLM provider and a tracking URI MLflow has no store for are one-line errors before any LM
call and before a run directory exists — not a finished run of ``lm_error`` judgments, nor a
failure after every item is judged."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.cli import main
from assay.lm import StubServer
from tests.stub_judge import stub_config, write_items

N_ITEMS = 3


def config(folder: Path, api_base: str, **extra: object) -> Path:
    extra.setdefault("retries", 0)
    return stub_config(folder, write_items(folder, N_ITEMS), api_base, name="early", **extra)


def refused(capsys, argv: list[str]) -> str:
    """The one stderr line of a command that exits 2."""
    assert main(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1, err
    return err[0]


def test_an_unknown_provider_is_refused_before_any_call(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with StubServer() as stub:
        cfg = config(tmp_path, stub.base_url, judge={"model": "nosuchprovider/x"})
        line = refused(capsys, ["evaluate", str(cfg), "--quiet"])
        assert stub.n_requests == 0
    assert line.startswith("assay: error: model nosuchprovider/x: ")
    assert "no provider 'nosuchprovider'" in line
    assert not (tmp_path / "runs").exists()  # no run directory, no run of lm_error judgments


@pytest.mark.parametrize("where", ["config", "flag"])
def test_a_tracking_uri_mlflow_cannot_store_to_is_refused_before_any_call(
    tmp_path, monkeypatch, capsys, where
):
    monkeypatch.chdir(tmp_path)
    with StubServer() as stub:
        if where == "config":
            cfg = config(tmp_path, stub.base_url, tracking={"uri": "foo://x"})
            argv = ["evaluate", str(cfg), "--quiet"]
        else:
            cfg = config(tmp_path, stub.base_url, tracking={"enabled": True})
            argv = ["evaluate", str(cfg), "--quiet", "--tracking-uri", "foo://x"]
        line = refused(capsys, argv)
        assert stub.n_requests == 0  # refused before any item is judged
    field = "tracking.uri" if where == "config" else "the tracking URI"
    assert line.startswith(f"assay: error: {field} 'foo://x': MLflow has no tracking store")
    assert "sqlite" in line  # the schemes it has, from MLflow's own registry
    assert not (tmp_path / "runs").exists()


def test_a_tracking_uri_is_not_checked_when_tracking_is_off(tmp_path, monkeypatch, capsys):
    """``tracking.enabled: false`` logs nowhere: its URI is never used, so never refused."""
    monkeypatch.chdir(tmp_path)
    with StubServer() as stub:
        cfg = config(tmp_path, stub.base_url, tracking={"enabled": False, "uri": "foo://x"})
        assert main(["evaluate", str(cfg), "--quiet"]) == 0
        assert stub.n_requests == N_ITEMS


@pytest.mark.parametrize("where", ["default", "config"])
def test_a_store_file_that_is_not_sqlite_is_refused_before_any_call(
    tmp_path, monkeypatch, capsys, where
):
    """An ``mlflow.db`` overwritten or truncated into something else was found by MLflow only
    when the finished run logged; now its header is read before the first call."""
    monkeypatch.chdir(tmp_path)
    store = tmp_path / ("mlflow.db" if where == "default" else "other.db")
    store.write_text("not a database\n")
    with StubServer() as stub:
        tracking = {"enabled": True} if where == "default" else {"uri": f"sqlite:///{store}"}
        cfg = config(tmp_path, stub.base_url, tracking=tracking)
        line = refused(capsys, ["evaluate", str(cfg), "--quiet"])
        assert stub.n_requests == 0
    field = "the tracking store" if where == "default" else "tracking.uri"
    assert line.startswith(f"assay: error: {field} 'sqlite:///")
    assert line.endswith(f"{store} is not an SQLite database (move it aside, or name another file)")
    assert not (tmp_path / "runs").exists()


def _closed_port() -> int:
    """A loopback port nothing listens on (bound once to find it free, then closed)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("store", ["dead-server", "directory", "under-a-file"])
def test_a_tracking_store_that_cannot_take_the_run_is_refused_before_any_call(
    tmp_path, monkeypatch, capsys, store
):
    """A dead tracking server cost four minutes of MLflow's retries after every item was
    judged, and left the run 'running'; an ``mlflow.db`` that is a folder, 104 s and 39 lines
    of retries. Each is refused in one line before the first call, and nothing is written."""
    monkeypatch.chdir(tmp_path)
    if store == "dead-server":
        uri = f"http://127.0.0.1:{_closed_port()}/"
        tracking, says = {"uri": uri}, "no MLflow server answers at this address ("
    elif store == "directory":
        (tmp_path / "mlflow.db").mkdir()
        uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
        tracking, says = {"enabled": True}, "mlflow.db is a directory, not an SQLite database file"
    else:
        (tmp_path / "notes").write_text("a file, not a folder\n")
        uri = f"sqlite:///{tmp_path / 'notes' / 'mlflow.db'}"
        tracking, says = {"uri": uri}, f"cannot create {tmp_path / 'notes' / 'mlflow.db'}: "
    with StubServer() as stub:
        cfg = config(tmp_path, stub.base_url, tracking=tracking)
        line = refused(capsys, ["evaluate", str(cfg), "--quiet"])
        assert stub.n_requests == 0
    field = "the tracking store" if store == "directory" else "tracking.uri"
    assert line.startswith(f"assay: error: {field} '{uri}': "), line
    assert says in line, line
    assert not (tmp_path / "runs").exists()
