"""assay's JSON and chat adapters (strict verdicts, truncation reported) with their system
message (and the JSON adapter's response format) built once per signature.

The system message (field descriptions, structure, task) and the response format depend on the
signature alone (and on what the LM supports), yet DSPy rebuilds them — with pydantic schemas —
on every call. The user message is DSPy's, but for a text input, which goes in as it is (DSPy
gives it back unchanged too, after a pydantic round trip); demos and parsing are DSPy's own.

For an in-process model (layout ``constant-first``, :func:`assay.lm._spec.prompt_layout`), the
output requirements DSPy repeats at the end of every user message ("Respond with a JSON object
in the following order of fields: ...") end the system message instead: a model that keeps the
evaluated prefix of its last prompt (llama.cpp) then evaluates only an item's inputs at each
call, not the ~30 tokens of requirements after them as well.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

import dspy
from dspy.adapters.utils import format_field_value

from assay.lm._outputs import StrictChatAdapter, StrictJSONAdapter
from assay.lm._spec import CONSTANT_FIRST

_LAYOUT: ContextVar[str | None] = ContextVar("assay_prompt_layout", default=None)
"""The prompt layout of the LM the adapter is calling (set around each call)."""


def _per_signature(
    adapter: dspy.Adapter,
    name: str,
    signature: type[dspy.Signature],
    key: tuple[Any, ...],
    build: Callable[[], Any],
) -> Any:
    """``build()`` once per ``signature`` (and ``key``), kept on ``adapter`` under ``name``.
    Signatures are immutable classes (a new instruction is a new class), so a kept value never
    goes stale; the entry holds the class, so its id is never reused for another."""
    cache = adapter.__dict__.setdefault(name, {})
    hit = cache.get((id(signature), *key))
    if hit is None or hit[0] is not signature:
        hit = cache[(id(signature), *key)] = (signature, build())
    return hit[1]


class _Layout:
    """Formats each call's prompt in the layout of the LM called: its engine's
    ``prompt_layout`` (the in-process engine's is ``constant-first``), else DSPy's."""

    def __call__(self, lm, lm_kwargs, signature, demos, inputs):
        token = _LAYOUT.set(getattr(getattr(lm, "_engine_spec", None), "prompt_layout", None))
        try:
            return super().__call__(lm, lm_kwargs, signature, demos, inputs)  # type: ignore[misc]
        finally:
            _LAYOUT.reset(token)

    async def acall(self, lm, lm_kwargs, signature, demos, inputs):
        token = _LAYOUT.set(getattr(getattr(lm, "_engine_spec", None), "prompt_layout", None))
        try:
            return await super().acall(lm, lm_kwargs, signature, demos, inputs)  # type: ignore[misc]
        finally:
            _LAYOUT.reset(token)


class _SystemOnce:
    """``format_system_message`` once per signature (and layout); in the ``constant-first``
    layout it ends with the output requirements."""

    def format_system_message(self, signature: type[dspy.Signature]) -> str:
        build = super().format_system_message  # type: ignore[misc]
        layout = _LAYOUT.get()

        def system() -> str:
            text = build(signature)
            if layout == CONSTANT_FIRST:
                requirements = self.user_message_output_requirements(signature)  # type: ignore[attr-defined]
                if requirements is not None:
                    text = f"{text}\n\n{requirements}"
            return text

        return _per_signature(self, "_assay_system", signature, (layout,), system)


class _PlainText:
    """A text input goes into the user message as it is: DSPy's ``format_field_value`` gives
    a ``str`` back unchanged too, after building a pydantic ``TypeAdapter(str)`` for it — about
    0.1 ms per field per call. Any other value is formatted by DSPy."""

    def format_user_message_content(
        self,
        signature: type[dspy.Signature],
        inputs: dict[str, Any],
        prefix: str = "",
        suffix: str = "",
        main_request: bool = False,
    ) -> str:
        # DSPy 3.4's ChatAdapter.format_user_message_content, with the fast path for text
        messages = [prefix]
        for name, field in signature.input_fields.items():
            if name in inputs:
                value = inputs.get(name)
                text = value if type(value) is str else format_field_value(field, value)
                messages.append(f"[[ ## {name} ## ]]\n{text}")
        if main_request and _LAYOUT.get() != CONSTANT_FIRST:  # that layout: in the system
            requirements = self.user_message_output_requirements(signature)  # type: ignore[attr-defined]
            if requirements is not None:
                messages.append(requirements)
        messages.append(suffix)
        return "\n\n".join(messages).strip()


_NO_FORMAT = object()  # DSPy set no response_format for this LM


class _FormatOnce:
    """Memoize the JSON adapter's ``response_format`` by signature and by what the LM supports.
    For a model with structured outputs (``gpt-4o-mini``, ...), DSPy builds a pydantic model of
    the outputs and its JSON schema on every call: ~1.5 ms of CPU per call here, more than a
    third of all the client does (the JSON mode of an unknown model costs nothing)."""

    def _prepare_response_format(self, lm, lm_kwargs, signature) -> None:
        prepare = super()._prepare_response_format  # type: ignore[misc]

        def build() -> Any:
            chosen: dict[str, Any] = {}
            prepare(lm, chosen, signature)
            return chosen.get("response_format", _NO_FORMAT)

        supports = (
            "response_format" in lm.supported_params,
            bool(lm.supports_response_schema),
            self.use_native_function_calling,  # type: ignore[attr-defined]
        )
        chosen = _per_signature(self, "_assay_format", signature, supports, build)
        if chosen is not _NO_FORMAT:
            lm_kwargs["response_format"] = chosen


class JSONAdapter(_Layout, _FormatOnce, _PlainText, _SystemOnce, StrictJSONAdapter):
    """The strict JSON adapter (:mod:`assay.lm._outputs`), system message and response format
    built once per signature, text inputs as they are, in the called model's layout."""


class ChatAdapter(_Layout, _PlainText, _SystemOnce, StrictChatAdapter):
    """The strict chat adapter (:mod:`assay.lm._outputs`), system message built once per
    signature, text inputs as they are, in the called model's layout."""


_SHARED: dict[str, dspy.Adapter] = {}
_LOCK = threading.Lock()


def shared_adapter(kind: str) -> dspy.Adapter:
    """The process's ``json`` or ``chat`` adapter (stateless between calls; thread-safe)."""
    with _LOCK:
        if kind not in _SHARED:
            _SHARED[kind] = JSONAdapter() if kind == "json" else ChatAdapter()
        return _SHARED[kind]
