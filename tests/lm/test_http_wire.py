"""The native client's request, byte for byte what ``http.client`` sends for the same POST (it
writes the request itself, in one write), and its keep-alive connection reused and reopened."""

from __future__ import annotations

import http.client
import socket
import threading

import pytest

from assay.lm._http import HttpEngine

ANSWER = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
    b"Connection: %s\r\n\r\n{}"
)


class RawServer:
    """A TCP server that records the raw bytes of each request and answers ``{}``; with
    ``close``, it closes every connection after its answer."""

    def __init__(self, close: bool = False):
        self.close = close
        self.requests: list[bytes] = []
        self.connections = 0
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            buf = b""
            while True:
                while b"\r\n\r\n" not in buf:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                head, _, rest = buf.partition(b"\r\n\r\n")
                length = int(
                    next(
                        h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length:")
                    ).split(b":")[1]
                )
                while len(rest) < length:
                    rest += conn.recv(65536)
                self.requests.append(head + b"\r\n\r\n" + rest[:length])
                buf = rest[length:]
                conn.sendall(ANSWER % (b"close" if self.close else b"keep-alive"))
                if self.close:
                    return

    def stop(self) -> None:
        self._sock.close()


@pytest.fixture
def server():
    srv = RawServer()
    yield srv
    srv.stop()


def _engine(port: int, path: str = "/v1") -> HttpEngine:
    return HttpEngine(
        wire_model="m", api_base=f"http://127.0.0.1:{port}{path}", api_key="k", timeout=5
    )


def test_the_request_is_what_http_client_sends(server):
    body = '{"model": "m", "messages": [{"role": "user", "content": "héllo"}]}'.encode()
    engine = _engine(server.port)
    status, text, headers = engine._post(body)
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    conn.request("POST", "/v1/chat/completions", body, engine.headers)
    conn.getresponse().read()
    conn.close()
    assert (status, text, headers["content-type"]) == (200, "{}", "application/json")
    assert server.requests[0] == server.requests[1]
    assert server.requests[0].endswith(b"\r\n\r\n" + body)


def test_the_connection_is_kept_alive_and_reopened_when_the_server_closes_it():
    kept = RawServer()
    engine = _engine(kept.port)
    for _ in range(3):
        assert engine._post(b"{}")[0] == 200
    assert (len(kept.requests), kept.connections) == (3, 1)
    kept.stop()

    closing = RawServer(close=True)
    engine = _engine(closing.port)
    for _ in range(3):
        assert engine._post(b"{}")[0] == 200
    assert (len(closing.requests), closing.connections) == (3, 3)
    closing.stop()


def test_schema_support_is_read_from_the_price_map_on_first_use_once(monkeypatch):
    """Building a judge's engines reads no price map (a zero-call re-run builds them and
    sends nothing); the first request's adapter asks, once."""
    import assay.lm._http as http

    asked: list[str] = []

    def supports(wire_model: str) -> bool:
        asked.append(wire_model)
        return wire_model == "gpt-4o-mini"

    monkeypatch.setattr(http, "supports_schema", supports)
    engine, async_engine = http.http_engines(
        wire_model="gpt-4o-mini",
        api_base="http://127.0.0.1:9/v1/lazy-schema-test",
        api_key="sk-test",
        timeout=5.0,
        limiter=None,
    )
    assert asked == []
    assert engine.supports_response_schema is True
    assert engine.supports_response_schema is True
    assert asked == ["gpt-4o-mini"]
    assert async_engine.supports_response_schema is True
