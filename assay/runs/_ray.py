"""The judging stage on Ray: items judged by a pool of Ray actors, results persisted by the driver.

``execution: {engine: ray, address: auto}`` in a run config (or ``--ray``) sends the judging
tasks of ``evaluate`` and ``harness`` to a Ray cluster. Each actor rebuilds every judge program
it needs from the judge's config (:class:`ProgramRecipe`: the same config, rollout and retries
as the local run), judges its share with a thread per call, and returns each judgment as it
finishes; the driver writes them through the same run store, in the same order of events as a
local pool. So resume, zero-call re-runs and metrics are those of a local run. A judge of a
plug-in's kind is built once the actor has imported that plug-in (its recipe names it): a file
by its path, which the workers must see (a local instance, or a path they share), a module by
its name, which must be importable there.

Ray is an optional dependency (``pip install 'assay[ray]'``), imported only here.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from assay.errors import ConfigError, RunError


class ExecutionConfig(BaseModel):
    """Where judging runs: ``local`` (threads in this process) or ``ray``. ``address`` is the
    Ray cluster's (``auto``: the one this machine belongs to; ``local``: start one here;
    ``ray://host:10001``: a remote head); ``actors`` judging actors share ``concurrency``
    (default: one per CPU of the cluster, at most ``concurrency``). Not part of any run hash:
    a run resumes on either engine."""

    model_config = ConfigDict(extra="forbid")

    engine: Literal["local", "ray"] = Field(
        default="local", description="local (threads in this process) or ray"
    )
    address: str | None = Field(
        default="auto",
        description=(
            "the Ray cluster: auto (the one this machine belongs to), local (start "
            "one here) or ray://HOST:10001"
        ),
    )
    actors: int | None = Field(
        default=None,
        ge=1,
        description="judging actors (default: one per cluster CPU, at most concurrency)",
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
        cls, config: Any, *, rollout: int | None, retries: int, base: Path | None
    ) -> ProgramRecipe:
        """The recipe of a program built here and now (with this process's DSPy cache)."""
        import dspy

        from assay._registry import plugin_of
        from assay.programs import get_kind

        task = getattr(config, "task", None)
        plugin = plugin_of(get_kind(task)) if task else None
        disk = getattr(dspy.cache, "disk_cache_dir", None)
        on_disk = bool(getattr(dspy.cache, "enable_disk_cache", False)) and disk is not None
        memory = bool(getattr(dspy.cache, "enable_memory_cache", False))
        return cls(
            config=config,
            rollout=rollout,
            retries=retries,
            base=str(base) if base is not None else None,
            cache=(disk if on_disk else None, memory),
            plugins=[plugin] if plugin else [],
        )


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
        # workers import assay from where this process does (a checkout, an editable install)
        here = str(Path(__file__).resolve().parents[3])
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


class _Worker:
    """One judging actor: programs built once per recipe, calls in threads (max_concurrency)."""

    def __init__(self) -> None:
        import assay  # noqa: F401  (offline-safe environment defaults in the worker too)

        self._programs: dict[str, Any] = {}
        self._cache: tuple[str | None, bool] | None = None

    def _program(self, recipe: ProgramRecipe) -> Any:
        import threading

        from assay.programs import build_judge, judge_lm_factory
        from assay.types import stable_hash

        key = stable_hash(
            [recipe.config.model_dump(mode="json"), recipe.rollout, recipe.retries, recipe.base]
        )
        if key not in self._programs:
            with self.__dict__.setdefault("_lock", threading.Lock()):
                if self._cache != recipe.cache:
                    import dspy

                    disk, memory = recipe.cache
                    dspy.configure_cache(
                        enable_disk_cache=disk is not None,
                        enable_memory_cache=memory,
                        disk_cache_dir=disk,
                    )
                    self._cache = recipe.cache
                if key not in self._programs:
                    from assay._registry import load_plugins

                    load_plugins(recipe.plugins)  # its kind's, before it is looked up
                    base = Path(recipe.base) if recipe.base else None
                    factory = judge_lm_factory(
                        retries=recipe.retries, base=base, rollout=recipe.rollout
                    )
                    self._programs[key] = build_judge(recipe.config, factory)
        return self._programs[key]

    def judge(self, recipe: ProgramRecipe, item: Any, config: Any, attempt: int) -> Any:
        from assay.runs._judging import judge_one

        return judge_one(self._program(recipe), item, config, attempt)


def run_on_ray(
    tasks: list[Any],
    *,
    execution: ExecutionConfig,
    concurrency: int,
    on_judgment: Callable[[Any, Any], None] | None,
    progress: bool,
    desc: str,
    deadline: float | None,
    postfix: Callable[[Any], dict[str, Any]] | None = None,
) -> list[Any]:
    """Judge ``tasks`` (each with a ``recipe``) on Ray actors; ``on_judgment`` runs here, in the
    driver, as each judgment arrives. Ctrl-C or the deadline stops at once: the actors are
    killed, calls in flight abandoned, everything finished already persisted."""
    missing = [t for t in tasks if t.recipe is None]
    if missing:
        raise ConfigError(
            "execution engine ray rebuilds each judge from its config in the workers; this run "
            "judges with programs it cannot rebuild (a custom LM factory): run it locally"
        )
    from tqdm import tqdm

    from assay.lm import note_usage  # the calls of each judgment, in the run's call ledger

    ray = _connect(execution)
    cpus = int(ray.cluster_resources().get("CPU", 1))
    n_actors = max(1, min(execution.actors or cpus, concurrency, len(tasks) or 1))
    per_actor = max(1, math.ceil(concurrency / n_actors))
    actor_cls = ray.remote(num_cpus=0)(_Worker)
    actors = [actor_cls.options(max_concurrency=per_actor).remote() for _ in range(n_actors)]
    out: list[Any] = [None] * len(tasks)
    bar = tqdm(total=len(tasks), desc=desc, unit="call", disable=not progress, dynamic_ncols=True)
    try:
        # items partitioned round-robin over the actors; each actor runs per_actor at once
        refs = {
            actors[i % n_actors].judge.remote(t.recipe, t.item, t.config, t.attempt): i
            for i, t in enumerate(tasks)
        }
        pending = list(refs)
        while pending:
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            done, pending = ray.wait(pending, num_returns=1, timeout=timeout)
            if not done:
                finished = sum(r is not None for r in out)
                raise RunError(
                    f"deadline reached with {len(tasks) - finished} of {len(tasks)} calls "
                    "unfinished; everything finished is saved: re-run to resume"
                )
            for ref in done:
                i = refs[ref]
                judgment = ray.get(ref)
                note_usage(judgment.model, judgment.usage, via="ray")  # the run's call ledger
                if on_judgment is not None:
                    on_judgment(tasks[i], judgment)
                out[i] = judgment
                if postfix is not None:
                    bar.set_postfix(**postfix(judgment), refresh=False)
                bar.update(1)
    finally:
        for actor in actors:  # nothing waits on a hung call: the actors go with their calls
            ray.kill(actor)
        bar.close()
    return [j for j in out if j is not None]
