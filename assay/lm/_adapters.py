"""assay's JSON and chat adapters (strict verdicts, truncation reported) with their system
message built once per signature.

The system message (field descriptions, structure, task) depends on the signature alone, yet
DSPy rebuilds it — with a pydantic schema per field — on every call: a third of a millisecond
of CPU per LM call. The user message, demos and parsing are DSPy's own, unchanged.
"""

from __future__ import annotations

import threading

import dspy

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


class JSONAdapter(_SystemOnce, StrictJSONAdapter):
    """The strict JSON adapter (:mod:`assay.lm._outputs`), system message built once per
    signature."""


class ChatAdapter(_SystemOnce, StrictChatAdapter):
    """The strict chat adapter (:mod:`assay.lm._outputs`), system message built once per
    signature."""


_SHARED: dict[str, dspy.Adapter] = {}
_LOCK = threading.Lock()


def shared_adapter(kind: str) -> dspy.Adapter:
    """The process's ``json`` or ``chat`` adapter (stateless between calls; thread-safe)."""
    with _LOCK:
        if kind not in _SHARED:
            _SHARED[kind] = JSONAdapter() if kind == "json" else ChatAdapter()
        return _SHARED[kind]
