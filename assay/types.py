"""The records that flow through assay: items in, judgments out (SPEC §2)."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

UnscoredReason = Literal[
    "parse_error",
    "lm_error",
    "refused",
    "timeout",
    "off_scale",
    "truncated",
    "panel_quorum",
    "tie",
    "no_logprobs",
]


def _plain_name(name: str) -> str:
    """A name that becomes part of a file or folder name (a run's folder, a judge's or an
    evaluator's judgments file): no path separators, no leading dot, at most 100 characters —
    so that no name can reach outside the run directory."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", name or ""):
        raise ValueError(
            f"{name!r} is not a plain name (letters, digits, '.', '_', '-'; no '/' or leading "
            "'.'; at most 100 characters): it becomes part of a file name"
        )
    return name


PlainName = Annotated[str, AfterValidator(_plain_name)]
"""Every config value that becomes part of a path is a ``PlainName``."""


def stable_hash(obj: Any, n: int = 16) -> str:
    """A short, stable hex digest of any JSON-serialisable value (sorted keys)."""
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:n]


def flatten(value: Any, prefix: str = "") -> dict[str, str]:
    """A nested config as ``{"a.b.0.c": "text"}`` (lists of mappings by index): MLflow params."""
    out: dict[str, str] = {}

    def walk(key: str, v: Any) -> None:
        if isinstance(v, dict):
            for k, sub in v.items():
                walk(f"{key}.{k}" if key else str(k), sub)
        elif isinstance(v, list) and v and isinstance(v[0], dict):
            for i, sub in enumerate(v):
                walk(f"{key}.{i}", sub)
        else:
            out[key] = "" if v is None else str(v)

    walk(prefix, value)
    return out


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str | None = None
    function: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)


class Message(BaseModel):
    """One chat message of an agent transcript."""

    model_config = ConfigDict(extra="allow")

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    function: str | None = None  # for role=tool: the tool that produced this result
    error: str | None = None
    # the agent step (assistant turn) the message belongs to, 0-based; None before the first
    step: int | None = None


class Item(BaseModel):
    """One thing to judge. ``id`` is stable: from the source's id or a content hash, never random."""

    model_config = ConfigDict(extra="forbid")

    id: str
    request: str = ""
    response: str = ""
    transcript: list[Message] | None = None
    expected: int | None = None
    meta: dict[str, Any] = Field(default_factory=dict)

    @staticmethod
    def content_id(request: str, response: str, transcript: Any = None) -> str:
        return stable_hash({"request": request, "response": response, "transcript": transcript})


class Usage(BaseModel):
    """Token usage and cost of one or more LM calls."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0
    unpriced_calls: int = 0  # calls of a model with no known price (not counted in cost_usd)
    limit_wait_s: float = 0.0  # time spent waiting on rate limits (rpm, tpm, 429 back-off)
    rate_limited: int = 0  # HTTP 429 answers (each waited out and retried)

    @classmethod
    def total(cls, usages: Iterable[Usage]) -> Usage:
        """The sum of ``usages``, the same whatever their order: costs and waits are summed
        exactly (``math.fsum``), so a run whose calls finished in another order (threads, Ray
        actors, a resume) reports the very same totals."""
        us = list(usages)
        return cls(
            **{
                k: (math.fsum if isinstance(f.default, float) else sum)(getattr(u, k) for u in us)
                for k, f in cls.model_fields.items()
            }
        )

    def __add__(self, other: Usage) -> Usage:
        return Usage.total((self, other))  # fsum of two floats is their IEEE sum


class Judgment(BaseModel):
    """A judge's verdict on one item, or an unscored result with its reason (never a fake score)."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    judge: str
    score: int | None = None
    label: str | None = None
    expected_score: float | None = None  # probability-weighted score, where logprobs exist
    calibrated_probability: float | None = None  # P(positive) through the judge's calibration map
    unscored: UnscoredReason | None = None
    error: str | None = None
    reasoning: str | None = None
    raw: Any = None
    members: list[dict[str, Any]] | None = None  # panel members' verdicts
    criteria: dict[str, int | None] | None = None  # transcript judges: per rubric item
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    model: str = ""
    config_hash: str = ""
    attempt: int = 1
    cached: bool = False

    @property
    def scored(self) -> bool:
        return self.score is not None
