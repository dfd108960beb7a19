"""The items where a judge and the reference disagree most — what a user reads after the κ."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypedDict


class DisagreementDict(TypedDict):
    """A :class:`Disagreement` as a plain dict (:meth:`Disagreement.to_dict`)."""

    id: Hashable
    reference: Any
    judge: Any
    distance: float


@dataclass(frozen=True)
class Disagreement:
    """One disagreeing item: its id, both scores and their distance on the scale (> 0)."""

    id: Hashable
    reference: Any
    judge: Any
    distance: float

    def to_dict(self) -> DisagreementDict:
        """A plain dict, e.g. for one line of ``disagreements.jsonl``."""
        return DisagreementDict(**asdict(self))


def _plain(value: Any) -> Any:
    """numpy scalars as Python values, so records serialise as JSON."""
    return value.item() if hasattr(value, "item") and callable(value.item) else value


def _positions(values: Sequence[Any], scale: Sequence[Any] | None, name: str) -> list[float]:
    if scale is not None:
        index = {_plain(v): i for i, v in enumerate(scale)}
        out = []
        for i, v in enumerate(values):
            if _plain(v) not in index:
                raise ValueError(
                    f"{name}[{i}] = {v!r} is not on the scale {list(scale)!r} "
                    "(drop unscored items before ranking disagreements)"
                )
            out.append(float(index[_plain(v)]))
        return out
    out = []
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(_plain(v), int | float) or not math.isfinite(v):
            raise ValueError(
                f"{name}[{i}] must be a finite number, got {v!r} "
                "(drop unscored items first, or pass scale=[...] for labels)"
            )
        out.append(float(v))
    return out


def disagreements(
    ids: Sequence[Hashable],
    reference: Sequence[Any],
    judge: Sequence[Any],
    *,
    scale: Sequence[Any] | None = None,
    top: int | None = None,
    ordered: bool = True,
) -> list[Disagreement]:
    """The items where ``judge`` differs from ``reference``, most distant first.

    The distance is ``|judge − reference|`` for numeric scores, or the number of steps between
    their positions on ``scale`` (its values in order, e.g. ``["safe", "risky", "unsafe"]``);
    with ``ordered=False`` (unordered categories, where no class is nearer another) it is 1 for
    every disagreement.
    Ties are broken by id (by ``repr(id)`` if the ids are not mutually comparable), so the order
    does not depend on the input order; ``top`` keeps the first ``top`` records.
    """
    ids, reference, judge = list(ids), list(reference), list(judge)
    if not len(ids) == len(reference) == len(judge):
        raise ValueError(
            "ids, reference and judge must have one entry per item, got lengths "
            f"{len(ids)}, {len(reference)} and {len(judge)}"
        )
    if len(set(ids)) != len(ids):
        seen: set[Hashable] = set()
        duplicate = next(i for i in ids if i in seen or seen.add(i))
        raise ValueError(f"ids must be unique, {duplicate!r} appears more than once")
    if top is not None and (isinstance(top, bool) or not isinstance(top, int) or top < 0):
        raise ValueError(f"top must be a non-negative integer or None, got {top!r}")
    if scale is not None and len({_plain(v) for v in scale}) != len(scale):
        raise ValueError(f"scale values must be distinct, got {list(scale)!r}")
    ref_pos = _positions(reference, scale, "reference")
    judge_pos = _positions(judge, scale, "judge")
    records = [
        Disagreement(_plain(i), _plain(r), _plain(j), abs(jp - rp) if ordered else 1.0)
        for i, r, j, rp, jp in zip(ids, reference, judge, ref_pos, judge_pos, strict=True)
        if jp != rp
    ]
    try:
        records.sort(key=lambda d: (-d.distance, d.id))
    except TypeError:
        records.sort(key=lambda d: (-d.distance, repr(d.id)))
    return records if top is None else records[:top]
