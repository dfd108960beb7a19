"""USD cost of token usage: a per-model override, else LiteLLM's price map (DSPy's bundled,
offline copy of it: pricing never imports LiteLLM)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from assay.types import Usage

if TYPE_CHECKING:
    from assay.lm._limits import LimitStats

logger = logging.getLogger(__name__)


class UsageRecords(Protocol):
    """What ``dspy.track_usage`` records: each model's calls, one usage entry each."""

    @property
    def usage_data(self) -> Mapping[str, Sequence[Mapping[str, Any]]]: ...


def cost_usd(
    model: str,
    prompt_tokens: int,
    completion_tokens: int,
    price: tuple[float, float] | None = None,
    *,
    cache_read_tokens: int = 0,
    cache_write_tokens: int = 0,
) -> float | None:
    """Cost of one call, or ``None`` when no price is known for ``model``.

    ``price`` is ``(input, output)`` USD per million tokens. ``local`` and ``scripted`` models
    cost nothing unless a price is given. ``cache_read_tokens`` / ``cache_write_tokens``: the
    part of ``prompt_tokens`` the provider read from (wrote to) its prompt cache, priced as
    LiteLLM prices them — at the price map's ``cache_read_input_token_cost`` /
    ``cache_creation_input_token_cost``, at the input price where the map has none or
    ``price`` is given (a warning says so, once per model).
    """
    read = min(cache_read_tokens, prompt_tokens)
    write = min(cache_write_tokens, prompt_tokens - read)
    if price is not None:
        if read or write:
            _fell_back(model, "the config sets its price: input and output only")
        return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1e6
    if _is_free(model):
        return 0.0
    rates = _litellm_price(model)
    if rates is None:
        return None
    inp, out, read_rate, write_rate = rates
    if (read and read_rate is None) or (write and write_rate is None):
        _fell_back(model, "LiteLLM's price map has no cached-input price for it")
    return (
        (prompt_tokens - read - write) * inp
        + read * (inp if read_rate is None else read_rate)
        + write * (inp if write_rate is None else write_rate)
        + completion_tokens * out
    )


def _is_free(model: str) -> bool:
    return model == "local" or model.startswith(("local:", "local/", "scripted"))


@lru_cache(maxsize=256)
def _litellm_price(model: str) -> tuple[float, float, float | None, float | None] | None:
    """``(input, output, cache read, cache write)`` USD per token from the price map (the
    cache prices None where the map has none), or None when it has no input or output price."""
    from dspy.clients.model_metadata import model_info

    provider, _, name = model.partition("/")
    info = model_info(provider, name) if name else {}
    if not info:
        return None
    inp, out = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if inp is None or out is None:
        return None
    read = info.get("cache_read_input_token_cost")
    write = info.get("cache_creation_input_token_cost")
    return (
        float(inp),
        float(out),
        None if read is None else float(read),
        None if write is None else float(write),
    )


_FELL_BACK: set[str] = set()
_FELL_BACK_LOCK = threading.Lock()


def _fell_back(model: str, why: str) -> None:
    """``model``'s prompt-cache tokens were priced at its input price: said once per model and
    process (a warning on the console)."""
    with _FELL_BACK_LOCK:
        if model in _FELL_BACK:
            return
        _FELL_BACK.add(model)
    logger.warning(
        "model %s: prompt tokens the provider read from (or wrote to) its prompt cache are "
        "priced at its input price (%s)",
        model,
        why,
    )


_price_map_read: list[threading.Thread] = []  # the one reading it ahead, once started
_price_map_lock = threading.Lock()


def preload_price_map() -> None:
    """Read the price map (DSPy's model table, parsed on first use: ~0.03 s of CPU) in a
    background thread now, for a caller about to wait on something else — the command line, on
    its table from the helper interpreter — so that its first LM call, which looks the model up
    there (a schema or JSON mode, its price), finds it read. Once per process: DSPy's loader
    reads the map once, under its lock, whichever thread asks first."""
    with _price_map_lock:
        if _price_map_read:
            return

        def read() -> None:
            from dspy.clients.model_metadata import source_info

            try:
                source_info()
            except Exception:  # read again, and raised, where it is used
                pass

        thread = threading.Thread(target=read, name="assay-price-map", daemon=True)
        _price_map_read.append(thread)
        thread.start()


UNTALLIED = "assay_untallied"
"""The key of a DSPy usage entry for an answered call whose tokens were never reported (see
:attr:`assay.types.Usage.untallied_calls`): a call, its tokens and cost unknown. (An entry
with no tokens is read the same way: a served answer without usage.)"""

CACHED = "assay_cached"
"""The key of a DSPy usage entry for an answer the LM cache gave (no call): its value is the
usage the server reported when it first answered (empty when the cache did not keep it). Kept
under its own key, so that DSPy's own token totals still count only calls."""

PRICED_AT = "assay_price"
"""The key of a DSPy usage entry holding the price of the LM that answered it: its spec's
``[input, output]`` USD per million tokens, or None for LiteLLM's price map. An answer is costed
at the price of the LM that asked for it — a panel member's, not the panel's — as the call
ledger costs it; an entry without the key (an LM assay did not make) at the caller's price."""


def entry_price(
    entry: Mapping[str, Any], price: tuple[float, float] | None
) -> tuple[float, float] | None:
    """The price ``entry`` is costed at: the one its LM noted on it, else ``price``."""
    if PRICED_AT not in entry:
        return price
    noted = entry[PRICED_AT]
    return None if noted is None else (float(noted[0]), float(noted[1]))


class Priced(NamedTuple):
    """One answer's tokens as the server reported them, and its cost (None: no known price)."""

    prompt: int
    completion: int
    cache_read: int  # of ``prompt``: read from the provider's prompt cache
    cache_write: int  # of ``prompt``: written to the provider's prompt cache
    cost: float | None


def _count(value: object) -> int:
    """A token count as reported (None, absent or not a number: 0)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return max(int(value), 0)


def _detail(details: object, key: str) -> int:
    """A count in a usage's ``prompt_tokens_details`` (a dict, or LiteLLM's object)."""
    if isinstance(details, Mapping):
        return _count(details.get(key))
    return _count(getattr(details, key, None))


def prompt_cache_tokens(entry: Mapping[str, Any]) -> tuple[int, int]:
    """``(read, written)``: the prompt tokens of a usage entry the provider read from and wrote
    to its prompt cache — ``prompt_tokens_details.cached_tokens`` and ``cache_creation_tokens``
    (LiteLLM's and DSPy's names; Anthropic's ``cache_creation_input_tokens`` through LiteLLM),
    both counted in ``prompt_tokens`` as LiteLLM and DSPy report it."""
    details = entry.get("prompt_tokens_details")
    read = _detail(details, "cached_tokens")
    write = (
        _detail(details, "cache_creation_tokens")
        or _detail(details, "cache_write_tokens")
        or _count(entry.get("cache_creation_input_tokens"))
    )
    return read, write


def priced_entry(
    model: str, entry: Mapping[str, Any], price: tuple[float, float] | None = None
) -> Priced | None:
    """The tokens and cost of one DSPy usage entry — one answer —, or None when its usage
    reported no tokens: an answer all the same (a server that sends no ``usage``), whose tokens
    and cost are unknown (an *untallied* call, never a free one)."""
    p = _count(entry.get("prompt_tokens"))
    c = _count(entry.get("completion_tokens"))
    if not p and not c:
        return None
    read, write = prompt_cache_tokens(entry)
    read = min(read, p)
    write = min(write, p - read)
    cost = cost_usd(model, p, c, price, cache_read_tokens=read, cache_write_tokens=write)
    return Priced(p, c, read, write, cost)


def usage_of_tracker(
    tracker: UsageRecords,
    price: tuple[float, float] | None = None,
    limits: LimitStats | None = None,
) -> Usage:
    """Tokens and cost of every LM call recorded by a ``dspy.track_usage`` tracker.

    Every entry is an answer. One the server served is a call, whether or not its usage
    reported tokens: without them it is counted in ``calls`` and ``untallied_calls``, its tokens
    and cost unknown (never 0, see :meth:`~assay.types.Usage.known_cost`). A cache hit is no
    call: it is counted apart, in the ``cached_*`` fields, with the usage the server first
    reported for it (what :class:`~assay.lm.AssayLM` notes, see :mod:`assay.lm._ledger`). Each
    answer is costed at the price of the LM that answered it (:data:`PRICED_AT`, which
    :class:`~assay.lm.AssayLM` notes on it: a panel's members each at their own, as the call
    ledger costs them); ``price`` (USD per million input and output tokens) costs the answers of
    an LM that noted none, in place of LiteLLM's price map. Prompt tokens the provider read from
    its prompt cache are priced at the map's cached-input price (:func:`cost_usd`). A call of a
    model with no known price is counted in ``unpriced_calls``, never priced at zero.
    ``limits`` (from :func:`~assay.lm.track_limits`) adds the time the calls waited on rate
    limits.
    """
    paid, cached = _Tally(), _Tally()
    for model, entries in tracker.usage_data.items():
        for entry in entries:
            if entry.get(UNTALLIED):
                paid.add(None)
                continue
            at = entry_price(entry, price)
            if CACHED in entry:
                cached.add(priced_entry(model, entry[CACHED] or {}, at))
            else:
                paid.add(priced_entry(model, entry, at))
    return Usage.of(  # one model built per judgment: this runs once per LM call
        {
            **paid.fields(""),
            **cached.fields("cached_"),
            "limit_wait_s": round(limits.waited_s, 4) if limits is not None else 0.0,
            "rate_limited": limits.rate_limited if limits is not None else 0,
        }
    )


class _Tally:
    """Calls, tokens and cost summed entry by entry (the paid ones, or the cached ones)."""

    def __init__(self) -> None:
        self.prompt = self.completion = self.calls = self.unpriced = self.untallied = 0
        self.cache_read = self.cache_write = 0
        self.cost = 0.0

    def add(self, priced: Priced | None) -> None:
        """One answer; None: one whose tokens were never reported (untallied)."""
        self.calls += 1
        if priced is None:
            self.untallied += 1
            return
        self.prompt += priced.prompt
        self.completion += priced.completion
        self.cache_read += priced.cache_read
        self.cache_write += priced.cache_write
        self.cost += priced.cost or 0.0
        self.unpriced += priced.cost is None

    def fields(self, prefix: str) -> dict[str, Any]:
        return {
            f"{prefix}prompt_tokens": self.prompt,
            f"{prefix}completion_tokens": self.completion,
            f"{prefix}prompt_cache_read_tokens": self.cache_read,
            f"{prefix}prompt_cache_write_tokens": self.cache_write,
            f"{prefix}cost_usd": self.cost,
            f"{prefix}calls": self.calls,
            f"{prefix}unpriced_calls": self.unpriced,
            f"{prefix}untallied_calls": self.untallied,
        }
