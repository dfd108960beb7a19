"""USD cost of token usage: a per-model override, else LiteLLM's price map (DSPy's bundled,
offline copy of it: pricing never imports LiteLLM)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from assay.types import Usage


def cost_usd(
    model: str, prompt_tokens: int, completion_tokens: int, price: tuple[float, float] | None = None
) -> float | None:
    """Cost of one call, or ``None`` when no price is known for ``model``.

    ``price`` is ``(input, output)`` USD per million tokens. ``local`` and ``scripted`` models
    cost nothing unless a price is given.
    """
    if price is not None:
        return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1e6
    if _is_free(model):
        return 0.0
    per_token = _litellm_price(model)
    if per_token is None:
        return None
    return prompt_tokens * per_token[0] + completion_tokens * per_token[1]


def _is_free(model: str) -> bool:
    return model == "local" or model.startswith(("local:", "local/", "scripted"))


@lru_cache(maxsize=256)
def _litellm_price(model: str) -> tuple[float, float] | None:
    from dspy.clients.model_metadata import model_info

    provider, _, name = model.partition("/")
    info = model_info(provider, name) if name else {}
    if not info:
        return None
    inp, out = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if inp is None or out is None:
        return None
    return float(inp), float(out)


UNTALLIED = "assay_untallied"
"""The key of a DSPy usage entry for an answered call whose tokens were never reported (see
:attr:`assay.types.Usage.untallied_calls`): a call, with no tokens and no cost."""


def priced_entry(
    model: str, entry: dict[str, Any], price: tuple[float, float] | None = None
) -> tuple[int, int, float | None] | None:
    """``(prompt, completion, cost)`` of one DSPy usage entry — one call — or None for an
    entry with no tokens (a cache hit: no call)."""
    p = int(entry.get("prompt_tokens") or 0)
    c = int(entry.get("completion_tokens") or 0)
    if not p and not c:
        return None
    return p, c, cost_usd(model, p, c, price)


def usage_of_tracker(
    tracker: Any, price: tuple[float, float] | None = None, limits: Any = None
) -> Usage:
    """Tokens and cost of every LM call recorded by a ``dspy.track_usage`` tracker.

    Cache hits report no tokens and count as no call. ``price`` (USD per million input and
    output tokens) overrides LiteLLM's price map; a call of a model with no known price is
    counted in ``unpriced_calls``, never priced at zero. ``limits`` (from
    :func:`~assay.lm.track_limits`) adds the time the calls waited on rate limits.
    """
    prompt = completion = calls = unpriced = untallied = 0
    cost_sum = 0.0
    for model, entries in tracker.usage_data.items():
        for entry in entries:
            if entry.get(UNTALLIED):
                calls, untallied = calls + 1, untallied + 1
                continue
            priced = priced_entry(model, entry, price)
            if priced is None:
                continue
            p, c, cost = priced
            prompt, completion, calls = prompt + p, completion + c, calls + 1
            cost_sum += cost or 0.0
            unpriced += cost is None
    return Usage(  # one model built per judgment: this runs once per LM call
        prompt_tokens=prompt,
        completion_tokens=completion,
        cost_usd=cost_sum,
        calls=calls,
        unpriced_calls=unpriced,
        untallied_calls=untallied,
        limit_wait_s=round(limits.waited_s, 4) if limits is not None else 0.0,
        rate_limited=limits.rate_limited if limits is not None else 0,
    )
