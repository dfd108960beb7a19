"""The call ledger: every request the server answered, noted as it is answered.

A run's numbers say what its results cost (each judgment and probe carries its usage), but a
run also pays for answers it never keeps: a result replaced by ``--retry-unscored``, calls in
flight when the run was killed. So every answer the server served (one per HTTP 200, whatever
engine made it: DSPy hands its usage to the usage tracker, and :class:`~assay.lm.AssayLM` passes
each of its calls through :func:`ledger_tracker`; an answer whose usage reported no tokens is a
call all the same, *untallied*: its tokens and cost unknown) and every attempt answered with an
error status or
lost in transit (the native client's retries of a 429 or a 500: no usage, not paid) goes to the
sinks registered with :func:`record_calls` — a run's ``calls.jsonl`` — at once. An answer
DSPy stores in its response cache is noted before the cache holds it. An answer taken from the
cache is no call and is not noted; the usage the server first reported for it goes to the
enclosing usage tracker, apart (the ``cached_*`` fields of :class:`~assay.types.Usage`).

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

from assay.lm._pricing import CACHED, PRICED_AT, priced_entry
from assay.lm._redact import redact
from assay.types import PAID_FIELDS, Usage


class CallRecord(BaseModel):
    """One line of a run's call ledger: an answer with its usage, or a failed attempt (or, from
    another process — a Ray actor —, the calls of one result as it arrived)."""

    model: str
    calls: int = 1
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_cache_read_tokens: int = 0  # of prompt_tokens: read from the provider's prompt cache
    prompt_cache_write_tokens: int = 0  # of prompt_tokens: written to it
    cost_usd: float = 0.0
    unpriced_calls: int = 0  # calls of a model with no known price (not in cost_usd)
    # answered calls whose tokens were never reported (a server answer without usage, see
    # Usage): a call, its tokens and cost unknown — not in prompt_tokens or cost_usd
    untallied_calls: int = 0
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


def note_calls(records: Iterable[CallRecord], via: str) -> None:
    """The ledger records of another process (``via``: ``"ray"``, an actor's answered calls
    and failed attempts), noted here as they arrive."""
    if _SINKS:
        for record in records:
            _emit(record.model_copy(update={"via": via}))


class _CallTracker:
    """A DSPy usage tracker for one call of an :class:`~assay.lm.AssayLM`: what its answer
    was, handed on to the tracker of the enclosing ``dspy.track_usage`` block, if any.

    - served (DSPy accounts its usage, tokens or none): a call, priced and noted in the ledger
      (untallied when its usage reported no tokens) — when DSPy stores the answer in its
      response cache (:meth:`stored`), before the cache holds it, so that a kill between the
      two never leaves a paid answer in the cache and none in the ledger; else as DSPy
      accounts it;
    - given by the cache (:meth:`cached`, no usage from DSPy): no call, nothing noted; the
      enclosing tracker gets the usage the server first reported for it, under ``CACHED``.

    Either way the entry the enclosing tracker gets names this LM's price (``PRICED_AT``), so
    the answer is costed as the ledger costs it, whoever reads the tracker.
    """

    def __init__(self, parent: Any, model: str, price: tuple[float, float] | None):
        self.parent = parent
        self.model = model
        self.price = price
        self.noted = False  # this call's answer is in the ledger already (stored)

    def add_usage(self, lm: str, usage_entry: dict[str, Any]) -> None:
        if self.parent is not None:
            self.parent.add_usage(lm, {**usage_entry, PRICED_AT: self._price})
        if self.noted:
            self.noted = False
        else:
            self._note(lm, usage_entry)

    def stored(self, usage_entry: dict[str, Any]) -> None:
        """The call's answer, as DSPy is about to store it in the response cache."""
        self._note(self.model, usage_entry)
        self.noted = True

    def cached(self, usage_entry: dict[str, Any] | None) -> None:
        """The call's answer came from the response cache (``usage_entry``: the usage the
        server first reported for it; None when the cache did not keep it)."""
        if self.parent is not None:
            self.parent.add_usage(self.model, {CACHED: usage_entry or {}, PRICED_AT: self._price})

    @property
    def _price(self) -> list[float] | None:
        """This LM's price as noted on the usage entries it hands on (:data:`PRICED_AT`)."""
        return None if self.price is None else list(self.price)

    def _note(self, lm: str, usage_entry: dict[str, Any]) -> None:
        """One answer the server served: a call, with or without its tokens (an answer whose
        usage reported none is an untallied call — counted, its tokens and cost unknown — as
        :func:`~assay.lm.usage_of_tracker` counts it)."""
        if not _SINKS:
            return
        priced = priced_entry(lm, usage_entry, self.price)
        if priced is None:
            record = CallRecord.model_construct(model=lm, untallied_calls=1)
        else:
            record = CallRecord.model_construct(  # the fields are known good: no validation
                model=lm,
                prompt_tokens=priced.prompt,
                completion_tokens=priced.completion,
                prompt_cache_read_tokens=priced.cache_read,
                prompt_cache_write_tokens=priced.cache_write,
                cost_usd=priced.cost or 0.0,
                unpriced_calls=int(priced.cost is None),
            )
        _emit(record)

    def __getattr__(self, name: str) -> Any:  # anything else a tracker offers: the parent's
        parent = self.__dict__.get("parent")  # (absent while copy/pickle rebuild the object)
        if parent is None:
            raise AttributeError(name)
        return getattr(parent, name)


@contextmanager
def ledger_tracker(model: str, price: tuple[float, float] | None) -> Iterator[None]:
    """Around one LM call of ``model``: its answers are noted in the ledger (when one is
    recording), and a cached answer's usage is handed to the enclosing usage tracker."""
    import dspy

    parent = dspy.settings.usage_tracker
    if not _SINKS and parent is None:
        yield
        return
    with dspy.settings.context(usage_tracker=_CallTracker(parent, model, price)):
        yield


def _current_call() -> _CallTracker | None:
    import dspy

    tracker = dspy.settings.usage_tracker
    return tracker if isinstance(tracker, _CallTracker) else None


def note_stored(usage_entry: dict[str, Any]) -> None:
    """The answer of the LM call in progress is about to be stored in the response cache."""
    call = _current_call()
    if call is not None:
        call.stored(usage_entry)


def note_cached(usage_entry: dict[str, Any] | None) -> None:
    """The LM call in progress takes its answer from the response cache."""
    call = _current_call()
    if call is not None:
        call.cached(usage_entry)


def ledger_usage(records: Iterable[CallRecord]) -> tuple[Usage, int]:
    """The usage of the answered calls of ``records`` (tokens, cost, calls, unpriced calls),
    and how many attempts failed."""
    failed = 0

    def paid() -> Iterator[Usage]:  # one reading: a run's million calls are not held
        nonlocal failed
        for r in records:
            if r.failed is None:
                yield Usage(**r.model_dump(include=set(PAID_FIELDS)))
            else:
                failed += 1

    total = Usage.total(paid())
    return total, failed
