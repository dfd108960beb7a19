"""Judge items concurrently: every item ends as a judgment — scored, or unscored with a reason."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, TypeVar

import dspy
from tqdm import tqdm

from assay.lm import make_adapter, usage_of_tracker
from assay.programs import JudgeConfig, unscored_reason
from assay.types import Item, Judgment

W = TypeVar("W")
R = TypeVar("R")


def judge_one(program: dspy.Module, item: Item, config: JudgeConfig) -> Judgment:
    """Judge one item. Grading failures become unscored judgments; bugs propagate."""
    start = time.perf_counter()
    base: dict[str, Any] = {
        "item_id": item.id,
        "judge": config.name,
        "model": config.model,
        "config_hash": config.config_hash(),
    }
    with dspy.context(adapter=make_adapter(config.adapter)), dspy.track_usage() as tracker:
        try:
            pred = program(**program.inputs(item))
        except Exception as exc:
            reason = unscored_reason(exc)
            if reason is None:
                raise
            result = {"unscored": reason, "error": f"{type(exc).__name__}: {exc}"[:2000]}
        else:
            result = {
                "score": pred.score,
                "label": pred.get("label"),
                "unscored": pred.get("unscored"),
                "reasoning": pred.get("reasoning"),
                "expected_score": pred.get("expected_score"),
                "members": pred.get("members"),
                "criteria": pred.get("criteria"),
                "raw": pred.get("outputs"),
            }
    usage = usage_of_tracker(tracker, config.price_pair)
    return Judgment(
        **base,
        **result,
        usage=usage,
        latency_s=round(time.perf_counter() - start, 4),
        cached=usage.calls == 0 and "error" not in result,
    )


@dataclass(frozen=True)
class JudgeTask:
    """One item for one judge program; ``key`` tells the caller where the judgment belongs."""

    program: dspy.Module
    item: Item
    config: JudgeConfig
    key: str = ""


def run_pool(
    work: list[W],
    fn: Callable[[W], R],
    *,
    concurrency: int,
    on_result: Callable[[W, R], None] | None = None,
    progress: bool = True,
    desc: str = "",
    unit: str = "call",
    postfix: Callable[[R], dict[str, Any]] | None = None,
) -> list[R]:
    """``fn`` over ``work`` with up to ``concurrency`` in flight, results in ``work`` order.
    ``on_result`` sees each result as it finishes (so the caller can persist it before the
    next); an exception stops the pool: pending work is cancelled, finished work is kept."""
    out: list[R | None] = [None] * len(work)
    bar = tqdm(total=len(work), desc=desc, unit=unit, disable=not progress, dynamic_ncols=True)
    pool = ThreadPoolExecutor(max_workers=concurrency)
    try:
        futures = {pool.submit(fn, w): i for i, w in enumerate(work)}
        for fut in as_completed(futures):
            i = futures[fut]
            r = fut.result()
            if on_result is not None:
                on_result(work[i], r)
            out[i] = r
            if postfix is not None:
                bar.set_postfix(**postfix(r), refresh=False)
            bar.update(1)
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True)
        bar.close()
    return [r for r in out if r is not None]


def run_tasks(
    tasks: list[JudgeTask],
    *,
    concurrency: int = 4,
    on_judgment: Callable[[JudgeTask, Judgment], None] | None = None,
    progress: bool = True,
    desc: str = "judging",
) -> list[Judgment]:
    """Judge every task in one pool (items, tests and judges interleave); ``on_judgment`` sees
    each judgment as it finishes."""
    unscored = [0]

    def count(j: Judgment) -> dict[str, Any]:
        unscored[0] += j.score is None
        return {"unscored": unscored[0]}

    return run_pool(
        tasks,
        lambda t: judge_one(t.program, t.item, t.config),
        concurrency=concurrency,
        on_result=on_judgment,
        progress=progress,
        desc=desc,
        postfix=count,
    )


def judge_items(
    program: dspy.Module,
    items: Iterable[Item],
    config: JudgeConfig,
    *,
    concurrency: int = 4,
    on_judgment: Callable[[Judgment], None] | None = None,
    progress: bool = True,
    desc: str = "judging",
) -> list[Judgment]:
    """Judge ``items`` with one program; judgments come back in item order."""
    tasks = [JudgeTask(program, it, config) for it in items]
    callback = (lambda _t, j: on_judgment(j)) if on_judgment is not None else None
    return run_tasks(
        tasks, concurrency=concurrency, on_judgment=callback, progress=progress, desc=desc
    )
