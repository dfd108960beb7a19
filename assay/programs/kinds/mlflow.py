"""``task: mlflow`` — an MLflow GenAI judge measured as it is: one ``make_judge`` builds from the
config's ``mlflow.instructions``, or a built-in scorer (``Safety``, ``Guidelines``,
``RelevanceToQuery``).

The MLflow judge writes its own prompt, calls its model with its own client and parses its own
answer; assay hands it the item (``inputs`` = ``{"request": ...}``, ``outputs`` = the response,
which format and bias probes perturb) and reads its ``Feedback``: the value onto the config's
scale (``True``/``False`` and ``yes``/``no`` onto a binary scale, a number onto an ordinal one, a
label onto a labelled one — anything else is an unscored ``off_scale``), the rationale as the
reasoning, an error as an unscored judgment with its reason. Its token counts (the Feedback's
metadata) go to the judgment's usage and to the run's call ledger; its answers are cached in
DSPy's response cache under the judge config's hash, the item and the sample (temperature,
rollout), so a resumed or repeated run does not ask again and a stability probe gets a fresh
sample.

Its model is the config's: ``openai/<name>`` becomes MLflow's ``openai:/<name>``; ``api_base``
and the key named by ``api_key_env`` reach MLflow's OpenAI client through ``OPENAI_API_BASE`` /
``OPENAI_API_KEY`` (the only way its built-in scorers take them), set only while its calls run
(:class:`_ProviderEnv`) — never written to a config, a log or the run.
"""

from __future__ import annotations

import enum
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

import dspy

from assay.programs.kinds._base import JudgeCallFailed, JudgeKind, judge_kind
from assay.programs.kinds._settings import JudgeProgram, JudgeSettings
from assay.scale import Scale
from assay.signatures import JudgeResponse
from assay.types import Item, Usage

YES_NO = Scale(kind="binary", labels=["no", "yes"])
_VALUE_TYPES: dict[str, Any] = {"bool": bool, "int": int, "float": float, "str": str}
_INPUT_TOKENS = (
    "mlflow.assessment.judgeInputTokens"  # mlflow.tracing.constant.AssessmentMetadataKey
)
_OUTPUT_TOKENS = "mlflow.assessment.judgeOutputTokens"


@judge_kind("mlflow")
class MlflowKind(JudgeKind):
    signature = JudgeResponse  # not asked: the MLflow judge writes its own prompt
    judged_field = "response"
    scaled = True
    own_prompt = True

    @classmethod
    def default_scale_for(cls, config: JudgeSettings) -> Scale | None:
        spec = config.mlflow
        if spec is None:
            return None
        if spec.builtin is not None:
            return YES_NO
        return Scale(kind="binary") if spec.feedback_value_type == "bool" else None

    @classmethod
    def check(cls, config: JudgeSettings) -> None:
        spec = config.mlflow
        if spec is None:
            raise ValueError(
                "task 'mlflow' needs 'mlflow': {instructions, feedback_value_type} or {builtin}"
            )
        if config.instruction is not None or config.rubric is not None:
            raise ValueError(
                "an MLflow judge's prompt is its own: put the task in mlflow.instructions "
                "(no 'instruction' or 'rubric')"
            )
        if config.program != "predict":
            raise ValueError("an MLflow judge is its own program: leave 'program' out")
        if config.score_mode != "argmax":
            raise ValueError(
                "an MLflow judge gives no token probabilities: no score_mode 'expected'"
            )
        provider, _, name = config.model.partition("/")
        if not name:
            raise ValueError(
                f"model {config.model}: an MLflow judge calls a hosted model, 'provider/name' "
                "(an OpenAI-compatible server: 'openai/<name>' with api_base)"
            )
        if config.api_base is not None and provider != "openai":
            raise ValueError("an MLflow judge takes 'api_base' only for an 'openai/<name>' model")
        scale = config.scale
        typed = spec.feedback_value_type
        if (spec.builtin is not None or typed == "bool") and scale.kind != "binary":
            raise ValueError("an MLflow judge answering yes/no (or a bool) needs a binary scale")
        if typed in ("int", "float") and scale.labels and scale.kind == "categorical":
            raise ValueError(f"feedback_value_type {typed} needs a numeric scale, not labels")
        if typed == "str" and not scale.labels:
            raise ValueError("feedback_value_type str needs a scale with labels")

    @classmethod
    def inputs(cls, config: JudgeSettings, item: Item) -> dict[str, Any]:
        return {"request": item.request, "response": item.response}

    @classmethod
    def forward(cls, judge: JudgeProgram, inputs: dict[str, Any]) -> dspy.Prediction:
        config = judge.config
        lm = judge.predict.lm
        sample = {
            "temperature": config.temperature,
            "rollout": (lm.kwargs if lm else {}).get("rollout_id"),
        }
        answer = _ask(config, inputs, sample, cache=getattr(lm, "cache", True))
        score = verdict_score(answer["value"], config.scale)
        return dspy.Prediction(
            score=score,
            label=config.scale.label_of(score),
            reasoning=answer["rationale"],
            expected_score=None,
            outputs=answer,
        )


def verdict_score(value: object, scale: Scale) -> int:
    """An MLflow Feedback value as a score on ``scale``: ``True``/``False`` and ``yes``/``no``
    on a binary scale, else what the scale offers (a label, an integer score); ``ValueError``
    (an unscored ``off_scale`` judgment) for anything else — MLflow's ``unknown`` included."""
    if scale.kind == "binary" and (
        isinstance(value, bool) or isinstance(value, str) and value.strip().lower() in ("yes", "no")
    ):
        return scale.coerce(value)
    return scale.read_verdict(value)


def model_uri(model: str) -> str:
    """assay's ``provider/name`` as MLflow's ``provider:/name``."""
    provider, _, name = model.partition("/")
    return f"{provider}:/{name}"


def _ask(
    config: JudgeSettings, inputs: dict[str, Any], sample: dict[str, Any], *, cache: bool
) -> dict[str, Any]:
    """The MLflow judge's answer to one item, ``{"value", "rationale"}``: from DSPy's response
    cache, or asked (its tokens counted)."""
    request = {
        "assay_mlflow_judge": config.config_hash(),
        "request": inputs["request"],
        "response": inputs["response"],
        **sample,
    }
    if cache and dspy.cache is not None:
        hit = dspy.cache.get(request)
        if hit is not None:
            _count_cached(config, hit.get(_KEPT_USAGE))
            return {k: v for k, v in hit.items() if k != _KEPT_USAGE}
    feedback = _call(config, inputs)
    usage = _count(config, feedback.metadata or {})
    if feedback.error is not None:
        message = getattr(feedback.error, "error_message", None) or str(feedback.error)
        raise JudgeCallFailed("lm_error", f"MLflow judge: {message}")
    value = feedback.value
    answer = {
        "value": value.value if isinstance(value, enum.Enum) else value,
        "rationale": feedback.rationale,
    }
    if cache and dspy.cache is not None:
        dspy.cache.put(request, {**answer, _KEPT_USAGE: usage})
    return answer


_KEPT_USAGE = "assay_usage"
"""Where a cached MLflow answer keeps the tokens MLflow reported for it (an answer cached
before it was kept has none: a cached answer whose tokens are unknown)."""


def _count_cached(config: JudgeSettings, usage: dict[str, int] | None) -> None:
    """An answer the LM cache gave: no call, counted apart in the judgment's usage (its
    ``cached_*`` figures) with the tokens MLflow reported when it was first answered."""
    from assay.lm import CACHED

    tracker = dspy.settings.usage_tracker
    if tracker is not None:
        tracker.add_usage(config.model, {CACHED: usage or {}})


def _call(config: JudgeSettings, inputs: dict[str, Any]) -> Any:
    """One call of the config's MLflow judge; its failures as :class:`JudgeCallFailed`."""
    from mlflow.exceptions import MlflowException

    judge = _judge_for(config)
    asked: dict[str, Any] = {"outputs": inputs["response"]}
    if config.mlflow.builtin != "Safety":
        asked["inputs"] = {"request": inputs["request"]}
    try:
        with _PROVIDER_ENV.holding(_provider_env(config)):
            return judge(**asked)
    except MlflowException as exc:
        reason = _reason(exc)
        if reason == "parse_error":  # answered (and paid): MLflow raised without its usage
            _count(config, {})
        raise JudgeCallFailed(reason, f"MLflow judge: {exc.message}"[:2000]) from exc


def _reason(exc: BaseException) -> Literal["parse_error", "lm_error"]:
    """An MLflow judge's failure: an answer it could not parse, or a failed call (a timeout
    among its causes is told apart by :func:`~assay.programs.unscored_reason`)."""
    return "parse_error" if "parse" in str(exc).lower() else "lm_error"


def _count(config: JudgeSettings, metadata: dict[str, Any]) -> dict[str, int]:
    """One answered call, with its tokens as MLflow reports them, in the judgment's usage (the
    enclosing ``dspy.track_usage``) and in the run's call ledger (made by MLflow's client,
    which no assay LM saw). Without tokens — an unparseable answer MLflow raised on, or
    metadata without them — it is an untallied call: counted, its tokens and cost unknown.
    Returns the tokens counted (empty for an untallied call)."""
    from assay.lm import UNTALLIED, cost_usd, note_usage

    prompt = int(metadata.get(_INPUT_TOKENS) or 0)
    completion = int(metadata.get(_OUTPUT_TOKENS) or 0)
    tracker = dspy.settings.usage_tracker
    if not prompt and not completion:
        if tracker is not None:
            tracker.add_usage(config.model, {UNTALLIED: 1})
        note_usage(config.model, Usage(calls=1, untallied_calls=1), via="mlflow")
        return {}
    tokens = {"prompt_tokens": prompt, "completion_tokens": completion}
    if tracker is not None:
        tracker.add_usage(config.model, tokens)
    cost = cost_usd(config.model, prompt, completion, config.price_pair)
    usage = Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        cost_usd=cost or 0.0,
        calls=1,
        unpriced_calls=int(cost is None),
    )
    note_usage(config.model, usage, via="mlflow")
    return tokens


_JUDGES: dict[str, Any] = {}
_JUDGES_LOCK = threading.Lock()


def _judge_for(config: JudgeSettings) -> Any:
    """The MLflow judge (a ``Scorer``) of ``config``, built once per config."""
    key = config.config_hash()
    with _JUDGES_LOCK:
        judge = _JUDGES.get(key)
        if judge is None:
            judge = _JUDGES[key] = build_mlflow_judge(config)
        return judge


def build_mlflow_judge(config: JudgeSettings) -> Any:
    """``mlflow.genai.judges.make_judge(...)`` or the built-in scorer the config names, on the
    config's model (a ``str`` judge answers one of the scale's labels)."""
    spec = config.mlflow
    uri = model_uri(config.model)
    if spec.builtin is not None:
        from mlflow.genai import scorers

        extra = {"guidelines": spec.guidelines} if spec.guidelines else {}
        return getattr(scorers, spec.builtin)(model=uri, **extra)
    from mlflow.genai.judges import make_judge

    value_type = _VALUE_TYPES[spec.feedback_value_type]
    if value_type is str:
        value_type = Literal[tuple(config.scale.labels)]  # type: ignore[valid-type]
    return make_judge(
        name=config.name,
        instructions=spec.instructions,
        model=uri,
        feedback_value_type=value_type,
        inference_params={"temperature": config.temperature},
    )


def _provider_env(config: JudgeSettings) -> dict[str, str]:
    """The environment MLflow's OpenAI client reads for the config's server and key."""
    if not config.model.startswith("openai/"):
        return {}
    env: dict[str, str] = {}
    if config.api_base is not None:
        env["OPENAI_API_BASE"] = config.api_base
    key = os.environ.get(config.api_key_env) if config.api_key_env else None
    if key is not None:
        from assay.lm import note_key_variable

        note_key_variable(config.api_key_env)  # an error echoing the key never stores it
    if key is None and config.api_base is not None:
        # a local server wants no key, MLflow's client asks for one (the same value for every
        # call: concurrent calls share the environment they hold)
        key = os.environ.get("OPENAI_API_KEY") or "unused"
    if key is not None:
        env["OPENAI_API_KEY"] = key
    return env


class _ProviderEnv:
    """Environment variables held while MLflow judges call: concurrent calls wanting the same
    values share them, a call wanting others waits until no call holds them, and the process's
    own values come back when the last call ends. Process-wide because the environment is."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._values: dict[str, str] | None = None
        self._saved: dict[str, str | None] = {}
        self._holders = 0

    @contextmanager
    def holding(self, values: dict[str, str]) -> Iterator[None]:
        if not values:
            yield
            return
        with self._cond:
            self._cond.wait_for(lambda: self._holders == 0 or self._values == values)
            if self._holders == 0:
                self._saved = {k: os.environ.get(k) for k in values}
                os.environ.update(values)
                self._values = values
            self._holders += 1
        try:
            yield
        finally:
            with self._cond:
                self._holders -= 1
                if self._holders == 0:
                    for k, v in self._saved.items():
                        if v is None:
                            os.environ.pop(k, None)
                        else:
                            os.environ[k] = v
                    self._values = None
                    self._cond.notify_all()


_PROVIDER_ENV = _ProviderEnv()
