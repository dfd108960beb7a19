"""``task: pairwise`` — which of two responses to the same request is better under the rubric:
``A``, ``B`` or, where the scale allows it, ``tie``.

An item is a pair: ``response`` is response A and ``meta["response_b"]`` response B (a table
with a ``response_b`` column, or pairs built from a score column by ``data.pairs``); its
``expected`` is the reference preference on that canonical pair.

The judge sees the pair in a seeded order — A first or B first, from a hash of the request and
response B (so perturbing response A keeps the order), or ``meta["order"]`` where a probe sets
it — and its verdict is mapped back to the canonical labels: a reference "A" means the same
response whatever order was shown. The order and the verdict as shown are recorded in every
judgment's raw outputs (``order``, ``shown_verdict``).
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

import dspy

from assay.errors import DataError, quoted
from assay.programs.kinds._base import JudgeKind, judge_kind
from assay.programs.kinds._settings import JudgeProgram, JudgeSettings
from assay.scale import Scale
from assay.signatures import JudgePair
from assay.types import Item

PAIRWISE = Scale(kind="categorical", labels=["A", "B", "tie"])
PAIRWISE_NO_TIE = Scale(kind="categorical", labels=["A", "B"])
PAIRWISE_SCALES = (PAIRWISE, PAIRWISE_NO_TIE)
Order = Literal["AB", "BA"]
_MIRROR = {"A": "B", "B": "A", "tie": "tie"}


def is_pairwise(scale: Scale | None) -> bool:
    return scale in PAIRWISE_SCALES


def presentation_order(item: Item) -> Order:
    """The order the judge sees ``item`` in: ``meta["order"]`` if set, else a seeded hash of
    the request and response B (the same for every judge and every perturbation of A)."""
    forced = item.meta.get("order")
    if forced is not None:
        if forced not in ("AB", "BA"):
            raise DataError(f"order must be 'AB' or 'BA', got {forced!r}", field="order")
        return forced
    key = f"pairwise-order\x00{item.request}\x00{item.meta.get('response_b', '')}"
    return "AB" if hashlib.sha256(key.encode()).digest()[0] % 2 == 0 else "BA"


def mirror_preference(score: int | None, scale: Scale = PAIRWISE) -> int | None:
    """The same preference with A and B swapped (A ↔ B, tie stays)."""
    if score is None:
        return None
    return scale.label_scores[_MIRROR[scale.label_of(score) or ""]]


def swap_pair(item: Item, scale: Scale = PAIRWISE) -> Item:
    """``item`` with responses A and B exchanged and its reference mirrored; nothing else
    changes (a forced ``order`` is kept as it is)."""
    if "response_b" not in item.meta:
        raise DataError(
            f"item {quoted(item.id)}: not a pair: no meta 'response_b'", field="response_b"
        )
    meta = {**item.meta, "response_b": item.response}
    return item.model_copy(
        update={
            "response": item.meta["response_b"],
            "expected": mirror_preference(item.expected, scale),
            "meta": meta,
        }
    )


@judge_kind("pairwise")
class PairwiseKind(JudgeKind):
    signature = JudgePair
    judged_field = "response"
    scaled = True
    default_scale = PAIRWISE

    @classmethod
    def check(cls, config: JudgeSettings) -> None:
        if not is_pairwise(config.scale):
            raise ValueError(
                "a pairwise judge's scale is categorical [A, B, tie] (or [A, B] without ties)"
            )

    @classmethod
    def inputs(cls, config: JudgeSettings, item: Item) -> dict[str, Any]:
        response_b = item.meta.get("response_b")
        if not isinstance(response_b, str):
            raise DataError(
                f"item {item.id}: a pairwise judge needs a second response (a 'response_b' "
                "column, or data.pairs to build pairs from a score column)",
                field="response_b",
            )
        return {
            "rubric": config.rubric or "",
            "request": item.request,
            "response_a": item.response,
            "response_b": response_b,
            "order": presentation_order(item),
        }

    @classmethod
    def forward(cls, judge: JudgeProgram, inputs: dict[str, Any]) -> dspy.Prediction:
        shown = dict(inputs)
        order = shown.pop("order", "AB")
        if order == "BA":
            shown["response_a"], shown["response_b"] = inputs["response_b"], inputs["response_a"]
        pred = judge.predict(**shown)
        shown_verdict = str(pred.verdict).strip()
        canonical = _MIRROR.get(shown_verdict, shown_verdict) if order == "BA" else shown_verdict
        one = judge.prediction(dspy.Prediction(**{**dict(pred.items()), "verdict": canonical}))
        one.outputs = {**one.outputs, "order": order, "shown_verdict": shown_verdict}
        return one
