"""Human review of generated probes (SPEC §4): export a YAML file, import a person's decisions.

A person accepts, edits (text and/or target) or rejects each probe before judging. Decisions are
appended to the run's ``reviews.jsonl`` (one JSON object a line; the latest line for a probe wins)
with reviewer, note and time; ``probes.jsonl`` is never rewritten, so the generated probe is always
the original and :func:`apply_reviews` rebuilds the reviewed state from the two files.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from assay.data import iter_jsonl, last_assistant_text_index, replace_message
from assay.errors import DataError
from assay.experiments.reliability._probe import Probe, Review
from assay.experiments.runs import now
from assay.scale import Scale
from assay.types import Item

__all__ = [
    "ReviewConflict",
    "apply_reviews",
    "decision_history",
    "run_scale",
    "export_review",
    "import_review",
    "read_reviews",
    "record_decision",
    "record_decisions",
    "review_lock",
    "review_counts",
]

SEEDS = "seeds.jsonl"
PROBES = "probes.jsonl"
REVIEWS = "reviews.jsonl"

STATUSES = ("pending", "accepted", "edited", "rejected")
DECISIONS = {"accept": "accepted", "edit": "edited", "reject": "rejected"}

_Fail = Callable[..., DataError]  # builds the error for the current entry: fail(message, field)

# Keys of an entry in the review file; any other key is a typo worth reporting.
_READ_ONLY = (
    "probe_id",
    "status",
    "test",
    "source_id",
    "target",
    "target_label",
    "source_text",
    "probe_text",
    "judge_task",  # polarity: the inverted instruction / rubric / scale the judge is asked
    "edits",
)
_TO_FILL = ("decision", "edited_text", "edited_target", "edited_messages", "reviewer", "note")

_HEADER = """\
# Review of generated probes ({n} listed). Fill in, save, then import this file.
#
# For each entry:
#   decision:       accept | edit | reject   (leave "" to decide later; the probe stays pending)
#   edited_text:    with decision: edit, the corrected probe text (copy probe_text and change it)
#   edited_target:  with decision: edit, the corrected target: a score or a label ({scale})
#   edited_messages: agent transcript probes (they list their `edits`: each edited message's
#                   index, the planner's intent, the original and the edited text): with
#                   decision: edit, a mapping  <message index>: <corrected text>  (edited_text
#                   is not used for them)
#   reviewer:       your name (required for every decision; or pass a reviewer when importing)
#   note:           optional: why
#
# The other keys are read-only: change the text in edited_text, not in probe_text.
# Multi-line text uses YAML block literals: a line "key: |" followed by the text indented.
# Nothing is written unless every entry is valid.
"""


# -- reading the run directory ----------------------------------------------------------------
def read_probes(run_dir: Path) -> list[Probe]:
    path = run_dir / PROBES
    out: list[Probe] = []
    for _, lineno, record in iter_jsonl(path):
        try:
            out.append(Probe.model_validate(record))
        except ValueError as exc:
            raise DataError(f"not a probe: {_first_error(exc)}", path=path, row=lineno) from None
    return out


def read_seeds(run_dir: Path) -> dict[str, Item]:
    path = run_dir / SEEDS
    out: dict[str, Item] = {}
    for _, lineno, record in iter_jsonl(path):
        try:
            item = Item.model_validate(record)
        except ValueError as exc:
            raise DataError(f"not an item: {_first_error(exc)}", path=path, row=lineno) from None
        out[item.id] = item
    return out


def _first_error(exc: ValueError) -> str:
    return str(exc).splitlines()[-1].strip() if str(exc) else type(exc).__name__


def read_reviews(run_dir: Path) -> list[dict[str, Any]]:
    """The review decisions of a run, in the order they were made (empty if none yet).

    A final line cut short by a kill mid-write is ignored (it is dropped before the next
    append); any other malformed line is a DataError naming its line.
    """
    path = Path(run_dir) / REVIEWS
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    out: list[dict[str, Any]] = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        torn = lineno == len(lines) and not line.endswith("\n")
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            if torn:
                break
            raise DataError(f"not valid JSON ({exc.msg})", path=path, row=lineno) from None
        if not isinstance(record, dict):
            raise DataError("not a JSON object", path=path, row=lineno)
        if not isinstance(record.get("probe_id"), str):
            raise DataError("missing or not text", path=path, row=lineno, field="probe_id")
        if record.get("status") not in STATUSES:
            raise DataError(
                f"{record.get('status')!r} is not one of {', '.join(STATUSES)}",
                path=path,
                row=lineno,
                field="status",
            )
        out.append(record)
    return out


# -- applying decisions -----------------------------------------------------------------------
def apply_reviews(probes: list[Probe], reviews: Iterable[dict[str, Any]]) -> list[Probe]:
    """Copies of ``probes`` with ``review`` set from each probe's latest decision.

    Every decision is about the generated probe, so the latest one replaces earlier ones
    entirely (an ``accepted`` after an ``edited`` keeps the generated text). An ``edited``
    decision replaces the response and/or target it carries, keeps what it replaced in
    ``review.original_response`` / ``review.original_target``, and marks an edited target
    ``target_source="human"``. Decisions about probes not in ``probes`` are ignored.
    """
    latest: dict[str, dict[str, Any]] = {}
    for decision in reviews:
        latest[decision["probe_id"]] = decision  # file order: the last one wins
    out: list[Probe] = []
    for probe in probes:
        copy = probe.model_copy(deep=True)
        decision = latest.get(probe.id)
        if decision is not None:
            review = Review(
                status=decision["status"],
                reviewer=decision.get("reviewer"),
                note=decision.get("note"),
                timestamp=decision.get("timestamp"),
            )
            if decision["status"] == "edited":
                if decision.get("response") is not None:
                    review.original_response = probe.response
                    copy.response = decision["response"]
                if decision.get("target") is not None:
                    review.original_target = probe.target
                    copy.target = decision["target"]
                    copy.target_source = "human"
                if decision.get("messages") and copy.transcript:
                    review.original_messages = {}
                    for key, text in decision["messages"].items():
                        i = int(key)
                        review.original_messages[i] = copy.transcript[i].content
                        copy.transcript = replace_message(copy.transcript, i, content=text)
                    final = last_assistant_text_index(copy.transcript)
                    if final is not None:
                        copy.response = copy.transcript[final].content
            copy.review = review
        out.append(copy)
    return out


def review_counts(probes_with_reviews: Iterable[Probe]) -> dict[str, int]:
    """How many probes are pending, accepted, edited and rejected (every key present)."""
    counts = dict.fromkeys(STATUSES, 0)
    for probe in probes_with_reviews:
        counts[probe.review.status] += 1
    return counts


# -- export -----------------------------------------------------------------------------------
class _ReviewDumper(yaml.SafeDumper):
    """Safe YAML with multi-line text as block literals (``|``), so a person can edit it."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # PyYAML falls back to a quoted scalar by itself when a block cannot hold the text exactly
    # (for instance trailing spaces on a line), so the file always round-trips.
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_ReviewDumper.add_representer(str, _represent_str)


def export_review(run_dir: Path, out: Path, scale: Scale, *, include_reviewed: bool = False) -> int:
    """Write a YAML review file of the run's pending probes (all probes with ``include_reviewed``).

    Each entry shows the probe's current text and target next to its seed's response and
    has blank fields for the decision. Written atomically; returns how many probes it lists.
    """
    run_dir, out = Path(run_dir), Path(out)
    probes = apply_reviews(read_probes(run_dir), read_reviews(run_dir))
    seeds = read_seeds(run_dir)
    entries: list[dict[str, Any]] = []
    for row, probe in enumerate(probes, start=1):
        if probe.review.status != "pending" and not include_reviewed:
            continue
        seed = seeds.get(probe.source_id)
        if seed is None:
            raise DataError(
                f"no seed with id {probe.source_id!r} in {SEEDS}",
                path=run_dir / PROBES,
                row=row,
                field="source_id",
            )
        entries.append(
            {
                "probe_id": probe.id,
                "status": probe.review.status,
                "test": probe.test,
                "source_id": probe.source_id,
                "target": probe.target,
                "target_label": None if probe.target is None else scale.label_of(probe.target),
                "source_text": seed.response,
                "probe_text": probe.response,
                **({"judge_task": probe.meta["judge_task"]} if "judge_task" in probe.meta else {}),
                **_edits_entry(probe),
                "decision": "",
                "edited_text": None,
                "edited_target": None,
                **({"edited_messages": None} if probe.transcript else {}),
                "reviewer": "",
                "note": "",
            }
        )
    body = yaml.dump(
        entries,
        Dumper=_ReviewDumper,
        sort_keys=False,
        allow_unicode=True,
        width=1_000_000,  # never fold a long line: a person edits it as it is
    )
    header = _HEADER.format(n=len(entries), scale=scale.describe())
    _write_atomic(out, header + "\n" + body)
    return len(entries)


def _edits_entry(probe: Probe) -> dict[str, Any]:
    """A transcript probe's edits as a per-message diff: index, the planner's intent, the
    original and the edited message (and tool-call arguments, where they changed)."""
    edits = probe.meta.get("edits")
    if not probe.transcript or not isinstance(edits, list):
        return {}
    out = []
    for e in edits:
        row = {
            "message_index": e.get("message_index"),
            "intent": e.get("intent"),
            "original": e.get("original"),
            "edited": e.get("replacement"),
        }
        if "replacement_tool_calls" in e:
            row["original_tool_calls"] = e.get("original_tool_calls")
            row["edited_tool_calls"] = e.get("replacement_tool_calls")
        out.append(row)
    return {"edits": out}


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


# -- recording decisions (the one path for the YAML import and the browser) -------------------
LOCK = "reviews.lock"


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


@contextmanager
def review_lock(run_dir: Path) -> Iterator[None]:
    """Exclusive lock on the run's review log (``fcntl.flock`` on ``reviews.lock``): every
    writer holds it from reading the history to the end of its append, so concurrent
    reviewers (processes or threads) never lose or interleave a decision."""
    with open(Path(run_dir) / LOCK, "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


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
) -> list[dict[str, Any] | None]:
    """Validate decisions and append them to ``reviews.jsonl`` in one write, under the lock.

    Each entry is a mapping with ``probe_id``, ``decision`` (accept / edit / reject, or empty
    to skip; ``reset`` back to pending with ``allow_reset``), ``edited_text``,
    ``edited_target``, ``reviewer`` and ``note``. Every entry is checked before anything is
    written — unknown probe id, a probe listed twice, an off-scale target, an edit that
    changes nothing, a missing reviewer — and a bad one raises a DataError naming ``source``,
    its entry number and the field. ``versions`` maps probe ids to the number of decisions
    the caller saw for them: a different count raises :class:`ReviewConflict`. ``check(entry,
    probe, history, scale, fail)`` adds caller-specific checks. Returns the appended records
    (``None`` for skipped entries), in entry order.
    """
    run_dir = Path(run_dir)
    if probes is None:
        probes = {p.id: p for p in read_probes(run_dir)}
    with review_lock(run_dir):
        history = read_reviews(run_dir)
        stamp = now()
        out: list[dict[str, Any] | None] = []
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
            out.append(None if record is None else {**record, "timestamp": stamp})
        lines = [json.dumps(r, ensure_ascii=False) + "\n" for r in out if r is not None]
        if lines:
            _append(run_dir / REVIEWS, "".join(lines))
    return out


def record_decision(
    run_dir: Path,
    entry: dict[str, Any],
    scale: Scale,
    *,
    version: int | None = None,
    probes: dict[str, Probe] | None = None,
    allow_reset: bool = False,
) -> dict[str, Any]:
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


# -- import -----------------------------------------------------------------------------------
def import_review(
    run_dir: Path, file: Path, scale: Scale, *, reviewer: str | None = None
) -> dict[str, int]:
    """Record the decisions of an edited review file; returns counts by decision.

    Every entry is checked before anything is written: a bad entry raises a DataError naming
    the file, its entry number (``row N``, 1-based) and the field, and ``reviews.jsonl`` is
    left as it was. Entries with an empty ``decision`` are skipped (the probe stays pending).
    ``reviewer`` is used for entries that do not name one. The returned counts have the keys
    ``accepted``, ``edited``, ``rejected`` and ``skipped``.
    """
    run_dir, file = Path(run_dir), Path(file)
    entries = _load_review_file(file)
    for row, entry in enumerate(entries, start=1):
        unknown = [k for k in entry if k not in _READ_ONLY + _TO_FILL]
        if unknown:
            raise DataError(
                f"unknown key (expected one of {', '.join(_TO_FILL)})",
                path=file,
                row=row,
                field=str(unknown[0]),
            )
    records = record_decisions(
        run_dir, entries, scale, reviewer=reviewer, source=file, check=_check_read_only
    )
    counts = {"accepted": 0, "edited": 0, "rejected": 0, "skipped": 0}
    for record in records:
        counts["skipped" if record is None else record["status"]] += 1
    return counts


def _decide(
    entry: dict[str, Any],
    probe: Probe,
    scale: Scale,
    reviewer: str | None,
    fail: _Fail,
    *,
    allow_reset: bool = False,
) -> dict[str, Any] | None:
    """The review line (without timestamp) for one entry, or None when its decision is empty."""
    raw = entry.get("decision")
    decision = "" if raw is None else str(raw).strip().lower()
    allowed = {**DECISIONS, "reset": "pending"} if allow_reset else DECISIONS
    if decision and decision not in allowed:
        raise fail(f"{raw!r} is not one of {', '.join(allowed)} (or empty)", "decision")
    edited_text = entry.get("edited_text")
    if edited_text is not None and not isinstance(edited_text, str):
        raise fail(f"must be text, got {edited_text!r} (quote it)", "edited_text")
    if isinstance(edited_text, str) and not edited_text.strip():
        edited_text = None  # "" reads as "not filled", like null
    edited_target = entry.get("edited_target")
    if isinstance(edited_target, str) and not edited_target.strip():
        edited_target = None
    if edited_target is not None:
        try:
            edited_target = scale.coerce(edited_target)
        except ValueError as exc:
            raise fail(str(exc), "edited_target") from None

    edited_messages = _edited_messages(entry.get("edited_messages"), probe, fail)
    if edited_text is not None and probe.transcript:
        raise fail(
            "a transcript probe is edited message by message: use edited_messages", "edited_text"
        )
    if decision != "edit" and edited_messages:
        said = f"is {decision!r}" if decision else "is empty"
        raise fail(
            f"is filled but the decision {said}: set decision: edit, or clear it",
            "edited_messages",
        )
    if decision != "edit" and (edited_text is not None or edited_target is not None):
        field = "edited_text" if edited_text is not None else "edited_target"
        said = f"is {decision!r}" if decision else "is empty"
        raise fail(f"is filled but the decision {said}: set decision: edit, or clear it", field)
    if not decision:
        return None

    response = target = None
    messages: dict[str, str] | None = None
    if decision == "edit":
        if edited_text is None and edited_target is None and edited_messages is None:
            raise fail(
                "decision is 'edit' but edited_text and edited_target are both empty", "decision"
            )
        if edited_messages:
            messages = {
                str(i): text
                for i, text in edited_messages.items()
                if probe.transcript and text != probe.transcript[i].content
            } or None
        if edited_text is not None:
            if not probe.response.endswith("\n"):
                edited_text = edited_text.rstrip("\n")  # a block literal adds a final newline
            if edited_text != probe.response:
                response = edited_text
        if edited_target is not None and edited_target != probe.target:
            target = edited_target
        if response is None and target is None and messages is None:
            raise fail(
                "is the same as the generated probe: nothing to edit (to keep it, use accept)",
                "edited_messages"
                if edited_messages
                else "edited_text"
                if edited_target is None
                else "edited_target",
            )

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


def _edited_messages(raw: Any, probe: Probe, fail: _Fail) -> dict[int, str] | None:
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


def _load_review_file(file: Path) -> list[dict[str, Any]]:
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError("file not found", path=file) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read: {exc}", path=file) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "cannot parse"
        raise DataError(f"not valid YAML{where}: {problem}", path=file) from None
    if not isinstance(data, list):
        raise DataError("not a review file: expected a list of entries (mappings)", path=file)
    for row, entry in enumerate(data, start=1):
        if not isinstance(entry, dict):
            raise DataError(
                "not a mapping (an entry has keys like probe_id, decision)", path=file, row=row
            )
    return data


def _normalize(text: str) -> str:
    """Text as compared for read-only fields: editors may strip trailing spaces and newlines."""
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def _check_read_only(
    entry: dict[str, Any],
    probe: Probe,
    history: list[dict[str, Any]],
    scale: Scale,
    fail: _Fail,
) -> None:
    """Catch an edit made in place (in probe_text or target), which would otherwise be lost.

    The file may have been exported before or after earlier edits, so any text or target the
    probe has had counts as unchanged.
    """
    earlier = [r for r in history if r["probe_id"] == probe.id and r["status"] == "edited"]
    if "probe_text" in entry and entry["probe_text"] is not None:
        texts = {_normalize(probe.response)}
        texts |= {_normalize(r["response"]) for r in earlier if r.get("response") is not None}
        # a hand-edited final message of a transcript probe is its text too
        texts |= {_normalize(t) for r in earlier for t in (r.get("messages") or {}).values()}
        if not isinstance(entry["probe_text"], str) or _normalize(entry["probe_text"]) not in texts:
            raise fail(
                "is read-only: put the corrected text in edited_text (decision: edit)", "probe_text"
            )
    if "target" in entry:
        targets = {probe.target} | {r["target"] for r in earlier if r.get("target") is not None}
        value = entry["target"]
        try:
            value = None if value is None else scale.coerce(value)
        except ValueError:
            value = object()  # off the scale: certainly not what was exported
        if value not in targets:
            raise fail(
                "is read-only: put the corrected target in edited_target (decision: edit)", "target"
            )
    rows = entry.get("edits")
    if isinstance(rows, list) and probe.transcript:
        for row in rows:
            if not isinstance(row, dict) or not isinstance(row.get("edited"), str):
                continue
            i = row.get("message_index")
            if not isinstance(i, int) or not 0 <= i < len(probe.transcript):
                continue
            texts = {_normalize(probe.transcript[i].content)}
            texts |= {
                _normalize(r["messages"][str(i)])
                for r in earlier
                if str(i) in (r.get("messages") or {})
            }
            if _normalize(row["edited"]) not in texts:
                raise fail(
                    f"is read-only: put the corrected text of message {i} in edited_messages "
                    "(decision: edit)",
                    "edits",
                )


def _append(path: Path, text: str) -> None:
    """Append whole lines in one write, after dropping a torn last line left by a kill."""
    if path.exists():
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):
            with open(path, "r+b") as fh:
                fh.truncate(data.rfind(b"\n") + 1)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())


def run_scale(run_dir: Path) -> Scale:
    """The scale of a harness run, from its ``config.yaml`` (a one-line error otherwise)."""
    from assay.errors import RunError

    try:
        return Scale.parse(yaml.safe_load((Path(run_dir) / "config.yaml").read_text())["scale"])
    except (OSError, KeyError, TypeError, yaml.YAMLError):
        raise RunError(
            f"{run_dir}: not a harness run directory (no config.yaml with a scale)"
        ) from None
