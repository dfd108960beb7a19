"""The embedded model's prompt-prefix cache: same answers as without it, states kept slim."""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.local_model


def _answers(llm, prompts: list[tuple[str, str]]) -> list[str]:
    out = []
    for system, user in prompts:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        done = llm.create_chat_completion(messages=messages, max_tokens=8, temperature=0)
        out.append(done["choices"][0]["message"]["content"])
    return out


def test_cached_prefixes_give_the_answers_of_a_cold_model(monkeypatch):
    llama_cpp = pytest.importorskip("llama_cpp", reason="pip install 'assay[local]'")
    from assay.lm._local import _prefix_cache, default_gguf_path

    rubric = "Grade the essay. " + "A strong essay states a clear claim and supports it. " * 12
    other = (
        "Rewrite the essay. " + "Keep its meaning and its length; change only its wording. " * 12
    )
    # two system prompts interleaved, as a harness's generator and judge calls are
    prompts = [
        (s, f"Essay {i}: phones help students learn, reason {i}.")
        for i in range(3)
        for s in (rubric, other)
    ]
    path = str(default_gguf_path())
    cold = llama_cpp.Llama(model_path=path, n_ctx=2048, verbose=False)
    warm = llama_cpp.Llama(model_path=path, n_ctx=2048, verbose=False)
    try:
        monkeypatch.setenv("ASSAY_LLAMA_CACHE_MB", "0")
        assert _prefix_cache(warm) is None  # 0 turns it off
        monkeypatch.setenv("ASSAY_LLAMA_CACHE_MB", "64")
        cache = _prefix_cache(warm)
        warm.set_cache(cache)
        assert _answers(warm, prompts) == _answers(cold, prompts)
        assert len(cache.cache_state) == len(prompts)  # one state per answered prompt
        for state in cache.cache_state.values():  # without the logits buffer's copy
            assert state.scores.shape == (1, warm.n_vocab())
        assert 0 < cache.cache_size <= 64 << 20
    finally:
        cold.close()
        warm.close()


def test_a_bad_cache_size_is_one_line(monkeypatch):
    pytest.importorskip("llama_cpp", reason="pip install 'assay[local]'")
    from assay.errors import ModelError
    from assay.lm._local import _prefix_cache

    monkeypatch.setenv("ASSAY_LLAMA_CACHE_MB", "lots")
    with pytest.raises(ModelError, match="ASSAY_LLAMA_CACHE_MB must be a whole number"):
        _prefix_cache(object())


@pytest.mark.parametrize("value", ["0", "-2", "two"])
def test_a_bad_thread_count_is_one_line(monkeypatch, value):
    from assay.errors import ModelError
    from assay.lm._local import _threads

    monkeypatch.setenv("ASSAY_LLAMA_THREADS", value)
    with pytest.raises(ModelError, match="ASSAY_LLAMA_THREADS must be a positive integer"):
        _threads()
    monkeypatch.setenv("ASSAY_LLAMA_THREADS", "3")
    assert _threads() == 3
    monkeypatch.delenv("ASSAY_LLAMA_THREADS")
    assert _threads() == len(os.sched_getaffinity(0))  # every core this process may use
