"""A review queue in a YAML file (``assay review export|import`` on a ``selective apply`` run's
abstained items or an ``estimate --suggest`` run's items to label): exported for a person to
give verdicts without a browser, imported through the queue's
:meth:`~assay.decisions.review_queue.ReviewQueue.record` — the review app's path too, with its
checks, its lock and its conflicts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay._yaml import dump_editable, read_input
from assay.decisions.review_queue import QueueItem, ReviewQueue
from assay.errors import DataError
from assay.runs import write_atomic

_READ_ONLY = ("item_id", "status", "current_verdict", "seen", "request", "response")
_TO_FILL = ("verdict", "reviewer", "note")
_TEXTS = ("request", "response")  # checked: an edit there would be lost


def export_queue(queue: ReviewQueue, out: Path, *, include_decided: bool = False) -> int:
    """Write the queue's pending items (all with ``include_decided``) to ``out`` for a person to
    edit, atomically; how many it lists."""
    entries = [
        _entry(queue, it) for it in queue.items() if it.status == "pending" or include_decided
    ]
    header = queue.file_header.format(n=len(entries), scale=queue.scale.describe())
    write_atomic(Path(out), header + "\n" + dump_editable(entries))
    return len(entries)


def _entry(queue: ReviewQueue, it: QueueItem) -> dict[str, Any]:
    return {
        "item_id": it.item_id,
        "status": it.status,
        "current_verdict": queue.label(it.verdict["score"]) if it.verdict else None,
        "seen": it.version,
        "request": it.request,
        "response": it.response,
        **queue.entry_details(it),
        "verdict": "",
        "reviewer": "",
        "note": "",
    }


def import_queue(queue: ReviewQueue, file: Path, *, reviewer: str | None = None) -> dict[str, int]:
    """Record the verdicts of an edited file; counts ``recorded`` and ``skipped`` (no verdict).

    Every entry is checked first — its keys, its item, its verdict on the scale, its reviewer,
    its texts unedited, no verdict given on the item since the file was written — and a bad
    one raises a DataError naming the file, the entry (``row N``, 1-based) and the field, with
    nothing written."""
    file = Path(file)
    data = read_input(file, DataError, what="review file")
    if not isinstance(data, list):
        raise DataError("a review file is a YAML list of entries", path=file)
    items = {it.item_id: it for it in queue.items()}
    todo: list[tuple[str, Any, str, Any, int]] = []
    rows: dict[str, int] = {}
    for row, entry in enumerate(data, start=1):
        found = _checked(queue, items, entry, reviewer, file, row)
        if found is None:
            continue
        if found[0] in rows:
            raise DataError(
                f"item {found[0]} has a verdict in entry {rows[found[0]]} already",
                path=file,
                row=row,
                field="item_id",
            )
        rows[found[0]] = row
        todo.append(found)
    for item_id, verdict, who, note, seen in todo:
        queue.record(item_id, verdict, reviewer=who, note=note, version=seen)
    return {"recorded": len(todo), "skipped": len(data) - len(todo)}


def _checked(
    queue: ReviewQueue,
    items: dict[str, QueueItem],
    entry: Any,
    reviewer: str | None,
    file: Path,
    row: int,
) -> tuple[str, Any, str, Any, int] | None:
    """One entry's verdict to record (None: left blank), or a DataError where it is wrong."""

    def bad(message: str, field: str | None = None) -> DataError:
        return DataError(message, path=file, row=row, field=field)

    if not isinstance(entry, dict):
        raise bad("an entry is a mapping (item_id, verdict, reviewer, note)")
    unknown = [k for k in entry if k not in _READ_ONLY + queue.detail_keys + _TO_FILL]
    if unknown:
        raise bad(f"unknown key (expected one of {', '.join(_TO_FILL)})", str(unknown[0]))
    item = items.get(entry.get("item_id"))  # type: ignore[arg-type]
    if item is None:
        raise bad(f"no {queue.item_noun} {entry.get('item_id')!r} in this run", "item_id")
    for key in _TEXTS:
        if key in entry and entry[key] != getattr(item, key):
            raise bad("read-only: edited in place, the edit would be lost", key)
    verdict = entry.get("verdict")
    if verdict is None or verdict == "":
        return None
    who, note = entry.get("reviewer") or reviewer, entry.get("note") or None
    try:  # the review app's checks of a verdict, its reviewer and its note
        queue.check(item.item_id, verdict, reviewer=who, note=note)
    except DataError as exc:
        hint = " (or pass --reviewer)" if exc.field == "reviewer" else ""
        raise bad(exc.message + hint, exc.field) from None
    seen = entry.get("seen")
    if not isinstance(seen, int) or isinstance(seen, bool):
        raise bad("read-only: how many verdicts the item had when exported", "seen")
    if seen != item.version:
        last = item.history[-1] if item.history else {}
        raise bad(
            f"item {item.item_id} got a verdict since this file was written (by "
            f"{last.get('reviewer') or 'someone'} at {last.get('timestamp') or '?'}): export "
            "again to see it",
            "seen",
        )
    return item.item_id, verdict, who.strip(), note, seen
