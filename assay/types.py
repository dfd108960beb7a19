"""The records that flow through assay: items in, judgments out."""

from __future__ import annotations

import hashlib
import json
import math
import re
from array import array
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Literal, Protocol
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    field_serializer,
)

__all__ = [
    "PAID_FIELDS",
    "FiniteReal",
    "Item",
    "JudgeLike",
    "Judgment",
    "ListHash",
    "Message",
    "NonNegativeInt",
    "PlainName",
    "Port",
    "PositiveInt",
    "PositiveReal",
    "Real",
    "Seed",
    "Share",
    "Spend",
    "StrictInt",
    "ToolCall",
    "UnscoredReason",
    "Usage",
    "WebAddress",
    "all_unscored",
    "canonical_json",
    "cost_lines",
    "flatten",
    "model_shown",
    "spend_line",
    "stable_hash",
    "with_work",
    "tokens_and_cost",
    "usd",
    "work_line",
]

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
    "plugin_error",
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

# -- numbers a user hands in: one type per kind of value, for configs and command-line options

StrictInt = Annotated[int, Strict()]
"""An integer that is really one in the config (``true`` or ``4.5`` is refused, not coerced)."""


def _not_a_boolean(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError(f"expected a number, not {str(value).lower()}")
    return value


Real = Annotated[float, BeforeValidator(_not_a_boolean)]
"""A number in the config: an int or a float (``1`` is fine), never a boolean (``true`` is
refused rather than read as 1.0)."""

FiniteReal = Annotated[Real, Field(allow_inf_nan=False)]
"""A number that is neither nan nor infinite."""

PositiveReal = Annotated[FiniteReal, Field(gt=0)]
"""A finite number above 0 (seconds, a difference)."""

PositiveInt = Annotated[StrictInt, Field(ge=1)]
"""A count of at least 1."""

NonNegativeInt = Annotated[StrictInt, Field(ge=0)]
"""A count that may be 0."""

Share = Annotated[Real, Field(gt=0, lt=1)]
"""A share, a probability, a level or a confidence: strictly between 0 and 1 (nan refused)."""

Seed = Annotated[StrictInt, Field(ge=0)]
"""A random seed: a non-negative integer (NumPy's generators refuse a negative one)."""

Port = Annotated[StrictInt, Field(ge=0, le=65535)]
"""A TCP port: 0 (any free one) to 65535."""


def _web_address(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(
            f"{value!r} is not an http:// or https:// address (a server's base URL, e.g. "
            "http://localhost:8000/v1)"
        )
    return value


WebAddress = Annotated[str, AfterValidator(_web_address)]
"""The base URL of a server assay sends requests to: ``http://`` or ``https://`` and a host
(``file://``, a bare path or another scheme is refused before anything is sent)."""


def canonical_json(obj: object) -> str:
    """The text :func:`stable_hash` digests: JSON with sorted keys."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str)


def stable_hash(obj: object, n: int = 16) -> str:
    """A short, stable hex digest of any JSON-serialisable value (sorted keys)."""
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()[:n]


class ListHash:
    """:func:`stable_hash` of a list fed one element at a time (the list is never held):
    ``add`` each element in order, then ``hexdigest``. ``json.dumps`` writes a list as its
    elements' texts joined by ``", "`` between brackets, so the digest is the list's."""

    def __init__(self) -> None:
        self._sha = hashlib.sha256(b"[")
        self.count = 0

    def add(self, value: object) -> None:
        self.add_text(canonical_json(value))

    def add_text(self, text: str) -> None:
        """Add an element given as its :func:`canonical_json` text."""
        self._sha.update(((", " if self.count else "") + text).encode("utf-8"))
        self.count += 1

    def hexdigest(self, n: int = 16) -> str:
        sha = self._sha.copy()
        sha.update(b"]")
        return sha.hexdigest()[:n]


def flatten(value: object, prefix: str = "") -> dict[str, str]:
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
    def content_id(request: str, response: str, transcript: object = None) -> str:
        return stable_hash({"request": request, "response": response, "transcript": transcript})


class Usage(BaseModel):
    """Token usage and cost of one or more LM calls: what the server answered them (paid), and
    apart, the answers the LM cache gave instead (``cached_*``: no call was made, nothing was
    paid for them; their tokens are those the server reported when it first answered, priced
    as a call would be). :meth:`work` is the cost of the work, whoever paid for it."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    # of ``prompt_tokens``: those the provider read from its prompt cache (OpenAI's
    # ``prompt_tokens_details.cached_tokens``) and those it wrote to it (Anthropic's cache
    # creation), priced at the price map's cached-input prices (see assay.lm.cost_usd)
    prompt_cache_read_tokens: int = 0
    prompt_cache_write_tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0
    unpriced_calls: int = 0  # calls of a model with no known price (not counted in cost_usd)
    # answered calls whose tokens were never reported (a server answer without ``usage``, an
    # MLflow judge's unparseable answer: MLflow raises without its usage) — in ``calls``, not in
    # the tokens or cost_usd: their cost is unknown (known_cost() is None), not 0
    untallied_calls: int = 0
    cached_prompt_tokens: int = 0
    cached_completion_tokens: int = 0
    cached_prompt_cache_read_tokens: int = 0
    cached_prompt_cache_write_tokens: int = 0
    cached_cost_usd: float = 0.0
    cached_calls: int = 0
    cached_unpriced_calls: int = 0
    # answers from the cache whose usage it did not keep (a LiteLLM response stored without
    # assay's copy of its usage): in ``cached_calls``, not in the cached tokens or cost
    cached_untallied_calls: int = 0
    limit_wait_s: float = 0.0  # time spent waiting on rate limits (rpm, tpm, 429 back-off)
    rate_limited: int = 0  # HTTP 429 answers (each waited out and retried)

    @classmethod
    def total(cls, usages: Iterable[Usage]) -> Usage:
        """The sum of ``usages``, the same whatever their order: costs and waits are summed
        exactly (``math.fsum``), so a run whose calls finished in another order (threads, Ray
        actors, a resume) reports the very same totals."""
        floats = {
            k: array("d") for k, f in cls.model_fields.items() if isinstance(f.default, float)
        }
        counts = dict.fromkeys((k for k in cls.model_fields if k not in floats), 0)
        for u in usages:  # read once, as it comes: a run's million judgments are not held
            for k, values in floats.items():
                values.append(getattr(u, k))
            for k in counts:
                counts[k] += getattr(u, k)
        return cls.of({**counts, **{k: math.fsum(values) for k, values in floats.items()}})

    @classmethod
    def of(cls, counts: Mapping[str, float]) -> Usage:
        """The usage of ``counts`` (field name → value), those at zero left to their defaults:
        the same usage, whose set of the fields given — which pydantic keeps in each model — is
        then the few a call used. All sixteen given, that set took a 512-byte table besides
        its 200 bytes, and a run holds one or more of these for every LM call until it scores
        (the harness about 1.5: its judgments', its probes' and units'). A zero stays given
        where its sign is negative (``-0.0``, which is written as such)."""
        return cls(**{k: v for k, v in counts.items() if v or math.copysign(1.0, v) < 0})

    def __add__(self, other: Usage) -> Usage:
        return Usage.total((self, other))  # fsum of two floats is their IEEE sum

    def known_cost(self) -> float | None:
        """``cost_usd`` when it is the whole cost: None when an answer had no known price (a
        model not in LiteLLM's price map) or no token count, whose cost it leaves out — a
        figure built on it (the cost per accuracy point) would call that judge cheap."""
        if self.unpriced_calls or self.untallied_calls:
            return None
        return self.cost_usd

    def work(self) -> Usage:
        """The cost of the work: every answer these calls used, whether the server answered it
        (paid) or the LM cache gave it (priced as the server first answered it) — the figure
        that compares judges and runs, which a warm cache does not make cheaper."""
        return Usage(**{k: getattr(self, k) + getattr(self, f"cached_{k}") for k in PAID_FIELDS})


def cost_per_point(value: float | None, work: Usage, undefined: str = "—") -> str:
    """A cost per accuracy point as a report says it: in USD, or why it is unknown — an answer
    with no price — or undefined (``undefined``: why there is no accuracy to divide by; never
    "nan USD")."""
    if value is not None and math.isfinite(value):
        return f"{value:.6f} USD"
    unknown = work.unpriced_calls + work.untallied_calls
    if unknown:
        return f"unknown ({unknown} of {work.calls} answers with no known price or token count)"
    return undefined


PAID_FIELDS = (
    "calls",
    "prompt_tokens",
    "completion_tokens",
    "prompt_cache_read_tokens",
    "prompt_cache_write_tokens",
    "cost_usd",
    "unpriced_calls",
    "untallied_calls",
)
"""The fields of a :class:`Usage` that say what a server was paid (the rest: time waited)."""


def with_work(data: object) -> object:
    """A result's fields (a summary holding ``usage``) with ``work``, its cost of the work,
    filled in from its usage when absent — a ``metrics.json`` written before it was kept. For
    a pydantic ``model_validator(mode="before")``."""
    if isinstance(data, dict) and "work" not in data and data.get("usage") is not None:
        usage = data["usage"]
        usage = usage if isinstance(usage, Usage) else Usage.model_validate(usage)
        data = {**data, "work": usage.work()}
    return data


class Spend(BaseModel):
    """What a run's calls cost as the server answered them (its call ledger, ``calls.jsonl``),
    next to what its results use: ``paid`` is every answered call, ``paid_not_used`` the part
    no result of the run holds (a result replaced by ``--retry-unscored``, or by the same work
    at another price — a harness judge's, say, whose answers its results then take from the LM
    cache —, answers a killed run kept in no result — its resume may take those from the LM
    cache, where its results count them as cached), ``failed_attempts`` the requests answered
    with an error status (429, 5xx) or lost in transit and retried, and the calls a stopped run
    abandoned in flight as it closed — no usage counted (an abandoned one the server may yet
    bill), counted apart. Each call is costed at the price it was paid at."""

    model_config = ConfigDict(extra="forbid")

    paid: Usage
    paid_not_used: Usage
    failed_attempts: int = 0

    @field_serializer("paid", "paid_not_used")
    def _paid_fields(self, usage: Usage) -> dict[str, Any]:
        """Only what was paid: a ledger holds no cached answer and no wait."""
        return usage.model_dump(include=set(PAID_FIELDS))

    @classmethod
    def of(cls, paid: Usage, used: Usage, failed_attempts: int) -> Spend | None:
        """``paid`` (the ledger's answered calls) beside ``used`` (the usage the run's results
        carry); None when the ledger holds fewer calls than the results (a run begun before
        calls were ledgered: what it paid is not known)."""
        if paid.calls < used.calls:
            return None
        rest = {k: getattr(paid, k) - getattr(used, k) for k in PAID_FIELDS}
        rest["cost_usd"] = max(0.0, round(rest["cost_usd"], 12))  # fsum − fsum: no -1e-19
        return cls(paid=paid, paid_not_used=Usage(**rest), failed_attempts=failed_attempts)


def spend_line(spend: Spend | None) -> str:
    """The one line every report and the console print about what was paid and not used."""
    if spend is None:
        return (
            "paid, not used: not known (the run's call ledger holds fewer calls than its "
            "results: the run began before assay kept one, or an LM not made by assay judged)"
        )
    n, p = spend.paid_not_used, spend.paid
    line = (
        f"paid, not used: {n.calls} calls · {tokens_and_cost(n)} (results replaced by a retry or "
        "by the same work at another price, answers a stopped run kept in no result: a resume "
        f"may take those from the LM cache) · paid in all: {p.calls} calls · {tokens_and_cost(p)}"
    )
    if p.untallied_calls:
        line += (
            f" · {p.untallied_calls} of these calls with no token count (an MLflow judge's "
            "unparseable answer, which MLflow reports without its usage, or an answer the "
            "server sent without usage: answered, so paid, at a cost not known)"
        )
    if spend.failed_attempts:
        line += (
            f" · {spend.failed_attempts} failed attempts (answered with an HTTP error or "
            "not at all and retried, or abandoned in flight as a stopped run closed: no usage "
            "counted — an abandoned one the server may yet bill)"
        )
    return line


def tokens_and_cost(usage: Usage) -> str:
    """The tokens and cost of ``usage``'s answers as a line says them. Answers whose tokens
    were never reported (``untallied_calls``) are not in the figures and are said apart — their
    cost is unknown, never $0: ``tokens 800+70 · cost $0.000870 · tokens and cost unknown for
    2 answers without token counts``, or only the last part when no answer had a count."""
    n = usage.untallied_calls
    unknown = f"tokens and cost unknown for {n} answer{'s' if n != 1 else ''} without token counts"
    if n and n >= usage.calls:
        return unknown
    known = f"tokens {usage.prompt_tokens}+{usage.completion_tokens} · cost ${usage.cost_usd:.6f}"
    return f"{known} · {unknown}" if n else known


def usd(usage: Usage, sign: str = "") -> str:
    """``usage``'s cost in USD as a table cell (``sign="$"``: a sentence) says it: ``0.000870``;
    with answers whose tokens were never reported, ``0.000870 + unknown (2 answers without
    token counts)``, or ``unknown (10 answers without token counts)`` when no answer had a
    count — never 0 for answers whose cost is not known."""
    n = usage.untallied_calls
    known = f"{sign}{usage.cost_usd:.6f}"
    if not n:
        return known
    unknown = f"unknown ({n} answer{'s' if n != 1 else ''} without token counts)"
    return unknown if n >= usage.calls else f"{known} + {unknown}"


def work_line(usage: Usage) -> str:
    """The cost of the work of ``usage`` on one line, and how much of it the LM cache gave."""
    w = usage.work()
    line = f"cost of the work: {w.calls} LM answers · {tokens_and_cost(w)}"
    if usage.cached_calls:
        line += (
            f" ({usage.calls} answered by the server for these results, {usage.cached_calls} "
            "taken from the LM cache: no call made for them, priced as the server first "
            "answered them)"
        )
    else:
        line += " (none taken from the LM cache)"
    if w.unpriced_calls:
        line += f" · {w.unpriced_calls} answers of a model with no known price (not in the cost)"
    if usage.cached_untallied_calls:
        line += (
            f" · {usage.cached_untallied_calls} answers from the cache whose tokens it did not "
            "keep (not in the tokens or cost)"
        )
    if w.prompt_cache_read_tokens or w.prompt_cache_write_tokens:
        line += f" · {_prompt_cache_note(w)}"
    return line


def _prompt_cache_note(usage: Usage) -> str:
    """How many of ``usage``'s prompt tokens the provider's prompt cache served (and took), and
    how they were priced."""
    read, write = usage.prompt_cache_read_tokens, usage.prompt_cache_write_tokens
    parts = [f"{read} read from the provider's prompt cache"] if read else []
    parts += [f"{write} written to it"] if write else []
    return (
        f"of the prompt tokens, {' and '.join(parts)}: priced at the model's cached-input "
        "prices in LiteLLM's price map (at its input price where the map has none, or where "
        "the config sets the price)"
    )


def cost_lines(usage: Usage, spend: Spend | None) -> list[str]:
    """What a run's console and report say about its cost: the cost of the work its results
    used (``usage``), what the run paid (``spend``: its call ledger) and, if any, the time its
    calls waited on rate limits."""
    lines = [work_line(usage), spend_line(spend)]
    if usage.limit_wait_s or usage.rate_limited:
        lines.append(
            f"rate limits: {usage.limit_wait_s:.1f}s waited over all calls · "
            f"{usage.rate_limited} HTTP 429 answers (waited out and retried)"
        )
    return lines


class Judgment(BaseModel):
    """A judge's verdict on one item, or an unscored result with its reason (never a fake score)."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    judge: str
    score: int | None = None
    label: str | None = None
    expected_score: float | None = None  # probability-weighted score, where logprobs exist
    # each verdict score's probability (keys: the score as text; summing to 1), same source
    probabilities: dict[str, float] | None = None
    calibrated_probability: float | None = None  # P(positive) through the judge's calibration map
    # how sure the judge is of this verdict, in [0, 1], and where that comes from (the judge
    # config's ``confidence.source``: probability, samples, panel); None without one
    confidence: float | None = Field(default=None, ge=0, le=1)
    confidence_source: str | None = None
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

    def error_for_tools(self) -> tuple[str, str]:
        """An unscored judgment as the error another tool records in place of a verdict (an
        MLflow ``Feedback``'s ``AssessmentError``): code ``UNSCORED_<REASON>``, message
        ``unscored (<reason>): <detail>``."""
        reason = self.unscored or "unscored"
        return f"UNSCORED_{reason.upper()}", f"unscored ({reason})" + (
            f": {self.error}" if self.error else ""
        )


def all_unscored(judged: int, reasons: Mapping[str, int], what: str = "judgments") -> str | None:
    """Why a run measured nothing, when every one of its ``judged`` judgments is unscored
    (``reasons``: how many of each reason): ``all 40 judgments unscored: timeout 40``. None
    when one was scored, or when nothing was judged. A runner reports this as its failure,
    not a result: there is no verdict to measure anything on."""
    if judged <= 0 or sum(reasons.values()) < judged:
        return None
    counted = ", ".join(f"{r} {n}" for r, n in sorted(reasons.items(), key=lambda x: -x[1]))
    return f"all {judged} {what} unscored: {counted}"


class JudgeLike(Protocol):
    """What :func:`model_shown` reads of a judge config."""

    @property
    def program(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def members(self) -> Sequence[JudgeLike]: ...


def model_shown(judge: JudgeLike | Mapping[str, object]) -> str:
    """The model(s) a verdict of ``judge`` comes from, as reports, judgments and MLflow name
    them — ``judge`` a judge config, or its dump as a run's ``config.yaml`` holds it: its
    ``model``, or a panel's members' (a panel's own ``model`` is never called): ``panel of
    scripted:a, scripted:b``."""
    if isinstance(judge, Mapping):
        program, model, members = judge.get("program"), judge.get("model"), judge.get("members")
    else:
        program, model, members = judge.program, judge.model, judge.members
    if program != "panel" or not isinstance(members, Sequence) or not members:
        return str(model)
    return "panel of " + ", ".join(dict.fromkeys(model_shown(m) for m in members))
