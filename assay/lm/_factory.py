"""Build the DSPy LM a :class:`ModelSpec` names: a LiteLLM model string, ``local[:path]`` or
``scripted:...`` — the one place LMs are made, for every role."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dspy

from assay.errors import ModelError
from assay.lm._outputs import AssayLM, StrictChatAdapter, StrictJSONAdapter
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
    response cache is DSPy's, keyed by the full request.
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
    if spec.seed is not None:
        kwargs["seed"] = spec.seed
    if rollout is not None:
        kwargs["rollout_id"] = rollout
    if logprobs:
        kwargs["logprobs"] = True
        kwargs["top_logprobs"] = 10
    model = spec.model
    if model == "local" or model.startswith("local:"):
        from assay.lm._local import LlamaCppEngine, resolve_gguf

        engine = LlamaCppEngine(resolve_gguf(model))
        return AssayLM(engine.name, engine=engine, **kwargs)
    if model.startswith("scripted:"):
        from assay.lm._scripted import scripted_engine

        engine = scripted_engine(model.split(":", 1)[1], base)
        return AssayLM(f"scripted/{engine.name}", engine=engine, **kwargs)
    if "/" not in model:
        raise ModelError(
            f"model {model!r}: use a LiteLLM model string such as 'openai/gpt-4o-mini', "
            "'anthropic/claude-3-5-haiku-latest', 'ollama_chat/llama3.1', 'local' or 'local:/path/model.gguf'"
        )
    if spec.api_key_env:
        key = os.environ.get(spec.api_key_env)
        if not key:
            raise ModelError(f"model {model}: environment variable {spec.api_key_env} is not set")
        kwargs["api_key"] = key
    elif spec.api_base is None:
        check_api_key(model)
    if spec.api_base:
        kwargs["api_base"] = spec.api_base
        # A keyless local server still needs a placeholder; a real key is never sent to an
        # api_base unless named by api_key_env.
        kwargs.setdefault("api_key", "no-key")
    kwargs["timeout"] = spec.timeout
    return AssayLM(model, engine="litellm", **kwargs)


def check_api_key(model: str) -> None:
    """Raise a one-line :class:`ModelError` naming the env var a hosted model is missing."""
    import litellm

    try:
        env = litellm.validate_environment(model=model)
    except Exception:  # an unknown provider: let the call itself report it
        return
    missing = env.get("missing_keys") or []
    if not env.get("keys_in_environment", True) and missing:
        raise ModelError(f"model {model}: set the environment variable {' / '.join(missing)}")


def configure_cache(workdir: Path) -> None:
    """DSPy's response cache on disk under ``<workdir>/.assay/dspy_cache`` (re-runs are free)."""
    dspy.configure_cache(
        enable_disk_cache=True, disk_cache_dir=str(workdir / ".assay" / "dspy_cache")
    )


def make_adapter(kind: str) -> dspy.Adapter:
    """The DSPy adapter a spec names: ``json`` (a JSON schema the model must follow) or ``chat``;
    either accepts only the options of a ``Literal`` output field and reports a truncated answer
    (see :mod:`assay.lm._outputs`)."""
    return StrictJSONAdapter() if kind == "json" else StrictChatAdapter()
