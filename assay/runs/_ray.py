"""Work on Ray: the judging of ``evaluate`` and ``harness`` and the harness's generation done by
a pool of Ray actors, the results persisted by the driver.

``execution: {engine: ray, address: auto}`` in a run config (or ``--ray``) sends that work to a
Ray cluster. The pool (:func:`run_remote`) places its actors over the nodes in proportion to
their CPUs, runs module-level functions there (:class:`RemoteWork`) and hands each result to
the driver as it finishes, with the call-ledger records of the calls made for it; an actor lost
with its node is replaced on another and its unfinished work sent again. The driver reads the
work as it goes and keeps a window of it sent (twice the actors' threads), as a local pool does,
so what it holds and waits on is the window's, however long the run. Judging
(:func:`run_on_ray`): each actor rebuilds every judge program it needs from the judge's config
(:class:`ProgramRecipe`: the same config, rollout and retries as the local run), judges its
share with a thread per call, and the driver writes each judgment through the same run store, in
the same order of events as a local pool. So resume, zero-call re-runs and metrics are those of a
local run. A judge of a plug-in's kind is built once the actor has imported that plug-in (its
recipe names it): a file by its path, which the workers must see (a local instance, or a path
they share), a module by its name, which must be importable there.

Ray is an optional dependency (``pip install 'assay[ray]'``), imported only here.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sized
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from assay.errors import ConfigError, RunError

if TYPE_CHECKING:
    from assay.programs import JudgeConfig

_log = logging.getLogger(__name__)


class ExecutionConfig(BaseModel):
    """Where judging (and the harness's generation) runs: ``local`` (threads in this process)
    or ``ray``. ``address`` is the Ray cluster's (``auto``: the one this machine belongs to;
    ``local``: start one here; ``HOST:PORT``: a head's; ``ray://host:10001``: a remote head
    through Ray Client); ``actors`` actors share ``concurrency`` (default: one per CPU of the
    cluster, at most ``concurrency``). Not part of any run hash: a run resumes on either
    engine."""

    model_config = ConfigDict(extra="forbid")

    engine: Literal["local", "ray"] = Field(
        default="local", description="local (threads in this process) or ray"
    )
    address: str | None = Field(
        default="auto",
        description=(
            "the Ray cluster: auto (the one this machine belongs to), local (start "
            "one here), HOST:PORT (a head's) or ray://HOST:10001"
        ),
    )
    actors: int | None = Field(
        default=None,
        ge=1,
        description="actors (default: one per cluster CPU, at most concurrency)",
    )


class ProgramRecipe(BaseModel):
    """How a judge program is built — enough for another process to build the same one."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    config: Any  # JudgeConfig (its sampling already set: a stability probe's temperature)
    rollout: int | None = None
    retries: int = 3
    base: str | None = None  # where relative paths of the config resolve (scripted sheets)
    # DSPy's response cache as the driver has it: (disk cache folder or None, memory cache on)
    cache: tuple[str | None, bool] = (None, False)
    plugins: list[str] = []  # the plug-in that registered the judge's kind, if one did

    @classmethod
    def of(
        cls, config: JudgeConfig, *, rollout: int | None, retries: int, base: Path | None
    ) -> ProgramRecipe:
        """The recipe of a program built here and now (with this process's DSPy cache)."""
        from assay._registry import plugin_of
        from assay.programs import get_kind

        task = getattr(config, "task", None)
        plugin = plugin_of(get_kind(task)) if task else None
        return cls(
            config=config,
            rollout=rollout,
            retries=retries,
            base=str(base) if base is not None else None,
            cache=driver_cache(),
            plugins=[plugin] if plugin else [],
        )


def driver_cache() -> tuple[str | None, bool]:
    """DSPy's response cache as this process has it — (its disk folder or None, memory cache
    on) —, for an actor to set the same."""
    import dspy

    disk = getattr(dspy.cache, "disk_cache_dir", None)
    on_disk = bool(getattr(dspy.cache, "enable_disk_cache", False)) and disk is not None
    memory = bool(getattr(dspy.cache, "enable_memory_cache", False))
    return (disk if on_disk else None, memory)


def _connect(execution: ExecutionConfig) -> Any:
    import importlib.util
    import sys

    if importlib.util.find_spec("ray") is None:
        raise ConfigError(
            "execution engine ray needs Ray: pip install 'assay[ray]' (or run without --ray)"
        )
    if "IPython" in sys.modules and sys.modules["IPython"] is None:
        del sys.modules["IPython"]  # the command line marked it absent; Ray imports it as is
    import ray

    if not ray.is_initialized():
        # workers import assay from where this process does (a checkout, an editable install):
        # the folder that holds the package (this file is <there>/assay/runs/_ray.py)
        here = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
        address = None if execution.address in (None, "local") else execution.address
        try:
            ray.init(
                address=address,
                runtime_env={"env_vars": {"PYTHONPATH": path}},
                log_to_driver=False,
                configure_logging=False,
            )
        except ConnectionError as exc:
            raise ConfigError(
                f"no Ray cluster at address {execution.address!r} ({exc}); start one with "
                "'ray start --head', or set execution.address: local"
            ) from None
    return ray


def disconnect() -> None:
    """Leave the Ray cluster this process joined, if it did: its driver's threads stop printing
    (a raylet's error message — a worker that died with its node — goes to ``sys.stdout``
    from a thread of Ray's own, whenever it arrives)."""
    import sys

    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()


class Worker:
    """One actor of the pool: :meth:`run` calls ``fn(worker, *args)`` in one of its threads
    (``max_concurrency``) and returns its value with the call ledger's records of this process
    since the last result — every answered call and failed attempt reaches the driver's ledger
    with some result, whichever thread made it. What a function builds (a judge program, a
    test's programs and LMs) it keeps here with :meth:`built`, once per key.

    A run that stops early (Ctrl-C, its deadline, an error) closes each actor (:meth:`close`)
    before it kills it, from a thread of its own (the ``control`` concurrency group: the pool's
    threads may all be on the wire): the actor's ledger closes as a local run's does, waiting
    for the calls in flight (:data:`~assay.runs._run.SETTLE_S` at most), and refuses every call
    after, until the actor is gone; the records no result took reach the driver's ledger then."""

    def __init__(self) -> None:
        import threading

        import assay  # noqa: F401  (offline-safe environment defaults in the worker too)
        from assay.lm import record_calls

        self._built: dict[str, Any] = {}
        self._cache: tuple[str | None, bool] | None = None
        self._lock = threading.Lock()
        self._calls: list[Any] = []
        self._calls_lock = threading.Lock()
        self._stopping = False  # closing: no work starts, no result takes records
        self._returned = 0  # results that took their records with them
        self._ledger = record_calls(self._note)  # for the actor's life
        self._recording = self._ledger.__enter__()  # closed by close

    def _note(self, record: Any) -> None:
        with self._calls_lock:
            self._calls.append(record)

    def run(self, fn: Callable[..., Any], *args: Any) -> tuple[Any, list[Any] | None]:
        """``(fn's value, the records since the last result)``; once the actor is closing, work
        that had not started does nothing (``(None, None)``) and a result that comes takes no
        records (``(value, None)``): they go to the driver with :meth:`close`'s."""
        if self._stopping:
            return None, None
        value = fn(self, *args)
        with self._calls_lock:
            if self._stopping:
                return value, None
            calls, self._calls = self._calls, []
            self._returned += 1
        return value, calls

    def close(self, settle_s: float) -> tuple[list[Any], int]:
        """The run stopped: no work starts here any more, and the actor's ledger closes — it
        refuses new calls, waits for those in flight (``settle_s`` at most, or until
        :meth:`hurry`: their answers noted before the LM cache keeps them) and notes those still
        in flight then as abandoned (:data:`~assay.lm.ABANDONED`, their answers kept in no
        cache). Returns the records no result took, and how many results took theirs
        (:meth:`run`): the driver fetches those it has not, which are finished already."""
        with self._calls_lock:
            self._stopping = True
        self._recording.close(settle_s)
        with self._calls_lock:
            calls, self._calls = self._calls, []
            return calls, self._returned

    def hurry(self) -> None:
        """:meth:`close` waits no longer (a second Ctrl-C in the driver): the calls still in
        flight are abandoned now."""
        self._recording.stop_waiting()

    def built(
        self,
        key: str,
        build: Callable[[], Any],
        *,
        cache: tuple[str | None, bool],
        plugins: list[str],
        scripts: dict[str, Any] | None = None,
    ) -> Any:
        """``build()``'s value, made once per ``key`` in this process: after DSPy's response
        cache is set as the driver has it, the ``plugins`` imported (what they register is
        looked up by name) and the driver's registered ``scripts`` registered here."""
        if key in self._built:
            return self._built[key]
        with self._lock:
            if key not in self._built:
                if self._cache != cache:
                    import dspy

                    disk, memory = cache
                    dspy.configure_cache(
                        enable_disk_cache=disk is not None,
                        enable_memory_cache=memory,
                        disk_cache_dir=disk,
                    )
                    self._cache = cache
                from assay._registry import load_plugins
                from assay.lm import register_script

                load_plugins(plugins)
                for name, factory in (scripts or {}).items():
                    register_script(name, factory)
                self._built[key] = build()
        return self._built[key]


def judge_remote(
    worker: Worker, recipe: ProgramRecipe, item: Any, config: Any, attempt: int
) -> Any:
    """One judgment, in an actor: the program its recipe describes, built there once."""
    from assay.programs import build_judge, judge_lm_factory
    from assay.runs._judging import judge_one
    from assay.types import stable_hash

    def build() -> Any:
        base = Path(recipe.base) if recipe.base else None
        factory = judge_lm_factory(retries=recipe.retries, base=base, rollout=recipe.rollout)
        return build_judge(recipe.config, factory)

    key = stable_hash(
        [
            "judge",
            recipe.config.model_dump(mode="json"),
            recipe.rollout,
            recipe.retries,
            recipe.base,
        ]
    )
    program = worker.built(key, build, cache=recipe.cache, plugins=recipe.plugins)
    return judge_one(program, item, config, attempt)


@dataclass(frozen=True)
class RemoteWork:
    """One call for the actor pool: ``fn(worker, *args)`` in an actor (``fn`` a module-level
    function, which the actor imports by name). Work of the same ``affinity`` goes to the same
    actor, so what it builds and shares there (a memo of identical calls) is shared by all."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    affinity: str | None = None


def run_on_ray(
    tasks: Iterable[Any],
    *,
    execution: ExecutionConfig,
    concurrency: int,
    on_judgment: Callable[[Any, Any], None] | None,
    progress: bool,
    desc: str,
    deadline: float | None,
    postfix: Callable[[Any], dict[str, Any]] | None = None,
    total: int | None = None,
    keep: bool = True,
) -> list[Any]:
    """Judge ``tasks`` (each with a ``recipe``) on Ray actors; ``on_judgment`` runs here, in the
    driver, as each judgment arrives. ``tasks`` may be an iterator, read as the pool goes
    (``total`` sizes the progress bar); ``keep=False`` returns no judgment."""
    if total is None and isinstance(tasks, Sized):
        total = len(tasks)
    stream = iter(tasks)
    first = next(stream, None)
    if first is None:
        return []
    _rebuildable(first)  # before the cluster is joined: a run that cannot go there says so
    sent: dict[int, Any] = {}  # the tasks read and not yet judged, by position

    def work() -> Iterator[RemoteWork]:
        for i, t in enumerate(itertools.chain([first], stream)):
            sent[i] = _rebuildable(t)
            yield RemoteWork(judge_remote, (t.recipe, t.item, t.config, t.attempt))

    def seen(i: int, judgment: Any) -> None:
        task = sent.pop(i)
        if on_judgment is not None:
            on_judgment(task, judgment)

    out = run_remote(
        work(),
        execution=execution,
        concurrency=concurrency,
        on_result=seen,
        progress=progress,
        desc=desc,
        deadline=deadline,
        postfix=postfix,
        total=total,
        keep=keep,
    )
    return [j for j in out if j is not None]


def _rebuildable(task: Any) -> Any:
    """``task``, which has the recipe an actor rebuilds its program from; ConfigError if not."""
    if task.recipe is None:
        raise ConfigError(
            "execution engine ray rebuilds each judge from its config in the workers; this run "
            "judges with programs it cannot rebuild (a custom LM factory): run it locally"
        )
    return task


def run_remote(
    work: Iterable[RemoteWork],
    *,
    execution: ExecutionConfig,
    concurrency: int,
    on_result: Callable[[int, Any], None] | None,
    progress: bool,
    desc: str,
    deadline: float | None,
    postfix: Callable[[Any], dict[str, Any]] | None = None,
    unit: str = "call",
    total: int | None = None,
    keep: bool = True,
) -> list[Any]:
    """Do ``work`` on a pool of Ray actors spread over the cluster's nodes; ``on_result(i,
    value)`` runs here, in the driver, as each result arrives (``i``: the work's position), and
    the calls it made go to this process's call ledger; the values are returned in ``work``'s
    order (none with ``keep=False``).

    ``work`` is read as the pool goes, as a local pool reads it (:class:`_Window`): each actor
    has at most twice its threads' worth sent and unfinished — every thread busy and as much
    queued behind, so a thread that finishes finds its next work there — and the driver waits
    only on that window, taking every result in at once. ``total`` sizes the progress bar when
    ``work`` has no length.

    An actor lost with its node (or its process) is replaced, and its unfinished work sent to
    the new one. Ctrl-C, the deadline or an error stops the run: everything finished is
    persisted already, and before the actors are killed their calls in flight are waited for,
    as a local run's are (:data:`~assay.runs._run.SETTLE_S` at most; :meth:`_Actors.stop`) —
    every answer they were served is in the ledger, the calls still in flight then noted as
    abandoned."""
    from tqdm import tqdm

    from assay.runs import _run

    if total is None and isinstance(work, Sized):
        total = len(work)
    ray = _connect(execution)
    cpus = int(ray.cluster_resources().get("CPU", 1))
    at_most = concurrency if total is None else max(1, total)
    n_actors = max(1, min(execution.actors or cpus, concurrency, at_most))
    per_actor = max(1, math.ceil(concurrency / n_actors))
    pool = _Actors(ray, n_actors, per_actor=per_actor, settle_s=_run.SETTLE_S)
    window = _Window(work, pool)
    out: list[Any] = []
    finished = 0
    bar = tqdm(total=total, desc=desc, unit=unit, disable=not progress, dynamic_ncols=True)
    stopped = True
    try:
        window.fill()
        while window.in_flight:
            ready = window.wait(deadline)
            if not ready:
                raise RunError(
                    f"deadline reached with {_unfinished(total, finished)} calls unfinished; "
                    "everything finished is saved: re-run to resume"
                )
            for ref in ready:
                i, value = window.take(ref, unfinished=_unfinished(total, finished, of=False))
                if i is None:  # its actor was lost: the work goes to the one in its place
                    continue
                if on_result is not None:
                    on_result(i, value)
                if keep:
                    out.extend([None] * (i + 1 - len(out)))
                    out[i] = value
                finished += 1
                if postfix is not None:
                    bar.set_postfix(**postfix(value), refresh=False)
                bar.update(1)
            window.fill()
        stopped = False
    finally:
        bar.close()
        try:
            if stopped:
                pool.stop()  # the calls in flight waited for, their records noted
        finally:
            pool.close()  # nothing waits on a hung call: the actors go with their calls
    return out


def _unfinished(total: int | None, finished: int, *, of: bool = True) -> str:
    """How many of the run's calls are unfinished, as an error says it: ``3 of 10`` (``3``
    without ``of``), ``some`` when the work's length is not known."""
    if total is None:
        return "some"
    return f"{total - finished} of {total}" if of else str(total - finished)


class _Window:
    """The work of a :func:`run_remote`, read as the pool goes: what the actors have been sent
    and not finished (:attr:`in_flight`, at most :attr:`_Actors.room` per actor) and what was
    read for an actor whose room is full (:attr:`held`, in order, at most the pool's whole
    window). Work of no affinity goes to the actor with the least of it; work of an affinity
    waits for its own actor, while the work behind it goes on to the others. An actor lost
    with its node leaves its unfinished work here, sent again before anything new is read."""

    def __init__(self, work: Iterable[RemoteWork], pool: _Actors) -> None:
        self.pool = pool
        self.source = enumerate(work)
        self.exhausted = False
        self.in_flight: dict[Any, tuple[int, RemoteWork]] = {}  # ref → (position, work)
        self.held: deque[tuple[int, RemoteWork]] = deque()

    @property
    def limit(self) -> int:
        """The most work in flight over the pool: each actor's room."""
        return self.pool.room * len(self.pool.actors)

    def fill(self) -> None:
        """Send what waits for an actor with room (in order), then read and send more work,
        until every actor's room is full, the work held reaches :attr:`limit` or the work runs
        out."""
        if self.held:
            waiting, self.held = self.held, deque()
            for i, w in waiting:
                self._send_or_hold(i, w)
        while not self.exhausted and len(self.held) < self.limit and self.pool.has_room():
            nxt = next(self.source, None)
            if nxt is None:
                self.exhausted = True
                return
            self._send_or_hold(*nxt)

    def _send_or_hold(self, i: int, w: RemoteWork) -> None:
        k = self.pool.actor_for(w)
        if k is None:
            self.held.append((i, w))
            return
        self.in_flight[self.pool.send(w, k)] = (i, w)

    def wait(self, deadline: float | None) -> list[Any]:
        """The refs in flight that are ready: the first waited for (until ``deadline``, a
        ``time.monotonic()`` value: none ready then), with every other one ready by then."""
        ray = self.pool.ray
        refs = list(self.in_flight)
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready, rest = ray.wait(refs, num_returns=1, timeout=timeout)
        if ready and rest:
            ready += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
        return ready

    def take(self, ref: Any, unfinished: str) -> tuple[int | None, Any]:
        """``(position, value)`` of a ready ref, its calls noted in the ledger; ``(None,
        None)`` when its actor was lost — the work then held to be sent again."""
        i, w = self.in_flight.pop(ref)
        result = self.pool.result(ref, unfinished)
        if result is None:
            self.held.appendleft((i, w))
            return None, None
        return i, result[0]


ANSWER_S = 5.0
"""How long past its wait for the calls in flight a stopping run waits for an actor's answer
(:meth:`_Actors.stop`): an actor hung or lost meanwhile is skipped, its records with it."""


REPLACEMENTS = 3
"""How many times each actor of the pool may be replaced after its process or its node died
(its unfinished work then goes to the new one): a node lost mid-run costs the calls it had in
flight, not the run."""


class _Actors:
    """The pool's actors, placed over the cluster's nodes (:func:`_places`); work goes to the
    actor of its affinity (or the one with the least work), each actor with :attr:`room` for
    twice its threads' worth, and a lost actor is replaced once for all the work it held."""

    def __init__(self, ray: Any, n: int, per_actor: int, settle_s: float = 0.0) -> None:
        self.ray = ray
        self.per_actor = per_actor
        self.settle_s = settle_s  # how long a stopping actor waits for its calls in flight
        # "control": threads for close and hurry, while the pool's may all be busy
        self.cls = ray.remote(num_cpus=0, concurrency_groups={"control": 2})(Worker)
        places = _places(ray.nodes())
        # hard placement first: Ray's view of a node that just joined may lag, and a soft
        # placement would then fall back to the driver's node
        self.nodes = [places[k % len(places)] if places else None for k in range(n)]
        self.actors = [self._start(node, soft=False) for node in self.nodes]
        self.generation = [0] * n  # how many times each actor was replaced
        self.fetched = [0] * n  # the results of each actor (this generation) the driver got
        self.sent: dict[Any, tuple[int, int]] = {}  # ref → (actor, its generation then)
        self.load = [0] * n  # the work each actor was sent and has not finished (in ``sent``)

    def _start(self, node: str | None, *, soft: bool) -> Any:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        options: dict[str, Any] = {"max_concurrency": self.per_actor}
        if node is not None:
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node, soft=soft)
        return self.cls.options(**options).remote()

    @property
    def room(self) -> int:
        """The most work an actor is sent and has not finished: a call for each of its threads
        and as many queued behind them, so a thread that finishes finds its next work there
        (the driver's window, as :func:`~assay.runs._pool.window` is a local pool's)."""
        return 2 * self.per_actor

    def has_room(self) -> bool:
        return min(self.load) < self.room

    def actor_for(self, work: RemoteWork) -> int | None:
        """The actor ``work`` goes to now — its affinity's, else the one with the least work —,
        or None when that actor has no room."""
        from assay.types import stable_hash

        if work.affinity is None:
            k = min(range(len(self.load)), key=self.load.__getitem__)
        else:
            k = int(stable_hash(work.affinity), 16) % len(self.actors)
        return k if self.load[k] < self.room else None

    def send(self, work: RemoteWork, k: int) -> Any:
        """``work`` sent to actor ``k``; its ref, which the driver waits on."""
        ref = self.actors[k].run.remote(work.fn, *work.args)
        self.sent[ref] = (k, self.generation[k])
        self.load[k] += 1
        return ref

    def _forget(self, ref: Any) -> tuple[int, int]:
        """``ref``'s ``(actor, generation)``: finished, it is sent no more."""
        k, generation = self.sent.pop(ref)
        self.load[k] -= 1
        return k, generation

    def result(self, ref: Any, unfinished: str) -> tuple[Any, list[Any]] | None:
        """``(value, calls)`` of ``ref``, its calls noted in this process's call ledger; None
        when its actor was lost (then replaced, once for all the work it held). An actor lost
        more than :data:`REPLACEMENTS` times ends the run with one line — everything finished
        is already saved."""
        from ray.exceptions import RayActorError

        k, generation = self.sent[ref]
        try:
            result = self.ray.get(ref)
        except RayActorError as exc:
            self._forget(ref)
            if generation == self.generation[k]:
                self._replace(k, exc, unfinished)
            return None
        self._take(ref, result[1])
        return result

    def _take(self, ref: Any, calls: list[Any]) -> None:
        """The records of a result that took them (``ref``'s, which is sent no more), noted in
        this process's call ledger — whole, a Ctrl-C meanwhile raised after: a result's records
        are noted once, here or by :meth:`stop`, which takes every result still sent."""
        from assay.lm import note_calls

        with _whole():
            k, generation = self._forget(ref)
            if generation == self.generation[k]:
                self.fetched[k] += 1
            note_calls(calls, via="ray")

    def _replace(self, k: int, exc: Exception, unfinished: str) -> None:
        cause = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if self.generation[k] >= REPLACEMENTS:
            raise RunError(
                f"a Ray actor was lost {REPLACEMENTS + 1} times ({cause}) with {unfinished} "
                "calls unfinished; everything finished is saved: re-run to resume"
            ) from None
        logging.getLogger("assay").warning(
            "assay: a Ray actor was lost (%s); its unfinished work goes to a new one", cause
        )
        self.ray.kill(self.actors[k])
        # another node than the lost actor's, which may be gone before the cluster says so
        places = _places(self.ray.nodes())
        places = [p for p in places if p != self.nodes[k]] or places
        self.nodes[k] = places[k % len(places)] if places else None
        self.actors[k] = self._start(self.nodes[k], soft=True)
        self.generation[k] += 1
        self.fetched[k] = 0

    def stop(self) -> None:
        """The run stopped early: each actor closes (:meth:`Worker.close`: no work starts, its
        calls in flight are waited for, ``settle_s`` at most, those still in flight then noted
        as abandoned), and the records it held reach this process's ledger, with those of the
        results that arrive meanwhile — and of every result an actor says took its records,
        finished already. Their values are not kept: the run is stopping, and a local pool keeps
        none once it is. A second Ctrl-C stops the wait (:meth:`Worker.hurry`): the actors'
        calls still in flight are abandoned at once. An actor lost, or silent :data:`ANSWER_S`
        past the wait, is skipped."""
        from ray.exceptions import RayError

        from assay.lm import note_calls

        ray = self.ray

        def control(actor: Any, method: str, *args: Any) -> Any:
            return getattr(actor, method).options(concurrency_group="control").remote(*args)

        closing: dict[Any, int] = {}  # close's answer → its actor
        returned: dict[int, int] = {}  # actor → the results that took records, as it said

        def owed() -> bool:  # a result that took records has not reached this process yet
            return any(n > self.fetched[k] for k, n in returned.items())

        def settle(end: float) -> None:
            """The records of the closes and results that come, until ``end`` at most."""
            while (closing or owed()) and (left := end - time.monotonic()) > 0:
                pending = [*closing, *self.sent]
                ready, rest = ray.wait(pending, num_returns=1, timeout=left)
                if rest and ready:  # and whatever else is in already
                    ready += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
                for ref in ready:
                    try:
                        answer = ray.get(ref)
                    except RayError:  # its actor lost, or its work raised: nothing taken
                        answer = None
                    if ref not in closing:
                        if answer is None or answer[1] is None:  # with its actor's close
                            self._forget(ref)
                        else:
                            self._take(ref, answer[1])
                        continue
                    with _whole():
                        k = closing.pop(ref)
                        if answer is not None:
                            returned[k] = answer[1]
                            note_calls(answer[0], via="ray")

        try:
            for k, actor in enumerate(self.actors):
                closing[control(actor, "close", self.settle_s)] = k
            if self.sent and self.settle_s > 0:
                _log.warning(  # on the console: a Ctrl-C that seems ignored is pressed again
                    "assay: stopping: waiting up to %g s for the LM calls in flight on %d Ray "
                    "actors, whose answers are paid (Ctrl-C again to stop waiting)",
                    self.settle_s,
                    len(self.actors),
                )
            settle(time.monotonic() + self.settle_s + ANSWER_S)
        except KeyboardInterrupt:  # the second: the actors wait no longer
            for k in closing.values():
                control(self.actors[k], "hurry")
            settle(time.monotonic() + ANSWER_S)
            raise

    def close(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor)


@contextlib.contextmanager
def _whole() -> Iterator[None]:
    """The block done whole: a Ctrl-C that comes meanwhile is raised once it has run (in the
    main thread, where Python handles it; a handler set outside Python is left alone)."""
    import signal
    import threading

    before = signal.getsignal(signal.SIGINT)
    if before is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: came.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
        if came:
            signal.raise_signal(signal.SIGINT)


def _places(nodes: list[dict[str, Any]]) -> list[str]:
    """The alive nodes' ids, each once per CPU, taken in turns: ``[a, b, a]`` for a node ``a``
    of two CPUs and ``b`` of one (none for a node started with no CPU, such as a head kept free
    of work)."""
    cpus = {n["NodeID"]: int(n.get("Resources", {}).get("CPU", 0)) for n in nodes if n.get("Alive")}
    order = sorted(cpus)
    return [
        node for turn in range(max(cpus.values(), default=0)) for node in order if cpus[node] > turn
    ]
