"""The verdict's distribution from the model's token probabilities at the position where it
wrote its verdict, and the probability-weighted score (G-Eval style) it gives."""

from __future__ import annotations

import math
from typing import Any


def expected_score(
    logprobs: object, options: dict[str, int], field: str = "verdict"
) -> float | None:
    """Expected score from token logprobs, or ``None`` when they do not cover the verdict: the
    mean of :func:`verdict_distribution`."""
    dist = verdict_distribution(logprobs, options, field)
    if dist is None:
        return None
    return sum(score * p for score, p in dist.items())


def verdict_distribution(
    logprobs: object, options: dict[str, int], field: str = "verdict"
) -> dict[int, float] | None:
    """The probability of each verdict score (summing to 1), or ``None`` when the logprobs do
    not cover the verdict.

    ``logprobs`` is a sequence of tokens, each with ``token``, ``logprob`` and ``top``
    alternatives (lm15 ``TokenLogprob`` objects or OpenAI-shaped dicts with ``top_logprobs``);
    ``options`` maps each allowed verdict text to its score. The verdict token is the first
    token after the ``field`` key (JSON ``"verdict":`` or the chat adapter's
    ``[[ ## verdict ## ]]``) that starts an option; each alternative at that position is credited to
    the option it starts (alternatives that start several options — a shared prefix — or none
    are ignored), and the probabilities are renormalised over the options. A score no
    alternative started has no key (probability 0).
    """
    if isinstance(logprobs, dict):  # OpenAI shape: {"content": [...]}
        logprobs = logprobs.get("content")
    if not logprobs:
        return None
    lowered = {k.lower(): v for k, v in options.items()}
    markers = (f'"{field}":', f"## {field} ## ]]")
    seen = ""
    for tok in logprobs:
        text, alts = _token(tok)
        if not any(m in seen for m in markers):
            seen += text
            continue
        if _owner(text, lowered) is None:
            continue
        mass: dict[int, float] = {}
        for alt_text, alt_lp in alts or [(text, _lp(tok))]:
            owner = _owner(alt_text, lowered)
            if owner is not None:
                mass[owner] = mass.get(owner, 0.0) + math.exp(alt_lp)
        total = sum(mass.values())
        if total <= 0:
            return None
        return {score: m / total for score, m in sorted(mass.items())}
    return None


def _owner(token_text: str, options: dict[str, int]) -> int | None:
    t = token_text.strip().strip('"').lower()
    if not t:
        return None
    scores = {score for opt, score in options.items() if opt.startswith(t)}
    return scores.pop() if len(scores) == 1 else None


def _lp(tok: Any) -> float:
    return float(tok["logprob"] if isinstance(tok, dict) else tok.logprob)


def _token(tok: Any) -> tuple[str, list[tuple[str, float]]]:
    if isinstance(tok, dict):
        alts = tok.get("top_logprobs") or tok.get("top") or []
        return tok["token"], [(a["token"], float(a["logprob"])) for a in alts]
    return tok.token, [(a.token, float(a.logprob)) for a in (tok.top or ())]
