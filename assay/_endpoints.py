"""Where a LiteLLM model's calls go when its config names no ``api_base``: the base-URL
environment variables LiteLLM reads for each provider.

A config without ``api_base`` is not one endpoint: LiteLLM takes the provider's base URL from
the environment (``OPENAI_BASE_URL=http://host:8000/v1`` sends ``openai/<model>`` there), so
the same config judges with another server when a variable changes. The endpoint a call goes
to is part of the model's identity and of its LM cache scope (:meth:`assay.lm.ModelSpec.resolved`),
and the variables are part of a finished run's inputs. Only the base URL is read: an API key is
never part of any identity.

The names are LiteLLM's own (its ``main.py`` and ``get_llm_provider_logic.py``, 1.x): most
providers read ``<PROVIDER>_API_BASE`` (``HOSTED_VLLM_API_BASE``, ``GROQ_API_BASE``,
``DEEPSEEK_API_BASE`` …) and some ``<PROVIDER>_BASE_URL`` too; :data:`NAMED` lists those whose
names do not follow that rule, in the order LiteLLM tries them. This module imports nothing
beyond the standard library: a re-run reads it before anything else.
"""

from __future__ import annotations

import os

_OPENAI = ("OPENAI_BASE_URL", "OPENAI_API_BASE")

NAMED: dict[str, tuple[str, ...]] = {
    "openai": _OPENAI,
    "text-completion-openai": _OPENAI,
    "custom_openai": _OPENAI,
    "anthropic": ("ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL"),
    "azure": ("AZURE_API_BASE",),
    "azure_text": ("AZURE_API_BASE",),
    "ollama_chat": ("OLLAMA_API_BASE",),
    "huggingface": ("HF_API_BASE", "HUGGINGFACE_API_BASE"),
    "vertex_ai": ("VERTEXAI_API_BASE", "VERTEX_API_BASE"),
    "vertex_ai_beta": ("VERTEXAI_API_BASE", "VERTEX_API_BASE"),
    "watsonx": ("WATSONX_API_BASE", "WATSONX_URL", "WX_URL", "WML_URL"),
    "watsonx_text": ("WATSONX_API_BASE", "WATSONX_URL", "WX_URL", "WML_URL"),
    "bedrock": ("AWS_BEDROCK_RUNTIME_ENDPOINT", "BEDROCK_API_BASE"),
    "meta_llama": ("LLAMA_API_BASE",),
    "friendliai": ("FRIENDLI_API_BASE",),
}
"""Providers whose base-URL variables are not ``<PROVIDER>_API_BASE`` / ``_BASE_URL``."""

SUFFIXES = ("_API_BASE", "_BASE_URL")
"""What the name of a base-URL variable ends with, after its provider's name in capitals."""


def provider(model: str) -> str:
    """The LiteLLM provider a model string names (``openai/gpt-4o`` → ``openai``)."""
    return model.split("/", 1)[0].lower()


def variables(model: str) -> tuple[str, ...]:
    """The environment variables LiteLLM may take ``model``'s base URL from, first first."""
    name = provider(model)
    stem = name.upper().replace("-", "_")
    generic = tuple(stem + suffix for suffix in SUFFIXES)
    return tuple(dict.fromkeys((*NAMED.get(name, ()), *generic)))


def from_environment(model: str) -> str | None:
    """The base URL LiteLLM takes from the environment for ``model`` (None: none set)."""
    for name in variables(model):
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def every_variable() -> dict[str, str]:
    """Every base-URL variable set in the environment, any provider's, by name: what a finished
    run's inputs hold, before the config says which providers it calls."""
    named = {n for names in NAMED.values() for n in names}
    return {
        name: value
        for name, value in sorted(os.environ.items())
        if value.strip() and (name in named or name.endswith(SUFFIXES))
    }
