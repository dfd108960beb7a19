"""The typed judge config: everything that determines a verdict, with a stable hash."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from assay import _json
from assay._files import read_bytes
from assay.lm import NOT_IN_IDENTITY, ModelSpec, Real, StrictInt, model_family
from assay.metrics import CalibrationMap
from assay.programs._panel import RUN_LEVEL_AGGREGATES, RUN_LEVEL_MAX_CLASSES, Aggregate
from assay.scale import Scale
from assay.types import PlainName, flatten, model_shown, stable_hash

ProgramKind = Literal["predict", "chain_of_thought", "panel"]


class ScoreLevel(BaseModel):
    """One level of an ordinal rubric criterion: its integer score and what it means."""

    model_config = ConfigDict(extra="forbid")

    score: StrictInt = Field(description="the integer score of this level")
    label: str = Field(default="", description="what the score means, shown to the judge")


class Criterion(BaseModel):
    """One rubric item of an agent-transcript judge (``[{id, instructions, score_levels?}]``).

    ``score_levels`` makes the criterion ordinal: consecutive integer scores, each once, given
    as ``{score, label}`` (``description`` is read as the label) or as bare scores."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, description="the criterion's name, unique in the rubric")
    instructions: str = Field(description="what the judge checks for this criterion")
    score_levels: list[ScoreLevel] | None = Field(
        default=None,
        description=(
            "ordinal levels (consecutive integer scores, each with its label); none: pass/fail"
        ),
    )

    @field_validator("score_levels", mode="before")
    @classmethod
    def _levels_in(cls, levels: Any) -> Any:
        if not isinstance(levels, list):
            return levels
        return [_level(i, level) for i, level in enumerate(levels)]

    @field_validator("score_levels")
    @classmethod
    def _contiguous(cls, levels: list[ScoreLevel] | None) -> list[ScoreLevel] | None:
        if levels is None:
            return None
        if not levels:
            raise ValueError("score_levels is empty (leave it out for a pass/fail criterion)")
        scores = [lv.score for lv in levels]
        repeated = sorted({s for s in scores if scores.count(s) > 1})
        if repeated:
            raise ValueError(
                f"score {', '.join(map(str, repeated))} listed more than once in score_levels"
            )
        lo, hi = min(scores), max(scores)
        missing = sorted(set(range(lo, hi + 1)) - set(scores))
        if missing:
            raise ValueError(
                f"score_levels must be consecutive integers: {lo}..{hi} is missing "
                f"{', '.join(map(str, missing))}"
            )
        return sorted(levels, key=lambda lv: lv.score)

    @property
    def scores(self) -> list[int]:
        """The criterion's level scores, lowest first (empty for a pass/fail criterion)."""
        return [lv.score for lv in self.score_levels or []]

    def text(self) -> str:
        """The instructions, followed by the score levels when the criterion is ordinal."""
        if not self.score_levels:
            return self.instructions
        levels = "\n".join(
            f"- {lv.score}: {lv.label}" if lv.label else f"- {lv.score}" for lv in self.score_levels
        )
        return f"{self.instructions}\n\nScore levels:\n{levels}"

    def level_label(self, score: int) -> str | None:
        return next((lv.label for lv in self.score_levels or [] if lv.score == score), None)


def _level(index: int, level: Any) -> Any:
    """A level as ``{score, label}``: bare scores and ``description`` are accepted."""
    if isinstance(level, dict):
        level = dict(level)
        if "description" in level and "label" not in level:
            level["label"] = level.pop("description")
        value = level.get("score")
    else:
        value, level = level, {"score": level}
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"level {index} has no integer score (a number, or {{score: N, label}})")
    return {**level, "score": value}


class ConfidenceConfig(BaseModel):
    """Where a judgment's confidence (in [0, 1], higher = surer of its verdict) comes from:
    ``probability`` — the model's probability of the verdict it gave, from token logprobs (the
    verdict options renormalised, as ``score_mode: expected`` reads them); ``samples`` — the
    verdict is the majority of ``samples`` verdicts sampled at ``temperature`` (distinct
    rollout ids, so the LM cache does not collapse them; a tie is broken by the judge's
    ``tie_break``), the confidence the share of them that agree with it; ``panel`` — the share
    of a panel's members that agree with the panel's verdict (an unscored member does not)."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["probability", "samples", "panel"] = Field(
        description=(
            "probability (the verdict's token probability), samples (the share of "
            "sampled verdicts that agree) or panel (the share of members that "
            "agree)"
        )
    )
    samples: StrictInt = Field(
        default=5,
        ge=2,
        le=100,
        description="source samples: verdicts sampled (2 to 100: each is an LM call per item)",
    )
    temperature: Real = Field(default=1.0, gt=0, le=2, description="source samples: sampling")

    @model_validator(mode="after")
    def _only_samples(self) -> ConfidenceConfig:
        if self.source != "samples" and "samples" in self.model_fields_set:
            raise ValueError("'samples' is only for source: samples")
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The sampling settings only where samples are drawn, so that a run's ``config.yaml``
        reads back (``samples`` is refused for another source)."""
        data = handler(self)
        if self.source == "samples":
            return data
        return {k: v for k, v in data.items() if k not in ("samples", "temperature")}

    def identity(self) -> dict[str, Any]:
        """What changes a confidence (the sampling settings only where samples are drawn)."""
        if self.source == "samples":
            return self.model_dump(mode="json")
        return {"source": self.source}


class MlflowJudgeSpec(BaseModel):
    """An MLflow GenAI judge (``task: mlflow``): one ``mlflow.genai.judges.make_judge`` builds
    from ``instructions`` (a template naming ``{{ inputs }}`` and ``{{ outputs }}``) and a
    ``feedback_value_type``, or a built-in scorer by name (``Guidelines`` with its
    ``guidelines``). Its model is the judge config's."""

    model_config = ConfigDict(extra="forbid")

    instructions: str | None = Field(
        default=None, description="a make_judge template naming {{ inputs }} and {{ outputs }}"
    )
    feedback_value_type: Literal["bool", "int", "float", "str"] | None = Field(
        default=None,
        description="the type of the make_judge judge's answer: bool, int, float or str",
    )
    builtin: Literal["Safety", "Guidelines", "RelevanceToQuery"] | None = Field(
        default=None,
        description=(
            "a built-in MLflow scorer instead of instructions: Safety, Guidelines "
            "or RelevanceToQuery"
        ),
    )
    guidelines: list[str] | None = Field(
        default=None, description="the guidelines of builtin: Guidelines (one or several)"
    )

    @field_validator("guidelines", mode="before")
    @classmethod
    def _one_guideline(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @model_validator(mode="after")
    def _one_judge(self) -> MlflowJudgeSpec:
        if (self.instructions is None) == (self.builtin is None):
            raise ValueError("give 'instructions' (a make_judge judge) or 'builtin', not both")
        if self.instructions is not None:
            if not re.search(r"\{\{\s*outputs\s*\}\}", self.instructions):
                raise ValueError("'instructions' must name {{ outputs }} (the judged response)")
            if self.feedback_value_type is None:
                raise ValueError("'instructions' needs a 'feedback_value_type' (bool, int, str)")
        elif self.feedback_value_type is not None:
            raise ValueError(f"built-in {self.builtin} answers yes/no: no 'feedback_value_type'")
        if (self.builtin == "Guidelines") != bool(self.guidelines):
            raise ValueError("'guidelines' go with builtin: Guidelines (and it needs them)")
        return self


# the display name and how the model is called (price, timeout, client, rate limits)
_NOT_IN_HASH: Any = {
    "name": True,
    **dict.fromkeys(NOT_IN_IDENTITY, True),
    "members": {"__all__": {"name", *NOT_IN_IDENTITY}},
}
# a judge that is no MLflow judge leaves the ``mlflow`` entry out of its hash and logged params,
# so runs made before the entry existed keep their hash
_NOT_MLFLOW: Any = {"mlflow": True, "members": {"__all__": {"mlflow"}}}
_NOT_IN_HASH_NOT_MLFLOW: Any = {
    **_NOT_IN_HASH,
    **_NOT_MLFLOW,
    "members": {"__all__": {"name", "mlflow", *NOT_IN_IDENTITY}},
}


class JudgeConfig(ModelSpec):
    """A judge: model (a :class:`ModelSpec`), rubric, scale and program. Built into a DSPy
    module by ``build_judge``."""

    model_config = ConfigDict(extra="forbid")

    name: PlainName = Field(
        default="judge", description="the judge's display name (not part of its identity)"
    )
    task: str = Field(default="response", description="the judge kind (see assay.programs.kinds)")
    instruction: str | None = Field(
        default=None,
        description="the task the judge is given, above the rubric (text, or @file in YAML)",
    )
    rubric: str | None = Field(
        default=None,
        description=(
            "what makes a good or a bad response: the criteria the verdict follows "
            "(text, or @file in YAML)"
        ),
    )
    criteria: list[Criterion] | None = Field(
        default=None,
        description=(
            "a rubric as a list of criteria (agent-transcript judges), each judged on its own"
        ),
    )
    mlflow: MlflowJudgeSpec | None = Field(
        default=None,
        description=(
            "an MLflow GenAI judge (task: mlflow): make_judge instructions or a built-in scorer"
        ),
    )
    scale: Scale | None = Field(
        default=None,
        description=("the verdict space: binary, an ordinal range MIN-MAX, or categorical labels"),
    )
    program: ProgramKind = Field(
        default="predict",
        description=(
            "the DSPy program: predict, chain_of_thought (reasoning before the "
            "verdict) or panel (several members)"
        ),
    )
    score_mode: Literal["argmax", "expected"] = Field(
        default="argmax",
        description=(
            "argmax (the verdict the model wrote) or expected (from the verdict "
            "tokens' probabilities)"
        ),
    )
    # binary + expected: verdict = 1 when P(1) >= decision_threshold (from `assay calibrate`)
    decision_threshold: Real | None = Field(
        default=None,
        ge=0,
        le=1,
        description=(
            "binary with score_mode expected: verdict 1 when P(1) is at least this "
            "(from assay calibrate)"
        ),
    )
    # binary + expected: a calibration map fitted by `assay calibrate` (isotonic, platt or
    # threshold); the verdict comes from the calibrated probability (or the threshold)
    calibration: CalibrationMap | None = Field(
        default=None,
        description=(
            "binary with score_mode expected: a calibration map fitted by assay "
            "calibrate (isotonic, platt or threshold)"
        ),
    )
    program_state: str | None = Field(
        default=None,
        description=(
            "a saved DSPy program (assay optimize's program.json, a path or "
            "runs:/ID/program.json); its content is part of the identity"
        ),
    )
    # panels
    members: list[JudgeConfig] = Field(
        default_factory=list, description="a panel's member judges (program: panel)"
    )
    aggregate: Aggregate = Field(
        default="majority",
        description=(
            "how a panel's verdicts combine: per item majority, mean, median, min or "
            "trimmed_mean; over the run dawid_skene or weighted (Dawid–Skene accuracies, "
            "capped weights)"
        ),
    )
    tie_break: Literal["lower", "higher", "unscored"] = Field(
        default="lower", description="a tied majority: the lower verdict, the higher, or unscored"
    )
    quorum: StrictInt | None = Field(
        default=None,
        description=(
            "the fewest scored members a panel verdict needs (default: a majority of the members)"
        ),
    )
    # what a judge is measured by, not what it does: in no hash, dump or logged param (a run's
    # self-preference records the family it used, and the run's identity holds it when set)
    family: str | None = Field(
        default=None,
        min_length=1,
        exclude=True,
        description="the judge's model family, for its preference for its own family's outputs "
        "(default: read from the model string, e.g. openai/gpt-4o-mini → gpt; see "
        "assay.lm.FAMILIES)",
    )
    # a confidence per judgment (selective evaluation); None: none, and left out of the hash
    confidence: ConfidenceConfig | None = Field(
        default=None,
        description=(
            "where a confidence per judgment comes from (selective evaluation); none by default"
        ),
    )

    @field_validator("scale", mode="before")
    @classmethod
    def _scale(cls, v: Any) -> Any:
        return None if v is None else Scale.parse(v)

    @field_validator("instruction", "rubric")
    @classmethod
    def _no_file_reference(cls, v: str | None) -> str | None:
        if v is not None and re.fullmatch(r"@\S+", v.strip()):
            raise ValueError(
                f"'{v.strip()}' is a file reference, which only a YAML config's loader reads "
                "(assay.inputs.load_config); in Python pass the text itself, e.g. "
                f"Path('{v.strip()[1:]}').read_text()"
            )
        return v

    @field_validator("program_state")
    @classmethod
    def _pinned_state(cls, v: str | None) -> str | None:
        if v and moving_model_uri(v):
            raise ValueError(
                f"program_state {v} names a model version that can move (an alias, a stage or "
                "'latest'): pin one, e.g. models:/<name>/3, so the judge's identity is what ran"
            )
        return v

    @field_validator("criteria")
    @classmethod
    def _unique_criteria(cls, v: list[Criterion] | None) -> list[Criterion] | None:
        ids = [c.id for c in v or []]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError(
                f"criterion id {', '.join(repr(i) for i in repeated)} is used more than once "
                "(each criterion is judged and reported under its id)"
            )
        return v

    @field_validator("task")
    @classmethod
    def _known_task(cls, v: str) -> str:
        from assay.programs.kinds import known_kinds

        if v not in known_kinds():
            raise ValueError(f"unknown task '{v}'; known: {', '.join(known_kinds())}")
        return v

    @model_validator(mode="after")
    def _check(self) -> JudgeConfig:
        from assay.programs.kinds import get_kind

        fixed = fixed_scale(self.task)
        if fixed is not None:
            if self.scale is not None and self.scale != fixed:
                raise ValueError(f"task '{self.task}' has a fixed scale; remove 'scale'")
            self.scale = fixed
        if self.program == "panel":
            if len(self.members) < 2:
                raise ValueError("a panel needs at least two 'members'")
            if self.quorum is not None and not 1 <= self.quorum <= len(self.members):
                raise ValueError("'quorum' must be between 1 and the number of members")
            if self.aggregate in ("trimmed_mean", *RUN_LEVEL_AGGREGATES) and (
                min(self.quorum or len(self.members), len(self.members)) < 3
            ):
                raise ValueError(
                    f"aggregate '{self.aggregate}' needs at least 3 members (and a 'quorum' "
                    "of at least 3, if one is given)"
                )
            for m in self.members:
                if m.task != self.task:
                    raise ValueError("panel members must share the panel's task")
            if self.scale is None:
                self.scale = self.members[0].scale
            for m in self.members:
                if m.scale != self.scale:
                    raise ValueError("panel members must share the panel's scale")
        elif self.members:
            raise ValueError("'members' is only for program: panel")
        if self.scale is None:
            self.scale = get_kind(self.task).default_scale_for(self)
        if self.scale is None:
            raise ValueError("a judge needs a 'scale' (binary, MIN-MAX, labels a,b,c or a mapping)")
        if self.aggregate in RUN_LEVEL_AGGREGATES and self.scale.k > RUN_LEVEL_MAX_CLASSES:
            raise ValueError(
                f"aggregate '{self.aggregate}' fits a {self.scale.k}×{self.scale.k} confusion "
                f"matrix per member: at most {RUN_LEVEL_MAX_CLASSES} scale values"
            )
        if self.mlflow is not None and self.task != "mlflow":
            raise ValueError("'mlflow' is only for task: mlflow")
        get_kind(self.task).check(self)
        if self.score_mode == "expected" and self.scale.kind == "categorical":
            raise ValueError("score_mode 'expected' needs a binary or ordinal scale")
        if self.decision_threshold is not None and (
            self.score_mode != "expected" or self.scale.kind != "binary"
        ):
            raise ValueError("'decision_threshold' needs a binary scale and score_mode 'expected'")
        if self.calibration is not None:
            if self.score_mode != "expected" or self.scale.kind != "binary":
                raise ValueError("'calibration' needs a binary scale and score_mode 'expected'")
            if self.decision_threshold is not None:
                raise ValueError("give 'calibration' or 'decision_threshold', not both")
        source = self.confidence.source if self.confidence is not None else None
        if (source == "panel") != (self.program == "panel" and source is not None):
            raise ValueError(
                "confidence source 'panel' is for program: panel, and a panel's confidence is "
                "its members' agreement (source: panel)"
            )
        if source == "samples" and self.score_mode == "expected":
            raise ValueError(
                "confidence source 'samples' takes the verdict from the samples' majority; "
                "with score_mode: expected use source: probability"
            )
        return self

    @property
    def uses_embedded_model(self) -> bool:
        """Whether a verdict comes from the embedded local model: a panel's from its members'
        models (its own ``model`` is never called), any other judge's from its ``model``."""
        if self.program == "panel":
            return any(m.uses_embedded_model for m in self.members)
        return self.model.startswith("local")

    def config_hash(self) -> str:
        """Stable hash of everything that affects a verdict (the display name, the price, the
        per-attempt timeout, the client and the rate limits excluded): a program state read
        from a file counts by its content, not its path (an optimizer writing the file again
        makes another judge)."""
        exclude = _NOT_IN_HASH if self.mlflow is not None else _NOT_IN_HASH_NOT_MLFLOW
        dump = self._with_layouts(self.model_dump(mode="json", exclude=exclude))
        return stable_hash(self._with_state_content(dump))

    def _prices(self) -> object:
        """The prices this judge's answers are costed at: its own, and its members' where a
        member has one (each member's answers are costed at its own price). None when no price
        is set anywhere."""
        own = self.price_identity()
        members = [m._prices() for m in self.members]
        if all(p is None for p in members):
            return own
        return {"price": own, "members": members}

    def results_hash(self) -> str:
        """The identity of this judge's stored results: :meth:`config_hash` (what its verdicts
        are of) and the prices their cost is counted at (its own, its members'). A price
        changes no verdict, so it is no part of the config hash — but every cost a run prints
        is at its config's price, so judgments costed at another price are not reused: they
        are made again, through the LM cache (no call). The config hash itself when no price
        is set (such runs keep their hash)."""
        judge, price = self.config_hash(), self._prices()
        return judge if price is None else stable_hash({"judge": judge, "price": price})

    def without_prices(self) -> JudgeConfig:
        """This judge with no price anywhere (its own, its members'): how a run made before
        prices counted in run hashes computed its hash."""
        members = [m.without_prices() for m in self.members]
        return self.model_copy(update={"price": None, "members": members})

    def _with_state_content(self, dump: dict[str, Any]) -> dict[str, Any]:
        """``dump`` with each program state file's content digest beside its reference (this
        judge's and its members'). An MLflow URI counts as written: pin a version
        (``runs:/...``, ``models:/name/3``) for an identity that cannot move."""
        digest = state_file_digest(self.program_state)
        if digest is not None:
            dump = {**dump, "program_state_content": digest}
        if self.members:
            members = zip(self.members, dump["members"], strict=True)
            dump = {**dump, "members": [m._with_state_content(d) for m, d in members]}
        return dump

    def _with_layouts(self, dump: dict[str, Any]) -> dict[str, Any]:
        """``dump`` with the prompt layout of this judge's model and of each member's, where it
        is not DSPy's (a prompt change is a judge-config change), and its confidence source
        where it has one (left out otherwise: the hashes of judges without one stay what they
        were)."""
        out = _with_confidence(self, self.with_layout(dump))
        if self.members:
            members = zip(self.members, dump["members"], strict=True)
            out["members"] = [_with_confidence(m, m.with_layout(d)) for m, d in members]
        return out

    def model_family(self) -> str | None:
        """The judge's model family for self-preference: ``family`` where set, else read from
        its model string (:func:`assay.lm.model_family`); a panel's is its members' when they
        share one, None when they do not."""
        if self.family is not None:
            return self.family
        if self.program == "panel" and self.members:
            families = {m.model_family() for m in self.members}
            return families.pop() if len(families) == 1 else None
        return model_family(self.model)

    @property
    def model_shown(self) -> str:
        """The model(s) a verdict of this judge comes from (:func:`assay.types.model_shown`):
        its ``model``, or a panel's members'."""
        return model_shown(self)

    def flat_params(self) -> dict[str, str]:
        """The config flattened to ``key.sub → str`` for MLflow params; a panel's
        ``judge.model`` is its members' (:attr:`model_shown`), with no runtime or prompt layout
        of a model it never calls."""
        exclude = None if self.mlflow is not None else _NOT_MLFLOW
        out = flatten(self._with_layouts(self.model_dump(mode="json", exclude=exclude)), "judge")
        if self.program == "panel" and self.members:
            out["judge.model"] = self.model_shown
            for key in ("judge.runtime", "judge.prompt_layout"):
                out.pop(key, None)
        out["judge.config_hash"] = self.config_hash()
        return out


MLFLOW_SCHEMES = ("runs:/", "models:/", "mlflow-artifacts:/")
"""A ``program_state`` starting with one of these is an MLflow artifact URI, not a file."""


def moving_model_uri(ref: str) -> bool:
    """``models:/name@alias``, ``models:/name/Production``, ``models:/name/latest``: a reference
    MLflow resolves to another version later (``models:/name/3`` and ``models:/m-<id>`` stay)."""
    if not ref.startswith("models:/"):
        return False
    name, _, rest = ref.removeprefix("models:/").partition("/")
    return "@" in name or (bool(rest) and not rest.split("/")[0].isdigit())


def state_file_digest(ref: str | None) -> str | None:
    """The SHA-256 of a program state file's bytes (``None``: no state, an MLflow URI, or no
    such file yet — loading it then says so). Read each time it is asked for (a few times a
    run): never remembered by the file's size and modification time, which an edit can keep."""
    if not ref or ref.startswith(MLFLOW_SCHEMES):
        return None
    path = Path(ref).expanduser()
    if not path.exists():
        return None
    data = read_bytes(path, limit=_json.MAX_BYTES, what="program state file")  # a FIFO refused
    return hashlib.sha256(data).hexdigest()


def _with_confidence(config: JudgeConfig, dump: dict[str, Any]) -> dict[str, Any]:
    dump = {k: v for k, v in dump.items() if k != "confidence"}
    if config.confidence is not None:
        dump["confidence"] = config.confidence.identity()
    return dump


def fixed_scale(task: str) -> Scale | None:
    """The scale a judge kind imposes, if any."""
    from assay.programs.kinds import get_kind

    return get_kind(task).fixed_scale
