"""The objective optimised: a per-example agreement metric, optionally reliability-aware
(agreement across deterministic format variants of the judged text)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dspy

from assay.metrics import (
    absolute_error_score,
    exact_match,
    log_loss_score,
    quadratic_agreement,
    within_one,
)
from assay.optimization._config import OptimizeConfig
from assay.programs import JudgeConfig, get_kind, unscored_reason
from assay.types import Item, stable_hash


def _format_test(name: str):
    from assay.reliability import get_test

    return get_test(name)


def format_variants(
    config: JudgeConfig, inputs: dict[str, Any], variants: list[str]
) -> list[tuple[str, dict[str, Any]]]:
    """``(test name, inputs)`` for each format variant of the judged text that changes it.

    Deterministic: each test's generator is seeded by (test, hash of the text).
    """
    from assay.reliability import variant_rng

    field = get_kind(config.task).judged_field
    text = inputs[field]
    key = stable_hash(text)
    out = []
    for name in variants:
        varied = _format_test(name).perturb(text, variant_rng(name, key, 0))
        if varied != text:
            out.append((name, {**inputs, field: varied}))
    return out


class InvariantJudge(dspy.Module):
    """The judge, whose prediction also carries ``variant_scores``: its verdicts on the format
    variants of the same inputs. Variant calls are kept out of DSPy's trace, so an optimizer
    never takes a reformatted input for a demonstration."""

    def __init__(self, judge: dspy.Module, variants: list[str]):
        super().__init__()
        self.judge = judge
        self.variants = list(variants)

    def inputs(self, item: Item) -> dict[str, Any]:
        return self.judge.inputs(item)

    def forward(self, **inputs: Any) -> dspy.Prediction:
        pred = self.judge(**inputs)
        scores: list[int | None] = []
        with dspy.context(trace=None):
            for _, varied in format_variants(self.judge.config, inputs, self.variants):
                try:
                    scores.append(self.judge(**varied).score)
                except Exception as exc:
                    if unscored_reason(exc) is None:
                        raise
                    scores.append(None)  # an unscored variant is a changed verdict
        pred.variant_scores = scores
        return pred


def consistency(score: int | None, variant_scores: list[int | None]) -> float | None:
    """Share of variant verdicts equal to the verdict on the original (None: no variant)."""
    if not variant_scores:
        return None
    return sum(v == score for v in variant_scores) / len(variant_scores)


def make_metric(config: OptimizeConfig) -> Callable[..., float | bool]:
    """The DSPy metric optimised: the per-example label metric, or with ``invariance`` the
    weighted sum of it and consistency. Under a trace (DSPy bootstrapping demos) it is a bool:
    exact match, and with ``invariance`` also every variant verdict unchanged.

    It accepts GEPA's five arguments ``(gold, pred, trace, pred_name, pred_trace)``.
    """
    scale = config.judge.scale
    assert scale is not None
    lo, hi = min(scale.values), max(scale.values)
    label_metric = {
        "exact": exact_match,
        "absolute": absolute_error_score(lo, hi) if hi > lo else exact_match,
        "quadratic": quadratic_agreement(lo, hi) if hi > lo else exact_match,
        "within_one": within_one,
        "log_loss": log_loss_score(),
    }[config.metric]
    inv = config.invariance

    def objective(example, pred, trace=None, pred_name=None, pred_trace=None) -> float | bool:
        label = label_metric(example, pred, trace)
        if not inv.enabled:
            return label
        c = consistency(pred.get("score"), list(pred.get("variant_scores") or []))
        if trace is not None:
            return bool(label) and c in (None, 1.0)
        return float(label) if c is None else (1 - inv.weight) * float(label) + inv.weight * c

    objective.__name__ = f"{config.metric}{'+invariance' if inv.enabled else ''}"
    objective.label_metric = label_metric  # type: ignore[attr-defined]
    return objective


def examples(program: dspy.Module, items: list[Item], config: JudgeConfig) -> list[dspy.Example]:
    """DSPy examples: the judge's inputs, the label as the verdict field (so labelled demos show
    the right answer) and ``expected`` (the reference score the metrics read)."""
    scale = config.scale
    assert scale is not None
    verdict_field = get_kind(config.task).verdict_field
    named = scale.kind == "categorical" or bool(scale.labels)
    out = []
    for it in items:
        inputs = program.inputs(it)
        assert it.expected is not None
        verdict = scale.label_of(it.expected) if named else it.expected
        ex = dspy.Example(**inputs, **{verdict_field: verdict}, expected=it.expected)
        out.append(ex.with_inputs(*inputs))
    return out
