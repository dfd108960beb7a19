"""People's verdicts on a queue of items a finished run hands to them: the items a ``selective
apply`` run abstained on (``AbstentionQueue``, in :mod:`assay.decisions.selective.review`), and
the items an ``estimate`` run drew to be labelled next (:class:`LabelQueue`).

This is the decisions' public read side the review app (:mod:`assay.web`) and the review files
(``assay review export|import``) go through. A human verdict is a score on the run's scale with
the reviewer's name, an optional note and the time, appended to ``human_verdicts.jsonl`` under a
file lock; the latest record of an item is its verdict (a record with ``score: null`` takes it
back), so nothing is rewritten and a restart loses nothing. A verdict recorded on a stale view
(the item got another verdict since it was loaded) is refused with :class:`VerdictConflict`.

A queue whose verdicts decide a number (:class:`LabelQueue`: each verdict is a label an estimate
weighs by its sampling probability) signs each verdict with the signing key, over its fields,
the queue's run hash and the line before it, and reads back only a history that holds as a whole
(:class:`assay.runs.SignedHistory`: no line edited, added, moved, removed or cut off); the queue
itself — which items were drawn, with which probabilities — is covered by its run's seal, so an
edited probability is refused before anyone reviews.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, NotRequired, TypedDict, cast

from assay import _json
from assay.errors import DataError, RunError
from assay.runs import (
    HistoryKind,
    SignedHistory,
    append_lines,
    file_lock,
    now,
    sealed_run,
    signed_run,
)
from assay.scale import Scale

HUMAN_VERDICTS = "human_verdicts.jsonl"
LOCK = "human_verdicts.lock"
LABEL_QUEUE = "label_queue.jsonl"

__all__ = [
    "HUMAN_VERDICTS",
    "HumanVerdict",
    "LABEL_QUEUE",
    "LabelQueue",
    "QueueItem",
    "ReviewQueue",
    "VerdictConflict",
    "is_label_queue",
    "read_records",
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


def read_records(path: Path) -> list[dict[str, Any]]:
    """A JSONL file's records, each with an ``item_id``; a torn last line (a killed writer) is
    skipped, any other bad line is a one-line DataError."""
    return [record for _, record in _numbered(path)]


def _numbered(path: Path) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for lineno, record in _json.records(path):
        if not isinstance(record, dict) or not isinstance(record.get("item_id"), str):
            raise DataError("not a record with an item_id", path=path, row=lineno)
        out.append((lineno, record))
    return out


VERDICTS = HistoryKind(
    bound_to="queue",
    lines="verdicts",
    heads="label-queues",
    line=lambda r: f"verdict on item {r['item_id']!r}",
    signed_before=True,  # before the chain, each verdict of a signed queue was signed alone
)
"""A signed queue's verdict history, as :class:`assay.runs.SignedHistory` chains it."""


class HumanVerdict(TypedDict):
    """One line of ``human_verdicts.jsonl``: a person's verdict on a queued item (``score``
    None: a verdict taken back), when, and in a signed queue its ``signature`` and the
    signature of the line before it (``previous``)."""

    item_id: str
    score: int | None
    label: str | None
    reviewer: str
    note: str | None
    timestamp: str
    previous: NotRequired[str]
    signature: NotRequired[str]


@dataclass
class QueueItem:
    """A queued item as a reviewer sees it: its texts, what the run says about it
    (``details``: the queued record), and the human verdicts given on it (``version``: how
    many)."""

    item_id: str
    request: str
    response: str
    transcript: list[dict[str, Any]] | None
    details: dict[str, Any]
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


class ReviewQueue:
    """The queued items of one finished run and people's verdicts on them. A subclass names its
    items file and how a review file presents an entry; the checks, the lock, the conflicts and
    the history are the same for every queue."""

    kind: ClassVar[str]
    items_file: ClassVar[str]
    noun: ClassVar[str]  # what the items are: "abstained items"
    item_noun: ClassVar[str]  # one of them: "abstained item"
    signed: ClassVar[bool] = False
    detail_keys: ClassVar[tuple[str, ...]] = ()  # the read-only keys of a review file's entry
    file_header: ClassVar[str] = ""  # a review file's header ({n} entries, {scale})

    def __init__(self, run_dir: Path, scale: Scale, name: str, identity: str = ""):
        self.path = Path(run_dir).resolve()
        self.scale = scale
        self.name = name
        self.identity = identity  # the run instance a signed verdict is bound to (signed_run)
        self.items()  # read everything once now: a corrupt file is reported at start

    def queued(self) -> list[dict[str, Any]]:
        """The queued items' records, in the run's order."""
        return read_records(self.path / self.items_file)

    def history(self) -> list[dict[str, Any]]:
        return read_records(self.path / HUMAN_VERDICTS)

    def items(self) -> list[QueueItem]:
        """Every queued item, the pending ones first (each group in the run's order)."""
        by_item: dict[str, list[dict[str, Any]]] = {}
        for r in self.history():
            by_item.setdefault(r["item_id"], []).append(r)
        out = [
            QueueItem(
                item_id=a["item_id"],
                request=a.get("request") or "",
                response=a.get("response") or "",
                transcript=a.get("transcript"),
                details=a,
                history=by_item.get(a["item_id"], []),
            )
            for a in self.queued()
        ]
        return sorted(out, key=lambda it: it.status != "pending")

    def counts(self, items: list[QueueItem]) -> dict[str, int]:
        pending = sum(it.status == "pending" for it in items)
        return {"pending": pending, "decided": len(items) - pending}

    def label(self, score: int | None) -> str:
        if score is None:
            return "—"
        name = self.scale.label_of(score)
        return f"{name} ({score})" if name is not None else str(score)

    def next_step(self) -> str:
        """What to do once verdicts are recorded."""
        return ""

    def entry_details(self, item: QueueItem) -> dict[str, Any]:
        """The read-only keys of ``item``'s entry in a review file beside its texts."""
        return {k: item.details.get(k) for k in self.detail_keys}

    def check(
        self, item_id: object, verdict: object, *, reviewer: object, note: object = None
    ) -> int | None:
        """A human verdict's score on the scale (None: taking the verdict back), its item,
        reviewer and note checked — whatever a review file or a request holds —; a bad value is
        a DataError naming the field."""
        known = {a["item_id"] for a in self.queued()}
        if not isinstance(item_id, str) or item_id not in known:
            raise DataError(
                f"no {self.item_noun} {item_id!r} in {self.path / self.items_file}",
                field="item_id",
            )
        if not isinstance(reviewer, str) or not reviewer.strip():
            raise DataError("missing: who gives the verdict", field="reviewer")
        if note is not None and not isinstance(note, str):
            raise DataError("not text", field="note")
        score = None
        if verdict is not None and verdict != "":
            try:
                score = self.scale.read_entry(verdict)
            except (TypeError, ValueError):
                raise DataError(
                    f"{verdict!r} is not on the {self.scale.describe()} scale", field="verdict"
                ) from None
        return score

    def record(
        self,
        item_id: object,
        verdict: object,
        *,
        reviewer: object,
        note: object = None,
        version: int | None = None,
    ) -> HumanVerdict:
        """Check a human verdict (:meth:`check`) and append it under the lock. ``verdict`` is
        a label or a score on the scale, or None to take the item's verdict back; ``version``
        is the number of verdicts the caller saw for the item (a different count:
        :class:`VerdictConflict`)."""
        score = self.check(item_id, verdict, reviewer=reviewer, note=note)
        with file_lock(self.path / LOCK):
            settled = self.signed_history().settled() if self.signed else None
            mine = [r for r in self.history() if r["item_id"] == item_id]
            if version is not None and len(mine) != version:
                raise VerdictConflict(item_id, version, mine[-1] if mine else None, len(mine))
            if score is None and not (mine and mine[-1].get("score") is not None):
                raise DataError("the item has no verdict to take back", field="verdict")
            record = HumanVerdict(
                item_id=str(item_id),  # each checked above: text
                score=score,
                label=None if score is None else self.scale.label_of(score),
                reviewer=str(reviewer).strip(),
                note=str(note or "").strip() or None,
                timestamp=now(),
            )
            path = self.path / HUMAN_VERDICTS
            if settled is None:
                append_lines(path, json.dumps(record, ensure_ascii=False) + "\n")
            else:
                (linked,) = self.signed_history().append(
                    [dict(record)], settled, lambda text: append_lines(path, text)
                )
                record = cast(HumanVerdict, linked)
        return record

    def signed_history(self) -> SignedHistory:
        """The verdicts of a signed queue as one chain, bound to the queue's run hash."""
        return SignedHistory(
            VERDICTS,
            self.path / HUMAN_VERDICTS,
            self.identity,
            read=_numbered,
            lock=lambda: file_lock(self.path / LOCK),
        )

    def verdicts(self) -> dict[str, dict[str, Any]]:
        """Each item's latest human verdict (taken-back ones left out); in a signed queue the
        history is checked as a whole first (:class:`assay.runs.SignedHistory`): a verdict
        edited or added by hand, lines moved, removed or copied, or the end cut off is a
        DataError naming the file and the first bad row. A score off the scale (a line signed
        by hand with the key: ``record`` refuses one) is a DataError naming the file, the row
        and the field."""
        path = self.path / HUMAN_VERDICTS
        numbered = self.signed_history().lines() if self.signed else _numbered(path)
        latest: dict[str, dict[str, Any]] = {}
        for row, r in numbered:
            if r.get("score") is not None:
                try:
                    self.scale.check(r["score"])
                except ValueError as exc:
                    raise DataError(str(exc), path=path, row=row, field="score") from None
            latest[r["item_id"]] = r
        return {k: v for k, v in latest.items() if v.get("score") is not None}


def is_label_queue(run_dir: Path) -> bool:
    """Whether ``run_dir`` is an ``estimate --suggest`` run (it has ``label_queue.jsonl``)."""
    return (Path(run_dir) / LABEL_QUEUE).is_file()


_LABEL_HEADER = """\
# Items to label, drawn by `assay estimate --suggest` ({n} listed). Label every one: the
# estimate weighs each label by 1 / inclusion, and leaving out the hard ones biases it.
# Fill in, save, then import this file.
#
# For each entry:
#   verdict:   your label on the judge's scale, a label or a score ({scale});
#              leave "" to decide later (the item stays pending)
#   reviewer:  your name (required with a verdict; or pass --reviewer when importing)
#   note:      optional: why
#
# The other keys are read-only: the judge's verdict and prediction are shown for context (the
# estimate needs your own label, not a check of the judge's). `seen` is how many verdicts the
# item had when this file was written: an item given another verdict since is refused.
# Nothing is written unless every entry is valid.
"""


class LabelQueue(ReviewQueue):
    """The items an ``estimate --suggest`` run drew to be labelled next, each with the
    probability it was drawn with. The run must be finished and its seal hold (the drawn items
    and their probabilities decide the estimate's weights: an edit is refused here, before any
    review); each verdict is signed."""

    kind = "to_label"
    items_file = LABEL_QUEUE
    noun = "items to label"
    item_noun = "item to label"
    signed = True
    detail_keys = ("judge", "inclusion")
    file_header = _LABEL_HEADER

    def __init__(self, run_dir: Path):
        path = Path(run_dir)
        if not is_label_queue(path):
            raise RunError(f"{run_dir}: not an estimate run with a label queue (no {LABEL_QUEUE})")
        state = sealed_run(path, kind="estimate", needs=(LABEL_QUEUE, "metrics.json"))
        try:
            summary = json.loads((path / "metrics.json").read_text(encoding="utf-8"))
            queue = summary["queue"]
            scale = Scale.parse(queue["scale"])
        except (OSError, ValueError, KeyError, TypeError):
            raise RunError(f"{run_dir}: its metrics.json describes no label queue") from None
        self.state: dict[str, Any] = queue  # how the queue was drawn (its QueueState)
        self.source_run_hash: str = queue.get("source_run_hash") or ""
        self.source_run: str = str(summary.get("run") or "RUN")
        identity = signed_run(str(state.get("run_hash") or ""), state.get("instance"))
        super().__init__(path, scale, path.name, identity=identity)

    def queued(self) -> list[dict[str, Any]]:
        return [r for r in read_records(self.path / self.items_file) if r.get("drawn")]

    def check_source(self, run_hash: str) -> None:
        """Refuse, in one line, to weigh this queue's labels into the estimate of a run it was
        not drawn from: its probabilities are another pool's."""
        if self.source_run_hash != run_hash:
            raise RunError(
                f"{self.path}: a label queue drawn from another run (or from this run before "
                "its data changed): its probabilities are not this run's"
            )

    def next_step(self) -> str:
        return (
            f"re-run `assay estimate {self.source_run} --queue {self.path}` to update the "
            "estimate (its interval holds once every drawn item is labelled)"
        )

    def pool(self) -> list[dict[str, Any]]:
        """Every pool item with the probability it was drawn with, drawn or not."""
        return read_records(self.path / self.items_file)
