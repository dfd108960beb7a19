"""Model families: a model string's family by the documented table, an unknown name its own."""

from __future__ import annotations

import pytest

from assay.lm import FAMILIES, model_family


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("openai/gpt-4o-mini", "gpt"),
        ("gpt-4.1", "gpt"),
        ("openai/o3-mini", "gpt"),
        ("azure/chatgpt-4o-latest", "gpt"),
        ("anthropic/claude-3-5-sonnet-20240620", "claude"),
        ("gemini/gemini-1.5-pro", "gemini"),
        ("ollama/gemma2:9b", "gemma"),
        ("ollama/llama3", "llama"),
        ("openrouter/meta-llama/Meta-Llama-3.1-8B-Instruct", "llama"),
        ("mistral/mixtral-8x7b", "mistral"),
        ("hosted_vllm/Qwen/Qwen2.5-7B-Instruct", "qwen"),
        ("deepseek/deepseek-chat", "deepseek"),
        ("local", "smollm"),
        ("local:/models/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf", "qwen"),
        ("gpt", "gpt"),  # a family given as it is
        ("openai/my-finetune", "my-finetune"),  # unknown: its own family
        ("openai/omni-moderation", "omni-moderation"),  # o + letter is no o-series model
    ],
)
def test_a_model_strings_family(model, family):
    assert model_family(model) == family


def test_every_family_of_the_table_is_its_own_family():
    assert {model_family(f) for _, f in FAMILIES} == {f for _, f in FAMILIES}


@pytest.mark.parametrize("model", ["", "  ", "/"])
def test_a_model_string_without_a_name_is_refused(model):
    with pytest.raises(ValueError, match="no model name"):
        model_family(model)
