"""The cue tests (``authority``, ``bandwagon``, ``distraction``): a cue inserted into the
judged response — a fabricated citation, a claim about other reviewers' verdicts, an irrelevant
but plausible aside — with the content otherwise identical (see ``_insertion``).

The measure is consistency with the judge's own verdict on the source; where the verdict
changes, the report says whether it moved toward the cue's verdict or away from it. A cue's
verdict (``toward``) is the top or bottom of the scale, or the opposite of the source's
reference label; a cue without one (a distraction) reports moves up and down the scale.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from assay.errors import ConfigError
from assay.reliability._registry import GenerationContext
from assay.reliability.probes._insertion import (
    InsertionSettings,
    InsertionTest,
    opposite_verdict,
    verdict_phrase,
)
from assay.scale import Scale
from assay.types import Item

Toward = Literal["top", "bottom", "opposite"]


class CueSettings(InsertionSettings):
    templates: list[str] = Field(default_factory=list, description="cue texts; {verdict} optional")
    toward: Toward | None = None

    @field_validator("templates")
    @classmethod
    def _texts(cls, v: list[str]) -> list[str]:
        if any(not t.strip() for t in v):
            raise ValueError("a cue template may not be empty")
        if len(set(v)) != len(v):
            raise ValueError("each template may be given once")
        return v


class CueTest(InsertionTest):
    """A cue test: ``templates`` (default ``DEFAULT_TEMPLATES``) at ``positions``; ``scoring``
    ``cue``. Targets are the sources' reference labels where they exist (the pass rate);
    consistency with the own source verdict is computed without them."""

    scoring = "cue"
    needs_labels = False
    Settings: ClassVar[type] = CueSettings
    DEFAULT_TEMPLATES: ClassVar[tuple[str, ...]]

    @property
    def toward(self) -> Toward | None:
        return self.settings.toward  # type: ignore[attr-defined]

    def templates(self) -> list[str]:
        return list(self.settings.templates or self.DEFAULT_TEMPLATES)  # type: ignore[attr-defined]

    def check(self, items: list[Item], scale: Scale) -> None:
        super().check(items, scale)
        needs_verdict = any("{verdict}" in t for t in self.templates())
        if needs_verdict and self.toward is None:
            raise ConfigError(
                f"tests.{self.name}.templates: a template names {{verdict}}, so set 'toward' "
                "(top, bottom or opposite)"
            )
        if self.toward == "opposite" and any(it.expected is None for it in items):
            missing = sum(it.expected is None for it in items)
            raise ConfigError(
                f"tests.{self.name}.toward: 'opposite' needs reference labels; "
                f"{missing} seed items have none"
            )

    def cue_verdict(self, src: Item, scale: Scale) -> int | None:
        if self.toward == "top":
            return scale.values[-1]
        if self.toward == "bottom":
            return scale.values[0]
        if self.toward == "opposite" and src.expected is not None:
            return opposite_verdict(src.expected, scale)
        return None

    def blocks(
        self, src: Item, ctx: GenerationContext
    ) -> list[tuple[str, str | None, dict[str, Any]]]:
        cue = self.cue_verdict(src, ctx.scale)
        out: list[tuple[str, str | None, dict[str, Any]]] = []
        for i, template in enumerate(self.templates()):
            meta: dict[str, Any] = {"cue_verdict": cue, "template": i}
            if "{verdict}" in template:
                if cue is None:
                    out.append((f"t{i}", None, {"detail": "no verdict for the cue to claim"}))
                    continue
                template = template.replace("{verdict}", verdict_phrase(cue, ctx.scale))
            out.append((f"t{i}", template, meta))
        return out
