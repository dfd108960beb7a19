"""The native client: an OpenAI-compatible chat-completions endpoint over HTTP, as a DSPy engine.

``client: native`` in a :class:`~assay.lm.ModelSpec` (the default for ``openai/...`` models).
DSPy still owns everything around the request — its adapters, the response cache, usage
tracking, history and the retry loop (``num_retries``, waiting ``Retry-After`` on a 429) — the
engine makes one attempt. What it changes is the cost: no LiteLLM import (seconds of start-up)
and a fraction of the CPU per call: ``http.client`` on a keep-alive connection per thread
(httpx behind a proxy), and an async twin on ``aiohttp``.

The body sent is what LiteLLM sends an OpenAI-compatible server for the same call: ``model``
without its ``openai/`` prefix, ``messages``, ``temperature``, ``max_tokens``, ``seed``,
``response_format`` (``json_object``, or ``json_schema`` for a model the price map says
supports schemas — LiteLLM's rule), ``logprobs`` / ``top_logprobs`` when asked.
"""

from __future__ import annotations

import asyncio
import email.utils
import http.client
import json
import socket
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator
from typing import Any

from dspy.lm15 import (
    AuthError,
    InvalidRequestError,
    ProviderError,
    RateLimitError,
    Response,
    ServerError,
    TransportError,
    response_from_openai_chat,
)
from dspy.lm15 import TimeoutError as LMTimeout

from assay.lm._engine import request_messages, to_plain
from assay.lm._ledger import note_failed
from assay.lm._limits import RateLimiter, on_the_wire
from assay.lm._redact import error_text, redact

OPENAI_BASE = "https://api.openai.com/v1"
PROVIDER = "openai-compatible"
# Params the OpenAI chat wire takes (what DSPy's adapters may set; LiteLLM's list for openai/).
SUPPORTED = (
    "temperature",
    "max_tokens",
    "top_p",
    "stop",
    "seed",
    "response_format",
    "logprobs",
    "top_logprobs",
    "presence_penalty",
    "frequency_penalty",
)


def supports_schema(wire_model: str) -> bool:
    """What LiteLLM answers for ``openai/<model>``: the price map's ``supports_response_schema``
    (an unknown model — a vLLM or llama.cpp server's — gets JSON mode, not a schema)."""
    from dspy.clients.model_metadata import model_info

    return model_info("openai", wire_model).get("supports_response_schema") is True


def request_body(request: Any, wire_model: str) -> dict[str, Any]:
    """The chat-completions body for a canonical DSPy request."""
    body: dict[str, Any] = {"model": wire_model, "messages": request_messages(request)}
    c = request.config
    if c.temperature is not None:
        body["temperature"] = c.temperature
    if c.max_tokens is not None:
        body["max_tokens"] = c.max_tokens
    if c.top_p is not None:
        body["top_p"] = c.top_p
    if c.stop:
        body["stop"] = list(c.stop)
    if c.seed is not None:
        body["seed"] = c.seed
    for key in ("presence_penalty", "frequency_penalty"):
        if getattr(c, key) is not None:
            body[key] = getattr(c, key)
    fmt = c.response_format
    if fmt:
        if fmt.get("type") == "json_object":
            body["response_format"] = {"type": "json_object"}
        else:
            inner = {"name": fmt.get("name") or "response", "schema": to_plain(fmt["schema"])}
            if "strict" in fmt:
                inner["strict"] = fmt["strict"]
            body["response_format"] = {"type": "json_schema", "json_schema": inner}
    if c.logprobs is not None:
        body["logprobs"] = True
        if c.logprobs > 0:
            body["top_logprobs"] = c.logprobs
    if c.extensions:
        body.update(to_plain(c.extensions))
    return body


def retry_after(headers: Any) -> float | None:
    """``Retry-After`` in seconds (a number, or an HTTP date), if the server sent one."""
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        when = email.utils.parsedate_to_datetime(value) if value else None
        return None if when is None else max(0.0, when.timestamp() - time.time())


def error_for(status: int, text: str, headers: Any) -> ProviderError:
    """The DSPy (lm15) error of a failed answer: DSPy's retry loop retries 429, 5xx, timeouts
    and transport errors, waiting ``retry_after`` when given. Its message is the server's,
    redacted: a server may repeat the key it was sent."""
    try:
        message = redact(str(json.loads(text)["error"]["message"]))
    except Exception:
        message = redact(text)[:500] or f"HTTP {status}"
    kw: dict[str, Any] = {"provider": PROVIDER, "status": status}
    if status == 429:
        return RateLimitError(message, retry_after=retry_after(headers), **kw)
    if status in (408, 504):
        return LMTimeout(message, **kw)
    if status >= 500:
        return ServerError(message, retry_after=retry_after(headers), **kw)
    if status in (401, 403):
        return AuthError(message, **kw)
    if status in (400, 404, 413, 422):
        return InvalidRequestError(message, **kw)
    return ProviderError(message, **kw)


def _estimate_tokens(body: dict[str, Any]) -> int:
    """Tokens a call may use, for a tpm limit: ~4 characters a token, plus max_tokens."""
    chars = sum(len(str(m.get("content") or "")) for m in body["messages"])
    return chars // 4 + int(body.get("max_tokens") or 0)


class _Endpoint:
    """What both engines share: the address, the key, the limiter and how answers are read."""

    supports_function_calling = False
    supports_reasoning = False
    supported_params = SUPPORTED

    def __init__(
        self,
        *,
        wire_model: str,
        api_base: str | None,
        api_key: str,
        timeout: float,
        limiter: RateLimiter | None = None,
        schema: bool | None = None,
    ):
        self.wire_model = wire_model
        self.ledger_model = f"openai/{wire_model}"  # the model, as the call ledger names it
        self.url = (api_base or OPENAI_BASE).rstrip("/") + "/chat/completions"
        self.headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"}
        self.timeout = timeout
        self.limiter = limiter
        self._schema = schema

    @property
    def supports_response_schema(self) -> bool:
        """Whether the model takes a JSON schema (:func:`supports_schema`), read on first use:
        the price map is a file to parse, and a run that makes no call never needs it."""
        if self._schema is None:
            self._schema = supports_schema(self.wire_model)
        return self._schema

    def _prepare(self, request: Any) -> tuple[bytes, int]:
        body = request_body(request, self.wire_model)
        estimate = _estimate_tokens(body) if self.limiter and self.limiter.tpm else 0
        return json.dumps(body).encode(), estimate

    def _answer(self, status: int, text: str, headers: Any, estimate: int) -> Response:
        """The response of one finished exchange (its limiter slot released), or its error."""
        if status != 200:
            note_failed(self.ledger_model, f"HTTP {status}")  # sent, answered, not paid
            err = error_for(status, text, headers)
            if self.limiter is not None:
                self.limiter.release(
                    ok=False, rate_limited=status == 429, retry_after=err.retry_after
                )
                if status == 429:
                    # the limiter now holds every caller (this one's retry too) for Retry-After
                    # and counts it as waiting on limits; DSPy's retry loop must not sleep again
                    err.retry_after = 0.0
            raise err
        try:
            response = response_from_openai_chat(json.loads(text), model=self.wire_model)
        except Exception:
            if self.limiter is not None:
                self.limiter.release(ok=False)
            raise
        if self.limiter is not None:
            used = (response.usage.input_tokens or 0) + (response.usage.output_tokens or 0)
            self.limiter.release(ok=True, tokens=used, estimate=estimate)
        return response

    def _failed(self, exc: Exception) -> Exception:
        note_failed(self.ledger_model, "no answer")  # lost in transit or timed out: not paid
        if self.limiter is not None:
            self.limiter.release(ok=False)
        if isinstance(exc, TimeoutError) or "Timeout" in type(exc).__name__:
            return LMTimeout(f"no answer within {self.timeout:g}s", provider=PROVIDER)
        return TransportError(error_text(exc), provider=PROVIDER)


class HttpEngine(_Endpoint):
    """One synchronous attempt on a keep-alive connection per thread (``http.client``: a fifth
    of httpx's CPU per request; httpx is used instead when a proxy applies to the endpoint)."""

    gates_wire = True  # holds a run's call slot around the exchange only (see gate_calls)

    def __init__(self, **kw: Any):
        super().__init__(**kw)
        parts = urllib.parse.urlsplit(self.url)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or "localhost"
        self._port = parts.port
        self._path = parts.path
        proxied = urllib.request.getproxies().get(parts.scheme)
        self._proxy = bool(proxied) and not urllib.request.proxy_bypass(self._host)
        self._local = threading.local()
        self._client: Any = None  # httpx.Client, behind a proxy only
        # what http.client's request() sends around the Content-Length value, byte for byte
        default_port = 443 if self._https else 80
        host = self._host if ":" not in self._host else f"[{self._host}]"  # an IPv6 address
        if self._port not in (None, default_port):
            host = f"{host}:{self._port}"
        before = [
            f"POST {self._path or '/'} HTTP/1.1",
            f"Host: {host}",
            "Accept-Encoding: identity",
        ]
        after = [f"{k}: {v}" for k, v in self.headers.items()]
        self._head = ("\r\n".join(before) + "\r\nContent-Length: ").encode("latin-1")
        self._tail = ("\r\n" + "\r\n".join(after) + "\r\n\r\n").encode("latin-1")
        self._lock = threading.Lock()

    def complete(self, request: Any) -> Response:
        content, estimate = self._prepare(request)
        with on_the_wire():
            if self.limiter is not None:
                self.limiter.acquire(estimate)
            try:
                status, text, headers = (self._via_httpx if self._proxy else self._post)(content)
            except Exception as exc:  # socket, http.client or httpx: failed in transit
                raise self._failed(exc) from None
        return self._answer(status, text, headers, estimate)

    def _post(self, content: bytes) -> tuple[int, str, Any]:
        """POST on this thread's connection; a kept-alive connection the server has closed
        meanwhile is reopened once (nothing was processed on it).

        ``http.client`` connects (TLS included) and reads the answer; the request goes out in
        one write — its request line and headers are the same for every call to this
        endpoint, made once — where ``HTTPConnection.request`` validates and sends the headers
        and then the body in two (89 -> 64 µs of client CPU per POST, measured alone)."""
        request = self._head + str(len(content)).encode() + self._tail + content
        for attempt in (0, 1):
            conn = getattr(self._local, "conn", None)
            fresh = conn is None
            if fresh:
                cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
                conn = cls(self._host, self._port, timeout=self.timeout)
                conn.connect()
                # no Nagle delay for a request that fits in one segment, nor for one that does not
                conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self._local.conn = conn
            try:
                conn.sock.sendall(request)
                r = http.client.HTTPResponse(conn.sock, method="POST")
                r.begin()
                data = r.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                conn.close()
                self._local.conn = None
                if fresh or attempt:
                    raise
                continue
            except BaseException:
                conn.close()
                self._local.conn = None
                raise
            if r.will_close:
                conn.close()
                self._local.conn = None
            return r.status, data.decode("utf-8", "replace"), r.msg  # headers, case-insensitive
        raise AssertionError("unreachable")

    def _via_httpx(self, content: bytes) -> tuple[int, str, Any]:
        import httpx

        if self._client is None:
            with self._lock:
                if self._client is None:
                    limits = httpx.Limits(max_connections=None, max_keepalive_connections=512)
                    self._client = httpx.Client(timeout=self.timeout, limits=limits)
        r = self._client.post(self.url, content=content, headers=self.headers)
        return r.status_code, r.text, r.headers

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


class AsyncHttpEngine(_Endpoint):
    """One async attempt, on an ``aiohttp`` session per event loop (its C HTTP parser: about
    2 ms of CPU per DSPy call at 128 in flight, where ``httpx.AsyncClient`` took 7-9 ms —
    measured against the loopback stub). Proxies from the environment apply (``trust_env``)."""

    def __init__(self, **kw: Any):
        super().__init__(**kw)
        self._sessions: dict[int, tuple[asyncio.AbstractEventLoop, Any, Any]] = {}

    async def _session(self) -> Any:
        """This event loop's session, made on its first call and closed when the loop shuts
        down (``asyncio.run`` ends: its async generators are closed, this one with them)."""
        import aiohttp

        loop = asyncio.get_running_loop()
        entry = self._sessions.get(id(loop))
        if entry is None or entry[0] is not loop:
            for key, (old, *_) in list(self._sessions.items()):
                if old.is_closed():  # a loop closed without shutting down its async generators
                    del self._sessions[key]
            session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300),
                timeout=aiohttp.ClientTimeout(total=self.timeout),
                trust_env=True,
            )
            closer = self._close_at_shutdown(id(loop), session)
            await closer.__anext__()
            entry = (loop, session, closer)
            self._sessions[id(loop)] = entry
        return entry[1]

    async def _close_at_shutdown(self, key: int, session: Any) -> AsyncIterator[None]:
        try:
            yield
        finally:
            self._sessions.pop(key, None)
            await session.close()

    async def complete(self, request: Any) -> Response:
        content, estimate = self._prepare(request)
        if self.limiter is not None:
            await self.limiter.aacquire(estimate)
        try:
            session = await self._session()
            async with session.post(self.url, data=content, headers=self.headers) as r:
                status, text, headers = r.status, await r.text(errors="replace"), r.headers
        except asyncio.CancelledError:
            if self.limiter is not None:
                self.limiter.release(ok=False)
            raise
        except Exception as exc:  # aiohttp or the socket: the attempt failed in transit
            raise self._failed(exc) from None
        return self._answer(status, text, headers, estimate)

    async def aclose(self) -> None:
        """Close this event loop's session now (else it closes when the loop shuts down)."""
        entry = self._sessions.get(id(asyncio.get_running_loop()))
        if entry is not None:
            await entry[2].aclose()


# Engines (and their connection pools) shared by every LM on the same endpoint, key and timeout:
# rollouts, retries and role copies reuse the same keep-alive connections.
_ENGINES: dict[tuple, tuple[HttpEngine, AsyncHttpEngine]] = {}
_ENGINES_LOCK = threading.Lock()


def http_engines(
    *,
    wire_model: str,
    api_base: str | None,
    api_key: str,
    timeout: float,
    limiter: RateLimiter | None,
) -> tuple[HttpEngine, AsyncHttpEngine]:
    """The (sync, async) engine pair for one endpoint and model, made once per process."""
    key = (wire_model, api_base, api_key, timeout, id(limiter) if limiter else None)
    with _ENGINES_LOCK:
        if key not in _ENGINES:
            kw = {
                "wire_model": wire_model,
                "api_base": api_base,
                "api_key": api_key,
                "timeout": timeout,
                "limiter": limiter,
            }
            _ENGINES[key] = (HttpEngine(**kw), AsyncHttpEngine(**kw))
        return _ENGINES[key]
