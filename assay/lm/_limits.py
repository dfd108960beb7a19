"""Rate limits done right, per model: requests and tokens per minute, and a concurrency limit
that adapts to the server's 429s (additive increase, multiplicative decrease) and honours its
``Retry-After`` — instead of every worker retrying blindly into the same wall.

One :class:`RateLimiter` per endpoint and model, shared by every LM of the process that calls
it (like a connection pool: the limit belongs to the server, not to one program). Time spent
waiting for admission is recorded on the call's :class:`LimitStats` (see :func:`track_limits`),
so each judgment's usage says how long it waited.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

_POLL_S = 0.01  # re-check interval while every slot is taken (released slots also notify)


@dataclass
class LimitStats:
    """What the limiter did to the calls of one unit of work (a judgment, a probe)."""

    waited_s: float = 0.0  # seconds spent waiting for admission (rpm, tpm, concurrency, 429 pause)
    rate_limited: int = 0  # HTTP 429 answers seen (each retried by DSPy after Retry-After)


_current: ContextVar[LimitStats | None] = ContextVar("assay_limit_stats", default=None)


@contextmanager
def track_limits() -> Iterator[LimitStats]:
    """Collect the limiter's waits and 429s of the LM calls made inside the block."""
    stats = LimitStats()
    token = _current.set(stats)
    try:
        yield stats
    finally:
        _current.reset(token)


_wire_gate: ContextVar[Callable[[], AbstractContextManager[object]] | None] = ContextVar(
    "assay_wire_gate", default=None
)


@contextmanager
def gate_calls(hold: Callable[[], AbstractContextManager[object]]) -> Iterator[None]:
    """Each LM call made inside holds ``hold()`` — one of a run's slots of calls in flight —
    while it is on the wire. An engine that marks itself ``gates_wire`` (the native client)
    takes it around the HTTP exchange alone: the prompt is built, the cache looked up, the
    answer parsed and priced outside it, so a freed slot goes to a call that is ready to send,
    and a cache hit takes none. Any other engine's call holds it throughout (:class:`AssayLM`)."""
    token = _wire_gate.set(hold)
    try:
        yield
    finally:
        _wire_gate.reset(token)


@contextmanager
def on_the_wire() -> Iterator[None]:
    """Hold the slot of the enclosing :func:`gate_calls`, if any, for one exchange; a call made
    inside it (an engine calling another) holds no second slot."""
    hold = _wire_gate.get()
    if hold is None:
        yield
        return
    token = _wire_gate.set(None)
    try:
        with hold():
            yield
    finally:
        _wire_gate.reset(token)


def _record(waited: float = 0.0, limited: int = 0) -> None:
    stats = _current.get()
    if stats is not None:
        stats.waited_s += waited
        stats.rate_limited += limited


class RateLimiter:
    """Admission control for one model: ``rpm`` requests and ``tpm`` tokens per rolling minute
    (either may be None: unlimited), and an adaptive concurrency cap that only exists once the
    server has said 429: halved on each 429 (never below 1), raised by one after each cap's
    worth of successes, dropped again once it has grown past what is actually in flight."""

    def __init__(self, rpm: int | None = None, tpm: int | None = None, *, window_s: float = 60.0):
        self.rpm = rpm
        self.tpm = tpm
        self.window_s = window_s  # "per minute" (shorter in tests)
        self._consecutive = 0  # 429s since the last success (backoff without Retry-After)
        self._lock = threading.Condition()
        self._starts: deque[float] = deque()  # admission times in the last minute
        self._tokens: deque[tuple[float, int]] = deque()  # (time, tokens) in the last minute
        self._in_flight = 0
        self._cap: float | None = None  # adaptive concurrency limit; None = none yet
        self._paused_until = 0.0  # Retry-After: no admission before this monotonic time
        self.waited_s = 0.0
        self.rate_limited = 0
        self.min_cap: int | None = None

    # -- admission ---------------------------------------------------------------------------
    def _try(self, tokens: int, now: float) -> float:
        """Admit (returns 0.0) or say how long to wait before trying again. Under the lock."""
        if now < self._paused_until:
            return self._paused_until - now
        if self._cap is not None and self._in_flight >= int(self._cap):
            return _POLL_S
        minute = now - self.window_s
        while self._starts and self._starts[0] <= minute:
            self._starts.popleft()
        while self._tokens and self._tokens[0][0] <= minute:
            self._tokens.popleft()
        if self.rpm is not None and len(self._starts) >= self.rpm:
            return self._starts[0] + self.window_s - now
        if self.tpm is not None and self._tokens:
            used = sum(n for _, n in self._tokens)
            if used + tokens > self.tpm:
                # wait until enough of the window has expired (a call larger than the whole
                # budget is admitted alone, once the window is empty)
                need, at = used + tokens - self.tpm, None
                for t, n in self._tokens:
                    need -= n
                    if need <= 0:
                        at = t
                        break
                return (at if at is not None else self._tokens[-1][0]) + self.window_s - now
        self._starts.append(now)
        if self.tpm is not None:
            self._tokens.append((now, tokens))
        self._in_flight += 1
        return 0.0

    def acquire(self, tokens: int = 0) -> float:
        """Block until admitted; returns the seconds waited."""
        start, blocked = time.monotonic(), False
        with self._lock:
            while (wait := self._try(tokens, time.monotonic())) > 0:
                blocked = True
                self._lock.wait(min(wait, 1.0))
            return self._admitted(start if blocked else None)

    async def aacquire(self, tokens: int = 0) -> float:
        """Wait (without blocking the event loop) until admitted; returns the seconds waited."""
        start: float | None = None
        while True:
            with self._lock:
                wait = self._try(tokens, time.monotonic())
                if wait <= 0:
                    return self._admitted(start)
            start = time.monotonic() if start is None else start
            await asyncio.sleep(min(wait, 1.0))

    def _admitted(self, start: float | None) -> float:
        """Record the wait of a call that was held back (``start``: when it was first told to
        wait); a call admitted at once waited 0, whatever taking the lock cost."""
        waited = 0.0 if start is None else time.monotonic() - start
        self.waited_s += waited
        _record(waited=waited)
        return waited

    # -- outcome -----------------------------------------------------------------------------
    def release(
        self,
        *,
        ok: bool,
        rate_limited: bool = False,
        retry_after: float | None = None,
        tokens: int | None = None,
        estimate: int = 0,
    ) -> float:
        """End one admitted call: a 429 halves the cap and pauses admission for ``retry_after``
        (the server's Retry-After; without one 1, 2, 4 ... 60 s over consecutive 429s) — every
        caller waits it out, the retried call too; a success grows the cap additively.
        ``tokens`` (what the call really used) beyond its ``estimate`` joins the tpm window.
        Returns the pause set (seconds)."""
        with self._lock:
            self._in_flight -= 1
            now = time.monotonic()
            if self.tpm is not None and tokens is not None and tokens > estimate:
                self._tokens.append((now, tokens - estimate))
            pause = 0.0
            if rate_limited:
                self.rate_limited += 1
                self._consecutive += 1
                _record(limited=1)
                if retry_after is None:
                    retry_after = float(min(2 ** (self._consecutive - 1), 60))
                pause = max(0.0, retry_after)
                current = self._in_flight + 1
                base = current if self._cap is None else min(self._cap, current)
                self._cap = max(1.0, math.floor(base / 2))
                self.min_cap = (
                    int(self._cap) if self.min_cap is None else min(self.min_cap, int(self._cap))
                )
                self._paused_until = max(self._paused_until, now + pause)
            elif ok:
                self._consecutive = 0
                if self._cap is not None:
                    self._cap += 1.0 / self._cap
                    if self._cap > 2 * (self._in_flight + 1) + 8:
                        self._cap = None  # the cap no longer binds: back to unlimited
            self._lock.notify_all()
            return pause

    @property
    def cap(self) -> int | None:
        return None if self._cap is None else int(self._cap)


# One limiter per (endpoint, model, rpm, tpm) in the process: the server's limit is shared by
# every LM object that calls it (rollouts, retries and judges on the same model).
_LIMITERS: dict[tuple, RateLimiter] = {}
_LIMITERS_LOCK = threading.Lock()


def limiter_for(endpoint: str, model: str, rpm: int | None, tpm: int | None) -> RateLimiter:
    key = (endpoint, model, rpm, tpm)
    with _LIMITERS_LOCK:
        if key not in _LIMITERS:
            _LIMITERS[key] = RateLimiter(rpm, tpm)
        return _LIMITERS[key]
