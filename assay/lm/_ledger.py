"""The call ledger: every request the server answered, noted as it is answered.

A run's numbers say what its results cost (each judgment and probe carries its usage), but a
run also pays for answers it never keeps: a result replaced by ``--retry-unscored``, calls in
flight when the run was killed. So every answer with usage (one per HTTP 200, whatever engine
made it: DSPy hands its usage to the usage tracker, and :class:`~assay.lm.AssayLM` passes each
of its calls through :func:`ledger_tracker`) and every attempt answered with an error status or
lost in transit (the native client's retries of a 429 or a 500: no usage, not paid) goes to the
sinks registered with :func:`record_calls` — a run's ``calls.jsonl`` — at once.

The sinks are process-wide, like the rate limiters of :mod:`~assay.lm._limits`: the calls are
made on the threads of a pool (and by DSPy's retry loop inside them), which share nothing else
with the run that opened the ledger.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import BaseModel

from assay.lm._pricing import priced_entry
from assay.lm._redact import redact
from assay.types import PAID_FIELDS, Usage


class CallRecord(BaseModel):
    """One line of a run's call ledger: an answer with its usage, or a failed attempt (or, from
    another process — a Ray actor —, the calls of one result as it arrived)."""

    model: str
    calls: int = 1
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0  # calls of a model with no known price (not in cost_usd)
    untallied_calls: int = 0  # answered calls whose tokens were never reported (see Usage)
    failed: str | None = None  # "HTTP 500", "no answer": an attempt with no answer to pay
    via: str | None = None  # "ray": counted from the result an actor sent back


Sink = Callable[[CallRecord], None]
_SINKS: list[Sink] = []
_SINKS_LOCK = threading.Lock()


@contextmanager
def record_calls(sink: Sink) -> Iterator[None]:
    """Send every call answered (and every attempt failed) in this process to ``sink`` while
    the block runs."""
    with _SINKS_LOCK:
        _SINKS.append(sink)
    try:
        yield
    finally:
        with _SINKS_LOCK:
            _SINKS.remove(sink)


def _emit(record: CallRecord) -> None:
    for sink in list(_SINKS):
        sink(record)


def note_failed(model: str, reason: str) -> None:
    """An attempt answered with an error status (or lost in transit): sent, not paid. The
    reason is redacted, as every LM error's text is before it is stored."""
    if _SINKS:
        _emit(CallRecord(model=model, calls=0, failed=redact(reason)))


def note_usage(model: str, usage: Usage, via: str) -> None:
    """The calls of a result made in another process (``via``: ``"ray"``), whose answers no
    sink of this one saw: counted as the result arrives."""
    if _SINKS and usage.calls:
        _emit(CallRecord(model=model, via=via, **usage.model_dump(include=set(PAID_FIELDS))))


class _LedgerTracker:
    """A DSPy usage tracker for one LM call: each usage DSPy accounts (a served answer; a cache
    hit has none) is priced and noted in the ledger, and handed on to the tracker of the
    enclosing ``dspy.track_usage`` block, if any."""

    def __init__(self, parent: Any, price: tuple[float, float] | None):
        self.parent = parent
        self.price = price

    def add_usage(self, lm: str, usage_entry: dict[str, Any]) -> None:
        if self.parent is not None:
            self.parent.add_usage(lm, usage_entry)
        priced = priced_entry(lm, usage_entry, self.price)  # a call, as usage_of_tracker counts
        if priced is not None:
            p, c, cost = priced
            _emit(
                CallRecord.model_construct(  # the fields are known good: no validation per call
                    model=lm,
                    prompt_tokens=p,
                    completion_tokens=c,
                    cost_usd=cost or 0.0,
                    unpriced_calls=int(cost is None),
                )
            )

    def __getattr__(self, name: str) -> Any:  # anything else a tracker offers: the parent's
        parent = self.__dict__.get("parent")  # (absent while copy/pickle rebuild the object)
        if parent is None:
            raise AttributeError(name)
        return getattr(parent, name)


@contextmanager
def ledger_tracker(price: tuple[float, float] | None) -> Iterator[None]:
    """Around one LM call: its answers are noted in the ledger (when one is recording)."""
    if not _SINKS:
        yield
        return
    import dspy

    tracker = _LedgerTracker(dspy.settings.usage_tracker, price)
    with dspy.settings.context(usage_tracker=tracker):
        yield


def ledger_usage(records: Iterable[CallRecord]) -> tuple[Usage, int]:
    """The usage of the answered calls of ``records`` (tokens, cost, calls, unpriced calls),
    and how many attempts failed."""
    records = list(records)  # read twice
    paid = [Usage(**r.model_dump(include=set(PAID_FIELDS))) for r in records if r.failed is None]
    return Usage.total(paid), sum(r.failed is not None for r in records)
