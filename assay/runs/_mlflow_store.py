"""Reading an MLflow store back — a comparison, a logged run read again — never creating one."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from assay.errors import ConfigError


def open_store(tracking_uri: str):
    """An MLflow client on an existing store; a store that cannot be opened is a ConfigError.

    Comparing only reads, so a missing SQLite file is refused rather than created (MLflow
    would create it, parent folders included, and initialise an empty store).
    """
    from mlflow import MlflowClient

    if tracking_uri.startswith("sqlite:"):
        _check_sqlite(tracking_uri)
    elif tracking_uri.startswith(("file:", "/", ".", "~")):
        path = Path(tracking_uri.removeprefix("file://").removeprefix("file:")).expanduser()
        if not path.is_dir():
            raise ConfigError(f"{tracking_uri}: no MLflow store there (not a folder)")
    client = MlflowClient(tracking_uri=tracking_uri)
    try:
        client.search_experiments(max_results=1)
    except Exception as exc:  # a server that is down, a store MLflow cannot read: any backend
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ConfigError(f"{tracking_uri}: cannot open the MLflow store ({first})") from None
    return client


def _check_sqlite(uri: str) -> None:
    raw = uri.split("?", 1)[0].removeprefix("sqlite://")
    if raw in ("", "/", "/:memory:"):
        raise ConfigError(f"{uri}: an in-memory store has no runs to compare")
    path = Path(raw[1:] if raw.startswith("/") else raw)
    if not path.is_file():
        raise ConfigError(f"{uri}: no MLflow store there ({path} does not exist)")
    try:
        with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True) as db:
            found = db.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name='runs'"
            ).fetchone()
    except sqlite3.Error as exc:
        raise ConfigError(f"{uri}: cannot open the MLflow store ({exc})") from None
    if found is None:
        raise ConfigError(f"{uri}: {path} is an SQLite file but not an MLflow store")


def search_runs(client, experiment_ids: list[str], filter_string: str = "") -> list:
    """Every run of the experiments matching ``filter_string``, page by page."""
    out, token = [], None
    while True:
        page = client.search_runs(experiment_ids, filter_string, max_results=1000, page_token=token)
        out.extend(page)
        token = page.token
        if not token:
            return out
