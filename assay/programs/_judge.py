"""Judges as DSPy modules, built from a :class:`JudgeConfig`.

``Judge.forward`` returns a ``dspy.Prediction`` with ``score`` (on the config's scale),
``label``, ``reasoning`` and, where the backend gives token logprobs and ``score_mode`` is
``expected``, ``expected_score``. Turning failures into *unscored* judgments is the runner's job;
a panel does it per member (an unscored member is reported, never silently dropped).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import dspy

from assay.lm import make_adapter, make_lm, redact
from assay.programs._config import JudgeConfig
from assay.programs._expected import verdict_distribution
from assay.programs._panel import aggregate_scores
from assay.programs.kinds import get_kind
from assay.types import Item


class MissingLogprobs(Exception):
    """A calibrated judge needs token probabilities the backend did not return."""


class Judge(dspy.Module):
    """One judge: a Predict or ChainOfThought over its kind's signature, with its own LM."""

    def __init__(self, config: JudgeConfig, lm: dspy.BaseLM | None = None):
        super().__init__()
        if config.program == "panel":
            raise ValueError("use Panel for program: panel")
        self.config = config
        self.kind = get_kind(config.task)
        sig = self.kind.build_signature(config)
        self.predict = (
            dspy.ChainOfThought(sig) if config.program == "chain_of_thought" else dspy.Predict(sig)
        )
        if lm is not None:
            self.set_lm(lm)

    # -- inputs ---------------------------------------------------------------------------
    def inputs(self, item: Item) -> dict[str, Any]:
        """The signature's inputs for ``item`` (what an optimizer's examples must carry)."""
        return task_inputs(self.config, item)

    # -- call -------------------------------------------------------------------------------
    def forward(self, **inputs: Any) -> dspy.Prediction:
        with dspy.context(adapter=make_adapter(self.config.adapter)):
            own = self.kind.forward(self, inputs)
            if own is not None:
                return own
            pred = self.predict(**inputs)
        return self.prediction(pred)

    def prediction(self, pred: dspy.Prediction) -> dspy.Prediction:
        """A predictor's raw output as a verdict: ``score`` on the scale (an answer off the
        scale raises, and becomes an unscored ``off_scale`` judgment), ``label``,
        ``reasoning`` and, with ``score_mode: expected``, ``expected_score`` and
        ``probabilities`` (each score's probability, keyed by the score as text); with
        ``confidence: {source: probability}``, ``confidence`` (the verdict's probability)."""
        scale = self.config.scale
        assert scale is not None
        verdict_field = self.kind.verdict_field
        verdict = getattr(pred, verdict_field)
        score = scale.read_verdict(verdict)
        reasoning = getattr(pred, self.kind.reasoning_field or "reasoning", None)
        expected = calibrated = probabilities = confidence = dist = None
        if self.config.score_mode == "expected" or self._confidence_source == "probability":
            options = {opt: scale.coerce(opt) for opt in scale.verdict_options}
            dist = verdict_distribution(getattr(pred, "logprobs", None), options, verdict_field)
        if self.config.score_mode == "expected":
            if dist is not None:
                expected = sum(score * p for score, p in dist.items())
                probabilities = {str(score): p for score, p in dist.items()}
            calibrated, decided = self._calibrate(expected)
            if decided is not None:
                score = decided
                verdict = scale.label_of(score) if scale.labels else score
        if self._confidence_source == "probability" and dist is not None:
            # the probability of the verdict given: max(p, 1 − p) for a binary judge's most
            # probable verdict, and never more than the verdict's own probability
            confidence = min(1.0, dist.get(score, 0.0))
        fields = {k: v for k, v in pred.items() if k != "logprobs"}
        return dspy.Prediction(
            score=score,
            label=scale.label_of(score) if scale.kind == "categorical" else _label(verdict, scale),
            reasoning=reasoning,
            expected_score=expected,
            probabilities=probabilities,
            calibrated_probability=calibrated,
            confidence=confidence,
            outputs=fields,
        )

    @property
    def _confidence_source(self) -> str | None:
        return self.config.confidence.source if self.config.confidence is not None else None

    def _calibrate(self, probability: float | None) -> tuple[float | None, int | None]:
        """``(calibrated probability, verdict)`` from P(positive) by the config's calibration
        map or decision threshold; ``(None, None)`` when it has neither. Without a probability
        a calibrated judge cannot decide: :class:`MissingLogprobs` (an unscored judgment)."""
        cfg = self.config
        if cfg.calibration is None and cfg.decision_threshold is None:
            return None, None
        if probability is None:
            raise MissingLogprobs("the backend returned no token probabilities for the verdict")
        if cfg.calibration is None:
            return None, int(probability >= cfg.decision_threshold)  # type: ignore[operator]
        verdict = int(cfg.calibration.predict([probability])[0])
        if cfg.calibration.kind == "threshold":
            return None, verdict
        return float(cfg.calibration.transform([probability])[0]), verdict


def _label(verdict: Any, scale) -> str | None:
    return str(verdict) if scale.labels else None


def task_inputs(config: JudgeConfig, item: Item) -> dict[str, Any]:
    """The signature inputs a judge of ``config``'s kind reads from an item."""
    return get_kind(config.task).inputs(config, item)


class Panel(dspy.Module):
    """Several judges on the same item; their scores are aggregated with an explicit tie rule.

    A member that fails (LM error, unparseable output) is recorded as unscored in
    ``members``; with fewer scored members than ``quorum`` (default: all) the panel is unscored.
    """

    def __init__(self, config: JudgeConfig, members: list[Judge]):
        super().__init__()
        self.config = config
        self.members = members

    def inputs(self, item: Item) -> dict[str, Any]:
        return task_inputs(self.config, item)

    def forward(self, **inputs: Any) -> dspy.Prediction:
        from assay.programs._failures import unscored_reason

        cfg = self.config
        assert cfg.scale is not None
        results: list[dict[str, Any]] = []
        for member in self.members:
            try:
                pred = member(**inputs)
                results.append(
                    {"judge": member.config.name, "score": pred.score, "label": pred.label}
                )
                shown = (pred.get("outputs") or {}).get("order")  # a pairwise member's order
                if shown is not None:
                    results[-1]["order"] = shown
            except Exception as exc:
                reason = unscored_reason(exc)
                if reason is None:
                    raise
                results.append(
                    {
                        "judge": member.config.name,
                        "score": None,
                        "unscored": reason,
                        "error": redact(str(exc))[:500],
                    }
                )
        scored = [r["score"] for r in results if r["score"] is not None]
        quorum = cfg.quorum or len(self.members)
        if len(scored) < quorum:
            return dspy.Prediction(
                score=None, unscored="panel_quorum", members=results, label=None, reasoning=None
            )
        score = aggregate_scores(scored, cfg.aggregate, cfg.tie_break, cfg.scale.values)
        return dspy.Prediction(
            score=score,
            unscored=None if score is not None else "tie",
            label=cfg.scale.label_of(score) if score is not None else None,
            reasoning=None,
            members=results,
            # the share of all members (an unscored one included) agreeing with the verdict
            confidence=scored.count(score) / len(results)
            if score is not None and cfg.confidence is not None
            else None,
        )


class SampledJudge(dspy.Module):
    """A judge whose verdict is the majority of ``confidence.samples`` verdicts sampled at
    ``confidence.temperature`` (one LM copy per sample, each with its own rollout id, so the
    cache keeps them apart), its confidence the share of samples agreeing with that verdict.

    A tie is broken by the config's ``tie_break`` (``lower``, ``higher``; ``unscored`` leaves
    the judgment unscored, reason ``tie``), as a panel's is. An unscored sample counts as a
    sample that does not agree; when no sample is scored, the first one's failure is raised
    (the judgment is unscored with its reason)."""

    def __init__(self, config: JudgeConfig, lm: dspy.BaseLM):
        super().__init__()
        assert config.confidence is not None and config.scale is not None
        self.config = config
        conf = config.confidence
        base = (getattr(lm, "kwargs", {}).get("rollout_id") or 0) * 1000  # a retry: new samples
        self.samples = [
            Judge(config, lm.copy(temperature=conf.temperature, rollout_id=base + r))
            for r in range(conf.samples)
        ]

    def inputs(self, item: Item) -> dict[str, Any]:
        return task_inputs(self.config, item)

    def forward(self, **inputs: Any) -> dspy.Prediction:
        from assay.programs._failures import unscored_reason

        cfg = self.config
        assert cfg.scale is not None
        preds: list[dspy.Prediction] = []
        records: list[dict[str, Any]] = []
        failure: Exception | None = None
        for sample in self.samples:
            try:
                pred = sample(**inputs)
            except Exception as exc:
                reason = unscored_reason(exc)
                if reason is None:
                    raise
                failure = failure or exc
                records.append({"score": None, "unscored": reason, "error": redact(str(exc))[:500]})
            else:
                preds.append(pred)
                records.append({"score": pred.score, "label": pred.label})
        if not preds:
            assert failure is not None
            raise failure
        scores = [p.score for p in preds]
        score = aggregate_scores(scores, "majority", cfg.tie_break, cfg.scale.values)
        if score is None:
            return dspy.Prediction(
                score=None, unscored="tie", label=None, reasoning=None, outputs={"samples": records}
            )
        chosen = next(p for p in preds if p.score == score)
        return dspy.Prediction(
            score=score,
            label=chosen.label,
            reasoning=chosen.reasoning,
            confidence=scores.count(score) / len(self.samples),
            outputs={**(chosen.get("outputs") or {}), "samples": records},
        )


LMFactory = Callable[[JudgeConfig], dspy.BaseLM | None]


def judge_lm_factory(
    *,
    retries: int = 3,
    base: Path | None = None,
    temperature: float | None = None,
    rollout: int | None = None,
) -> LMFactory:
    """``judge config → LM``, each judge on its own model and sampling (token log-probabilities
    when ``score_mode`` is ``expected``); ``temperature`` / ``rollout`` override the sampling
    (a fresh sample at another temperature); ``base`` resolves scripted answer sheets."""

    def factory(cfg: JudgeConfig) -> dspy.BaseLM:
        return make_lm(
            cfg,
            temperature=temperature,
            rollout=rollout,
            logprobs=wants_logprobs(cfg),
            retries=retries,
            base=base,
        )

    return factory


def wants_logprobs(config: JudgeConfig) -> bool:
    """Whether a judge's calls ask for token log-probabilities: for ``score_mode: expected``
    and for a confidence read off the verdict's probability."""
    source = config.confidence.source if config.confidence is not None else None
    return config.score_mode == "expected" or source == "probability"


def build_judge(
    config: JudgeConfig, lm_factory: LMFactory | None = None
) -> Judge | Panel | SampledJudge:
    """The judge program for ``config``, ready to call: ``lm_factory(member_config)`` gives each
    judge its LM (default: the config's own model, :func:`judge_lm_factory`).

    A saved program state (``program_state``: DSPy JSON from ``Module.save``, e.g. an optimized
    judge) is loaded into it.
    """
    lm_factory = lm_factory or judge_lm_factory()
    if config.program == "panel":
        program: dspy.Module = Panel(config, [build_judge(m, lm_factory) for m in config.members])  # type: ignore[misc]
    elif config.confidence is not None and config.confidence.source == "samples":
        program = SampledJudge(config, lm_factory(config))
    else:
        program = Judge(config, lm_factory(config))
    if config.program_state:
        from assay.programs._state import load_program_state

        load_program_state(program, config.program_state)
    return program
