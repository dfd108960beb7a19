"""The model family of a model string: which models count as "the same family" when a judge's
preference for its own family's outputs is measured.

A model string is read as LiteLLM writes it (``provider/model``, ``ollama/llama3:8b``,
``local:/path/model.gguf``): its last path segment, lowercased, without a ``:tag`` or a
``.gguf`` suffix, is matched against :data:`FAMILIES` in order; the first pattern that matches
its start names the family. A name no pattern matches is its own family, so a fine-tuned or
unknown model compares equal only to the same name. A family name given as it is (``gpt``,
``llama``) is its own family too, so a generator column may hold families or model strings.
"""

from __future__ import annotations

import re

FAMILIES: tuple[tuple[str, str], ...] = (
    (r"(gpt|chatgpt|o[1-9](-|$)|text-davinci|davinci|babbage)", "gpt"),
    (r"claude", "claude"),
    (r"gemini", "gemini"),
    (r"gemma", "gemma"),
    (r"(meta-)?(code)?llama", "llama"),
    (r"(mistral|mixtral|codestral|ministral|magistral|pixtral|devstral)", "mistral"),
    (r"(qwen|qwq)", "qwen"),
    (r"deepseek", "deepseek"),
    (r"phi", "phi"),
    (r"(command|c4ai-command)", "command"),
    (r"grok", "grok"),
    (r"smollm", "smollm"),
)
"""``(pattern, family)`` in the order they are tried: each pattern matches the start of the
model's name (the last segment of the model string, lowercased)."""

EMBEDDED_FAMILY = "smollm"
"""The family of ``local`` (the embedded default model, SmolLM2-135M-Instruct)."""


def model_family(model: str) -> str:
    """The family of ``model`` (``openai/gpt-4o-mini`` → ``gpt``, ``ollama/llama3`` →
    ``llama``, ``anthropic/claude-3-5-sonnet`` → ``claude``); an unknown name is its own family.
    Raises ``ValueError`` for an empty string."""
    text = str(model).strip()
    if text in ("local", "local:", "local:default"):
        return EMBEDDED_FAMILY
    name = text.removeprefix("local:").replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    name = name.lower().removesuffix(".gguf").split(":", 1)[0].strip()
    if not name:
        raise ValueError(f"no model name in {model!r}")
    for pattern, family in FAMILIES:
        if re.match(pattern, name):
            return family
    return name
