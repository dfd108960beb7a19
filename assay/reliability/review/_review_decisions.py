"""Recording review decisions: the one path for the YAML import and the browser.

Every decision is validated against its probe before anything is written, and appended to
``reviews.jsonl`` under a file lock, signed and chained after the history it was checked against
(``_review_chain.py``), so concurrent reviewers never lose or interleave one, a decision made on
a stale view is refused (:class:`ReviewConflict`), and a line added past this path is refused
by every reader.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple, NotRequired, TypedDict, cast

from assay.errors import DataError
from assay.reliability._probe import Probe
from assay.reliability.review._review import (
    PROBES,
    REVIEWS,
    checked_decisions,
    read_probes,
    read_reviews,
)
from assay.reliability.review._review_chain import review_history, review_lock
from assay.runs import append_lines, now
from assay.scale import Scale

__all__ = [
    "DECISIONS",
    "Fail",
    "ReviewConflict",
    "ReviewRecord",
    "decision_history",
    "record_decision",
    "record_decisions",
    "review_lock",
]

DECISIONS = {"accept": "accepted", "edit": "edited", "reject": "rejected"}

Fail = Callable[..., DataError]  # builds the error for the current entry: fail(message, field)


class ReviewConflict(DataError):
    """A decision made on a stale view: the probe got another decision since it was loaded."""

    def __init__(self, probe_id: str, expected: int, latest: dict[str, Any] | None, count: int):
        self.probe_id, self.expected, self.latest, self.count = probe_id, expected, latest, count
        who = (latest or {}).get("reviewer") or "someone"
        when = (latest or {}).get("timestamp") or "?"
        super().__init__(
            f"probe {probe_id!r} was changed by {who} at {when} ({latest and latest.get('status')})"
            f" since it was loaded: reload it before deciding"
        )


class ReviewRecord(TypedDict):
    """One line of ``reviews.jsonl``: a decision on a probe (``status``: accepted, edited,
    rejected, or pending again), who made it and when, and an edit's new response, target or
    messages (None: unchanged); ``undo_of``: the decision a browser's undo reverts; its
    ``signature`` and the signature of the line before it (``previous``)."""

    probe_id: str
    status: str
    reviewer: str
    note: str | None
    response: str | None
    target: int | None
    messages: NotRequired[dict[int, str]]
    undo_of: NotRequired[int]
    timestamp: str
    previous: NotRequired[str]
    signature: NotRequired[str]


def record_decisions(
    run_dir: Path,
    entries: Sequence[dict[str, Any]],
    scale: Scale,
    *,
    reviewer: str | None = None,
    source: Path | None = None,
    versions: dict[str, int] | None = None,
    probes: dict[str, Probe] | None = None,
    check: Callable[..., None] | None = None,
    allow_reset: bool = False,
) -> list[ReviewRecord | None]:
    """Validate decisions and append them to ``reviews.jsonl`` in one write, under the lock,
    each signed and chained after the history they were checked against.

    Each entry is a mapping with ``probe_id``, ``decision`` (accept / edit / reject, or empty
    to skip; ``reset`` back to pending with ``allow_reset``), ``edited_text``,
    ``edited_target``, ``reviewer`` and ``note``. Every entry is checked before anything is
    written — unknown probe id, a probe listed twice, an off-scale target, an edit that
    changes nothing, a missing reviewer — and a bad one raises a DataError naming ``source``,
    its entry number and the field. ``versions`` maps probe ids to the number of decisions
    the caller saw for them: a different count raises :class:`ReviewConflict`. ``check(entry,
    probe, history, scale, fail)`` adds caller-specific checks. Returns the appended records
    as written, signed (``None`` for skipped entries), in entry order.
    """
    run_dir = Path(run_dir)
    if probes is None:
        probes = {p.id: p for p in read_probes(run_dir)}
    chain = review_history(run_dir)
    with review_lock(run_dir):
        settled = chain.settled()
        history = checked_decisions(settled[0], chain.path, scale)
        stamp = now()
        out: list[ReviewRecord | None] = []
        seen: dict[str, int] = {}
        for row, entry in enumerate(entries, start=1):

            def fail(message: str, field: str | None = None, row: int = row) -> DataError:
                return DataError(message, path=source, row=row if source else None, field=field)

            probe_id = entry.get("probe_id")
            if not isinstance(probe_id, str) or not probe_id:
                raise fail("missing", "probe_id")
            if probe_id not in probes:
                raise fail(f"no probe {probe_id!r} in {run_dir / PROBES}", "probe_id")
            if probe_id in seen:
                raise fail(
                    f"{probe_id!r} is listed twice (first at row {seen[probe_id]})", "probe_id"
                )
            seen[probe_id] = row
            if versions is not None and probe_id in versions:
                mine = [r for r in history if r["probe_id"] == probe_id]
                if len(mine) != versions[probe_id]:
                    raise ReviewConflict(
                        probe_id, versions[probe_id], mine[-1] if mine else None, len(mine)
                    )
            probe = probes[probe_id]
            if check is not None:
                check(entry, probe, history, scale, fail)
            record = _decide(entry, probe, scale, reviewer, fail, allow_reset=allow_reset)
            out.append(None if record is None else ReviewRecord(**record, timestamp=stamp))
        new = [dict(r) for r in out if r is not None]
        linked = iter(chain.append(new, settled, lambda text: _append(run_dir / REVIEWS, text)))
    return [None if r is None else cast(ReviewRecord, next(linked)) for r in out]


def record_decision(
    run_dir: Path,
    entry: dict[str, Any],
    scale: Scale,
    *,
    version: int | None = None,
    probes: dict[str, Probe] | None = None,
    allow_reset: bool = False,
) -> ReviewRecord:
    """Validate and append one decision (see :func:`record_decisions`); returns its record.

    ``version`` is the number of decisions the caller saw for the probe (``None``: no check).
    An empty decision is an error here: there is nothing to record.
    """
    pid = entry.get("probe_id")
    versions = {pid: version} if version is not None and isinstance(pid, str) else None
    decision = entry.get("decision")
    if decision is None or not str(decision).strip():
        raise DataError("no decision given (accept, edit or reject)", field="decision")
    (record,) = record_decisions(
        run_dir, [entry], scale, versions=versions, probes=probes, allow_reset=allow_reset
    )
    assert record is not None
    return record


def decision_history(run_dir: Path, probe_id: str) -> list[dict[str, Any]]:
    """Every decision on one probe, oldest first (its length is the probe's version)."""
    return [r for r in read_reviews(run_dir) if r["probe_id"] == probe_id]


_KEEP = (None, None, None)  # accept / reject / reset: response, target and messages unchanged


class _Edits(NamedTuple):
    """What an entry's ``edited_*`` fields hold, checked (None: not filled)."""

    text: str | None
    target: int | None
    messages: dict[int, str] | None


def _decide(
    entry: dict[str, Any],
    probe: Probe,
    scale: Scale,
    reviewer: str | None,
    fail: Fail,
    *,
    allow_reset: bool = False,
) -> dict[str, Any] | None:
    """The review line (without timestamp) for one entry, or None when its decision is empty."""
    raw = entry.get("decision")
    decision = "" if raw is None else str(raw).strip().lower()
    allowed = {**DECISIONS, "reset": "pending"} if allow_reset else DECISIONS
    if decision and decision not in allowed:
        raise fail(f"{raw!r} is not one of {', '.join(allowed)} (or empty)", "decision")
    edits = _read_edits(entry, probe, scale, fail)
    if decision != "edit":
        _refuse_unused_edits(decision, edits, fail)
    if not decision:
        return None
    response, target, messages = _changes(edits, probe, fail) if decision == "edit" else _KEEP

    for key in ("reviewer", "note"):  # a name and a note are text (a number read as one)
        value = entry.get(key)
        if isinstance(value, bool) or not isinstance(value, str | int | float | None):
            raise fail(f"{value!r} is not text", key)
    name = _text_or_none(entry.get("reviewer")) or _text_or_none(reviewer)
    if name is None:
        raise fail(
            "a decision needs a reviewer (fill it in, or pass one when importing)", "reviewer"
        )
    record = {
        "probe_id": probe.id,
        "status": allowed[decision],
        "reviewer": name,
        "note": _text_or_none(entry.get("note")),
        "response": response,
        "target": target,
        **({"messages": messages} if messages else {}),
    }
    if isinstance(entry.get("undo_of"), int):  # the browser's undo: which decision it reverts
        record["undo_of"] = entry["undo_of"]
    return record


def _read_edits(entry: dict[str, Any], probe: Probe, scale: Scale, fail: Fail) -> _Edits:
    """The entry's edited text, target and messages, each checked on its own (an empty string
    reads as "not filled", like null)."""
    edited_text = entry.get("edited_text")
    if edited_text is not None and not isinstance(edited_text, str):
        raise fail(f"must be text, got {edited_text!r} (quote it)", "edited_text")
    if isinstance(edited_text, str) and not edited_text.strip():
        edited_text = None
    edited_target = entry.get("edited_target")
    if isinstance(edited_target, str) and not edited_target.strip():
        edited_target = None
    if edited_target is not None:
        try:
            edited_target = scale.read_entry(edited_target)
        except ValueError as exc:
            raise fail(str(exc), "edited_target") from None

    edited_messages = _edited_messages(entry.get("edited_messages"), probe, fail)
    if edited_text is not None and probe.transcript:
        raise fail(
            "a transcript probe is edited message by message: use edited_messages", "edited_text"
        )
    return _Edits(edited_text, edited_target, edited_messages)


def _refuse_unused_edits(decision: str, edits: _Edits, fail: Fail) -> None:
    """Edited fields filled in with any decision but ``edit`` would be silently lost."""
    said = f"is {decision!r}" if decision else "is empty"
    if edits.messages:
        raise fail(
            f"is filled but the decision {said}: set decision: edit, or clear it",
            "edited_messages",
        )
    if edits.text is not None or edits.target is not None:
        field = "edited_text" if edits.text is not None else "edited_target"
        raise fail(f"is filled but the decision {said}: set decision: edit, or clear it", field)


def _changes(
    edits: _Edits, probe: Probe, fail: Fail
) -> tuple[str | None, int | None, dict[str, str] | None]:
    """What an ``edit`` decision changes: response, target and messages (by index), each None
    when it is the generated probe's; an edit that changes nothing is refused."""
    if edits.text is None and edits.target is None and edits.messages is None:
        edited = "edited_messages" if probe.transcript else "edited_text"
        raise fail(f"decision is 'edit' but {edited} and edited_target are both empty", "decision")
    response = target = None
    messages: dict[str, str] | None = None
    if edits.messages:
        messages = {
            str(i): text
            for i, text in edits.messages.items()
            if probe.transcript and text != probe.transcript[i].content
        } or None
    if edits.text is not None:
        text = edits.text
        if not probe.response.endswith("\n"):
            text = text.rstrip("\n")  # a block literal adds a final newline
        if text != probe.response:
            response = text
    if edits.target is not None and edits.target != probe.target:
        target = edits.target
    if response is None and target is None and messages is None:
        raise fail(
            "is the same as the generated probe: nothing to edit (to keep it, use accept)",
            "edited_messages"
            if edits.messages
            else "edited_text"
            if edits.target is None
            else "edited_target",
        )
    return response, target, messages


def _edited_messages(raw: Any, probe: Probe, fail: Fail) -> dict[int, str] | None:
    """``edited_messages`` checked: assistant message indices of the probe's transcript, each
    with non-empty text (a block literal's final newline dropped)."""
    if raw is None or raw == {} or raw == "":
        return None
    if not probe.transcript:
        raise fail("only agent transcript probes have messages to edit", "edited_messages")
    if not isinstance(raw, dict):
        raise fail("must be a mapping  <message index>: <text>", "edited_messages")
    out: dict[int, str] = {}
    for key, text in raw.items():
        index = int(key) if isinstance(key, int) or str(key).strip().isdigit() else None
        if index is None or not 0 <= index < len(probe.transcript):
            raise fail(f"{key!r} is not a message index of this transcript", "edited_messages")
        if probe.transcript[index].role != "assistant":
            raise fail(f"message {index} is not an assistant message", "edited_messages")
        if not isinstance(text, str) or not text.strip():
            raise fail(f"message {index}: the text must not be empty", "edited_messages")
        if not probe.transcript[index].content.endswith("\n"):
            text = text.rstrip("\n")
        out[index] = text
    return out


def _text_or_none(value: Any) -> str | None:
    text = "" if value is None else str(value).strip()
    return text or None


def _append(path: Path, text: str) -> None:
    """The run store's append (whole lines in one write, a torn last line cut first, fsynced),
    under a name of this module's so a test can widen the window the review lock closes."""
    append_lines(path, text)
