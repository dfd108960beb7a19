"""Judging in the harness: which items each judge still has to judge, one task per item, its
judgment appended as it finishes — sources and probes alike, in the same pool as generation.

Judging a source does not depend on any probe, and judging a probe depends only on its own
generation unit, so the harness starts the sources at once and each probe as soon as its unit
is committed (unless review is required); a final sweep judges whatever is left (reviewed,
edited or retried items). Every LM call holds one of the run's :class:`CallSlots` while it is on
the wire (:func:`assay.lm.gate_calls`), judging at a lower priority than generation, so
``concurrency`` bounds the calls in flight and the long generation chains go first.

An agent probe that is the untouched source transcript (``meta['untouched']``) is not judged
again: its judgment is the source's verdict on the probe's criterion, copied without a call.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dspy

from assay.programs import JudgeConfig, build_judge, judge_lm_factory
from assay.reliability._probe import Probe, judged_id
from assay.runs import (
    CallSlots,
    JudgeTask,
    LatestJudgments,
    ProgramRecipe,
    RunStore,
    judge_one,
    to_judge,
)
from assay.scale import Scale
from assay.types import Item, Judgment, Usage, stable_hash

JUDGE_PRIORITY = 1  # generation calls (priority 0) go first


def judgment_file(cfg: JudgeConfig) -> str:
    """The judge's judgments file, named by its config and the prices their cost is counted at
    (:meth:`~assay.programs.JudgeConfig.results_hash`): at another price the judge's work is
    done again into a file of its own, through the LM cache (no call)."""
    return f"judgments/{cfg.name}-{cfg.results_hash()[:8]}.jsonl"


def reuses_source(probe: Probe) -> bool:
    """An untouched agent probe: the source transcript itself, judged once (as the source)."""
    return bool(probe.meta.get("untouched")) and probe.review.status != "edited"


@dataclass
class JudgePlan:
    """The judges of a harness run, what each has judged so far and the tasks made this run.

    A judgment is appended to its judge's file as it comes and not kept: what deciding whether
    to judge an item again reads of it is (``done``, a few bytes an item); the metrics read
    the judgments back from the files (:mod:`._run_files`). The ``seeds`` are read when a
    task needs one (:meth:`seed`: by its id, its position kept)."""

    config: Any  # HarnessConfig
    judges: list[JudgeConfig]
    base_programs: dict[str, dspy.Module]
    store: RunStore
    config_dir: Path | None
    slots: CallSlots
    seeds: Sequence[Item] = ()
    done: dict[str, LatestJudgments] = field(default_factory=dict)
    tasked: set[tuple[str, str]] = field(default_factory=set)
    _at: dict[str, int] = field(default_factory=dict)  # a seed's position by its id
    _programs: dict[tuple, dspy.Module] = field(default_factory=dict)
    _sources: dict[str, dict[str, Judgment]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for cfg in self.judges:
            stored = self.store.iter_records(judgment_file(cfg), Judgment)
            self.done[cfg.name] = LatestJudgments(stored)
        self._at = {s.id: k for k, s in enumerate(self.seeds)}

    def seed(self, item_id: str) -> Item | None:
        """The seed of that id, read from the seeds (None: no seed has it)."""
        at = self._at.get(item_id)
        return None if at is None else self.seeds[at]

    # -- tasks -----------------------------------------------------------------------------
    def source_tasks(self) -> Iterator[JudgeTask]:
        """The seeds' tasks, made as they are taken: each judge's in turn, a seed at a time."""
        for cfg in self.judges:
            for it in self.seeds:
                sid = f"source:{it.id}"
                yield from self._tasks_of(cfg, {sid: it.model_copy(update={"id": sid})}, {}, {})

    def sources_left(self) -> int:
        """How many tasks :meth:`source_tasks` would make now (from the seeds' ids alone)."""
        left = 0
        for cfg in self.judges:
            ids = (f"source:{i}" for i in self._at)
            todo = (i for i in ids if (cfg.name, i) not in self.tasked)
            left += len(to_judge(todo, self.done[cfg.name], self.config.retry.unscored)[0])
        return left

    def probe_tasks(self, probes: list[Probe]) -> list[JudgeTask]:
        items: dict[str, Item] = {}
        sampled: dict[str, tuple[float | None, int]] = {}
        asked: dict[str, dict[str, Any]] = {}  # probe → another task (polarity's inverted rubric)
        seed_meta: dict[str, dict[str, Any]] = {}  # each source read once for these probes
        for p in probes:
            if reuses_source(p):
                continue
            pid = judged_id(p)
            item = p.as_item()  # a probe carries its source's meta (a pair's response B...)
            if p.source_id not in seed_meta:
                source = self.seed(p.source_id)
                seed_meta[p.source_id] = source.meta if source is not None else {}
            meta = {**seed_meta[p.source_id], **item.meta}
            items[pid] = item.model_copy(update={"id": pid, "meta": meta})
            if "rollout" in p.meta:  # a stability sample, or a placebo at the judge's sampling
                sampled[pid] = (p.meta.get("temperature"), p.meta["rollout"])
            if p.meta.get("judge_task"):
                asked[pid] = p.meta["judge_task"]
        return self.tasks(items, sampled, asked)

    def tasks(
        self,
        items: dict[str, Item],
        sampled: dict[str, tuple[float | None, int]] | None = None,
        asked: dict[str, dict[str, Any]] | None = None,
    ) -> list[JudgeTask]:
        """Tasks for the items each judge has no judgment of yet (or an unscored one to retry),
        once per run: an item tasked earlier in this run is not tasked again. Stability probes
        use the test's temperature and a distinct rollout id each, a placebo the judge's own
        sampling and its test's rollout id (a fresh sample); a retry is a fresh sample; a
        probe that asks another task (``meta["judge_task"]``) gets a judge configured for it."""
        sampled, asked = sampled or {}, asked or {}
        return [task for cfg in self.judges for task in self._tasks_of(cfg, items, sampled, asked)]

    def _tasks_of(
        self,
        cfg: JudgeConfig,
        items: dict[str, Item],
        sampled: dict[str, tuple[float | None, int]],
        asked: dict[str, dict[str, Any]],
    ) -> Iterator[JudgeTask]:
        """:meth:`tasks` for one judge."""
        todo = {i: it for i, it in items.items() if (cfg.name, i) not in self.tasked}
        work, _ = to_judge(todo, self.done[cfg.name], self.config.retry.unscored)
        for item_id, attempt in work:
            temperature, rollout = sampled.get(item_id, (None, None))
            if attempt > 1:  # a fresh sample: a rollout id of its own
                rollout = (rollout or 0) + 1000 * attempt
            self.tasked.add((cfg.name, item_id))
            task = asked.get(item_id)
            asked_cfg = with_task(cfg, task) if task else cfg
            run_cfg = (
                asked_cfg
                if temperature is None
                else asked_cfg.model_copy(update={"temperature": temperature})
            )
            yield JudgeTask(
                self._program(cfg, temperature, rollout, task),
                items[item_id],
                asked_cfg,
                judgment_file(cfg),
                attempt,
                ProgramRecipe.of(
                    run_cfg, rollout=rollout, retries=self.config.retries, base=self.config_dir
                ),
            )

    def _program(
        self,
        cfg: JudgeConfig,
        temperature: float | None,
        rollout: int | None,
        task: dict[str, Any] | None = None,
    ):
        if temperature is None and rollout is None and task is None:
            return self.base_programs[cfg.name]
        key = (cfg.name, temperature, rollout, stable_hash(task) if task else None)
        if key not in self._programs:
            run_cfg = (
                cfg if temperature is None else cfg.model_copy(update={"temperature": temperature})
            )
            run_cfg = with_task(run_cfg, task) if task else run_cfg
            self._programs[key] = build_judge(
                run_cfg,
                judge_lm_factory(
                    retries=self.config.retries, base=self.config_dir, rollout=rollout
                ),
            )
        return self._programs[key]

    # -- running -----------------------------------------------------------------------------
    def run(self, task: JudgeTask) -> Judgment:
        from assay.lm import gate_calls

        with gate_calls(self._hold):
            return judge_one(task.program, task.item, task.config, task.attempt)

    def _hold(self) -> Any:
        return self.slots.hold(JUDGE_PRIORITY)

    def persist(self, task: JudgeTask, judgment: Judgment) -> None:
        self.store.append(judgment, task.key)
        self.done[task.config.name].add(judgment)

    def copy_untouched(self, probes: list[Probe]) -> None:
        """Judgments of untouched agent probes from their source's (no LM call); written
        again only when the source's judgment changed (a retry). Called once every source is
        judged: the sources' judgments are read back from the judge's file then, once."""
        untouched = [p for p in probes if reuses_source(p)]
        if not untouched:
            return
        for cfg in self.judges:
            done = self.done[cfg.name]
            sources = self._source_judgments(cfg)
            for p in untouched:
                src = sources.get(f"source:{p.source_id}")
                if src is None:
                    continue
                c = p.meta.get("criterion")
                score = (src.criteria or {}).get(c, src.score) if c else src.score
                copy = src.model_copy(
                    update={
                        "item_id": p.id,
                        "score": score,
                        "label": cfg.scale.label_of(score) if score is not None else None,
                        "unscored": src.unscored if score is None else None,
                        "criteria": {c: score} if c else src.criteria,
                        "usage": Usage(),
                        "latency_s": 0.0,
                        "cached": True,
                    }
                )
                old = done.get(p.id)
                if old is None or old.attempt != copy.attempt or old.score != copy.score:
                    self.persist(JudgeTask(None, Item(id=p.id), cfg, judgment_file(cfg)), copy)

    def _source_judgments(self, cfg: JudgeConfig) -> dict[str, Judgment]:
        """The judge's latest judgment of each source, by item id (one per seed)."""
        if cfg.name not in self._sources:
            stored = self.store.iter_records(judgment_file(cfg), Judgment)
            self._sources[cfg.name] = {
                j.item_id: j for j in stored if j.item_id.startswith("source:")
            }
        return self._sources[cfg.name]


def with_task(cfg: JudgeConfig, task: dict[str, Any]) -> JudgeConfig:
    """``cfg`` (with a panel's members) asked another task: the ``instruction``, ``rubric`` and
    ``scale`` a probe's ``meta["judge_task"]`` names (the judgment records this config's hash)."""
    update: dict[str, Any] = {}
    if task.get("instruction") is not None:
        update["instruction"] = task["instruction"]
    if task.get("rubric") is not None:
        update["rubric"] = task["rubric"]
    if task.get("scale") is not None:
        update["scale"] = Scale.model_validate(task["scale"])
    if cfg.members:
        update["members"] = [with_task(m, task) for m in cfg.members]
    return cfg.model_copy(update=update)
