"""The worker pool's follow-up work and the run-wide LM-call slots."""

from __future__ import annotations

import threading
import time

from assay.runs import CallSlots, run_pool


def test_follow_up_work_runs_in_the_same_pool_after_its_parent():
    seen: list[str] = []

    def follow_up(w, r):
        return [f"{w}.child"] if "." not in w else []

    out = run_pool(
        ["a", "b"],
        lambda w: w.upper(),
        concurrency=2,
        on_result=lambda w, r: seen.append(w),
        follow_up=follow_up,
        progress=False,
    )
    assert out == ["A", "B", "A.CHILD", "B.CHILD"]
    assert seen.index("a") < seen.index("a.child") and seen.index("b") < seen.index("b.child")


def test_slots_bound_calls_in_flight_and_serve_higher_priority_first():
    slots = CallSlots(2)
    lock = threading.Lock()
    state = {"now": 0, "most": 0}
    order: list[str] = []
    entered = threading.Barrier(3)  # the two first holders and this thread
    release = threading.Event()
    # the two high-priority callers keep their slots until both are in: the judge can enter
    # only when the slots went to both of them first (a wrong order breaks the barrier)
    both_gens = threading.Barrier(2)

    def call(name: str, priority: int) -> None:
        with slots.hold(priority):
            with lock:
                state["now"] += 1
                state["most"] = max(state["most"], state["now"])
                order.append(name)
            if name.startswith("first"):
                entered.wait()
                release.wait()
            if name.startswith("gen"):
                try:
                    both_gens.wait(timeout=60)
                except threading.BrokenBarrierError:
                    pass
            with lock:
                state["now"] -= 1

    def queued(n: int) -> None:  # ordered by events, not by timing: holds on a loaded machine
        while True:
            with slots._lock:
                if len(slots._waiting) == n:
                    return
            time.sleep(0.001)

    holders = [threading.Thread(target=call, args=(f"first{i}", 0)) for i in range(2)]
    for t in holders:
        t.start()
    entered.wait()  # both slots taken; now queue a low- then two high-priority callers
    low = threading.Thread(target=call, args=("judge", 1))
    low.start()
    queued(1)
    high = [threading.Thread(target=call, args=(f"gen{i}", 0)) for i in range(2)]
    for t in high:
        t.start()
    queued(3)
    release.set()
    for t in [*holders, low, *high]:
        t.join()
    assert state["most"] == 2
    assert order[:2] == ["first0", "first1"] or order[:2] == ["first1", "first0"]
    assert order.index("judge") > max(order.index("gen0"), order.index("gen1"))


def test_after_first_call_runs_once_when_the_first_call_has_ended():
    seen: list[tuple[str, int]] = []
    slots = CallSlots(2, after_first_call=lambda: seen.append(("after", len(ended))))
    ended: list[str] = []
    started = threading.Barrier(2)

    def call(name: str, hold_s: float) -> None:
        with slots.hold():
            started.wait()  # both calls are in flight before either ends
            assert seen == []  # nothing while the calls are only being sent
            time.sleep(hold_s)
        ended.append(name)

    threads = [threading.Thread(target=call, args=(n, s)) for n, s in (("a", 0.01), ("b", 0.2))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with slots.hold():  # a later call does not run it again
        pass
    assert seen == [("after", 0)]  # once, before the first caller went on
    assert ended == ["a", "b"]


def test_the_pool_reads_its_work_as_it_goes_and_keeps_no_result_when_told():
    """A generator of 2,000 tasks at concurrency 4: never more than the window (4 in flight,
    4 queued) taken from it and unfinished; every result seen by on_result, none kept."""
    from assay.runs._pool import window

    lock = threading.Lock()
    state = {"taken": 0, "finished": 0, "most": 0}

    def work():
        for i in range(2000):
            with lock:
                state["taken"] += 1
                state["most"] = max(state["most"], state["taken"] - state["finished"])
            yield i

    def fn(i: int) -> int:
        return i * 2

    def seen(_w: int, _r: int) -> None:
        with lock:
            state["finished"] += 1

    out = run_pool(work(), fn, concurrency=4, on_result=seen, progress=False, keep=False)
    assert out == []
    assert state["finished"] == state["taken"] == 2000
    assert state["most"] <= window(4) == 8
    kept = run_pool(iter(range(50)), fn, concurrency=4, progress=False)
    assert kept == [2 * i for i in range(50)]  # in the order of the work
