"""The native client behind an HTTP proxy from the environment (``HTTP_PROXY``): the sync engine
switches to httpx, the async one (aiohttp, ``trust_env``) goes through it too, and both get
the answer the direct path gets. The proxy is a real forward proxy on loopback."""

from __future__ import annotations

import asyncio
import http.client
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import dspy

from assay.lm import StubServer, make_adapter, make_lm
from assay.lm._http import _ENGINES
from tests.lm.conftest import Verdict, verdict_for


class ForwardProxy:
    """An HTTP forward proxy: requests in absolute form (``POST http://host:port/path``) are
    sent on to their host and the answers returned; each proxied URL is recorded."""

    def __init__(self):
        self.seen: list[str] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802
                url = urllib.parse.urlsplit(self.path)
                proxy.seen.append(self.path)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                upstream = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() not in ("proxy-connection", "connection", "host")
                }
                upstream.request("POST", url.path, body, headers)
                answer = upstream.getresponse()
                data = answer.read()
                upstream.close()
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.getheader("Content-Type", "text/plain"))
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format, *args):  # noqa: A002
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> ForwardProxy:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def test_a_proxy_from_the_environment_carries_sync_and_async_calls(monkeypatch):
    with StubServer(respond=verdict_for) as stub, ForwardProxy() as proxy:
        for var in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY"):
            monkeypatch.delenv(var, raising=False)
        program = dspy.Predict(Verdict)
        with dspy.context(adapter=make_adapter("json")):
            program.set_lm(make_lm("openai/stub", api_base=stub.base_url))
            direct = [program(answer=a).verdict for a in ("Sunlight and water.", "No idea.")]
            assert proxy.seen == []  # no proxy in the environment: straight to the server

            monkeypatch.setenv("HTTP_PROXY", proxy.url)
            monkeypatch.setenv("http_proxy", proxy.url)
            for key in [k for k in _ENGINES if k[1] == stub.base_url]:
                del _ENGINES[key]  # engines are made once per endpoint: make them again
            program.set_lm(make_lm("openai/stub", api_base=stub.base_url))
            engine = program.lm.engine
            assert engine._proxy  # the sync engine saw the proxy and uses httpx
            sync = [program(answer=a).verdict for a in ("Sunlight and water.", "No idea.")]
            assert engine._client is not None  # the calls went through _via_httpx

            async def both() -> list[bool]:
                return [
                    (await program.acall(answer=a)).verdict
                    for a in ("Sunlight and water.", "No idea.")
                ]

            awaited = asyncio.run(both())
        assert direct == sync == awaited == [True, False]
        chat = f"{stub.base_url}/chat/completions"
        assert proxy.seen == [chat] * 4  # two sync and two awaited calls, each through it
        assert stub.n_requests == 6
