"""What DSPy's response cache keys an assay LM's answers by: the request, and the model it went to.

DSPy keys a cached answer by the request it builds (model name, messages, sampling and decoding
parameters, response format, logprob requests, rollout id) and leaves out ``api_base``,
``api_key`` and ``base_url`` on purpose (``dspy.clients.execution.IGNORED_CACHE_KEYS``); a
custom engine — the native client, the embedded llama.cpp model — carries its endpoint or file
where the request never shows it. So two servers serving the same model name shared answers:
the second run made no call and recorded the first server's verdicts as its own.

Each :class:`~assay.lm.AssayLM` therefore carries a *scope*, a hash of its :class:`ModelSpec`'s
identity (endpoint, model, engine, sampling, adapter — never the API key, which no spec holds:
only the name of its variable), set while it calls; :class:`ScopedCache`, the wrapper assay
keeps around whatever cache DSPy holds, adds it to every key. A call outside an assay LM (a
plain ``dspy.LM``) is keyed exactly as DSPy keys it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from assay.lm._ledger import note_cached, note_stored
from assay.lm._pricing import prompt_cache_tokens
from assay.lm._spec import NOT_IN_IDENTITY, ModelSpec

_SCOPE: ContextVar[str | None] = ContextVar("assay_cache_scope", default=None)
SCOPE_KEY = "_assay_lm"
"""The entry a scope takes in a request's cache key."""


def cache_scope(spec: ModelSpec, engine: str) -> str:
    """The scope of the LM ``make_lm`` builds for ``spec`` on ``engine`` (``native``,
    ``litellm``, ``local:<path>``, ``scripted:<name>``): the spec's fields that can change an
    answer (a judge config's rubric and name are its program's, not its model's), what they
    name counted by what it holds (:meth:`ModelSpec.resolved`: a scripted answer sheet's
    content)."""
    from assay.types import stable_hash

    fields = set(ModelSpec.model_fields) - set(NOT_IN_IDENTITY)
    dump = spec.resolved(spec.model_dump(mode="json", include=fields))
    return stable_hash({"spec": dump, "engine": engine})


@contextlib.contextmanager
def scoped(scope: str | None) -> Iterator[None]:
    """Key the cache lookups and writes of the calls made inside by ``scope``."""
    if scope is None:
        yield
        return
    _ensure_scoped_cache()
    token = _SCOPE.set(scope)
    try:
        yield
    finally:
        _SCOPE.reset(token)


class ScopedCache:
    """DSPy's response cache (or assay's, still opening), with the calling LM's scope in each
    key; everything else is the wrapped cache's."""

    def __init__(self, inner: Any):
        self.inner = inner

    @staticmethod
    def _keyed(request: dict[str, Any]) -> dict[str, Any]:
        scope = _SCOPE.get()
        return request if scope is None else {**request, SCOPE_KEY: scope}

    def get(self, request: dict[str, Any], ignored_args_for_cache_key: list[str] | None = None):
        """The stored answer, or None; a hit is noted with its usage as first answered (see
        :mod:`assay.lm._ledger`: no call, priced apart)."""
        record = self.inner.get(self._keyed(request), ignored_args_for_cache_key)
        if record is not None:
            note_cached(_kept_usage(record))
        return record

    def put(self, request: dict[str, Any], value: Any, *args: Any, **kwargs: Any) -> None:
        """Store an answer; it is noted in the call ledger first — an answer the server sent
        without usage too (a call, its tokens unknown) —, and its usage kept with it (DSPy's
        cache hands a LiteLLM response back with its usage emptied). An answer whose run has
        closed its ledger (a call abandoned in flight) is not stored: a resume asks again."""
        usage = _answer_usage(value)
        if not note_stored(usage or {}):
            return
        if usage is not None and not isinstance(value, dict):
            _keep_usage(value, usage)
        self.inner.put(self._keyed(request), value, *args, **kwargs)

    def cache_key(self, request: dict[str, Any], *args: Any, **kwargs: Any) -> str:
        return self.inner.cache_key(self._keyed(request), *args, **kwargs)

    def __contains__(self, key: str) -> bool:
        return key in self.inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


KEPT_USAGE = "assay_usage"
"""Where a LiteLLM response stored in the cache keeps its usage (its ``_hidden_params``)."""


def _answer_usage(record: Any) -> dict[str, Any] | None:
    """The usage the server reported for a stored answer: a DSPy cache record (a dict, the
    native engines') holds it; a LiteLLM response carries it until the cache empties it."""
    if isinstance(record, dict):
        usage = record.get("usage")
    else:
        usage = getattr(record, "usage", None)
    if usage is None:
        return None
    if not isinstance(usage, dict):
        usage = _token_counts(usage)
    return usage or None


def _token_counts(usage: Any) -> dict[str, Any]:
    """What assay reads of a usage (a dict, or LiteLLM's ``Usage``): its prompt and completion
    tokens, and the prompt tokens the provider read from or wrote to its prompt cache."""
    if not isinstance(usage, dict):
        usage = {
            "prompt_tokens": getattr(usage, "prompt_tokens", None),
            "completion_tokens": getattr(usage, "completion_tokens", None),
            "prompt_tokens_details": getattr(usage, "prompt_tokens_details", None),
            "cache_creation_input_tokens": getattr(usage, "cache_creation_input_tokens", None),
        }
    read, write = prompt_cache_tokens(usage)
    kept = {k: usage.get(k) for k in ("prompt_tokens", "completion_tokens")}
    if read or write:
        kept["prompt_tokens_details"] = {"cached_tokens": read, "cache_creation_tokens": write}
    return kept


def _keep_usage(response: Any, usage: dict[str, Any]) -> None:
    """Keep a LiteLLM response's token counts where DSPy's cache leaves them: its hidden
    params, stored and copied with it (DSPy reads its ``response_cost`` from there too)."""
    hidden = getattr(response, "_hidden_params", None)
    if isinstance(hidden, dict):
        hidden[KEPT_USAGE] = _token_counts(usage)


def _kept_usage(record: Any) -> dict[str, Any] | None:
    """The usage of an answer the cache gave: a record's own, or a LiteLLM response's kept
    copy (None when it has neither: a LiteLLM response stored without one)."""
    if isinstance(record, dict):
        return _answer_usage(record)
    hidden = getattr(record, "_hidden_params", None)
    return hidden.get(KEPT_USAGE) if isinstance(hidden, dict) else None


def _ensure_scoped_cache() -> None:
    """Wrap the cache DSPy holds now (``dspy.configure_cache`` sets a new one) once."""
    import dspy

    current = dspy.cache
    if isinstance(current, ScopedCache):
        return
    with dspy._cache_lock:
        if dspy.__dict__.get("cache") is current:
            dspy.cache = ScopedCache(current)


def wrap_cache(cache: Any) -> ScopedCache:
    """``cache`` as assay installs it (:func:`~assay.lm.configure_cache`)."""
    return cache if isinstance(cache, ScopedCache) else ScopedCache(cache)
