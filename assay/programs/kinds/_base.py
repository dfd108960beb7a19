"""What a judge kind is: one file per kind, registered by name (``task:`` in a judge config).

A kind says which signature the judge runs, which output field holds the verdict (and the
reasoning), which input field holds the judged text (what format variants perturb), whether the
scale is fixed, and how an item becomes the signature's inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import dspy

from assay._registry import Registry
from assay.errors import AssayError
from assay.programs.kinds._settings import JudgeProgram, JudgeSettings
from assay.scale import Scale
from assay.types import Item


class JudgeCallFailed(Exception):
    """A judge that calls its model itself (an MLflow judge) could not grade an item: an
    unscored judgment with ``reason`` (``lm_error``, ``parse_error``, ``timeout``)."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


class PluginFailed(JudgeCallFailed, AssayError):
    """A plug-in judge kind's own code failed on an item — its ``inputs`` or ``forward`` raised,
    or ``forward`` returned what is no verdict —: an unscored ``plugin_error`` judgment whose
    error names the plug-in (retried by ``--retry-unscored``); outside a judgment (an optimizer
    building its examples) one line naming it."""

    def __init__(self, message: str):
        Exception.__init__(self, message)
        self.reason = "plugin_error"


class JudgeKind:
    """Base of every judge kind; subclasses set the class attributes and ``inputs``."""

    name: ClassVar[str]
    signature: ClassVar[type[dspy.Signature]]
    verdict_field: ClassVar[str] = "verdict"
    reasoning_field: ClassVar[str | None] = None
    judged_field: ClassVar[str]
    fixed_scale: ClassVar[Scale | None] = None
    # the scale a judge of this kind gets when its config names none
    default_scale: ClassVar[Scale | None] = None
    # the verdict field is typed from the config's scale (Literal of its options)
    scaled: ClassVar[bool] = False
    # the judge writes its own prompt (an MLflow judge): no instruction or rubric of assay's
    # reaches it, so nothing that asks it another task (polarity) or tunes its prompt applies
    own_prompt: ClassVar[bool] = False

    @classmethod
    def build_signature(cls, config: JudgeSettings) -> type[dspy.Signature]:
        """The kind's signature for ``config`` (its scale and instruction): one class per
        distinct pair, shared by every judge built for it — a stability probe's judge at its
        own rollout reuses its source's signature, and with it the adapters' per-signature
        system message, response format and parsing signature (rebuilt, they cost a few ms of
        CPU per probe). Signatures are immutable classes, so sharing one is safe."""
        scale = config.scale.model_dump_json() if cls.scaled and config.scale else None
        key = (cls, cls.signature, scale, config.instruction)
        sig = _SIGNATURES.get(key)
        if sig is None:
            sig = _SIGNATURES[key] = cls._signature_for(config)
        return sig

    @classmethod
    def _signature_for(cls, config: JudgeSettings) -> type[dspy.Signature]:
        from assay.signatures import with_scale

        if cls.scaled:
            return with_scale(cls.signature, config.scale, config.instruction)
        sig = cls.signature
        return sig.with_instructions(config.instruction) if config.instruction else sig

    @classmethod
    def default_scale_for(cls, config: JudgeSettings) -> Scale | None:
        """The scale a judge of this kind gets when ``config`` names none."""
        return cls.default_scale

    @classmethod
    def check(cls, config: JudgeSettings) -> None:
        """Raise ``ValueError`` when ``config`` cannot be judged as this kind."""

    @classmethod
    def inputs(cls, config: JudgeSettings, item: Item) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def forward(cls, judge: JudgeProgram, inputs: dict[str, Any]) -> dspy.Prediction | None:
        """A kind that judges in several calls (e.g. one per rubric criterion) returns its own
        prediction; ``None`` means one call of the judge's predictor."""
        return None


_KINDS: Registry[type[JudgeKind]] = Registry(
    "judge kind", "assay.programs.kinds", unknown="unknown judge task '{name}'; known: {known}"
)
_SIGNATURES: dict[tuple[Any, ...], type[dspy.Signature]] = {}  # JudgeKind.build_signature's


def judge_kind(name: str) -> Callable[[type[JudgeKind]], type[JudgeKind]]:
    """Register a judge kind under ``name``."""
    return _KINDS.register(name)


def known_kinds() -> list[str]:
    return _KINDS.names()


def get_kind(name: str) -> type[JudgeKind]:
    return _KINDS.get(name)
