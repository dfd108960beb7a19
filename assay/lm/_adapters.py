"""assay's JSON and chat adapters (strict verdicts, truncation reported) with their system
message (and the JSON adapter's response format) built once per signature.

The system message (field descriptions, structure, task) depends on the signature alone, yet
DSPy rebuilds it — with a pydantic schema per field — on every call: a third of a millisecond
of CPU per LM call. The user message, demos and parsing are DSPy's own, unchanged.
"""

from __future__ import annotations

import threading
from typing import Any

import dspy
from dspy.adapters.utils import format_field_value

from assay.lm._outputs import StrictChatAdapter, StrictJSONAdapter


class _SystemOnce:
    """Memoize ``format_system_message`` by signature (signatures are immutable classes: a new
    instruction is a new class, so a cached text can never go stale)."""

    def format_system_message(self, signature: type[dspy.Signature]) -> str:
        cache = self.__dict__.setdefault("_assay_system", {})
        hit = cache.get(id(signature))
        if hit is not None and hit[0] is signature:
            return hit[1]
        text = super().format_system_message(signature)  # type: ignore[misc]
        cache[id(signature)] = (signature, text)  # holds the class: its id is never reused
        return text


class _PlainText:
    """A text input goes into the user message as it is: DSPy's ``format_field_value`` gives
    a ``str`` back unchanged too, after building a pydantic ``TypeAdapter(str)`` for it — about
    0.1 ms per field per call. Any other value is formatted by DSPy, as before."""

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
        if main_request:
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
        key = (
            id(signature),
            "response_format" in lm.supported_params,
            bool(lm.supports_response_schema),
            self.use_native_function_calling,  # type: ignore[attr-defined]
        )
        cache = self.__dict__.setdefault("_assay_format", {})
        hit = cache.get(key)
        if hit is None or hit[0] is not signature:
            chosen: dict = {}
            super()._prepare_response_format(lm, chosen, signature)  # type: ignore[misc]
            hit = (signature, chosen.get("response_format", _NO_FORMAT))
            cache[key] = hit  # holds the class: its id is never reused
        if hit[1] is not _NO_FORMAT:
            lm_kwargs["response_format"] = hit[1]


class JSONAdapter(_FormatOnce, _PlainText, _SystemOnce, StrictJSONAdapter):
    """The strict JSON adapter (:mod:`assay.lm._outputs`), system message and response format
    built once per signature, text inputs as they are."""


class ChatAdapter(_PlainText, _SystemOnce, StrictChatAdapter):
    """The strict chat adapter (:mod:`assay.lm._outputs`), system message built once per
    signature, text inputs as they are."""


_SHARED: dict[str, dspy.Adapter] = {}
_LOCK = threading.Lock()


def shared_adapter(kind: str) -> dspy.Adapter:
    """The process's ``json`` or ``chat`` adapter (stateless between calls; thread-safe)."""
    with _LOCK:
        if kind not in _SHARED:
            _SHARED[kind] = JSONAdapter() if kind == "json" else ChatAdapter()
        return _SHARED[kind]
