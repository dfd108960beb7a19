"""Shared machinery of the agent-transcript tests (``agent_perturbation``, ``agent_positives``):
one generation unit per transcript × rubric criterion × target, the :class:`AgentPerturber`
run with each stage's LM calls counted under ``plan`` / ``edit`` / ``summarize`` / ``verify``,
and every transcript that yields no probe counted with its reason.

The planner, editor and summarizer run on the harness's ``generator`` model, the verifier on its
``validator`` model. Probes are scored per criterion (``scoring = "criterion"``) against the
transcript judges' verdict on that criterion.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import dspy
from pydantic import Field

from assay.data import last_assistant_text_index
from assay.errors import ConfigError
from assay.lm import StrictInt
from assay.programs import AgentPerturber, Criterion, JudgeConfig, Objective, objective
from assay.reliability._probe import Dropped, Generation, Probe, Validation
from assay.reliability._registry import (
    GenerationContext,
    ReliabilityTest,
    TestSettings,
    Unit,
)
from assay.scale import Scale
from assay.types import Item, Message, Usage

ROLES = {"plan": "generator", "edit": "generator", "summarize": "generator", "verify": "validator"}
DROP_REASONS = {
    "rejected": "validator_rejected",
    "no_assistant_message": "no_assistant_message",
    "empty_plan": "empty_plan",
    "planner_failed": "planner_failed",
    "editor_failed": "editor_failed",
    "summarizer_failed": "summarizer_failed",
    "verifier_failed": "verifier_failed",
}


class AgentSettings(TestSettings):
    """Settings of the agent tests (recorded with the run, part of the probes' identity)."""

    criteria: list[str] | None = Field(
        default=None, description="rubric criterion ids to test (default: all of them)"
    )
    score_targets: list[StrictInt] | None = Field(
        default=None,
        description="ordinal criteria (with score_levels): the levels to make one probe each for",
    )
    max_edit_rounds: StrictInt = Field(
        default=3,
        ge=1,
        le=20,
        description="the most edits per probe (at most 20: each is LM calls)",
    )
    summary_messages: StrictInt = Field(
        default=40, ge=1, description="the rolling summary reads the last N messages"
    )
    summary_words: StrictInt = Field(default=150, ge=10, description="the summary's cap")
    perturber_state: str | None = Field(
        default=None, description="DSPy JSON state (file or MLflow URI) of the perturber"
    )


class AgentTest(ReliabilityTest):
    """Base of the two agent tests; a subclass sets ``objective_kind`` and may keep the
    untouched transcript (``try_untouched``) or unconfirmed probes (``keep_rejected``)."""

    scoring = "criterion"
    needs_labels = False
    Settings: ClassVar[type[TestSettings]] = AgentSettings
    objective_kind: ClassVar[Literal["fail", "pass"]]

    def __init__(self, settings: TestSettings | None = None):
        super().__init__(settings)
        self.perturber = AgentPerturber()
        self.criteria: dict[str, Criterion] = {}
        self._scale: Scale | None = None

    @property
    def s(self) -> AgentSettings:
        assert isinstance(self.settings, AgentSettings)
        return self.settings

    def programs(self) -> dict[str, dspy.Module]:
        return {"perturber": self.perturber}

    # -- set-up ------------------------------------------------------------------------------
    def check(self, items: list[Item], scale: Scale) -> None:
        super().check(items, scale)
        self._scale = scale

    def check_judges(self, judges: list[JudgeConfig]) -> None:
        """Every judge reads transcripts against a rubric list holding the tested criteria;
        score targets are levels of an ordinal criterion."""
        others = [f"'{j.name}' (task: {j.task})" for j in judges if j.task != "transcript"]
        if others:
            raise ConfigError(
                f"{self.name} edits agent transcripts and needs transcript judges; "
                f"judge {', '.join(others)} cannot judge them"
            )
        rubric = {c.id: c for c in judges[0].criteria or []}
        ids = self.s.criteria or list(rubric)
        unknown = [c for c in ids if c not in rubric]
        if unknown:
            raise ConfigError(
                f"{self.name}: criteria {', '.join(unknown)} are not in judge "
                f"'{judges[0].name}''s rubric ({', '.join(rubric)})"
            )
        for j in judges[1:]:
            missing = [c for c in ids if c not in {x.id for x in j.criteria or []}]
            if missing:
                raise ConfigError(
                    f"{self.name}: judge '{j.name}' has no criterion {', '.join(missing)}"
                )
        if self.s.score_targets is not None:
            ordinal = [rubric[c] for c in ids if rubric[c].score_levels]
            if not ordinal:
                raise ConfigError(f"{self.name}: score_targets needs a criterion with score_levels")
            for c in ordinal:
                off = [t for t in self.s.score_targets if t not in c.scores]
                if off:
                    raise ConfigError(
                        f"{self.name}: score_targets {off} are not levels of criterion "
                        f"'{c.id}' ({', '.join(map(str, c.scores))})"
                    )
        self.criteria = {c: rubric[c] for c in ids}

    def default_targets(self, criterion: Criterion) -> list[int]:
        """The levels of an ordinal criterion to aim for when ``score_targets`` is not set."""
        raise NotImplementedError

    def objectives(self, criterion: Criterion) -> list[Objective]:
        assert self._scale is not None, "call check(items, scale) first"
        if not criterion.score_levels:
            return [objective(self.objective_kind, self._scale)]
        targets = self.s.score_targets or self.default_targets(criterion)
        return [objective("score", self._scale, t, criterion.level_label(t) or "") for t in targets]

    def units(self, items: list[Item]) -> list[Unit]:
        if not self.criteria:
            raise RuntimeError(f"{self.name}: call check_judges(judges) before units(items)")
        return [
            Unit(
                id=f"{self.name}:{it.id}:{c.id}:{obj.variant}",
                sources=[it],
                # the criterion whole: its text is what generation reads (the unit's identity)
                payload={"criterion": c, "objective": obj},
            )
            for it in items
            for c in self.criteria.values()
            for obj in self.objectives(c)
        ]

    # -- generation ----------------------------------------------------------------------------
    try_untouched: ClassVar[bool] = False

    def keep_rejected(self) -> bool:
        return False

    def generate(self, unit: Unit, ctx: GenerationContext) -> list[Probe | Dropped]:
        src = unit.sources[0]
        criterion: Criterion = unit.payload["criterion"]
        obj: Objective = unit.payload["objective"]
        variant = [criterion.id, obj.variant]
        if not src.transcript:
            return [
                Dropped(
                    test=self.name,
                    source_id=src.id,
                    variant=variant,
                    reason="not_applicable",
                    detail="the item has no transcript",
                )
            ]

        def run(stage: str, module: dspy.Module, inputs: dict[str, Any]) -> dspy.Prediction:
            return ctx.call(ROLES[stage], module, stage=stage, shared=True, **inputs)[0]

        outcome = self.perturber(
            transcript=src.transcript,
            criterion=criterion,
            objective=obj,
            max_edit_rounds=self.s.max_edit_rounds,
            summary_messages=self.s.summary_messages,
            summary_words=self.s.summary_words,
            try_untouched=self.try_untouched,
            run=run,
        ).outcome
        generated = Usage.total(u for k, u in ctx.usage.items() if k != "verify")
        verified = ctx.usage.get("verify", Usage())
        kept = outcome.status == "confirmed" or (
            outcome.status == "rejected" and self.keep_rejected()
        )
        if not kept:
            return [
                Dropped(
                    test=self.name,
                    source_id=src.id,
                    variant=variant,
                    reason=DROP_REASONS[outcome.status],  # type: ignore[arg-type]
                    detail=outcome.reason,
                    usage=generated + verified,
                )
            ]
        return [self._probe(src, criterion, obj, outcome, ctx, generated, verified, variant)]

    def _probe(self, src, criterion, obj, outcome, ctx, generated, verified, variant) -> Probe:
        transcript: list[Message] = outcome.transcript
        final = last_assistant_text_index(transcript)
        confirmed = outcome.status == "confirmed"
        return Probe.from_source(
            self.name,
            src,
            variant,
            self.s.model_dump(),
            response=transcript[final].content if final is not None else src.response,
            transcript=transcript,
            target=obj.target,
            target_source="validator" if confirmed else "construction",
            generation=None
            if outcome.untouched
            else Generation(
                model=ctx.model_of("generator"),
                temperature=ctx.temperatures.get("generator"),
                prompt=self.perturber.instruction,
                usage=generated,
            ),
            validation=Validation(
                model=ctx.model_of("validator"),
                verdict=confirmed,
                score=outcome.score,
                reason=outcome.reason,
                usage=verified,
            ),
            meta={
                "criterion": criterion.id,
                "objective": obj.kind,
                "untouched": outcome.untouched,
                "thesis": outcome.thesis,
                "plan": outcome.plan,
                "plan_dropped": outcome.plan_dropped,
                "edits": [e.as_meta() for e in outcome.edits],
            },
        )
