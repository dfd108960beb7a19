"""Judges as DSPy modules, built from a :class:`JudgeConfig`.

``Judge.forward`` returns a ``dspy.Prediction`` with ``score`` (on the config's scale),
``label``, ``reasoning`` and, where the backend gives token logprobs and ``score_mode`` is
``expected``, ``expected_score``. Turning failures into *unscored* judgments is the runner's job;
a panel does it per member (an unscored member is reported, never silently dropped).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import dspy
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from assay._registry import plugin_where
from assay.errors import AssayError, quoted
from assay.lm import error_text, make_adapter, make_lm, redact
from assay.programs._config import JudgeConfig
from assay.programs._expected import verdict_distribution
from assay.programs._panel import aggregate_scores
from assay.programs.kinds import PluginFailed, get_kind
from assay.scale import Scale
from assay.types import Item, Judgment, UnscoredReason


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
            own = _plugin_call(self.kind, "forward", lambda: self.kind.forward(self, inputs))
            if own is not None:
                return self.own_verdict(own)
            pred = self.predict(**inputs)
        return self.prediction(pred)

    def own_verdict(self, own: object) -> dspy.Prediction:
        """A kind's own prediction (what its ``forward`` returned) held to what an LM's answer
        is held to: its ``score`` on the judge's scale — anything else (7 on a binary scale,
        0.5, nan) raises :class:`OffScaleVerdict`, an unscored ``off_scale`` judgment, never a
        score —, its ``label`` a name of that score on the scale (one naming another score is
        off the scale too; none given, the scale's), and its other fields of a judgment's types, finite numbers (else,
        for a plug-in kind, :class:`PluginFailed` naming it). A ``score`` of None is unscored
        for the prediction's ``unscored`` reason, which must be one of assay's."""
        kind = self.kind
        scale = self.config.scale
        assert scale is not None
        if not isinstance(own, dspy.Prediction):
            raise _malformed(kind, f"returned {quoted(own)}, neither a dspy.Prediction nor None")
        score, label, unscored = own.get("score"), own.get("label"), own.get("unscored")
        if score is None:
            if unscored not in get_args(UnscoredReason):
                raise _malformed(
                    kind,
                    f"returned no score and unscored={quoted(unscored)}, not one of the "
                    f"unscored reasons ({', '.join(get_args(UnscoredReason))})",
                )
            label = None
        else:
            if unscored is not None:
                raise _malformed(kind, f"returned a score and unscored={quoted(unscored)}")
            if isinstance(score, numbers.Integral) and not isinstance(score, bool):
                score = int(score)  # a numpy integer
            gave = f"{_kind_named(kind)} gave the score {quoted(score)}"
            try:
                score = scale.check(score)
            except ValueError as exc:
                raise OffScaleVerdict(f"{gave}: {exc}") from None
            if label is not None and scale.labels and _names(scale, label) != score:
                raise OffScaleVerdict(
                    f"{gave} with the label {quoted(label)}, which is not a name of that score "
                    f"on the {scale.describe()} scale"
                )
            if label is None or not scale.labels:  # as an LM's verdict: the name it gave
                label = scale.label_of(score)
        fields = {k: own.get(k) for k in _OWN_FIELDS}
        try:
            Judgment(
                item_id="",
                judge="",
                score=score,
                label=label,
                unscored=unscored,
                raw=fields.pop("outputs"),
                **fields,
            ).model_dump_json()
        except (ValidationError, PydanticSerializationError) as exc:
            raise _malformed(
                kind, f"returned what is no judgment: {error_text(exc, 500)}"
            ) from None
        numbers_given = [fields[k] for k in ("expected_score", "calibrated_probability")]
        numbers_given += [fields["confidence"], *(fields["probabilities"] or {}).values()]
        if any(isinstance(x, float) and not math.isfinite(x) for x in numbers_given):
            raise _malformed(kind, "returned a probability or an expected score that is not finite")
        return dspy.Prediction(**{**dict(own.items()), "score": score, "label": label})

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


def _plugin_call(kind: type, method: str, call: Callable[[], Any]) -> Any:
    """``call()`` — a judge kind's ``method`` — with what a plug-in kind's own code raises as
    :class:`PluginFailed` naming the plug-in. A grading failure (an LM error, an answer off the
    scale: :func:`~assay.programs.unscored_reason`) and an assay error it raises on purpose
    (a :class:`~assay.errors.DataError` for an item it cannot judge) keep their meaning; a
    built-in kind's exception is a bug and keeps its traceback."""
    try:
        return call()
    except Exception as exc:
        where = plugin_where(kind)
        if where is None or isinstance(exc, AssayError):
            raise
        from assay.programs._failures import unscored_reason

        if unscored_reason(exc) is not None:
            raise
        raise PluginFailed(
            f"plugin {where}: judge kind '{kind.name}' {method} raised {error_text(exc, 500)}"
        ) from exc


class OffScaleVerdict(ValueError):
    """A judge kind's own verdict (its ``forward``'s prediction) that is not on the judge's
    scale: an unscored ``off_scale`` judgment, as an LM's answer off the scale is."""


_OWN_FIELDS = (
    "reasoning",
    "expected_score",
    "probabilities",
    "calibrated_probability",
    "confidence",
    "members",
    "criteria",
    "outputs",
)
"""The fields of a kind's own prediction a judgment carries besides the verdict."""


def _names(scale: Scale, label: object) -> int | None:
    """The score a verdict's label names on ``scale`` (None: none)."""
    try:
        return scale.read_verdict(label)
    except ValueError:
        return None


def _kind_named(kind: type) -> str:
    where = plugin_where(kind)
    return f"judge kind '{kind.name}'" + (f" (plugin {where})" if where else "")


def _malformed(kind: type, what: str) -> Exception:
    """A kind's ``forward`` returned what is no verdict: :class:`PluginFailed` naming a plug-in
    kind (an unscored ``plugin_error`` judgment); a bug of a built-in kind (its traceback)."""
    where = plugin_where(kind)
    if where is None:
        return TypeError(f"judge kind '{kind.name}' forward {what}")
    return PluginFailed(f"plugin {where}: judge kind '{kind.name}' forward {what}")


def _label(verdict: Any, scale) -> str | None:
    return str(verdict) if scale.labels else None


def task_inputs(config: JudgeConfig, item: Item) -> dict[str, Any]:
    """The signature inputs a judge of ``config``'s kind reads from an item (what a plug-in
    kind's ``inputs`` raises is :class:`PluginFailed`, naming it)."""
    kind = get_kind(config.task)
    return _plugin_call(kind, "inputs", lambda: kind.inputs(config, item))


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
