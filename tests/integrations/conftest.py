"""A real ``mlflow server`` for the MLflow GenAI tests: one process per test session, a SQLite
backend and an artifacts folder in a temporary directory, on a free port, over HTTP."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator

import pytest

_START_S = 90  # the server's imports and its database migrations take ~10 s on an idle core


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthy(uri: str) -> bool:
    try:
        with urllib.request.urlopen(f"{uri}/health", timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The ``http://127.0.0.1:PORT`` URI of an ``mlflow server`` started for this session
    (killed at its end); a server that does not answer ``/health`` in time fails the test with
    its log."""
    folder = tmp_path_factory.mktemp("mlflow-server")
    port = _free_port()
    uri = f"http://127.0.0.1:{port}"
    mlflow = shutil.which("mlflow", path=os.path.dirname(sys.executable)) or shutil.which("mlflow")
    command = [mlflow] if mlflow else [sys.executable, "-m", "mlflow"]
    log = open(folder / "server.log", "w", encoding="utf-8")  # noqa: SIM115 (closed below)
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}
    server = subprocess.Popen(
        [
            *command,
            "server",
            "--backend-store-uri",
            f"sqlite:///{folder / 'mlflow.db'}",
            "--artifacts-destination",
            str(folder / "artifacts"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,  # its gunicorn/uvicorn workers die with it (killpg below)
    )
    try:
        deadline = time.monotonic() + _START_S
        while not _healthy(uri):
            if server.poll() is not None or time.monotonic() > deadline:
                log.flush()
                pytest.fail(
                    f"mlflow server did not start ({server.returncode=}):\n"
                    + (folder / "server.log").read_text(encoding="utf-8")[-3000:]
                )
            time.sleep(0.25)
        yield uri
    finally:
        try:
            os.killpg(server.pid, 15)
            server.wait(timeout=15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(server.pid, 9)
            server.wait()
        log.close()
