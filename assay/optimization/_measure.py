"""Measuring a judge program on dev and test (and the dev format variants), resumably."""

from __future__ import annotations

from typing import Any

import dspy

from assay.evaluation import summarize_run
from assay.optimization._config import OptimizeConfig
from assay.optimization._objective import consistency, format_variants, make_metric
from assay.optimization._results import Measurement, ObjectiveParts
from assay.runs import JudgeTask, RunStore, run_tasks
from assay.types import Item, Judgment, Usage


class _FixedInputs(dspy.Module):
    """The judge on precomputed inputs (format variants of dev items), for the runner."""

    def __init__(self, judge: dspy.Module, inputs_by_id: dict[str, dict[str, Any]]):
        super().__init__()
        self.judge = judge
        self.inputs_by_id = inputs_by_id

    def inputs(self, item: Item) -> dict[str, Any]:
        return self.inputs_by_id[item.id]

    def forward(self, **inputs: Any) -> dspy.Prediction:
        return self.judge(**inputs)


def measure(
    program: dspy.Module,
    splits: dict[str, list[Item]],
    config: OptimizeConfig,
    store: RunStore,
    journal: str,
    *,
    progress: bool,
    desc: str,
) -> Measurement:
    """Judge dev and test (and with ``invariance`` the dev format variants), resumably from
    ``journal``; agreement with CIs per split and the objective's parts on dev."""
    cfg = config.judge
    tasks = [JudgeTask(program, it, cfg) for part in ("dev", "test") for it in splits[part]]
    variants_of: dict[str, list[str]] = {}
    if config.invariance.enabled:
        inputs_by_id: dict[str, dict[str, Any]] = {}
        for it in splits["dev"]:
            for name, inputs in format_variants(
                cfg, program.inputs(it), config.invariance.variants
            ):
                vid = f"{it.id}~{name}"
                inputs_by_id[vid] = inputs
                variants_of.setdefault(it.id, []).append(vid)
        fixed = _FixedInputs(program, inputs_by_id)
        tasks += [JudgeTask(fixed, Item(id=vid, request=""), cfg) for vid in inputs_by_id]
    done = store.judgments(journal)
    todo = [t for t in tasks if t.item.id not in done]
    run_tasks(
        todo,
        concurrency=config.concurrency,
        on_judgment=lambda _t, j: store.append(j, journal),
        progress=progress,
        desc=desc,
    )
    by_id = store.judgments(journal)
    b = config.bootstrap
    dev, test = (
        summarize_run(
            [by_id[i] for i in expected],
            expected,
            cfg.scale,  # type: ignore[arg-type]
            threshold=None,
            n_resamples=b.n_resamples,
            confidence=b.confidence,
            seed=b.seed,
        )
        for expected in ({it.id: it.expected for it in splits[part]} for part in ("dev", "test"))
    )
    return Measurement(
        dev=dev,
        test=test,
        objective=objective_parts(splits["dev"], by_id, variants_of, config),
        usage=Usage.total(by_id[t.item.id].usage for t in tasks),
    )


def objective_parts(
    items: list[Item],
    by_id: dict[str, Judgment],
    variants_of: dict[str, list[str]],
    config: OptimizeConfig,
) -> ObjectiveParts:
    """The objective on ``items`` with the very metric the optimizer used, and its parts."""
    metric = make_metric(config)
    label, values, consistent = [], [], []
    for it in items:
        variant_scores = [by_id[v].score for v in variants_of.get(it.id, [])]
        ex = dspy.Example(expected=it.expected)
        pred = dspy.Prediction(
            score=by_id[it.id].score,
            expected_score=by_id[it.id].expected_score,
            variant_scores=variant_scores,
        )
        label.append(float(metric.label_metric(ex, pred)))  # type: ignore[attr-defined]
        values.append(float(metric(ex, pred)))
        c = consistency(pred.score, variant_scores)
        if c is not None:
            consistent.append(c)
    return ObjectiveParts(
        metric=metric.__name__,
        n=len(items),
        label_agreement=_mean(label),
        consistency=_mean(consistent) if config.invariance.enabled else None,
        with_variants=len(consistent),
        weight=config.invariance.weight if config.invariance.enabled else 0.0,
        value=_mean(values),
    )


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None
