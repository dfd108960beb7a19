"""Judge items concurrently: every item ends as a judgment — scored, or unscored with a reason."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

import dspy
from tqdm import tqdm

from assay.lm import cost_usd
from assay.programs import JudgeConfig, unscored_reason
from assay.types import Item, Judgment, Usage


def make_adapter(kind: str) -> dspy.Adapter:
    return dspy.JSONAdapter() if kind == "json" else dspy.ChatAdapter()


def usage_of(tracker: Any, config: JudgeConfig) -> Usage:
    """Tokens and cost of every LM call made under ``tracker`` (cache hits count zero)."""
    price = (config.price.input_per_mtok, config.price.output_per_mtok) if config.price else None
    total = Usage()
    for model, entries in tracker.usage_data.items():
        for entry in entries:
            p = int(entry.get("prompt_tokens") or 0)
            c = int(entry.get("completion_tokens") or 0)
            if not p and not c:
                continue  # a cache hit: no call was made
            cost = cost_usd(_model_name(model, config), p, c, price) or 0.0
            total = total + Usage(prompt_tokens=p, completion_tokens=c, cost_usd=cost, calls=1)
    return total


def _model_name(tracked: str, config: JudgeConfig) -> str:
    for cfg in [config, *config.members]:
        if tracked.endswith(cfg.model) or cfg.model.endswith(tracked):
            return cfg.model
    return tracked


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
    usage = usage_of(tracker, config)
    return Judgment(
        **base,
        **result,
        usage=usage,
        latency_s=round(time.perf_counter() - start, 4),
        cached=usage.calls == 0,
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
    """Judge ``items`` with up to ``concurrency`` calls in flight; ``on_judgment`` sees each
    finished judgment (the run store appends it) before the next is reported."""
    items = list(items)
    out: list[Judgment] = []
    bar = tqdm(total=len(items), desc=desc, unit="item", disable=not progress, dynamic_ncols=True)
    unscored = 0
    try:
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            futures = [pool.submit(judge_one, program, item, config) for item in items]
            for fut in as_completed(futures):
                j = fut.result()
                if on_judgment is not None:
                    on_judgment(j)
                out.append(j)
                unscored += j.score is None
                bar.set_postfix(unscored=unscored, refresh=False)
                bar.update(1)
    finally:
        bar.close()
    order = {item.id: i for i, item in enumerate(items)}
    return sorted(out, key=lambda j: order[j.item_id])
