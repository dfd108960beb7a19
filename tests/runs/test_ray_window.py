"""The Ray pool's window, with Ray's calls stood in for (no cluster): the work is read as the
pool goes, each actor has at most twice its threads' worth sent and unfinished, work of one
affinity waits for its own actor while the work behind it goes on to the others, and every
piece of work is sent once and taken once."""

from __future__ import annotations

from typing import Any

import pytest

from assay.runs._ray import RemoteWork, _Actors, _Window
from assay.types import stable_hash

pytest.importorskip("ray", reason="the [ray] extra is not installed")


class FakeRay:
    """What the pool asks of Ray: actors whose ``run.remote`` returns a ref, finished when the
    test says so (:meth:`finish`)."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, Any]] = []  # (actor, the work's argument) in sending order
        self.done: set[Any] = set()

    def remote(self, **_options: Any):
        return lambda cls: self  # the actor class: its options(...).remote() an actor

    def options(self, **_options: Any) -> Any:
        return self

    def nodes(self) -> list[dict[str, Any]]:
        return []

    def kill(self, _actor: Any) -> None:
        pass

    def wait(self, refs: list[Any], num_returns: int, timeout: float | None):
        ready = [r for r in refs if r in self.done][:num_returns]
        return ready, [r for r in refs if r not in ready]

    def get(self, ref: Any) -> tuple[Any, list[Any]]:
        return ref[1], []

    def finish(self, refs: list[Any]) -> None:
        self.done.update(refs)


class Pool(_Actors):
    """An :class:`_Actors` on :class:`FakeRay`, its actors numbered (a ref: ``(actor, arg)``)."""

    def __init__(self, ray: FakeRay, n: int, per_actor: int) -> None:
        super().__init__(ray, n, per_actor=per_actor)
        self.actors = [_Numbered(ray, k) for k in range(n)]


class _Numbered:
    def __init__(self, ray: FakeRay, k: int) -> None:
        self.ray, self.k = ray, k

    @property
    def run(self) -> Any:
        ray, k = self.ray, self.k

        class Run:
            @staticmethod
            def remote(_fn: Any, arg: Any) -> tuple[int, Any]:
                ray.sent.append((k, arg))
                return (k, arg)

        return Run


def noop(worker: Any, arg: Any) -> Any:
    return arg


def test_work_of_one_affinity_waits_for_its_actor_while_the_rest_goes_on():
    ray = FakeRay()
    pool = Pool(ray, n=2, per_actor=2)  # room for 4 each, 8 in all
    busy = int(stable_hash("busy"), 16) % 2  # the actor of affinity "busy"
    work = [RemoteWork(noop, (f"a{k}",), affinity="busy") for k in range(6)]
    work += [RemoteWork(noop, (f"f{k}",)) for k in range(20)]
    read: list[int] = []

    def reading():
        for k, w in enumerate(work):
            read.append(k)
            yield w

    window = _Window(reading(), pool)
    window.fill()
    # the busy actor's four, its other two held; the other actor takes the free work behind
    assert sorted(a for k, a in ray.sent if k == busy) == ["a0", "a1", "a2", "a3"]
    assert sorted(a for k, a in ray.sent if k != busy) == ["f0", "f1", "f2", "f3"]
    assert [w.args[0] for _, w in window.held] == ["a4", "a5"]
    assert len(read) == 10  # no more read than sent and held

    taken: list[int] = []
    most = 0
    while window.in_flight:
        most = max(most, len(window.in_flight), *pool.load)
        assert max(pool.load) <= pool.room == 4
        ray.finish(list(window.in_flight)[:3])  # a few at a time
        for ref in window.wait(None):
            i, value = window.take(ref, "")
            assert value == work[i].args[0]
            taken.append(i)
        window.fill()
    assert most == 8
    assert sorted(taken) == list(range(len(work)))  # each once
    assert len(ray.sent) == len(work) and not window.held and not pool.sent
