"""A scripted, deterministic LM for tests: answers come from a Python function or a JSON sheet.

It runs as a real DSPy engine, so prompts go through DSPy's adapters and answers are parsed
exactly as a hosted model's would be. Every call is counted, with the temperature it was sent.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dspy.lm15 import Message, Response, ServerError, TextPart, Usage

from assay import _json
from assay.errors import ModelError
from assay.lm._engine import request_messages, response_schema


@dataclass(frozen=True)
class ScriptedCall:
    """What the scripted LM saw: the whole prompt text, the asked-for fields and the sampling."""

    prompt: str
    fields: tuple[str, ...]
    temperature: float | None
    seed: int | None
    index: int

    def field(self, name: str) -> str | None:
        """The value of input field ``name`` in the prompt (DSPy's ``[[ ## name ## ]]`` blocks;
        the last occurrence, i.e. the actual input rather than the format description)."""
        marker = f"[[ ## {name} ## ]]\n"
        at = self.prompt.rfind(marker)
        if at < 0:
            return None
        rest = self.prompt[at + len(marker) :]
        end = len(rest)
        for stop in ("\n\n[[ ## ", "\n\nRespond with"):
            i = rest.find(stop)
            if i >= 0:
                end = min(end, i)
        return rest[:end]


Responder = Callable[[ScriptedCall], dict[str, Any] | str]


@dataclass
class ScriptedEngine:
    """DSPy engine answering with ``respond(call)``: a dict of output fields, or raw text.

    A dict may carry ``"_probs": {verdict text: probability}``: when logprobs are requested,
    the verdict token then comes with those alternatives (a real model's top-k). Raising :class:`ScriptedFailure` inside ``respond`` simulates a provider error.
    """

    respond: Responder
    delay_s: float = 0.0
    name: str = "scripted"
    supports_response_schema: bool = True
    supported_params: tuple[str, ...] = (
        "response_format",
        "temperature",
        "max_tokens",
        "seed",
        "logprobs",
        "top_logprobs",
    )
    calls: list[ScriptedCall] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def n_calls(self) -> int:
        return len(self.calls)

    def complete(self, request):
        messages = request_messages(request)
        prompt = "\n\n".join(m["content"] for m in messages)
        schema = response_schema(request)
        fields = tuple((schema or {}).get("properties", {}) or ())
        with self._lock:
            call = ScriptedCall(
                prompt, fields, request.config.temperature, request.config.seed, len(self.calls)
            )
            self.calls.append(call)
        if self.delay_s:
            time.sleep(self.delay_s)
        try:
            out = self.respond(call)
        except ScriptedFailure as exc:
            raise ServerError(str(exc)) from None
        logprobs = None
        if isinstance(out, dict) and "_probs" in out:
            out = dict(out)
            logprobs = (
                _verdict_logprobs(out, out.pop("_probs"))
                if request.config.logprobs is not None
                else None
            )
        if isinstance(out, dict):
            if schema is not None:
                text = json.dumps(out)
            else:  # DSPy's chat adapter format
                text = (
                    "".join(f"[[ ## {k} ## ]]\n{v}\n\n" for k, v in out.items())
                    + "[[ ## completed ## ]]"
                )
        else:
            text = str(out)
        usage = Usage(input_tokens=len(prompt.split()), output_tokens=max(1, len(text.split())))
        return Response(
            id=None,
            model=self.name,
            message=Message.assistant([TextPart(text)]),
            finish_reason="stop",
            usage=usage,
            logprobs=logprobs,
        )

    def close(self) -> None:
        pass


def _verdict_logprobs(out: dict[str, Any], probs: dict[str, float]):
    """Token logprobs for a JSON answer whose ``verdict`` token has the alternatives ``probs``
    (what a real model's top-k would show), for testing probability-weighted scores."""
    import math

    from dspy.lm15 import TokenLogprob, TopLogprob

    value = str(out["verdict"])
    top = tuple(TopLogprob(token=k, logprob=math.log(v)) for k, v in probs.items() if v > 0)
    return (
        TokenLogprob(token='{"verdict": "', logprob=0.0),
        TokenLogprob(token=value, logprob=math.log(max(probs.get(value, 1e-9), 1e-9)), top=top),
        TokenLogprob(token='"}', logprob=0.0),
    )


class ScriptedFailure(Exception):
    """Raised by a responder to simulate a provider error (becomes an ``lm_error``)."""


_SCRIPTS: dict[str, Callable[[], ScriptedEngine]] = {}


def register_script(name: str, factory: Callable[[], ScriptedEngine]) -> None:
    """Make ``model: scripted:<name>`` build an engine with ``factory()``."""
    _SCRIPTS[name] = factory


def registered_scripts(names: Iterable[str]) -> dict[str, Callable[[], ScriptedEngine]]:
    """The factories registered under ``names`` (those registered here), to register in
    another process: a Ray actor that makes the same scripted model's calls."""
    return {n: _SCRIPTS[n] for n in names if n in _SCRIPTS}


def scripted_engine(spec: str, base: Path | None = None) -> ScriptedEngine:
    """Build the engine for ``scripted:<name>`` (a registered script) or ``scripted:<sheet.json>``.

    An answer sheet is ``{"rules": [{"match": "text in the prompt", "output": {...}} ...],
    "default": {...}, "fail_on": ["text"...], "delay_s": 0.0}``: the first rule whose ``match``
    occurs in the prompt answers; ``fail_on`` simulates a provider error.
    """
    if spec in _SCRIPTS:
        return _SCRIPTS[spec]()
    path = Path(spec)
    if not path.is_absolute() and base is not None:
        path = base / path
    try:
        sheet = _json.loads(path.read_text(encoding="utf-8"))
    except OSError:
        known = ", ".join(sorted(_SCRIPTS)) or "none"
        raise ModelError(
            f"scripted:{spec}: no such answer sheet and no registered script (registered: {known})"
        ) from None
    except json.JSONDecodeError as exc:
        raise ModelError(f"{path}: answer sheet is not JSON (line {exc.lineno})") from None

    rules = sheet.get("rules", [])
    default = sheet.get("default")
    fail_on = sheet.get("fail_on", [])

    def respond(call: ScriptedCall) -> dict[str, Any] | str:
        for needle in fail_on:
            if needle in call.prompt:
                raise ScriptedFailure(f"scripted failure on {needle!r}")
        for rule in rules:
            if rule["match"] in call.prompt:
                return rule["output"]
        if default is None:
            raise ScriptedFailure("no rule matched and the sheet has no default")
        return default

    return ScriptedEngine(
        respond=respond, delay_s=float(sheet.get("delay_s", 0.0)), name=f"scripted:{path.name}"
    )
