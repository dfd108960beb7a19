"""The review queue of a ``selective apply`` run: the items no stage of the cascade kept
(``abstained.jsonl``), a person's verdict on each, and the final verdicts that merge them.

This is the selective runner's public read side, as ``ReviewRun`` is the harness's: the review
app (:mod:`assay.web`) reads and writes a run only through it. A human verdict is a score on
the judges' scale with the reviewer's name and an optional note, appended to
``human_verdicts.jsonl`` under a file lock; the latest record of an item is its verdict (a
record with ``score: null`` takes it back), so nothing is rewritten and a restart loses nothing.
A verdict recorded on a stale view (the item got another verdict since it was loaded) is
refused with :class:`VerdictConflict`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from assay import _json
from assay._yaml import load as load_yaml
from assay.errors import DataError, RunError
from assay.runs import append_lines, file_lock, now, write_atomic
from assay.scale import Scale

ABSTAINED = "abstained.jsonl"
HUMAN_VERDICTS = "human_verdicts.jsonl"
VERDICTS = "verdicts.jsonl"
LOCK = "human_verdicts.lock"
HUMAN = "human"

__all__ = [
    "ABSTAINED",
    "HUMAN",
    "HUMAN_VERDICTS",
    "VERDICTS",
    "AbstainedItem",
    "AbstentionQueue",
    "VerdictConflict",
    "is_abstention_run",
    "latest_human_verdicts",
    "merge_verdicts",
]


class VerdictConflict(DataError):
    """A verdict given on a stale view: the item got another verdict since it was loaded."""

    def __init__(self, item_id: str, expected: int, latest: dict[str, Any] | None, count: int):
        self.item_id, self.expected, self.latest, self.count = item_id, expected, latest, count
        who = (latest or {}).get("reviewer") or "someone"
        when = (latest or {}).get("timestamp") or "?"
        super().__init__(
            f"item {item_id!r} got a verdict from {who} at {when} since it was loaded: "
            "reload it before deciding"
        )


def is_abstention_run(run_dir: Path) -> bool:
    """Whether ``run_dir`` is a finished ``selective apply`` run (it has ``abstained.jsonl``)."""
    return (Path(run_dir) / ABSTAINED).is_file()


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    """A JSONL file's records; a torn last line (a killed writer) is skipped, any other bad
    line is a one-line DataError."""
    out = []
    for lineno, record in _json.records(path):
        if not isinstance(record, dict) or not isinstance(record.get("item_id"), str):
            raise DataError("not a record with an item_id", path=path, row=lineno)
        out.append(record)
    return out


def latest_human_verdicts(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Each item's latest human verdict record (``score`` None: taken back, so pending)."""
    latest: dict[str, dict[str, Any]] = {}
    for r in _read_jsonl(Path(run_dir) / HUMAN_VERDICTS):
        latest[r["item_id"]] = r
    return {k: v for k, v in latest.items() if v.get("score") is not None}


def merge_verdicts(
    machine: list[dict[str, Any]], human: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """The final verdicts, in item order: a kept item's verdict from the stage that kept it
    (``source``: the judge's name), an abstained one's from a person (``source: human``), or
    none yet (``source: null``, ``abstained: true``). ``machine`` rows carry ``item_id``,
    ``score``, ``label``, ``source`` (None when abstained) and ``confidence``."""
    out = []
    for row in machine:
        if row.get("source") is not None:
            out.append(row)
            continue
        h = human.get(row["item_id"])
        base = {"item_id": row["item_id"], "abstained": True}
        if h is None:
            out.append({**base, "score": None, "label": None, "source": None})
        else:
            out.append(
                {
                    **base,
                    "score": h["score"],
                    "label": h.get("label"),
                    "source": HUMAN,
                    "reviewer": h.get("reviewer"),
                    "note": h.get("note"),
                    "timestamp": h.get("timestamp"),
                }
            )
    return out


def refresh_verdicts(run_dir: Path) -> tuple[int, int] | None:
    """Rewrite ``verdicts.jsonl`` with the human verdicts given so far; returns (abstained
    items with a human verdict, abstained items), or None for a run written before
    ``verdicts.jsonl`` was (nothing to merge into)."""
    run_dir = Path(run_dir)
    if not (run_dir / VERDICTS).is_file():
        return None
    rows = _read_jsonl(run_dir / VERDICTS)
    machine = [r if r.get("source") != HUMAN else {**r, "source": None} for r in rows]
    merged = merge_verdicts(machine, latest_human_verdicts(run_dir))
    write_atomic(
        run_dir / VERDICTS, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in merged)
    )
    abstained = [r for r in merged if r.get("abstained")]
    return sum(r["source"] == HUMAN for r in abstained), len(abstained)


@dataclass
class AbstainedItem:
    """An abstained item as a reviewer sees it: its texts, every stage's verdict with its
    confidence and threshold, and the human verdicts given on it (``version``: how many)."""

    item_id: str
    request: str
    response: str
    transcript: list[dict[str, Any]] | None
    stages: list[dict[str, Any]]
    history: list[dict[str, Any]] = field(default_factory=list)

    @property
    def version(self) -> int:
        return len(self.history)

    @property
    def verdict(self) -> dict[str, Any] | None:
        """The latest human verdict (None: pending, or taken back)."""
        last = self.history[-1] if self.history else None
        return last if last is not None and last.get("score") is not None else None

    @property
    def status(self) -> str:
        return "decided" if self.verdict is not None else "pending"


class AbstentionQueue:
    """The abstained items of one ``selective apply`` run, to review. Raises a one-line error
    when the directory is not such a run or a file in it cannot be read."""

    kind = "abstained"

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir).resolve()
        if not is_abstention_run(self.path):
            raise RunError(f"{run_dir}: not a selective apply run directory (no {ABSTAINED})")
        try:
            config = load_yaml((self.path / "config.yaml").read_text(encoding="utf-8"))
            self.scale = Scale.parse(config["judges"][0]["scale"])
        except (OSError, KeyError, IndexError, TypeError, ValueError, yaml.YAMLError):
            raise RunError(
                f"{run_dir}: not a selective run directory (no config.yaml with judges and a scale)"
            ) from None
        self.name = str(config.get("name") or self.path.name)
        self.items()  # read everything once now: a corrupt file is reported at start

    def abstained(self) -> list[dict[str, Any]]:
        return _read_jsonl(self.path / ABSTAINED)

    def history(self) -> list[dict[str, Any]]:
        return _read_jsonl(self.path / HUMAN_VERDICTS)

    def items(self) -> list[AbstainedItem]:
        """Every abstained item, the pending ones first (each group in the run's order)."""
        by_item: dict[str, list[dict[str, Any]]] = {}
        for r in self.history():
            by_item.setdefault(r["item_id"], []).append(r)
        out = [
            AbstainedItem(
                item_id=a["item_id"],
                request=a.get("request") or "",
                response=a.get("response") or "",
                transcript=a.get("transcript"),
                stages=a.get("stages") or [],
                history=by_item.get(a["item_id"], []),
            )
            for a in self.abstained()
        ]
        return sorted(out, key=lambda it: it.status != "pending")

    def counts(self, items: list[AbstainedItem]) -> dict[str, int]:
        pending = sum(it.status == "pending" for it in items)
        return {"pending": pending, "decided": len(items) - pending}

    def label(self, score: int | None) -> str:
        if score is None:
            return "—"
        name = self.scale.label_of(score)
        return f"{name} ({score})" if name is not None else str(score)

    def check(self, item_id: Any, verdict: Any, *, reviewer: Any, note: Any = None) -> int | None:
        """A human verdict's score on the judges' scale (None: taking the verdict back), its
        item, reviewer and note checked; a bad value is a DataError naming the field."""
        known = {a["item_id"] for a in self.abstained()}
        if not isinstance(item_id, str) or item_id not in known:
            raise DataError(
                f"no abstained item {item_id!r} in {self.path / ABSTAINED}", field="item_id"
            )
        if not isinstance(reviewer, str) or not reviewer.strip():
            raise DataError("missing: who gives the verdict", field="reviewer")
        if note is not None and not isinstance(note, str):
            raise DataError("not text", field="note")
        score = None
        if verdict is not None and verdict != "":
            try:
                score = self.scale.coerce(verdict)
            except (TypeError, ValueError):
                raise DataError(
                    f"{verdict!r} is not on the {self.scale.describe()} scale", field="verdict"
                ) from None
        return score

    def record(
        self,
        item_id: Any,
        verdict: Any,
        *,
        reviewer: Any,
        note: Any = None,
        version: int | None = None,
    ) -> dict[str, Any]:
        """Check a human verdict (:meth:`check`) and append it under the lock. ``verdict`` is
        a label or a score on the judges' scale, or None to take the item's verdict back;
        ``version`` is the number of verdicts the caller saw for the item (a different count:
        :class:`VerdictConflict`)."""
        score = self.check(item_id, verdict, reviewer=reviewer, note=note)
        with file_lock(self.path / LOCK):
            mine = [r for r in self.history() if r["item_id"] == item_id]
            if version is not None and len(mine) != version:
                raise VerdictConflict(item_id, version, mine[-1] if mine else None, len(mine))
            if score is None and not (mine and mine[-1].get("score") is not None):
                raise DataError("the item has no verdict to take back", field="verdict")
            record = {
                "item_id": item_id,
                "score": score,
                "label": None if score is None else self.scale.label_of(score),
                "reviewer": reviewer.strip(),
                "note": (note or "").strip() or None,
                "timestamp": now(),
            }
            append_lines(self.path / HUMAN_VERDICTS, json.dumps(record, ensure_ascii=False) + "\n")
        return record
