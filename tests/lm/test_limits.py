"""Rate limits: requests and tokens per minute, and on a 429 the server's Retry-After waited out
by every caller and the concurrency halved (then grown back one call at a time) — counted in each
judgment's usage and the run's summary."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from assay.evaluation import evaluate
from assay.inputs import EvaluateConfig
from assay.lm import RateLimiter, StubServer, track_limits

N_ITEMS = 6


def test_rpm_spreads_admissions_over_the_window():
    limiter = RateLimiter(rpm=3, window_s=0.4)
    start = time.monotonic()
    with track_limits() as stats:
        for _ in range(6):
            limiter.acquire()
            limiter.release(ok=True)
    took = time.monotonic() - start
    assert took >= 0.35  # the second three waited for the first three to leave the window
    assert stats.waited_s == pytest.approx(limiter.waited_s) and stats.waited_s >= 0.3


def test_a_call_admitted_at_once_waited_nothing_however_busy_the_lock():
    """Time waiting on limits is the time a call was held back, not the cost of taking the
    limiter's lock among eight threads (it made identical runs report different waits)."""
    limiter = RateLimiter()
    waits: list[float] = []

    def calls() -> None:
        for _ in range(200):
            waits.append(limiter.acquire())
            limiter.release(ok=True)

    threads = [threading.Thread(target=calls) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(waits) == 1600 and set(waits) == {0.0}
    assert limiter.waited_s == 0.0


def test_tpm_admits_what_fits_and_counts_real_usage():
    limiter = RateLimiter(tpm=100, window_s=0.3)
    limiter.acquire(60)
    limiter.release(ok=True, tokens=90, estimate=60)  # the call used more than estimated
    start = time.monotonic()
    limiter.acquire(20)  # 90 + 20 > 100: waits for the window
    assert time.monotonic() - start >= 0.25
    limiter.release(ok=True)


def test_a_429_halves_the_concurrency_and_pauses_for_retry_after():
    limiter = RateLimiter()
    for _ in range(8):
        limiter.acquire()
    assert limiter.cap is None  # no cap until the server says 429
    pause = limiter.release(ok=False, rate_limited=True, retry_after=0.2)
    assert pause == 0.2 and limiter.cap == 4  # 8 in flight → 4
    limiter.release(ok=False, rate_limited=True, retry_after=None)  # no header: backoff 2 s
    assert limiter.cap == 2 and limiter.rate_limited == 2
    for _ in range(6):
        limiter.release(ok=True)
    start = time.monotonic()
    limiter.acquire()  # waits out the pause (the longer one: 2 s backoff)
    assert time.monotonic() - start >= 1.5


def test_additive_increase_after_the_decrease():
    limiter = RateLimiter()
    for _ in range(4):
        limiter.acquire()
    limiter.release(ok=False, rate_limited=True, retry_after=0)
    assert limiter.cap == 2
    caps = []
    for _ in range(3):  # the three calls still in flight succeed
        limiter.release(ok=True)
        caps.append(limiter._cap)
    for _ in range(6):  # then one call at a time
        limiter.acquire()
        limiter.release(ok=True)
        caps.append(limiter._cap)
    # each success adds 1/cap: about one more slot per cap's worth of successes
    steps = [b - a for a, b in zip([2.0, *caps], caps, strict=False)]
    assert all(0 < s <= 0.5 for s in steps)
    assert 4 <= caps[-1] < 5


def _csv(tmp_path: Path) -> Path:
    rows = ["id,request,response,expected"]
    rows += [f"i{k},What colour is item {k}?,Item {k} is blue.,{k % 2}" for k in range(N_ITEMS)]
    path = tmp_path / "items.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _config(tmp_path: Path, stub: StubServer, **judge) -> EvaluateConfig:
    return EvaluateConfig.model_validate(
        {
            "name": "limits",
            "data": {"path": str(_csv(tmp_path)), "columns": {"id": "id"}},
            "judge": {
                "name": "j",
                "model": "openai/stub-model",
                "api_base": stub.base_url,
                "instruction": "Judge.",
                "scale": {"kind": "binary", "labels": ["False", "True"]},
                "client": "native",
                **judge,
            },
            "concurrency": 3,
            "retries": 4,
            "tracking": {"enabled": False},
        }
    )


def test_retry_after_is_waited_out_and_reported(tmp_path):
    arrivals: list[float] = []
    lock = threading.Lock()

    def respond(request):
        with lock:
            arrivals.append(time.monotonic())
        return '{"verdict": "False"}'

    # distinct api_base per test: a fresh limiter (limiters are per endpoint and model)
    with StubServer(fail_first=2, retry_after=0.4, respond=respond) as stub:
        start = time.monotonic()
        cfg = _config(tmp_path, stub).model_copy(update={"concurrency": 1})
        result = evaluate(cfg, workdir=tmp_path, progress=False)
    assert stub.statuses.count(429) == 2
    assert all(j.score == 0 for j in result.judgments)
    # one call at a time: 429, wait 0.4 s, 429, wait 0.4 s, then every answer
    assert min(arrivals) - start >= 0.75
    usage = result.summary.usage.model_dump()
    assert usage["rate_limited"] == 2
    assert usage["limit_wait_s"] >= 0.75  # both pauses, waited by the retried call
    assert usage["calls"] == N_ITEMS  # a 429 has no usage and is not a call


def test_rpm_from_the_config_paces_the_run(tmp_path):
    with StubServer() as stub:
        cfg = _config(tmp_path, stub, rpm=N_ITEMS // 2)
        # "per minute" would make this test a minute long: the limiter's window is shortened
        from assay.lm import limiter_for

        limiter_for(stub.base_url, "stub-model", N_ITEMS // 2, None).window_s = 0.5
        start = time.monotonic()
        result = evaluate(cfg, workdir=tmp_path, progress=False)
    assert time.monotonic() - start >= 0.45
    assert result.summary.usage.limit_wait_s > 0
    assert result.summary.usage.rate_limited == 0
