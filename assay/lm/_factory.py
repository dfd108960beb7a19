"""Build the DSPy LM a judge config names: a LiteLLM model string, ``local[:path]`` or ``scripted:...``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dspy

from assay.errors import ModelError


def make_lm(
    model: str,
    *,
    temperature: float | None = 0.0,
    max_tokens: int | None = 512,
    seed: int | None = None,
    api_base: str | None = None,
    api_key_env: str | None = None,
    logprobs: bool = False,
    rollout: int | None = None,
    retries: int = 3,
    cache: bool = True,
    base: Path | None = None,
) -> dspy.LM:
    """A ``dspy.LM`` for ``model``; checks a hosted model's API key up front (naming the variable).

    Retries with exponential backoff on rate limits, server errors and timeouts are DSPy's
    (``num_retries``); the response cache is DSPy's, keyed by the full request.
    """
    kwargs: dict[str, Any] = {
        "temperature": temperature,
        "max_tokens": max_tokens,
        "cache": cache,
        "num_retries": retries,
    }
    if seed is not None:
        kwargs["seed"] = seed
    if rollout is not None:
        kwargs["rollout_id"] = rollout  # a distinct cache entry: a fresh sample of the same prompt
    if logprobs:
        kwargs["logprobs"] = True
        kwargs["top_logprobs"] = 10
    if model == "local" or model.startswith("local:"):
        from assay.lm._local import LlamaCppEngine, resolve_gguf

        engine = LlamaCppEngine(resolve_gguf(model))
        return dspy.LM(engine.name, engine=engine, **kwargs)
    if model.startswith("scripted:"):
        from assay.lm._scripted import scripted_engine

        engine = scripted_engine(model.split(":", 1)[1], base)
        return dspy.LM(f"scripted/{engine.name}", engine=engine, **kwargs)
    if "/" not in model:
        raise ModelError(
            f"model {model!r}: use a LiteLLM model string such as 'openai/gpt-4o-mini', "
            "'anthropic/claude-3-5-haiku-latest', 'ollama_chat/llama3.1', 'local' or 'local:/path/model.gguf'"
        )
    if api_key_env:
        key = os.environ.get(api_key_env)
        if not key:
            raise ModelError(f"model {model}: environment variable {api_key_env} is not set")
        kwargs["api_key"] = key
    elif api_base is None:
        check_api_key(model)
    if api_base:
        kwargs["api_base"] = api_base
        # A keyless local server still needs a placeholder; a real key is never sent to an
        # api_base unless named by api_key_env.
        kwargs.setdefault("api_key", "no-key")
    return dspy.LM(model, engine="litellm", **kwargs)


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


def lm_from_spec(
    spec: Any,
    *,
    retries: int = 3,
    base: Path | None = None,
    temperature: float | None = None,
    rollout: int | None = None,
) -> dspy.LM:
    """The LM of a config that names a model (a judge config, a generator or validator role):
    its model, sampling and connection settings; ``temperature`` / ``rollout`` override the
    config's sampling (a fresh sample at another temperature)."""
    return make_lm(
        spec.model,
        temperature=spec.temperature if temperature is None else temperature,
        max_tokens=spec.max_tokens,
        seed=spec.seed,
        api_base=spec.api_base,
        api_key_env=spec.api_key_env,
        logprobs=getattr(spec, "score_mode", None) == "expected",
        rollout=rollout,
        retries=retries,
        base=base,
    )
