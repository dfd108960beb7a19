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
with the run that opened the ledger. A call belongs to the sinks recording when it began, and is
in flight for them until it ends: a run stopped with calls in flight (Ctrl-C, a deadline, a bug
— its pool does not wait for them) waits for them as it closes its ledger, a bounded while, so
their answers are noted before the cache keeps them; a call still in flight after that is noted
as abandoned (:data:`ABANDONED`), and its answer, when it comes, goes to no cache: the resume
asks for it again. Never is an answer in the cache and not in the ledger.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from pydantic import BaseModel

from assay.errors import RunError
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
ABANDONED = "abandoned in flight: the run closed first"
"""The ``failed`` of a call still in flight when its run stopped waiting for it: sent, its
answer (if the server gives one) kept nowhere — not in the ledger, not in the LM cache."""

_log = logging.getLogger(__name__)


class _Recording:
    """A sink while it records: the calls begun meanwhile that have not ended, and whether it
    still takes records (closed: an answer to one of its calls is kept in no LM cache)."""

    def __init__(self, sink: Sink):
        self.sink = sink
        self.changed = threading.Condition()
        self.open = True
        self.closing = False
        self.hurried = False  # a close waits no longer for the calls in flight
        self.in_flight: dict[_CallTracker, None] = {}  # in the order they began

    def send(self, record: CallRecord) -> bool:
        """``record`` to the sink; False (not sent) once closed."""
        with self.changed:
            if self.open:
                self.sink(record)
            return self.open

    def begin(self, call: _CallTracker) -> None:
        with self.changed:
            if self.closing:
                raise RunError(
                    "the run this LM call was made for is closing: it starts no new call"
                )
            self.in_flight[call] = None

    def end(self, call: _CallTracker) -> None:
        with self.changed:
            self.in_flight.pop(call, None)
            self.changed.notify_all()

    def close(self, settle_s: float) -> None:
        """Stop recording once the calls in flight have ended, waiting ``settle_s`` at most (a
        second Ctrl-C, or :meth:`stop_waiting`, stops the wait); those still in flight then are
        abandoned, each noted in the sink as such (:data:`ABANDONED`). Once closed, it refuses
        every new call (until :func:`record_calls` ends) and closing it again does nothing."""
        with self.changed:
            if not self.open:
                return
            self.closing = True
            try:
                if self.in_flight and settle_s > 0 and not self.hurried:
                    _log.warning(  # on the console: a Ctrl-C that seems ignored is pressed again
                        "assay: stopping: waiting up to %g s for %d LM calls in flight, whose "
                        "answers are paid (Ctrl-C again to stop waiting)",
                        settle_s,
                        len(self.in_flight),
                    )
                    self.changed.wait_for(
                        lambda: not self.in_flight or self.hurried, timeout=settle_s
                    )
            finally:
                self.open = False
                for call in self.in_flight:
                    call.abandoned = True
                    self.sink(CallRecord(model=call.model, calls=0, failed=ABANDONED))

    def stop_waiting(self) -> None:
        """A :meth:`close` waiting for the calls in flight (or one to come) abandons them now:
        the second Ctrl-C of a run whose close waits in another process (a Ray actor's)."""
        with self.changed:
            self.hurried = True
            self.changed.notify_all()


_RECORDINGS: list[_Recording] = []
_RECORDINGS_LOCK = threading.Lock()
# set in a thread (or task) once a call of its was abandoned: the rest of that work, which a
# closed run no longer waits for, makes no further call
_ABANDONED: ContextVar[bool] = ContextVar("assay_call_abandoned", default=False)
# the recordings open where the work began (a run's pool threads run in a copy of its
# context): once one has closed, that work makes no further call — else a thread still busy
# after its run closed would make a call no ledger notes, its answer kept in the LM cache
_BEGUN_UNDER: ContextVar[tuple[_Recording, ...]] = ContextVar("assay_recordings", default=())


@contextmanager
def record_calls(sink: Sink, settle_s: float = 0.0) -> Iterator[_Recording]:
    """Send every call answered (and every attempt failed) in this process to ``sink`` while
    the block runs. At its end, the calls begun meanwhile and still in flight are waited for
    (``settle_s`` at most): the sink notes their answers before the LM cache keeps them; a call
    still in flight after that is noted as abandoned, and its answer kept in no cache — so no
    answer is ever in the cache and not in the sink, and a resume asks for it again.

    The block gets the recording, which a process that stops on another's word (a Ray actor)
    closes before the block ends — ``close(settle_s)``, the same wait, after which every new
    call is refused — and whose wait it can cut short (``stop_waiting()``)."""
    recording = _Recording(sink)
    with _RECORDINGS_LOCK:
        _RECORDINGS.append(recording)
    under = _BEGUN_UNDER.set((*_BEGUN_UNDER.get(), recording))
    try:
        yield recording
    finally:
        try:
            recording.close(settle_s)
        finally:
            with _RECORDINGS_LOCK:
                _RECORDINGS.remove(recording)
            try:
                _BEGUN_UNDER.reset(under)
            except ValueError:  # closed from another thread (a Ray actor's control group)
                pass


def _emit(record: CallRecord) -> None:
    for recording in list(_RECORDINGS):
        recording.send(record)


def note_failed(model: str, reason: str) -> None:
    """An attempt answered with an error status (or lost in transit): sent, not paid. The
    reason is redacted, as every LM error's text is before it is stored."""
    if _RECORDINGS:
        _emit(CallRecord(model=model, calls=0, failed=redact(reason)))


def note_usage(model: str, usage: Usage, via: str) -> None:
    """The calls of a result made in another process (``via``: ``"ray"``), whose answers no
    sink of this one saw: counted as the result arrives."""
    if _RECORDINGS and usage.calls:
        _emit(CallRecord(model=model, via=via, **usage.model_dump(include=set(PAID_FIELDS))))


def note_calls(records: Iterable[CallRecord], via: str) -> None:
    """The ledger records of another process (``via``: ``"ray"``, an actor's answered calls
    and failed attempts), noted here as they arrive."""
    if _RECORDINGS:
        for record in records:
            _emit(record.model_copy(update={"via": via}))


class _CallTracker:
    """A DSPy usage tracker for one call of an :class:`~assay.lm.AssayLM`: what its answer
    was, handed on to the tracker of the enclosing ``dspy.track_usage`` block, if any.

    - served (DSPy accounts its usage, tokens or none): a call, priced and noted in the ledger
      of each run recording when it began (untallied when its usage reported no tokens) — when
      DSPy stores the answer in its response cache (:meth:`stored`), before the cache holds it,
      so that a kill between the two never leaves a paid answer in the cache and none in the
      ledger; an answer that comes after its run closed (abandoned in flight) is not stored at
      all; else as DSPy accounts it;
    - given by the cache (:meth:`cached`, no usage from DSPy): no call, nothing noted; the
      enclosing tracker gets the usage the server first reported for it, under ``CACHED``.

    Either way the entry the enclosing tracker gets names this LM's price (``PRICED_AT``), so
    the answer is costed as the ledger costs it, whoever reads the tracker.
    """

    def __init__(
        self,
        parent: Any,
        model: str,
        price: tuple[float, float] | None,
        recordings: tuple[_Recording, ...] = (),
    ):
        self.parent = parent
        self.model = model
        self.price = price
        self.recordings = recordings  # the sinks recording when the call began
        self.noted = False  # this call's answer is in the ledger already (stored)
        self.abandoned = False  # a recording closed while it was in flight

    def add_usage(self, lm: str, usage_entry: dict[str, Any]) -> None:
        if self.parent is not None:
            self.parent.add_usage(lm, {**usage_entry, PRICED_AT: self._price})
        if self.noted:
            self.noted = False
        else:
            self._note(lm, usage_entry)

    def stored(self, usage_entry: dict[str, Any]) -> bool:
        """The call's answer, as DSPy is about to store it in the response cache: noted in
        the ledger; False when a ledger it belongs in has closed — the cache must not keep it."""
        kept = self._note(self.model, usage_entry)
        self.noted = True  # wherever it could be: DSPy's accounting of it notes nothing more
        return kept

    def cached(self, usage_entry: dict[str, Any] | None) -> None:
        """The call's answer came from the response cache (``usage_entry``: the usage the
        server first reported for it; None when the cache did not keep it)."""
        if self.parent is not None:
            self.parent.add_usage(self.model, {CACHED: usage_entry or {}, PRICED_AT: self._price})

    @property
    def _price(self) -> list[float] | None:
        """This LM's price as noted on the usage entries it hands on (:data:`PRICED_AT`)."""
        return None if self.price is None else list(self.price)

    def _note(self, lm: str, usage_entry: dict[str, Any]) -> bool:
        """One answer the server served: a call, with or without its tokens (an answer whose
        usage reported none is an untallied call — counted, its tokens and cost unknown — as
        :func:`~assay.lm.usage_of_tracker` counts it). False when a recording of the call had
        closed: the answer is in its ledger neither."""
        if not self.recordings:
            return True
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
        return all([recording.send(record) for recording in self.recordings])

    def __getattr__(self, name: str) -> Any:  # anything else a tracker offers: the parent's
        parent = self.__dict__.get("parent")  # (absent while copy/pickle rebuild the object)
        if parent is None:
            raise AttributeError(name)
        return getattr(parent, name)


@contextmanager
def ledger_tracker(model: str, price: tuple[float, float] | None) -> Iterator[None]:
    """Around one LM call of ``model``: its answers are noted in the ledger (when one is
    recording: in flight for it until the block ends), and a cached answer's usage is handed
    to the enclosing usage tracker. A call after one abandoned in this thread (or task), or
    begun by work whose run's recording has closed since (a pool thread still busy after its
    run stopped: :func:`~assay.runs.run_pool` runs each task in a copy of the run's context), is
    refused: no ledger would note it."""
    import dspy

    if _ABANDONED.get() or not all(r.open for r in _BEGUN_UNDER.get()):
        raise RunError("the run this LM call was made for has closed: it makes no new call")
    parent = dspy.settings.usage_tracker
    with _RECORDINGS_LOCK:
        recordings = tuple(_RECORDINGS)
    if not recordings and parent is None:
        yield
        return
    call = _CallTracker(parent, model, price, recordings)
    begun: list[_Recording] = []
    try:
        for recording in recordings:
            recording.begin(call)
            begun.append(recording)
        with dspy.settings.context(usage_tracker=call):
            yield
    finally:
        for recording in begun:
            recording.end(call)
        if call.abandoned:
            _ABANDONED.set(True)


def _current_call() -> _CallTracker | None:
    import dspy

    tracker = dspy.settings.usage_tracker
    return tracker if isinstance(tracker, _CallTracker) else None


def note_stored(usage_entry: dict[str, Any]) -> bool:
    """The answer of the LM call in progress is about to be stored in the response cache;
    False: it must not be (its run has closed, its ledger did not note it)."""
    call = _current_call()
    return True if call is None else call.stored(usage_entry)


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
