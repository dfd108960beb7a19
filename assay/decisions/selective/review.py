"""The review queue of a ``selective apply`` run: the items no stage of the cascade kept
(``abstained.jsonl``), a person's verdict on each, and the final verdicts that merge them.

This is the selective runner's public read side, as ``ReviewRun`` is the harness's: the review
app (:mod:`assay.web`) reads and writes a run only through it. The queue — a verdict's checks,
the lock, the conflicts, the history in ``human_verdicts.jsonl`` — is every review queue's
(:class:`~assay.decisions.review_queue.ReviewQueue`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from assay._yaml import load as load_yaml
from assay.decisions.review_queue import (
    HUMAN_VERDICTS,
    QueueItem,
    ReviewQueue,
    VerdictConflict,
    read_records,
)
from assay.errors import RunError
from assay.runs import sealed_run, signed_run, write_atomic
from assay.scale import Scale

ABSTAINED = "abstained.jsonl"
VERDICTS = "verdicts.jsonl"
HUMAN = "human"

__all__ = [
    "ABSTAINED",
    "HUMAN",
    "HUMAN_VERDICTS",
    "VERDICTS",
    "AbstentionQueue",
    "QueueItem",
    "VerdictConflict",
    "is_abstention_run",
    "merge_verdicts",
]


def is_abstention_run(run_dir: Path) -> bool:
    """Whether ``run_dir`` is a finished ``selective apply`` run (it has ``abstained.jsonl``)."""
    return (Path(run_dir) / ABSTAINED).is_file()


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
    rows = read_records(run_dir / VERDICTS)
    machine = [r if r.get("source") != HUMAN else {**r, "source": None} for r in rows]
    merged = merge_verdicts(machine, AbstentionQueue(run_dir).verdicts())
    write_atomic(
        run_dir / VERDICTS, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in merged)
    )
    abstained = [r for r in merged if r.get("abstained")]
    return sum(r["source"] == HUMAN for r in abstained), len(abstained)


_HEADER = """\
# Abstained items of a selective run ({n} listed): no stage of the cascade was confident
# enough to keep them. Fill in, save, then import this file.
#
# For each entry:
#   verdict:   your verdict on the judges' scale, a label or a score ({scale});
#              leave "" to decide later (the item stays pending)
#   reviewer:  your name (required with a verdict; or pass --reviewer when importing)
#   note:      optional: why
#
# The other keys are read-only. `seen` is how many verdicts the item had when this file was
# written: an item given another verdict since is refused (export again to see it).
# Nothing is written unless every entry is valid. Re-run `assay selective apply` afterwards to
# merge the verdicts into verdicts.jsonl.
"""


class AbstentionQueue(ReviewQueue):
    """The abstained items of one ``selective apply`` run, to review. Raises a one-line error
    when the directory is not such a run or a file in it cannot be read."""

    kind = "abstained"
    items_file = ABSTAINED
    noun = "abstained items"
    item_noun = "abstained item"
    signed = True  # the verdicts become final verdicts: one edited or added by hand is refused
    detail_keys = ("stages",)
    file_header = _HEADER

    def next_step(self) -> str:
        """What to do once verdicts are recorded."""
        return "re-run `assay selective apply` to merge them into verdicts.jsonl"

    def __init__(self, run_dir: Path):
        path = Path(run_dir)
        if not is_abstention_run(path):
            raise RunError(f"{run_dir}: not a selective apply run directory (no {ABSTAINED})")
        try:
            config = load_yaml((path / "config.yaml").read_text(encoding="utf-8"))
            scale = Scale.parse(config["judges"][0]["scale"])
        except (OSError, KeyError, IndexError, TypeError, ValueError, yaml.YAMLError):
            raise RunError(
                f"{run_dir}: not a selective run directory (no config.yaml with judges and a scale)"
            ) from None
        # the queue is the finished run's, as it sealed it: an item added by hand is no item
        state = sealed_run(path, kind="selective_apply", needs=(ABSTAINED,))
        name = str(config.get("name") or path.resolve().name)
        identity = signed_run(str(state.get("run_hash") or ""), state.get("instance"))
        super().__init__(path, scale, name, identity=identity)

    def entry_details(self, item: QueueItem) -> dict[str, Any]:
        """What every stage said of the item: its label, confidence and threshold."""
        said = [
            {k: s.get(k) for k in ("judge", "label", "confidence", "threshold", "unscored")}
            for s in item.details.get("stages") or []
        ]
        return {"stages": said}
