"""A loopback OpenAI-compatible chat server for tests and benchmarks: no network, no key.

It answers ``POST /v1/chat/completions`` (and ``/chat/completions``) after a fixed latency,
with content from a ``respond(request_json)`` callable and deterministic token usage (a request
that forces a function tool gets that call, the content as its arguments). It can
fail on purpose (HTTP 429 with ``Retry-After: 0`` for the first N requests, or any status
sequence), and records what it saw: every request body, the request count and the largest
number of requests in flight at once — so a test can check what reached the wire and a
benchmark can check that concurrency really happened. With ``verdict_probs``, a request asking
for ``logprobs`` gets token logprobs whose verdict token has those alternatives.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections.abc import Callable, Iterable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Respond = Callable[[dict[str, Any]], str]
VerdictProbs = Callable[[dict[str, Any]], "dict[str, float] | None"]

_PATHS = ("/v1/chat/completions", "/chat/completions")


def default_respond(request: dict[str, Any]) -> str:
    """A valid answer to whatever DSPy asked, choosing the first allowed value of every field.

    With ``response_format: json_schema`` (a model LiteLLM knows supports schemas), a JSON
    object giving each schema property its first ``enum``/``const`` value. With ``json_object``
    (what DSPy's JSONAdapter sends for a model LiteLLM does not know, such as ``openai/stub``)
    or when the prompt asks for a JSON object, the same object built from the output fields the
    DSPy prompt lists; otherwise the chat adapter's ``[[ ## field ## ]]`` form. ``"ok"`` when
    no field is known.
    """
    fmt = request.get("response_format")
    fmt = fmt if isinstance(fmt, dict) else {}
    schema = (fmt.get("json_schema") or {}).get("schema")
    if isinstance(schema, dict) and schema.get("properties"):
        defs = schema.get("$defs") or schema.get("definitions") or {}
        return json.dumps({k: _first_value(v, defs) for k, v in schema["properties"].items()})
    fields = prompt_output_fields(request)
    if not fields:
        return "ok"
    if fmt or _asks_for_json(request):
        return json.dumps(fields)
    return "".join(f"[[ ## {k} ## ]]\n{v}\n\n" for k, v in fields.items()) + "[[ ## completed ## ]]"


# DSPy's system prompt lists outputs as "1. `verdict` (Literal['False', 'True']): ..."
_OUTPUTS_HEADER = "Your output fields are:"
_FIELD_LINE = re.compile(r"^\d+\. `(\w+)` \(([^)]*)\)", re.MULTILINE)
_LITERAL = re.compile(r"Literal\[\s*(?:'([^']*)'|\"([^\"]*)\"|(-?\d+))")


def forced_tool(request: dict[str, Any]) -> str | None:
    """The function a request forces with ``tool_choice`` (instructor's tools mode, say)."""
    choice = request.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "function":
        name = (choice.get("function") or {}).get("name")
        return name if isinstance(name, str) else None
    return None


def _asks_for_json(request: dict[str, Any]) -> bool:
    """DSPy's JSONAdapter prompt ("Respond with a JSON object ...") without a response format."""
    return any(
        isinstance(m.get("content"), str) and "with a JSON object" in m["content"]
        for m in request.get("messages") or []
    )


def prompt_output_fields(request: dict[str, Any]) -> dict[str, Any]:
    """Output field → its first allowed value (or ``"ok"``), read from a DSPy system prompt."""
    for message in request.get("messages") or []:
        content = message.get("content")
        if (
            message.get("role") != "system"
            or not isinstance(content, str)
            or _OUTPUTS_HEADER not in content
        ):
            continue
        block = content.split(_OUTPUTS_HEADER, 1)[1].split("\n\n", 1)[0]
        out: dict[str, Any] = {}
        for name, kind in _FIELD_LINE.findall(block):
            lit = _LITERAL.search(kind)
            if lit is None:
                out[name] = "ok"
            elif lit.group(3) is not None:
                out[name] = int(lit.group(3))
            else:
                out[name] = lit.group(1) if lit.group(1) is not None else lit.group(2)
        return out
    return {}


def _first_value(prop: dict[str, Any], defs: dict[str, Any]) -> Any:
    """The first ``enum``/``const`` value a property allows (following ``$ref`` and ``anyOf``)."""
    ref = prop.get("$ref")
    if isinstance(ref, str):
        prop = defs.get(ref.rsplit("/", 1)[-1], {})
    if "const" in prop:
        return prop["const"]
    if prop.get("enum"):
        return prop["enum"][0]
    for option in prop.get("anyOf") or prop.get("oneOf") or []:
        value = _first_value(option, defs)
        if value != "ok":
            return value
    return "ok"


def verdict_token_logprobs(
    content: str, probs: dict[str, float], field: str = "verdict"
) -> list[dict[str, Any]] | None:
    """OpenAI-shaped ``logprobs.content`` for ``content`` in three tokens: the text before the
    ``field``'s value, the value (its ``top_logprobs``: each verdict text of ``probs`` with its
    probability), the rest. ``None`` when the content has no such field."""
    found = re.search(rf'(?:"{field}"\s*:\s*"?|## {field} ## \]\]\s*)([^",}}\n]+)', content)
    if found is None:
        return None
    start, end = found.span(1)
    value = found.group(1)
    top = [{"token": k, "logprob": math.log(v), "bytes": None} for k, v in probs.items() if v > 0]
    chosen = math.log(max(probs.get(value.strip(), 1e-9), 1e-9))
    tokens = [
        {"token": content[:start], "logprob": 0.0, "bytes": None, "top_logprobs": []},
        {"token": value, "logprob": chosen, "bytes": None, "top_logprobs": top},
        {"token": content[end:], "logprob": 0.0, "bytes": None, "top_logprobs": []},
    ]
    return [t for t in tokens if t["token"]]


def count_tokens(text: str) -> int:
    """Deterministic stand-in for a tokenizer: whitespace-separated words."""
    return len(text.split())


def prompt_tokens(request: dict[str, Any]) -> int:
    """Words in every message's text content (string or ``[{type: text, text}]`` parts)."""
    total = 0
    for message in request.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            total += count_tokens(content)
        elif isinstance(content, list):
            total += sum(count_tokens(p.get("text", "")) for p in content if isinstance(p, dict))
    return total


class StubServer:
    """A threaded OpenAI-compatible chat-completions server on ``127.0.0.1:<ephemeral port>``.

    ``with StubServer(latency_s=0.2) as stub:`` starts it; point a LiteLLM model such as
    ``openai/stub`` at ``stub.base_url``. Each answer's usage is ``prompt_tokens`` = words in the
    messages, ``completion_tokens`` = words in the content (at least 1).

    ``fail_first=N`` answers HTTP 429 to the first N requests; ``status_sequence=[500, 200]``
    gives the status of the following requests in order (requests beyond it get 200). Every
    failure carries ``Retry-After: <retry_after>`` (default 0, so a client retries at once;
    ``None`` leaves the header out and the client falls back to its own backoff).

    ``echo_key=True``: a failure's message repeats the request's ``Authorization`` header, as
    servers answering a wrong key with "Incorrect API key provided: sk-..." do.

    ``verdict_probs(request)`` → ``{verdict text: probability}`` (or ``None``): a request with
    ``logprobs: true`` gets the answer's token logprobs, its verdict token with those
    alternatives (:func:`verdict_token_logprobs`); without it ``logprobs`` is ``null``.

    ``usage(counted, request)`` → the ``usage`` object an answer carries, given the one counted
    above: another one (``prompt_tokens_details.cached_tokens``, as OpenAI reports its prompt
    caching), or ``None`` for an answer with no ``usage`` at all, as some servers send.
    ``responses`` holds each completion as sent.
    """

    def __init__(
        self,
        *,
        latency_s: float = 0.0,
        respond: Respond | None = None,
        fail_first: int = 0,
        status_sequence: Iterable[int] = (),
        retry_after: float | None = 0,
        model: str = "stub-model",
        verdict_probs: VerdictProbs | None = None,
        port: int = 0,
        echo_key: bool = False,
        usage: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any] | None] | None = None,
    ):
        self.latency_s = latency_s
        self._port = port  # 0: an ephemeral port (``port``: a fixed one, for a script)
        self.verdict_probs = verdict_probs
        self.respond = respond or default_respond
        self.fail_first = fail_first
        self.status_sequence = list(status_sequence)
        self.retry_after = retry_after
        self.model = model
        self.echo_key = echo_key
        self.usage = usage
        self.requests: list[dict[str, Any]] = []  # bodies in arrival order (failed ones too)
        self.responses: list[dict[str, Any]] = []  # the completions it sent (with their usage)
        self.statuses: list[int] = []  # the HTTP status each request got, in arrival order
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> StubServer:
        if self._server is not None:
            return self
        server = _Server(("127.0.0.1", self._port), _handler_for(self))
        self._server = server
        # serve_forever polls for shutdown every poll_interval (0.5 s by default): every
        # `with StubServer()` block would end half a second late.
        self._thread = threading.Thread(
            target=server.serve_forever, args=(0.01,), name="assay-stub-lm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what it saw -------------------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the stub server is not running")
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        """The OpenAI-style API base, ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def n_requests(self) -> int:
        with self._lock:
            return len(self.requests)

    def reset(self) -> None:
        """Forget the recorded requests and statuses (the failure schedule restarts too)."""
        with self._lock:
            self.requests.clear()
            self.responses.clear()
            self.statuses.clear()
            self.max_in_flight = self._in_flight

    # -- serving -----------------------------------------------------------------------------
    def _admit(self, body: dict[str, Any]) -> tuple[int, int]:
        """Record a request; return its arrival index and the status that index gets."""
        with self._lock:
            index = len(self.requests)
            self.requests.append(body)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            if index < self.fail_first:
                status = HTTPStatus.TOO_MANY_REQUESTS
            elif index - self.fail_first < len(self.status_sequence):
                status = self.status_sequence[index - self.fail_first]
            else:
                status = HTTPStatus.OK
            self.statuses.append(int(status))
            return index, int(status)

    def _record_status(self, index: int, status: int) -> None:
        with self._lock:
            if index < len(self.statuses):
                self.statuses[index] = int(status)

    def _release(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _completion(self, body: dict[str, Any], index: int) -> dict[str, Any]:
        content = self.respond(body)
        p, c = prompt_tokens(body), max(1, count_tokens(content))
        message: dict[str, Any] = {"role": "assistant", "content": content}
        finish = "stop"
        tool = forced_tool(body)
        if tool is not None:  # as an OpenAI server answers a forced function: that call
            message["content"] = None
            call = {"name": tool, "arguments": content}
            message["tool_calls"] = [
                {"id": f"call_stub_{index}", "type": "function", "function": call}
            ]
            finish = "tool_calls"
        logprobs = None
        probs = self.verdict_probs(body) if self.verdict_probs and body.get("logprobs") else None
        if probs:
            tokens = verdict_token_logprobs(content, probs)
            logprobs = {"content": tokens} if tokens else None
        completion = {
            "id": f"chatcmpl-stub-{index}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.model,
            "choices": [
                {"index": 0, "message": message, "finish_reason": finish, "logprobs": logprobs}
            ],
        }
        counted = {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}
        reported = counted if self.usage is None else self.usage(counted, body)
        if reported is not None:
            completion["usage"] = reported
        with self._lock:
            self.responses.append(completion)
        return completion


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # listen() backlog, read at bind time: the default 5 drops connections when dozens of
    # client threads connect at once (LiteLLM then reports "Connection error").
    request_queue_size = 256


def _handler_for(stub: StubServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as a real API server does
        # Headers and body go out in two writes; with Nagle's algorithm on, the second waits
        # for the client's delayed ACK (~40 ms on Linux) and every call would pay it.
        disable_nagle_algorithm = True

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if self.path.split("?", 1)[0].rstrip("/") not in _PATHS:
                self._send(HTTPStatus.NOT_FOUND, _error("not_found", f"no route {self.path}"))
                return
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._send(
                    HTTPStatus.BAD_REQUEST, _error("invalid_request_error", "body is not JSON")
                )
                return
            index, status = stub._admit(body)
            self._admitted = True
            try:
                if stub.latency_s:
                    time.sleep(stub.latency_s)
                if status == HTTPStatus.OK:
                    try:
                        completion = stub._completion(body, index)
                    except Exception as exc:  # a broken responder: answer 500, keep serving
                        stub._record_status(index, HTTPStatus.INTERNAL_SERVER_ERROR)
                        message = f"stub responder failed: {type(exc).__name__}: {exc}"
                        self._send(
                            HTTPStatus.INTERNAL_SERVER_ERROR, _error("server_error", message)
                        )
                    else:
                        self._send(status, completion)
                    return
                headers = (
                    {} if stub.retry_after is None else {"Retry-After": f"{stub.retry_after:g}"}
                )
                message = "stub rate limit" if status == 429 else f"stub status {status}"
                if stub.echo_key:
                    key = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                    message = f"{message}: incorrect API key provided: {key}"
                kind = "rate_limit_exceeded" if status == 429 else "server_error"
                self._send(status, _error(kind, message), headers)
            finally:
                self._leave()

        def _leave(self) -> None:
            """No longer in flight — counted before the answer goes out, so that a client that
            sends its next request as soon as it has this answer is never seen over its limit."""
            if getattr(self, "_admitted", False):
                self._admitted = False
                stub._release()

        def _send(
            self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
        ) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self._leave()
            try:
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout)
                self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass  # quiet: tests and benchmarks read stub.requests instead

    return Handler


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": kind}}
