"""``assay review serve``: the review app on a loopback port, behind a printed one-time URL."""

from __future__ import annotations

import errno
import ipaddress
import socket
import sys
from pathlib import Path

from assay.errors import ConfigError, RunError

LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: a free one), or a one-line RunError."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise RunError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        why = "the port is in use" if exc.errno == errno.EADDRINUSE else exc.strerror
        raise RunError(f"cannot listen on {host}:{port}: {why}") from None
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket, host: str, token: str) -> str:
    port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}/?token={token}"


def serve(
    run_dir: Path,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    allow_remote: bool = False,
) -> None:
    """Serve the review app for ``run_dir`` until interrupted.

    The run is read (and refused with a one-line error if it is neither a harness run nor a
    ``selective apply`` run, or a file in it is corrupt) before the port is opened. Listens on loopback only unless
    ``allow_remote`` is given for another ``host``.
    """
    import uvicorn

    from assay.web._app import create_app

    if not is_loopback(host) and not allow_remote:
        raise ConfigError(
            f"--host {host} is not a loopback address: add --allow-remote to listen there "
            "(anyone who can reach it and has the URL can record decisions)"
        )
    app, keys = create_app(Path(run_dir))
    sock = bind(host, port)
    if not is_loopback(host):
        print(
            f"warning: listening on {host}, reachable from other machines; the token in the URL "
            "is the only protection and the connection is not encrypted",
            file=sys.stderr,
        )
    print(f"reviewing {Path(run_dir).resolve()}")
    print(f"open: {url_of(sock, host, keys.token)}", flush=True)
    print("stop with Ctrl+C", flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
