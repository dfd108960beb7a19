"""A judge's output space: binary, ordinal or categorical, with an optional label → score map.

Metrics work on 0-based integer indices; :meth:`Scale.index` maps a score onto them.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

from assay.errors import ConfigError, quoted

__all__ = ["INTEGER_TEXT", "MAX_POINTS", "Scale", "ScaleError", "ScaleKind"]

ScaleKind = Literal["binary", "ordinal", "categorical"]
INTEGER_TEXT = re.compile(r"[+-]?[0-9]+(?:\.0*)?")
"""An integer written out: ASCII digits only (a full-width "３" or Arabic-Indic "٣" is no score)."""
_TRUTH = {"true": True, "yes": True, "false": False, "no": False}
"""The true/false words a reference may be written in (and what a boolean reads as)."""


def _name(text: str) -> str:
    """A label name as the scale compares names: any case, surrounding whitespace ignored."""
    return text.strip().lower()


def _binary_digit(value: object) -> int | None:
    """``value`` as 0 or 1 where it is one written as a number (an integer, an integral float,
    an ASCII digit string such as ``"1"`` or ``"1.0"``); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        if not INTEGER_TEXT.fullmatch(text) or len(text) > 20:
            return None
        value = float(text)
    if isinstance(value, int | float) and value in (0, 1):
        return int(value)
    return None


class ScaleError(ConfigError, ValueError):
    """A scale that cannot be read. A ``ValueError`` too, so that inside a config model pydantic
    reports it with the field it came from (and ``load_config`` with the file)."""


MAX_POINTS = 101
"""Most scores of an ordinal scale (0-100): κ's bootstrap holds a table of scores x scores per
replicate (a typo such as 0-100000000 would ask for petabytes)."""


def _reason(exc: ValueError) -> str:
    """The first reason of a (pydantic) ``ValueError``, without pydantic's prefix."""
    reason = exc.errors()[0]["msg"] if hasattr(exc, "errors") else str(exc)
    return reason.removeprefix("Value error, ")


class Scale(BaseModel):
    """The verdict space of a judge.

    - ``binary``: scores 0 and 1; ``labels`` names them (``[name of 0, name of 1]``), unless
      ``positive`` names the label that is 1 (the positive class of FPR/FNR, P(positive
      verdict), certify's default event), whatever the labels' order.
    - ``ordinal``: integer scores ``min..max``; ``labels`` optional names, low to high.
    - ``categorical``: named ``labels``; ``scores`` maps each label to an integer score
      (several labels may share a score, as in ToolEmu safety) and makes the scale ordered;
      without ``scores`` a label's score is its position and the labels are unordered
      (nominal: Krippendorff's α nominal, the Alt-Test by accuracy).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: ScaleKind = Field(
        description=("binary, ordinal (integer scores min..max) or categorical (named labels)")
    )
    min: int | None = Field(default=None, description="ordinal: the lowest score")
    max: int | None = Field(default=None, description="ordinal: the highest score")
    labels: list[str] | None = Field(
        default=None,
        description=(
            "the verdicts' names: binary [name of 0, name of 1]; ordinal optional, "
            "low to high; categorical required"
        ),
    )
    scores: dict[str, int] | None = Field(
        default=None,
        description=(
            "categorical: each label's integer score (several labels may share "
            "one); makes the scale ordered"
        ),
    )
    positive: str | None = Field(
        default=None,
        description="binary: the label that is the positive class (score 1) whatever the order "
        "of 'labels'; default: the second label",
    )

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, value: Any) -> Any:
        """Accept the short forms ``binary``, ``0-3``, ``1..6`` wherever a scale is expected."""
        if isinstance(value, str):
            return Scale.parse(value).model_dump(exclude_none=True)
        return value

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> Any:
        """Leave ``positive`` out of a dump when it is not set, so that the hashes of the
        scales written without it (judge configs, probes, cached items) stay what they were."""
        out = handler(self)
        if isinstance(out, dict) and out.get("positive") is None:
            out.pop("positive", None)
        return out

    @model_validator(mode="after")
    def _check(self) -> Scale:
        if self.labels is not None and len({_name(x) for x in self.labels}) != len(self.labels):
            raise ValueError("labels must be distinct ('A' and 'a' are one name: any case)")
        if self.positive is not None and (self.kind != "binary" or not self.labels):
            raise ValueError("'positive' names one of the two labels of a binary scale")
        if self.kind == "binary":
            if self.labels is not None and len(self.labels) != 2:
                raise ValueError("a binary scale has exactly two labels: [name of 0, name of 1]")
            if self.min not in (None, 0) or self.max not in (None, 1):
                raise ValueError("a binary scale is 0..1")
            if self.positive is not None and _name(self.positive) not in map(_name, self.labels):
                raise ValueError(f"positive {self.positive!r} is not one of the labels")
        elif self.kind == "ordinal":
            if self.min is None or self.max is None:
                raise ValueError("an ordinal scale needs 'min' and 'max'")
            if self.max <= self.min:
                raise ValueError("an ordinal scale needs max > min")
            if self.max - self.min + 1 > MAX_POINTS:
                raise ValueError(
                    f"an ordinal scale has at most {MAX_POINTS} scores (0-100), got "
                    f"{self.max - self.min + 1:,}: its metrics hold a table of scores x scores"
                )
            if self.labels is not None and len(self.labels) != self.max - self.min + 1:
                raise ValueError("an ordinal scale's labels must name every score from min to max")
        else:
            if not self.labels or len(self.labels) < 2:
                raise ValueError("a categorical scale needs at least two labels")
            if self.scores is not None and set(self.scores) != set(self.labels):
                raise ValueError("'scores' must map exactly the categorical labels")
        return self

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def parse(cls, spec: str | dict | Scale) -> Scale:
        """Build a scale from a config value or a CLI string: ``binary``, ``0-3`` or ``1..6``
        (ordinal), or comma-separated labels ``a,b,c`` (categorical: unordered, nominal),
        optionally written ``categorical:a,b,c``."""
        if isinstance(spec, Scale):
            return spec
        if isinstance(spec, dict):
            return cls.model_validate(spec)
        text = str(spec).strip()
        if text == "binary":
            return cls(kind="binary")
        m = re.fullmatch(r"(-?[0-9]+)\s*(?:-|\.\.)\s*(-?[0-9]+)", text)
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if (lo, hi) == (0, 1):
                return cls(kind="binary")
            try:
                return cls(kind="ordinal", min=lo, max=hi)
            except ValueError as exc:  # pydantic's: max <= min, too many scores
                raise ScaleError(f"cannot read scale {text!r}: {_reason(exc)}") from None
        named = text.removeprefix("categorical:")
        if "," in named or named != text:
            labels = [label.strip() for label in named.split(",")]
            if not all(labels):
                raise ScaleError(f"cannot read scale {text!r}: an empty label")
            try:
                return cls(kind="categorical", labels=labels)
            except ValueError as exc:  # pydantic's: too few or repeated labels
                raise ScaleError(f"cannot read scale {text!r}: {_reason(exc)}") from None
        raise ScaleError(
            f"cannot read scale {text!r}: use 'binary', 'MIN-MAX', labels 'a,b,c' or a mapping"
        )

    # -- the score space ------------------------------------------------------------------
    @property
    def values(self) -> list[int]:
        """Every valid score, ascending."""
        if self.kind == "binary":
            return [0, 1]
        if self.kind == "ordinal":
            return list(range(self.min, self.max + 1))  # type: ignore[arg-type]
        return sorted(set(self.label_scores.values()))

    @property
    def ordered(self) -> bool:
        """Whether the scores are ordered: binary, ordinal, and a categorical scale with a
        label → score map (ToolEmu's). A categorical scale without one is nominal."""
        return self.kind != "categorical" or bool(self.scores)

    @property
    def k(self) -> int:
        """Number of ordered categories the metrics see."""
        return len(self.values)

    @property
    def label_scores(self) -> dict[str, int]:
        """label → score for every named label (empty for an unnamed scale)."""
        if self.kind == "categorical":
            assert self.labels is not None
            return (
                dict(self.scores) if self.scores else {lab: i for i, lab in enumerate(self.labels)}
            )
        if self.labels and self.positive is not None:
            return {lab: int(_name(lab) == _name(self.positive)) for lab in self.labels}
        if self.labels:
            return {lab: v for lab, v in zip(self.labels, self.values, strict=True)}
        return {}

    @property
    def verdict_options(self) -> list[str]:
        """What the judge may answer: label names where the scale has them, else score digits."""
        if self.kind == "categorical" or self.labels:
            return list(self.label_scores)
        return [str(v) for v in self.values]

    def index(self, score: int) -> int:
        """0-based category index of a valid score (what the metrics use)."""
        return self.values.index(self.check(score))

    def check(self, score: object) -> int:
        """Return ``score`` as an int if it is on the scale; raise ``ValueError`` otherwise.

        An integral float counts (``2.0`` is 2); a boolean never does (``True`` is not 1)."""
        if isinstance(score, float) and score.is_integer():
            score = int(score)
        if isinstance(score, bool) or not isinstance(score, int) or score not in self.values:
            raise ValueError(f"{quoted(score)} is not on the {self.describe()} scale")
        return score

    def coerce(self, value: object) -> int:
        """Read a *reference label* (data) — the one reader of references, wherever a reference
        meets a scale (tables, Inspect logs, ToolEmu evaluator files, MLflow assessments,
        annotation tables, review files). In this order:

        1. a label name of the scale (any case, surrounding whitespace ignored); a boolean
           reads as its word, ``True`` as ``"True"``, so a categorical ``False|True|Unsure``
           scale reads a CSV's ``False`` as its label ``False``;
        2. a score: an integer, an integral float or an ASCII digit string (``0``/``1`` on a
           binary scale: the labels' order, or ``positive``, says which name is 1 — except
           where the two names are a true and a false word, below); on a scale whose labels
           are numbers (``1,2,3``; a binary ``["1", "0"]``) the label it spells, whether the
           table holds it as text or as a number;
        3. on a binary scale, a true/false word (``true``, ``false``, ``yes``, ``no``, any
           case) or a boolean that is not one of its names, where it cannot be confused with
           them: by meaning when the two names are themselves a true and a false word
           (``yes`` is the label ``True``) — and so is a ``1``/``0`` there (``1`` is the label
           ``True`` of ``["True", "False"]``, never its score 1: a 0/1 column means true and
           false, whatever order the names are listed in) —; the label ``1``/``0`` when the
           names are those digits (``true`` is the label ``1`` of ``["1", "0"]``); as 1/0 when
           no name is such a word (``pass/fail``, or no names).

        ``ValueError`` for anything else — a true/false word a scale with other such names
        cannot place (``true`` on ``yes|maybe``), a boolean on an ordinal or categorical scale
        without those names."""
        word = str(value) if isinstance(value, bool) else value
        if isinstance(word, str):
            names = {_name(k): v for k, v in self.label_scores.items()}
            if _name(word) in names:
                return names[_name(word)]
            truth = _TRUTH.get(_name(word))
            if truth is not None and self.kind == "binary":
                return self._truth_score(truth, value)
        if isinstance(value, bool):
            raise ValueError(f"{quoted(value)} is not on the {self.describe()} scale")
        if self.kind == "binary" and self._truth_names == "pair":
            digit = _binary_digit(value)
            if digit is not None:  # 1 is true: the label that says so, not the score 1
                return self._truth_score(bool(digit), value)
        return self._read(value, labels_only=False)

    def _truth_score(self, truth: bool, value: Any) -> int:
        """The score of a true/false word that is none of a binary scale's names (or of a
        0/1 on a scale whose names are a true and a false word)."""
        names = self._truth_names
        if names == "pair":
            return next(v for k, v in self.label_scores.items() if _TRUTH[_name(k)] is truth)
        if names == "none":
            digits = {_name(k): v for k, v in self.label_scores.items()}
            if set(digits) == {"0", "1"}:  # the names are 0 and 1: true is the name 1
                return digits[str(int(truth))]
            return int(truth)
        raise ValueError(
            f"{quoted(value)} is not on the {self.describe()} scale (its names are true/false words "
            "other than this one)"
        )

    @property
    def _truth_names(self) -> Literal["pair", "none", "mixed"]:
        """Whether a binary scale's names are a true and a false word (``True/False``,
        ``no/yes``), none is such a word (``fail/pass``, or no names), or a mix."""
        truths = {_TRUTH.get(_name(label)) for label in self.label_scores}
        if truths <= {None}:
            return "none"
        return "pair" if truths == {True, False} else "mixed"

    def read_entry(self, value: object) -> int:
        """Read what a person types where a file asks for "a label or a score" of this scale (a
        review file's verdict, an edited target): a number is a score of the scale as the file
        lists them (``True (0)``: the 0 is the score 0, never read by meaning as a reference's
        0/1 is) or, where the labels are numbers, the label it spells (:meth:`_read`); anything
        else as a reference is read (:meth:`coerce`: a label name, a true/false word).
        ``ValueError`` for what is on neither."""
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if number or isinstance(value, str) and INTEGER_TEXT.fullmatch(value.strip()):
            return self._read(value, labels_only=False)
        return self.coerce(value)

    def read_verdict(self, value: object) -> int:
        """Read a *judge's verdict*: only what :attr:`verdict_options` offers counts — a label
        name (any case) where the scale has labels, else an integer score (as a number or its
        digit string). Anything else (``True``, ``"yes"``, a score of another scale, a digit on
        a labelled scale) raises ``ValueError``: an unscored ``off_scale`` judgment."""
        return self._read(value, labels_only=bool(self.label_scores))

    def _read(self, value: Any, *, labels_only: bool) -> int:
        if self._numbered_labels and isinstance(value, int | float) and not isinstance(value, bool):
            # labels that are numbers (``1,2,3``): a number is the label it spells, never a position
            value = str(int(value)) if float(value).is_integer() else str(value)
        if isinstance(value, str):
            text = value.strip()
            table = {_name(k): v for k, v in self.label_scores.items()}
            if _name(text) in table:
                return table[_name(text)]
            if not (labels_only or self._numbered_labels) and INTEGER_TEXT.fullmatch(text):
                # the integer written, digit for digit (read through a float, a long one was
                # named in its error by a nearby float's digits)
                try:
                    number = int(text.split(".", 1)[0])
                except ValueError:  # past Python's 4,300 digits: on no scale either
                    number = None
                if number is not None:
                    return self.check(number)
            raise ValueError(f"{quoted(value)} is not on the {self.describe()} scale")
        if labels_only:
            raise ValueError(f"{quoted(value)} is not on the {self.describe()} scale")
        return self.check(value)

    @property
    def _numbered_labels(self) -> bool:
        """A scale with labels that are integers: nominal codes such as ``1,2,3``, a binary
        ``["1", "0"]`` whose failure label is ``1``, an ordinal 0..2 named ``1,2,3``. A number
        is then read as the label it spells, as its text is: a table's column of numbers read
        as integers must not mean other scores than the same column read as text (or the
        judge's verdict ``"1"``)."""
        return any(INTEGER_TEXT.fullmatch(label.strip()) for label in self.labels or [])

    def label_of(self, score: int) -> str | None:
        """The first label that maps to ``score`` (None for unnamed scales)."""
        for lab, v in self.label_scores.items():
            if v == score:
                return lab
        return None

    def tool_value(self, score: int) -> bool | int | str | None:
        """A verdict as other tools hold it (an MLflow ``Feedback`` value, an Inspect score's
        answer): a bool on a binary scale, the label on a categorical one, the integer score
        on an ordinal one."""
        if self.kind == "binary":
            names = self._truth_names  # what :meth:`coerce` reads back as ``score``
            if names == "none":
                return bool(score)
            label = self.label_of(score)
            return _TRUTH[_name(label)] if names == "pair" else label  # type: ignore[arg-type]
        if self.kind == "categorical":
            return self.label_of(score)
        return score

    def describe(self) -> str:
        if self.kind == "binary":
            names = f" ({self.label_of(0)}/{self.label_of(1)})" if self.labels else ""
            return f"binary 0/1{names}"
        if self.kind == "ordinal":
            return f"ordinal {self.min}..{self.max}"
        return "categorical " + "|".join(self.labels or [])
