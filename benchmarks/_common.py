"""What the stub benchmarks share: the loopback stub in its own process, with request times.

A real API server does not share the client's GIL, so the benchmarks run :class:`StubServer`
in a child process. Besides the stub's own counters, every answered request's span
(wall-clock arrival and answer, ``time.time()``) is recorded, so a benchmark can place LM
traffic on its own timeline: when the first request arrived, how many were in flight when.
"""

from __future__ import annotations

import argparse
import multiprocessing
import threading
import time
from typing import Any

from assay.lm import StubServer
from assay.lm._stub_server import Respond, default_respond


class TimedRespond:
    """Wraps a ``respond`` callable and records each request's ``(arrival, answer)`` span.

    ``respond`` runs after the stub's fixed latency, so arrival is the answer time minus it.
    """

    def __init__(self, respond: Respond | None, latency_s: float):
        self._respond = respond or default_respond
        self._latency_s = latency_s
        self._lock = threading.Lock()
        self.spans: list[tuple[float, float]] = []

    def __call__(self, request: dict[str, Any]) -> str:
        answered = time.time()
        with self._lock:
            self.spans.append((answered - self._latency_s, answered))
        return self._respond(request)

    def reset(self) -> None:
        with self._lock:
            self.spans.clear()


class StubProcess:
    """The stub in a child process (``spawn``). Same surface as :class:`StubServer` for what
    the benchmarks read, plus :meth:`stats` with the request spans. ``respond`` must be
    picklable (a module-level function)."""

    def __init__(
        self,
        latency_s: float,
        respond: Respond | None = None,
        keep_bodies: bool = False,
    ):
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(
            target=_serve_stub, args=(child, latency_s, respond, keep_bodies), daemon=True
        )

    def __enter__(self) -> StubProcess:
        self._proc.start()
        self.base_url = self._conn.recv()
        return self

    def __exit__(self, *exc: object) -> None:
        self._ask("stop")
        self._proc.join(timeout=10)

    def _ask(self, command: str) -> Any:
        self._conn.send(command)
        return self._conn.recv()

    def reset(self) -> None:
        self._ask("reset")

    def stats(self) -> dict[str, Any]:
        """``n_requests``, ``max_in_flight`` and ``spans`` (arrival, answer) in arrival order;
        with ``keep_bodies``, ``bodies``: every request's JSON body in arrival order."""
        return self._ask("stats")

    @property
    def n_requests(self) -> int:
        return self.stats()["n_requests"]

    @property
    def max_in_flight(self) -> int:
        return self.stats()["max_in_flight"]


def _serve_stub(
    conn: Any,
    latency_s: float,
    respond: Respond | None,
    keep_bodies: bool = False,
) -> None:
    timed = TimedRespond(respond, latency_s)
    with StubServer(latency_s=latency_s, respond=timed) as stub:
        conn.send(stub.base_url)
        while (command := conn.recv()) != "stop":
            if command == "reset":
                stub.reset()
                timed.reset()
            stats = {
                "n_requests": stub.n_requests,
                "max_in_flight": stub.max_in_flight,
                "spans": sorted(timed.spans),
                "cpu_s": time.process_time(),  # the stub's own CPU (it shares the cores)
            }
            if keep_bodies:
                stats["bodies"] = list(stub.requests)
            conn.send(stats)
        conn.send(None)


def add_root_option(ap: argparse.ArgumentParser) -> None:
    """``--root NAME=PATH`` (repeatable): the checkouts whose assay a benchmark runs, each in
    turn at every size."""
    ap.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="a checkout whose assay to run (repeatable: each in turn at every size)",
    )
