"""Judge items concurrently: every item ends as a judgment — scored, or unscored with a reason."""

from __future__ import annotations

import time
from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, get_args

import dspy

from assay.lm import error_text, kept_nowhere, make_adapter, track_limits, usage_of_tracker
from assay.programs import JudgeConfig, unscored_reason
from assay.runs._pool import run_pool
from assay.runs._ray import ExecutionConfig, ProgramRecipe
from assay.types import Item, Judgment, UnscoredReason


def judge_one(
    program: dspy.Module,
    item: Item,
    config: JudgeConfig,
    attempt: int = 1,
    *,
    config_hash: str | None = None,
) -> Judgment:
    """Judge one item (``attempt``: how many times it has been judged, this one included).
    Grading failures become unscored judgments; bugs propagate. ``config_hash``: the config's
    :meth:`~assay.programs.JudgeConfig.config_hash` when the caller has it (a pool of many
    items computes it once, not per item)."""
    start = time.perf_counter()
    base: dict[str, Any] = {
        "item_id": item.id,
        "judge": config.name,
        "model": config.model_shown,
        "config_hash": config_hash or config.config_hash(),
    }
    with (
        dspy.context(adapter=make_adapter(config.adapter)),
        kept_nowhere(),
        dspy.track_usage() as tracker,
        track_limits() as waits,
    ):
        try:
            pred = program(**program.inputs(item))
        except Exception as exc:
            reason = unscored_reason(exc)
            if reason is None:
                raise
            result = {"unscored": reason, "error": error_text(exc)}
        else:
            result = {
                "score": pred.score,
                "label": pred.get("label"),
                "unscored": pred.get("unscored"),
                "reasoning": pred.get("reasoning"),
                "expected_score": pred.get("expected_score"),
                "probabilities": pred.get("probabilities"),
                "calibrated_probability": pred.get("calibrated_probability"),
                "confidence": pred.get("confidence"),
                "members": pred.get("members"),
                "criteria": pred.get("criteria"),
                "raw": pred.get("outputs"),
            }
    usage = usage_of_tracker(tracker, config.price_pair, waits)
    if config.confidence is not None:  # asked for (its value None where it could not be read)
        base["confidence_source"] = config.confidence.source
    return Judgment(
        **base,
        # what the judge did not say is left to its default (None): the same judgment, whose
        # set of the fields given (pydantic keeps one in each model, and a run holds every
        # judgment until it scores) stays under the 19 names at which its table grows to 2 KB
        **{k: v for k, v in result.items() if v is not None},
        usage=usage,
        latency_s=round(time.perf_counter() - start, 4),
        attempt=attempt,
        # taken whole from the LM cache: its lookups gave answers, and the server served none
        # (an answer served without usage is a call too: never a cache hit)
        cached=usage.cached_calls > 0 and usage.calls == 0 and "error" not in result,
    )


@dataclass(frozen=True)
class JudgeTask:
    """One item for one judge program; ``key`` tells the caller where the judgment belongs."""

    program: dspy.Module
    item: Item
    config: JudgeConfig
    key: str = ""
    attempt: int = 1
    recipe: ProgramRecipe | None = None  # how to rebuild ``program`` elsewhere (Ray workers)


def run_tasks(
    tasks: Iterable[JudgeTask],
    *,
    concurrency: int = 4,
    on_judgment: Callable[[JudgeTask, Judgment], None] | None = None,
    progress: bool = True,
    desc: str = "judging",
    deadline: float | None = None,
    execution: ExecutionConfig | None = None,
    total: int | None = None,
    keep: bool = True,
) -> list[Judgment]:
    """Judge every task in one pool (items, tests and judges interleave); ``on_judgment`` sees
    each judgment as it finishes. ``tasks`` may be an iterator, read as the pool goes (a few
    dozen tasks at a time; ``total`` sizes the progress bar); ``keep=False`` returns no
    judgment (``on_judgment`` has seen each), so a long run holds none of them.
    ``execution.engine: ray`` judges on Ray actors instead (each task's ``recipe`` rebuilds
    its program there), reading ``tasks`` as they go too; ``on_judgment`` still runs here."""
    unscored = [0]

    def count(j: Judgment) -> dict[str, Any]:
        unscored[0] += j.score is None
        return {"unscored": unscored[0]}

    if execution is not None and execution.engine == "ray":
        from assay.runs._ray import run_on_ray

        return run_on_ray(
            tasks,
            execution=execution,
            concurrency=concurrency,
            on_judgment=on_judgment,
            progress=progress,
            desc=desc,
            deadline=deadline,
            postfix=count,
            total=total,
            keep=keep,
        )

    hashes: dict[int, str] = {}  # per config (alive as long as its tasks): once, not per item

    def judge(t: JudgeTask) -> Judgment:
        digest = hashes.get(id(t.config))
        if digest is None:
            digest = hashes[id(t.config)] = t.config.config_hash()
        return judge_one(t.program, t.item, t.config, t.attempt, config_hash=digest)

    return run_pool(
        tasks,
        judge,
        concurrency=concurrency,
        on_result=on_judgment,
        progress=progress,
        desc=desc,
        postfix=count,
        deadline=deadline,
        total=total,
        keep=keep,
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


class Latest(NamedTuple):
    """What deciding whether to judge an item again reads of its latest judgment."""

    score: int | None
    unscored: str | None
    attempt: int


class JudgedSoFar(Protocol):
    """The latest judgment of each item judged so far (or what :func:`to_judge` reads of it)."""

    def get(self, item_id: str, /) -> Judgment | Latest | None: ...


_REASONS: tuple[str, ...] = get_args(UnscoredReason)  # an unscored judgment's, by number


class LatestColumns:
    """:class:`Latest` of each item by its position, as columns: a few bytes an item in arrays
    (``n`` positions to start with; :meth:`append` adds one)."""

    def __init__(self, n: int = 0):
        self._score = array("q", [0]) * n
        self._scored = bytearray(n)
        self._reason = array("h", [-1]) * n  # an index into _REASONS, -1: scored
        self._attempt = array("l", [0]) * n

    def append(self) -> int:
        """One more position; returns it."""
        self._score.append(0)
        self._scored.append(0)
        self._reason.append(-1)
        self._attempt.append(0)
        return len(self._scored) - 1

    def put(self, p: int, j: Judgment) -> None:
        """Position ``p``'s latest judgment is ``j``."""
        self._score[p] = j.score or 0
        self._scored[p] = j.score is not None
        self._reason[p] = -1 if j.unscored is None else _REASONS.index(j.unscored)
        self._attempt[p] = j.attempt

    def latest(self, p: int) -> Latest:
        r = self._reason[p]
        return Latest(
            self._score[p] if self._scored[p] else None,
            None if r < 0 else _REASONS[r],
            self._attempt[p],
        )


class LatestJudgments:
    """What :func:`to_judge` reads of each item's latest judgment in a judgments file (a
    retried item's latest wins) — its score, unscored reason and attempt, a few bytes an item
    in arrays —, read from the file once and told of each judgment appended after: a run that
    decides what to judge again holds no judgment for it."""

    def __init__(self, judgments: Iterable[Judgment] = ()):
        self._position: dict[str, int] = {}
        self._columns = LatestColumns()
        for j in judgments:
            self.add(j)

    def add(self, j: Judgment) -> None:
        p = self._position.get(j.item_id)
        if p is None:
            p = self._position[j.item_id] = self._columns.append()
        self._columns.put(p, j)

    def get(self, item_id: str, /) -> Latest | None:
        p = self._position.get(item_id)
        return None if p is None else self._columns.latest(p)

    def __contains__(self, item_id: str) -> bool:
        return item_id in self._position

    def __len__(self) -> int:
        return len(self._position)


def to_judge(
    ids: Iterable[str], done: JudgedSoFar, retry: Iterable[str] = ()
) -> tuple[list[tuple[str, int]], int]:
    """``[(id, attempt)]`` to judge now and how many of them are retries: ids with no judgment
    yet (attempt 1), and ids whose judgment is unscored for a reason in ``retry`` (its attempt
    + 1: judged again as a fresh sample)."""
    reasons = set(retry)
    out: list[tuple[str, int]] = []
    retried = 0
    for i in ids:
        j = done.get(i)
        if j is None:
            out.append((i, 1))
        elif j.score is None and j.unscored in reasons:
            out.append((i, j.attempt + 1))
            retried += 1
    return out, retried


class ProgramsByAttempt:
    """A judge's program per attempt: attempt 1 uses the LM cache as usual; a retry is a fresh
    sample (a rollout id per attempt), so a cached failure is not served again."""

    def __init__(self, config: JudgeConfig, make: Callable[[int | None], dspy.Module]):
        self.config = config
        self._make = make
        self._programs: dict[int, dspy.Module] = {}

    def __call__(self, attempt: int) -> dspy.Module:
        if attempt not in self._programs:
            self._programs[attempt] = self._make(None if attempt == 1 else attempt)
        return self._programs[attempt]
