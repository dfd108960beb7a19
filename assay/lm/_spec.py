"""One model spec for every role that calls a language model (judge, generator, validator,
agent, emulator, evaluator): which model, how to reach it, how to sample, what it costs.

Every setting is explicit and typed; the defaults of each role are written once, in
:data:`ROLE_DEFAULTS`, so nothing that changes a verdict is a hidden default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from assay import _endpoints
from assay._files import sha256_file
from assay.types import Real, StrictInt, WebAddress


class Price(BaseModel):
    """USD per million tokens; overrides LiteLLM's price map for this model."""

    model_config = ConfigDict(extra="forbid")

    input_per_mtok: Real = Field(ge=0, description="USD per million prompt tokens")
    output_per_mtok: Real = Field(ge=0, description="USD per million completion tokens")


Role = Literal["judge", "generator", "validator", "agent", "emulator", "evaluator"]

ROLE_DEFAULTS: dict[str, dict[str, Any]] = {
    # a verdict should be reproducible: greedy decoding, room for a short reasoning
    "judge": {"temperature": 0.0, "max_tokens": 512},
    "evaluator": {"temperature": 0.0, "max_tokens": 1024},
    # probes need variety (several variants of one source differ only by sampling)
    "generator": {"temperature": 0.7, "max_tokens": 768},
    "validator": {"temperature": 0.0, "max_tokens": 768},
    # ToolEmu's agent and emulator write whole tool calls and observations
    "agent": {"temperature": 0.0, "max_tokens": 1024},
    "emulator": {"temperature": 0.0, "max_tokens": 1024},
}
"""Each role's sampling defaults — the only place they are set."""

NOT_IN_IDENTITY = ("price", "timeout", "client", "rpm", "tpm")
"""Settings of how a model is called that never change its outputs (left out of a model's and a
judge's identity). The price changes what a run prints, though: it is part of the key of every
stored result that holds a cost (:meth:`ModelSpec.price_identity`)."""

CONSTANT_FIRST = "constant-first"
"""The prompt layout of in-process models (:mod:`assay.lm._adapters`): everything that is the
same at every call of a signature — field descriptions, structure, task, output requirements —
before the inputs, so the part evaluated anew at each call is the inputs alone."""


DEFAULT_NAMES = ("local", "local:", "local:default")
"""The names of the embedded default model."""


def local_runtime(model: str) -> str | None:
    """How llama.cpp runs ``model`` when not as its file says (``None``): the embedded default
    with its weights dequantized to F32 and flash attention — measured twice as fast
    (:mod:`assay.lm._packaged`). Part of a model's identity: its answers differ from the Q4_1
    file's in the last digits, and sometimes in a token."""
    return "f32 weights, flash attention" if model in DEFAULT_NAMES else None


def prompt_layout(model: str) -> str | None:
    """How the adapters lay out ``model``'s prompts, when not as DSPy does (``None``): in-process
    models (``local``, ``local:...``) get :data:`CONSTANT_FIRST`. Part of a model's identity and
    of a judge's config hash — another prompt is another judge."""
    return CONSTANT_FIRST if model == "local" or model.startswith("local:") else None


def answer_sheet(model: str) -> Path | None:
    """The answer sheet file a ``scripted:<sheet.json>`` model reads (a relative name against
    the current folder; a config file's are made absolute against its folder when it is read),
    None for any other model, a registered script's name, or no such file."""
    if not model.startswith("scripted:"):
        return None
    path = Path(model.split(":", 1)[1]).expanduser()
    return path if path.is_file() else None


class ModelSpec(BaseModel):
    """A model and how to call it.

    ``model`` is a LiteLLM model string (``openai/gpt-4o-mini``, ``ollama_chat/llama3.1``...),
    ``local`` for the embedded default GGUF model, ``local:/path/model.gguf`` for any GGUF
    file, or ``scripted:<name>`` for the deterministic test LM. ``timeout`` bounds each attempt
    (a server that accepts connections but never answers fails that attempt instead of hanging
    the run); ``price`` overrides LiteLLM's price map.

    ``client`` is how a hosted or served model is reached: ``native`` (assay's httpx client for
    the OpenAI chat-completions wire: ``openai/<model>``, with ``api_base`` for vLLM, llama.cpp
    or any OpenAI-compatible server), ``litellm`` (every provider LiteLLM knows), or ``auto``:
    native for ``openai/...``, LiteLLM for the rest. Both send the same request; native starts
    seconds sooner and costs a fraction of the CPU per call (docs/performance.md).
    ``rpm`` / ``tpm`` cap requests and tokens per minute for this model (native client); on a
    429 the client waits the server's ``Retry-After`` and halves its concurrency, then grows it
    back one call at a time. None of these change a verdict: they are not in the config hash.

    A subclass per role sets ``role``; settings a config leaves out take that role's defaults
    from :data:`ROLE_DEFAULTS`.
    """

    model_config = ConfigDict(extra="forbid")
    role: ClassVar[Role] = "judge"

    model: str = Field(
        default="local",
        description=(
            "a LiteLLM model string (openai/gpt-4o-mini, ollama_chat/llama3.1, "
            "...), local for the embedded model, local:/path/model.gguf, or "
            "scripted:NAME (tests)"
        ),
    )
    api_base: WebAddress | None = Field(
        default=None,
        description=(
            "the base URL of an OpenAI-compatible server (vLLM, llama.cpp, a "
            "proxy): http:// or https://"
        ),
    )
    api_key_env: str | None = Field(
        default=None,
        description=(
            "the environment variable that holds the API key (a key never goes in a config)"
        ),
    )
    temperature: Real = Field(
        default=0.0,
        ge=0,
        le=2,
        description=("sampling temperature, 0 to 2 (each role has its default: 0 for a judge)"),
    )
    max_tokens: StrictInt = Field(
        default=512,
        ge=1,
        description=(
            "the most tokens an answer may have (a truncated answer is unscored, and says so)"
        ),
    )
    seed: StrictInt | None = Field(
        default=0, description="the sampling seed sent to the server (null: none)"
    )
    adapter: Literal["json", "chat"] = Field(
        default="json",
        description=(
            "how DSPy asks for the outputs: json (one JSON object) or chat (marked fields)"
        ),
    )
    timeout: Real = Field(default=120.0, gt=0, description="seconds per attempt")
    price: Price | None = Field(
        default=None,
        description="USD per million tokens, in place of LiteLLM's price map for this model",
    )
    client: Literal["auto", "native", "litellm"] = Field(
        default="auto",
        description=(
            "native (assay's httpx client, for openai/...), litellm, or auto: "
            "native for openai/..., LiteLLM for the rest"
        ),
    )
    rpm: StrictInt | None = Field(default=None, ge=1, description="requests per minute")
    tpm: StrictInt | None = Field(default=None, ge=1, description="tokens per minute")

    @model_validator(mode="before")
    @classmethod
    def _role_defaults(cls, raw: Any) -> Any:
        if isinstance(raw, dict):
            return {**ROLE_DEFAULTS[cls.role], **raw}
        return raw

    def identity(self) -> dict[str, Any]:
        """What changes the model's outputs (the price, timeout, client and limits do not),
        with the prompt layout where it is not DSPy's (:func:`prompt_layout`)."""
        return self.with_layout(self.model_dump(mode="json", exclude=set(NOT_IN_IDENTITY)))

    def price_identity(self) -> list[float] | None:
        """The price this spec's answers are costed at (``[input, output]`` USD per million
        tokens; None: LiteLLM's price map). No part of :meth:`identity` — a price changes no
        output — but part of the key of every stored result that holds a cost: a result costed
        at another price is made again (through the LM cache: no call), never shown at it."""
        pair = self.price_pair
        return None if pair is None else [float(x) for x in pair]

    def with_layout(self, dump: dict[str, Any]) -> dict[str, Any]:
        """``dump`` (this spec's fields) :meth:`resolved`, with ``prompt_layout`` added when it
        is not DSPy's and an in-process model's ``runtime`` — each left out otherwise, so the
        hashes of other models stay what they were."""
        layout, runtime = prompt_layout(self.model), local_runtime(self.model)
        extra = {"prompt_layout": layout, "runtime": runtime}
        return {**self.resolved(dump), **{k: v for k, v in extra.items() if v}}

    def resolved(self, dump: dict[str, Any]) -> dict[str, Any]:
        """``dump`` (this spec's fields) with what they only name counted by what it is: the
        endpoint a LiteLLM call goes to when the config names none, taken from the environment
        as LiteLLM takes it (``OPENAI_BASE_URL`` …: :mod:`assay._endpoints`) as ``api_base``;
        a scripted answer sheet by its file name and the SHA-256 of its bytes
        (``script_content``), not by the folder it lies in — an edited sheet is another model,
        the same sheet elsewhere the same. Part of the model's identity and of its LM cache
        scope; ``dump`` as it is for a model whose fields say it all (no endpoint variable set,
        the native client, which reads none)."""
        out = dict(dump)
        if "api_base" in out and self.api_base is None and self.calls_litellm:
            out["api_base"] = _endpoints.from_environment(self.model)
        sheet = answer_sheet(self.model)
        if sheet is not None:
            if "model" in out:
                out["model"] = f"scripted:{sheet.name}"
            out["script_content"] = sha256_file(sheet)
        return out

    @property
    def resolved_client(self) -> Literal["native", "litellm"]:
        """The client a call really uses (``auto`` resolved)."""
        if self.client != "auto":
            return self.client
        return "native" if self.model.startswith("openai/") else "litellm"

    @property
    def calls_litellm(self) -> bool:
        """Whether the calls go through LiteLLM (a hosted or served model on the LiteLLM
        client), which may take their endpoint from the environment."""
        in_process = self.model == "local" or self.model.startswith(("local:", "scripted:"))
        return self.resolved_client == "litellm" and "/" in self.model and not in_process

    @property
    def price_pair(self) -> tuple[float, float] | None:
        """``(input, output)`` USD per million tokens, or None to use LiteLLM's map."""
        return (self.price.input_per_mtok, self.price.output_per_mtok) if self.price else None


class GeneratorSpec(ModelSpec):
    """The model that writes probes (rewrites, synthetic responses)."""

    role: ClassVar[Role] = "generator"


class ValidatorSpec(ModelSpec):
    """The model that checks probes before they are judged."""

    role: ClassVar[Role] = "validator"
