"""``label_flip``: an LLM rewrite that should move the verdict to the other side of the scale.

The target is set by construction (binary: the other label; ordinal: the far end of the scale
from the source's label) and a validator must confirm the rewrite deserves it; unconfirmed
probes are dropped and counted.
"""

from __future__ import annotations

from assay.errors import ConfigError
from assay.programs import is_pairwise
from assay.reliability._registry import GenerationContext, reliability_test
from assay.reliability.probes._rewrite import RewriteTest, guarded_call
from assay.scale import Scale
from assay.signatures import ConfirmVerdict, FlipVerdict
from assay.types import Item, Usage


def flipped_target(expected: int, scale: Scale) -> int:
    """Binary: the other value; otherwise the far end of the scale from ``expected``."""
    values = scale.values
    if len(values) == 2:
        return values[1] if expected == values[0] else values[0]
    mid = (values[0] + values[-1]) / 2
    return values[0] if expected > mid else values[-1]


def verdict_text(score: int, scale: Scale) -> str:
    label = scale.label_of(score)
    return f"{label} ({score})" if label is not None else str(score)


@reliability_test("label_flip")
class LabelFlipTest(RewriteTest):
    scoring = "flip"
    rewriter = FlipVerdict
    checker = ConfirmVerdict
    verdict_field = "confirmed"
    change = "flip the verdict"

    def check(self, items: list[Item], scale: Scale) -> None:
        """A preference has no "other side" to rewrite one response toward (A → tie?), and the
        rewrite would touch only the first answer: refused for pairwise judges."""
        if is_pairwise(scale):
            raise ConfigError(
                "tests.label_flip: rewrites a single judged response toward the opposite "
                "verdict; for pairwise judges use position_bias"
            )
        super().check(items, scale)

    def target(self, src: Item, ctx: GenerationContext) -> int | None:
        assert src.expected is not None
        return flipped_target(src.expected, ctx.scale)

    def rewrite_inputs(self, src: Item, ctx: GenerationContext) -> dict:
        assert src.expected is not None
        return {
            "rubric": ctx.rubric,
            "request": src.request,
            "response": src.response,
            "current_verdict": verdict_text(src.expected, ctx.scale),
            "target_verdict": verdict_text(flipped_target(src.expected, ctx.scale), ctx.scale),
        }

    def validate(
        self, src: Item, text: str, target: int | None, ctx: GenerationContext
    ) -> tuple[bool, str | None, Usage]:
        assert target is not None
        pred, usage = guarded_call(
            ctx,
            "validator",
            self.validator,
            stage="validate",
            rubric=ctx.rubric,
            request=src.request,
            response=text,
            verdict=verdict_text(target, ctx.scale),
        )
        return pred.ok, pred.reason, usage
