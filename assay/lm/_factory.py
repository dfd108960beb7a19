"""Build the DSPy LM a :class:`ModelSpec` names: a LiteLLM model string, ``local[:path]`` or
``scripted:...`` — the one place LMs are made, for every role."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dspy

from assay.errors import ModelError
from assay.lm._cache import cache_scope, wrap_cache
from assay.lm._outputs import AssayLM
from assay.lm._redact import note_key_variable
from assay.lm._spec import ModelSpec


def make_lm(
    spec: ModelSpec | str,
    *,
    temperature: float | None = None,
    rollout: int | None = None,
    logprobs: bool = False,
    retries: int = 3,
    cache: bool = True,
    base: Path | None = None,
    **settings: Any,
) -> dspy.LM:
    """A ``dspy.LM`` for ``spec`` (a spec, or a model string plus ``settings`` of a spec).

    ``temperature`` / ``rollout`` override the spec's sampling for one use (a fresh sample at
    another temperature: ``rollout`` gives a distinct cache entry for the same prompt);
    ``logprobs`` asks for token log-probabilities. A hosted model's API key is checked up
    front, naming the variable. The LM notes each call's finish reason (a truncated answer is
    reported as such, see :mod:`assay.lm._outputs`). Retries with exponential backoff on rate limits, server errors
    and timeouts are DSPy's (``num_retries``); each attempt is bounded by ``spec.timeout``; the
    response cache is DSPy's, keyed by the full request and by the model it goes to — endpoint,
    engine, spec (:mod:`assay.lm._cache`: DSPy's own key leaves ``api_base`` out).
    """
    if isinstance(spec, str):
        spec = ModelSpec(model=spec, **settings)
    elif settings:
        spec = spec.model_copy(update=settings)
    kwargs: dict[str, Any] = {
        "temperature": spec.temperature if temperature is None else temperature,
        "max_tokens": spec.max_tokens,
        "cache": cache,
        "num_retries": retries,
    }
    kwargs["price"] = spec.price_pair  # AssayLM's: what the call ledger prices answers at
    if spec.seed is not None:
        kwargs["seed"] = spec.seed
    if rollout is not None:
        kwargs["rollout_id"] = rollout
    if logprobs:
        kwargs["logprobs"] = True
        kwargs["top_logprobs"] = 10
    model = spec.model
    if model == "local" or model.startswith("local:"):
        from assay.lm._local import LlamaCppEngine

        engine = LlamaCppEngine.for_model(model)
        scope = cache_scope(spec, f"local:{engine.path}")
        return AssayLM(engine.name, engine=engine, cache_scope=scope, **kwargs)
    if model.startswith("scripted:"):
        from assay.lm._scripted import scripted_engine

        engine = scripted_engine(model.split(":", 1)[1], base)
        scope = cache_scope(spec, engine.name)
        return AssayLM(f"scripted/{engine.name}", engine=engine, cache_scope=scope, **kwargs)
    if "/" not in model:
        raise ModelError(
            f"model {model!r}: use a LiteLLM model string such as 'openai/gpt-4o-mini', "
            "'anthropic/claude-3-5-haiku-latest', 'ollama_chat/llama3.1', 'local' or 'local:/path/model.gguf'"
        )
    if spec.resolved_client == "native":
        return _native_lm(spec, kwargs)
    if spec.rpm or spec.tpm:
        raise ModelError(
            f"model {model}: rpm / tpm limits need client: native (an openai/<model> endpoint)"
        )
    check_provider(model, spec.api_base)
    if spec.api_key_env:
        kwargs["api_key"] = _env_key(model, spec.api_key_env)
    elif spec.api_base is None:
        check_api_key(model)
    if spec.api_base:
        kwargs["api_base"] = spec.api_base
        # A keyless local server still needs a placeholder; a real key is never sent to an
        # api_base unless named by api_key_env.
        kwargs.setdefault("api_key", "no-key")
    kwargs["timeout"] = spec.timeout
    return AssayLM(model, engine="litellm", cache_scope=cache_scope(spec, "hosted"), **kwargs)


def _env_key(model: str, variable: str) -> str:
    key = os.environ.get(variable)
    if not key:
        raise ModelError(f"model {model}: environment variable {variable} is not set")
    note_key_variable(variable)  # an error echoing the key never stores it
    return key


def _native_lm(spec: ModelSpec, kwargs: dict[str, Any]) -> dspy.LM:
    """An ``openai/<model>`` LM on assay's native client (:mod:`assay.lm._http`): DSPy's
    adapters, cache, usage and retries around one httpx request per attempt."""
    from assay.lm._http import http_engines
    from assay.lm._limits import limiter_for

    model = spec.model
    if not model.startswith("openai/"):
        raise ModelError(
            f"model {model}: client native speaks the OpenAI chat-completions wire; use "
            "openai/<model> (with api_base for vLLM, llama.cpp or another compatible server) "
            "or client: litellm"
        )
    if spec.api_key_env:
        key = _env_key(model, spec.api_key_env)
    elif spec.api_base:
        key = "no-key"  # a real key is never sent to an api_base unless named by api_key_env
    else:
        key = _env_key(model, "OPENAI_API_KEY").strip()
    wire = model.split("/", 1)[1]
    endpoint = spec.api_base or "openai"
    sync, aio = http_engines(
        wire_model=wire,
        api_base=spec.api_base,
        api_key=key,
        timeout=spec.timeout,
        limiter=limiter_for(endpoint, wire, spec.rpm, spec.tpm),
    )
    scope = cache_scope(spec, "hosted")  # the answer of the same endpoint as through LiteLLM
    return AssayLM(model, engine=sync, async_engine=aio, cache_scope=scope, **kwargs)


def check_provider(model: str, api_base: str | None = None) -> None:
    """Raise a one-line :class:`ModelError` when LiteLLM routes ``model`` to no provider (its
    own resolution, ``litellm.get_llm_provider``): refused before any call, instead of a run
    of ``lm_error`` judgments."""
    import litellm

    quiet, litellm.suppress_debug_info = litellm.suppress_debug_info, True  # no banner on stdout
    try:
        litellm.get_llm_provider(model=model, api_base=api_base)
    except Exception:  # LiteLLM's BadRequestError "LLM Provider NOT provided"
        provider = model.split("/", 1)[0]
        raise ModelError(
            f"model {model}: LiteLLM knows no provider {provider!r} (providers: "
            "https://docs.litellm.ai/docs/providers; an OpenAI-compatible server is "
            "'openai/<model>' with api_base)"
        ) from None
    finally:
        litellm.suppress_debug_info = quiet


def check_api_key(model: str) -> None:
    """Raise a one-line :class:`ModelError` naming the env var a hosted model is missing
    (LiteLLM's list of each provider's variables: imported here, by the LiteLLM client only)."""
    import litellm

    try:
        env = litellm.validate_environment(model=model)
    except Exception:  # an unknown provider: let the call itself report it
        return
    missing = env.get("missing_keys") or []
    if not env.get("keys_in_environment", True) and missing:
        raise ModelError(f"model {model}: set the environment variable {' / '.join(missing)}")


# Answers kept in memory besides the disk (the most recent ones): a repeat within a process
# is served without a SQLite read, and a long run's memory does not grow with its calls.
MEMORY_CACHE_ENTRIES = 1000

# SQLite settings of the disk cache's shards. diskcache opens a connection per shard in every
# thread that uses it, each with its own page cache (8,192 pages, 32 MB, by default) and a 64 MB
# memory map: with a judging pool of 32 threads over 16 shards, the process grew with the cache
# file as the answers went in. One megabyte of pages a connection and no map; the operating
# system's file cache still holds what is read often.
SQLITE_PRAGMAS = {"sqlite_cache_size": 256, "sqlite_mmap_size": 0}


def configure_cache(workdir: Path) -> None:
    """DSPy's response cache on disk under ``<workdir>/.assay/dspy_cache`` (re-runs are free).

    Opening it the first time creates 16 SQLite shards (a second of start-up, mostly waiting on
    the disk): it is opened in a background thread while the config and data load. A lookup
    waits for it — unless the folder did not exist when the command began: such a cache holds
    nothing yet but what this process writes (or a run started beside it: a miss costs only
    the call), and every write waits for it to open."""
    import threading

    from dspy.clients.cache import Cache

    built: dict[str, Any] = {}
    folder = workdir / ".assay" / "dspy_cache"
    settings = {
        "enable_disk_cache": True,
        "enable_memory_cache": True,
        "disk_cache_dir": str(folder),
    }
    fresh = not folder.exists()

    def build() -> None:
        try:
            cache = Cache(
                **settings,
                disk_size_limit_bytes=int(os.environ.get("DSPY_CACHE_LIMIT", 3e10)),
                memory_max_entries=MEMORY_CACHE_ENTRIES,
            )
            for pragma, value in SQLITE_PRAGMAS.items():  # every connection opened after
                cache.disk_cache.reset(pragma, value)
            built["cache"] = cache
        except BaseException as exc:  # raised again on first use
            built["error"] = exc

    thread = threading.Thread(target=build, name="assay-dspy-cache", daemon=True)
    thread.start()
    with dspy._cache_lock:
        dspy.cache = wrap_cache(_OpeningCache(thread, built, settings, fresh=fresh))


class _OpeningCache:
    """Stands for DSPy's cache until the background thread has opened it. Its settings are
    answered at once (a judge task's recipe reads them before the first call: waiting for the
    shards there would hold up the first requests, by up to a second). ``fresh``: the folder was
    created by this process, so nothing can be in it yet: a lookup while it opens is a miss
    without waiting, and the first requests of a run in a new folder never wait on the shards."""

    def __init__(
        self, thread: Any, built: dict[str, Any], settings: dict[str, Any], *, fresh: bool = False
    ):
        self._thread = thread
        self._built = built
        self._fresh = fresh
        self.__dict__.update(settings)

    def get(self, request: dict[str, Any], ignored_args_for_cache_key: list[str] | None = None):
        # nothing was put yet: a put (like any other use) waits for the opening to end
        if self._fresh and self._thread.is_alive():
            return None
        return self.__getattr__("get")(request, ignored_args_for_cache_key)

    def __getattr__(self, name: str) -> Any:
        self._thread.join()
        if "error" in self._built:
            raise self._built["error"]
        return getattr(self._built["cache"], name)


def make_adapter(kind: str) -> dspy.Adapter:
    """The DSPy adapter a spec names: ``json`` (a JSON schema the model must follow) or ``chat``;
    either accepts only the options of a ``Literal`` output field and reports a truncated answer
    (see :mod:`assay.lm._outputs`). One shared instance per kind: its system message is built
    once per signature."""
    from assay.lm._adapters import shared_adapter

    return shared_adapter(kind)
