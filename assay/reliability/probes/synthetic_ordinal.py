"""``synthetic_ordinal``: generated responses aimed at each score of an ordinal scale.

For every bucket (score) of the scale, a generator writes responses aimed at that score from
few-shot examples of the bucket (or of its neighbours when the seeds have none); each candidate
must pass an embedding-similarity filter (against the seeds and the probes kept so far) and a
validator that scores it. The target is the validator's score. On each miss the bucket's
temperature ramps up by a step, up to a cap; it resets after a success; after
``max_consecutive_failures`` misses in a row the bucket is given up (exhausted) and reported.

Work is per bucket: :meth:`units` gives one unit per score, each with all seeds as sources.
:meth:`generate_all` runs every bucket in one loop with the same bucket manager.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import dspy
from pydantic import Field, model_validator

from assay.errors import ConfigError
from assay.lm import redact
from assay.programs import JudgeConfig, ScoreGenerator, ScoreValidator, unscored_reason
from assay.reliability._probe import Dropped, Generation, Probe, Validation
from assay.reliability._registry import (
    MAX_PER_SOURCE,
    GenerationContext,
    ProgramSettings,
    ReliabilityTest,
    TestSettings,
    Unit,
    reliability_test,
)
from assay.reliability.probes._buckets import (
    BucketManager,
    TemperatureRamp,
    example_indices,
)
from assay.reliability.probes._diversity import Embedder, make_embedder, max_similarity
from assay.scale import Scale
from assay.types import Item, StrictInt, Usage

log = logging.getLogger(__name__)

NAME = "synthetic_ordinal"
DEFAULT_RUBRIC = "Rate the overall quality of the response to the request."
_STAGES = {"generator": "generate", "validator": "validate"}  # usage is counted by stage


class SyntheticOrdinalSettings(ProgramSettings):
    per_bucket: StrictInt = Field(
        default=2, ge=1, le=MAX_PER_SOURCE, description="probes per scale bucket (at most 100)"
    )
    initial_temperature: float = Field(default=0.3, ge=0)
    temperature_step: float = Field(default=0.2, ge=0)
    max_temperature: float = Field(default=1.2, ge=0)
    max_consecutive_failures: StrictInt = Field(default=4, ge=1, le=MAX_PER_SOURCE)
    max_similarity: float = Field(default=0.9, gt=0, le=1)
    few_shot: StrictInt = Field(
        default=2, ge=0, le=20, description="examples of the bucket in the prompt (at most 20)"
    )
    embedder: Literal["auto", "minilm", "tfidf"] = "auto"
    tolerance: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _ramp(self) -> SyntheticOrdinalSettings:
        if self.max_temperature < self.initial_temperature:
            raise ValueError("max_temperature must be at least initial_temperature")
        return self


def bucket_values(scale: Scale) -> list[int]:
    """The scores to generate for; a :class:`ConfigError` unless the scale is ordinal (or
    categorical with a label → score map)."""
    if scale.kind == "ordinal" or (scale.kind == "categorical" and scale.scores):
        return scale.values
    raise ConfigError(
        f"{NAME} needs an ordinal scale (or a categorical one with 'scores'); "
        f"got {scale.describe()}"
    )


@reliability_test(NAME)
class SyntheticOrdinal(ReliabilityTest):
    scoring = "ordinal"
    needs_labels = True
    pool_based = True
    Settings = SyntheticOrdinalSettings

    def __init__(self, settings: TestSettings | None = None):
        super().__init__(settings)
        self._scale: Scale | None = None
        self.generator = ScoreGenerator()
        self.validator: ScoreValidator | None = None

    def programs(self) -> dict[str, dspy.Module]:
        out: dict[str, dspy.Module] = {"generator": self.generator}
        if self.validator is not None:
            out["validator"] = self.validator
        return out

    # -- set-up -----------------------------------------------------------------------------
    def check(self, items: list[Item], scale: Scale) -> None:
        super().check(items, scale)
        values = bucket_values(scale)
        off = [it.id for it in items if it.expected not in values]
        if off:
            raise ConfigError(
                f"{NAME}: seed items {', '.join(off[:5])} have labels off the {scale.describe()} scale"
            )
        if len(items) < len(values):
            raise ConfigError(
                f"{NAME} needs at least {len(values)} seed items, one per score of the "
                f"{scale.describe()} scale, to draw requests and few-shot examples from; "
                f"got {len(items)}"
            )
        if self._scale != scale or self.validator is None:
            self.validator = ScoreValidator(scale)
        self._scale = scale

    def check_judges(self, judges: list[JudgeConfig]) -> None:
        transcript = [j.name for j in judges if j.task == "transcript"]
        if transcript:
            raise ConfigError(
                f"{NAME} writes new responses, not agent transcripts: transcript judge "
                f"{', '.join(transcript)} cannot be tested with it (remove the test or the judge)"
            )

    def units(self, items: list[Item]) -> list[Unit]:
        """One unit per bucket (score), each with every seed as a source."""
        if self._scale is None:
            raise RuntimeError(f"{NAME}: call check(items, scale) before units(items)")
        return [
            Unit(id=f"{NAME}:bucket={s}", sources=list(items), payload={"score": s})
            for s in bucket_values(self._scale)
        ]

    # -- generation -------------------------------------------------------------------------
    def generate(self, unit: Unit, ctx: GenerationContext) -> list[Probe | Dropped]:
        """Probes for the unit's bucket until ``per_bucket`` are kept or the bucket is exhausted."""
        return self._run(unit.sources, [int(unit.payload["score"])], ctx)

    def generate_all(self, items: list[Item], ctx: GenerationContext) -> list[Probe | Dropped]:
        """Every bucket in one loop: the manager keeps the spread even as probes are kept, and
        the diversity filter sees the probes of all buckets."""
        self.check(items, ctx.scale)
        return self._run(items, bucket_values(ctx.scale), ctx)

    def _run(
        self, seeds: list[Item], values: list[int], ctx: GenerationContext
    ) -> list[Probe | Dropped]:
        s = self.settings
        assert isinstance(s, SyntheticOrdinalSettings)
        manager = BucketManager(
            values,
            per_bucket=s.per_bucket,
            max_consecutive_failures=s.max_consecutive_failures,
            ramp=TemperatureRamp(s.initial_temperature, s.temperature_step, s.max_temperature),
        )
        run = _Run(self, ctx, seeds, make_embedder(s.embedder))
        out: list[Probe | Dropped] = []
        while (score := manager.next_bucket()) is not None:
            attempt, temperature = manager.start_attempt(score)
            result = run.attempt(score, attempt, temperature, manager.buckets[score].kept)
            kept = isinstance(result, Probe)
            manager.record(score, kept)
            if kept:
                run.references.append(result.response)
            out.append(result)
        for score in manager.exhausted:
            b = manager.buckets[score]
            detail = (
                f"bucket {score} exhausted after {s.max_consecutive_failures} misses in a row; "
                f"kept {b.kept} of {s.per_bucket} in {b.attempts} attempts"
            )
            log.warning("%s: %s", NAME, detail)
            out.append(
                Dropped(
                    test=NAME,
                    source_id=f"bucket:{score}",
                    variant={"bucket": score, "exhausted": True},
                    reason="not_applicable",
                    detail=detail,
                )
            )
        return out


@dataclass
class _Run:
    """The state of one generation loop: seeds, references for the diversity filter, programs."""

    test: SyntheticOrdinal
    ctx: GenerationContext
    seeds: list[Item]
    embedder: Embedder
    references: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        scale = self.ctx.scale
        ctx_rubric = self.ctx.rubric.strip()
        self.settings = self.test.settings
        assert isinstance(self.settings, SyntheticOrdinalSettings)
        self.seed_scores = [scale.check(it.expected) for it in self.seeds]
        self.references = [it.response for it in self.seeds if it.response.strip()]
        # the harness's rubric; else one carried by the seeds; else a generic quality rubric
        self.rubric = ctx_rubric or next(
            (str(it.meta["rubric"]) for it in self.seeds if it.meta.get("rubric")), DEFAULT_RUBRIC
        )
        self.generator = self.test.generator
        self.validator = self.test.validator

    def attempt(self, score: int, attempt: int, temperature: float, k: int) -> Probe | Dropped:
        """One candidate for bucket ``score``: generate, filter duplicates, validate."""
        ctx, s = self.ctx, self.settings

        def dropped(reason, detail: str, usage: Usage) -> Dropped:
            return Dropped(
                test=NAME,
                source_id=f"bucket:{score}",
                variant={"bucket": score, "attempt": attempt},
                reason=reason,
                detail=detail,
                usage=usage,
            )

        seed = self._request_seed(score, k)
        gen_lm = ctx.lm("generator", temperature=temperature, rollout=attempt)
        response, error, gen_usage = self._generate(gen_lm, seed, score)
        if error is not None or not response:
            return dropped(
                "generation_failed", (error or "generator gave an empty response")[:500], gen_usage
            )

        similarity = max_similarity(self.embedder, response, self.references)
        if similarity > s.max_similarity:
            return dropped(
                "duplicate",
                f"cosine similarity {similarity:.3f} > {s.max_similarity} ({self.embedder.name})",
                gen_usage,
            )

        val_lm = ctx.lm("validator")
        verdict, error, val_usage = self._validate(val_lm, seed, response)
        if verdict is None:
            return dropped("generation_failed", str(error)[:500], gen_usage + val_usage)
        if abs(verdict.score - score) > s.tolerance:
            return dropped(
                "validator_rejected",
                f"validator scored {verdict.score}, aimed at {score}",
                gen_usage + val_usage,
            )

        generation = Generation(
            model=ctx.models.get("generator") or gen_lm.model,
            temperature=temperature,
            prompt=self.generator.instruction,
            attempt=attempt,
            usage=gen_usage,
        )
        validation = Validation(
            model=ctx.models.get("validator") or val_lm.model,
            verdict=True,
            score=verdict.score,
            usage=val_usage,
        )
        return self._probe(score, k, seed, response, similarity, generation, validation)

    def _generate(
        self, lm: dspy.LM, seed: Item, score: int
    ) -> tuple[str | None, str | None, Usage]:
        """A response to the seed's request aimed at ``score``, or why there is none."""
        return self._call(
            "generator",
            lm,
            lambda: (
                self.generator(
                    request=seed.request,
                    rubric=_with_legend(self.rubric, self.ctx.scale),
                    target_score=score,
                    examples=self._examples(score),
                ).response
            ),
        )

    def _validate(
        self, lm: dspy.LM, seed: Item, response: str
    ) -> tuple[dspy.Prediction | None, str | None, Usage]:
        """The validator's score of the candidate, or why there is none."""
        return self._call(
            "validator",
            lm,
            lambda: self.validator(rubric=self.rubric, request=seed.request, response=response),
        )

    def _call(
        self, role: str, lm: dspy.LM, call: Callable[[], Any]
    ) -> tuple[Any | None, str | None, Usage]:
        """``call()`` on the role's LM and adapter, its usage counted under the role's stage;
        an LM or parse failure comes back as text instead of the result (a bug propagates)."""
        ctx = self.ctx
        with ctx.stage(_STAGES[role]), dspy.track_usage() as tracker:
            try:
                with dspy.context(lm=lm, adapter=_adapter(ctx, role)):
                    result, error = call(), None
            except Exception as exc:
                reason = unscored_reason(exc)
                if reason is None:
                    raise
                result, error = None, f"{role} {reason}: {redact(str(exc))}"
        return result, error, _usage(tracker, ctx, role)

    def _probe(
        self,
        score: int,
        k: int,
        seed: Item,
        response: str,
        similarity: float,
        generation: Generation,
        validation: Validation,
    ) -> Probe:
        """The kept candidate: the ``k``-th probe of its bucket, its target the validator's."""
        return Probe(
            id=Probe.make_id(NAME, f"bucket{score}", k, self.settings.model_dump()),
            test=NAME,
            source_id=f"bucket:{score}",
            request=seed.request,
            response=response,
            target=validation.score,
            target_source="validator",
            generation=generation,
            validation=validation,
            meta={
                "bucket": score,
                "attempt": generation.attempt,
                "temperature": generation.temperature,
                "similarity": round(similarity, 4),
                "embedder": self.embedder.name,
                "seed_id": seed.id,
            },
        )

    def _request_seed(self, score: int, k: int) -> Item:
        """A seed of the bucket (the k-th kept probe rotates over them), else the first seed."""
        own = [it for it, sc in zip(self.seeds, self.seed_scores, strict=True) if sc == score]
        return own[k % len(own)] if own else self.seeds[0]

    def _examples(self, score: int) -> str:
        idx = example_indices(score, self.seed_scores, self.settings.few_shot)
        if not idx:
            return "(no examples)"
        blocks = []
        for n, i in enumerate(idx, 1):
            it = self.seeds[i]
            blocks.append(
                f"Example {n} (score {_score_name(self.seed_scores[i], self.ctx.scale)}):\n"
                f"Request: {it.request}\nResponse: {it.response}"
            )
        return "\n\n".join(blocks)


def _score_name(score: int, scale: Scale) -> str:
    """``3`` or, on a named scale, ``3 = good`` (every label sharing the score: ``0 = bad / poor``)."""
    labels = [lab for lab, v in scale.label_scores.items() if v == score]
    return f"{score} = {' / '.join(labels)}" if labels else str(score)


def _with_legend(rubric: str, scale: Scale) -> str:
    """The rubric with what the scores mean, so an integer target is unambiguous."""
    names = ", ".join(_score_name(v, scale) for v in scale.values)
    return f"{rubric}\n\nScores, lowest to highest: {names}."


def _adapter(ctx: GenerationContext, role: str) -> dspy.Adapter:
    """The role's configured adapter (JSON unless set), as :meth:`GenerationContext.call` uses."""
    from assay.lm import make_adapter

    return make_adapter(ctx.adapters.get(role, "json"))


def _usage(tracker, ctx: GenerationContext, role: str) -> Usage:
    from assay.lm import usage_of_tracker

    return usage_of_tracker(tracker, ctx.prices.get(role))
