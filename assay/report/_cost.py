"""The cost table every run's report shows: per part of the run (a judge, a generation stage),
the cost of the work its results used, and how much of it the server answered for them and how
much the LM cache gave (no call made, priced as the server first answered it)."""

from __future__ import annotations

from assay.report._model import Table
from assay.types import Usage, usd

COST_COLUMNS = [
    "calls of",
    "answers (the work)",
    "tokens (the work)",
    "USD (the work)",
    "answered by the server",
    "USD paid for these",
    "from the LM cache",
]


def cost_table(parts: dict[str, Usage], *, title: str = "Cost", note: str = "") -> Table:
    """``parts``: each part's usage (what its results hold); ``note``: what is said below (the
    run's spend line: every call it paid, its call ledger)."""
    rows = []
    for name, u in parts.items():
        w = u.work()
        rows.append(
            [
                name,
                w.calls,
                f"{w.prompt_tokens}+{w.completion_tokens}",
                usd(w),
                u.calls,
                usd(u),
                u.cached_calls,
            ]
        )
    lead = (
        "The cost of the work: every answer the results used, priced as a call — whether the "
        "server answered it for them or the LM cache gave it (no call made; priced as the "
        "server first answered it). It is the same on a warm cache as on a cold one."
    )
    return Table(title, list(COST_COLUMNS), rows, note=note, lead=lead)
