"""Human review of generated probes: the run's files and the reviewed state.

A person accepts, edits (text and/or target) or rejects each probe before judging. Decisions are
appended to the run's ``reviews.jsonl`` (one JSON object a line; the latest line for a probe wins)
with reviewer, note and time, each signed and chained to the one before (``_review_chain.py``);
``probes.jsonl`` is never rewritten, so the generated probe is always the original and
:func:`apply_reviews` rebuilds the reviewed state from the two files. Recording a decision is
``_review_decisions.py``; the YAML review file, ``_review_files.py``.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

from assay._yaml import load as load_yaml
from assay.data import EditError, iter_jsonl, last_assistant_text_index, replace_message
from assay.errors import DataError
from assay.reliability._files import PROBES, REVIEWS, SEEDS
from assay.reliability._probe import Probe, Review
from assay.reliability.review._review_chain import review_history
from assay.scale import Scale
from assay.types import Item

__all__ = [
    "PROBES",
    "REVIEWS",
    "SEEDS",
    "STATUSES",
    "apply_reviews",
    "checked_decisions",
    "iter_probes",
    "read_probes",
    "read_reviews",
    "read_seeds",
    "review_counts",
    "run_scale",
]

STATUSES = ("pending", "accepted", "edited", "rejected")


class DecisionLine(dict):
    """A decision as :func:`read_reviews` read it — the mapping written on a line of
    ``reviews.jsonl`` — that knows where it was read (``path``, ``line``): an error found when
    it is applied to its probe names them."""

    def __init__(self, record: dict[str, Any], path: Path, line: int):
        super().__init__(record)
        self.path, self.line = path, line


# -- reading the run directory ----------------------------------------------------------------
def read_probes(run_dir: Path) -> list[Probe]:
    return list(iter_probes(run_dir))


def iter_probes(run_dir: Path) -> Iterator[Probe]:
    """The run's generated probes, one at a time in file order (a DataError names a bad line)."""
    path = run_dir / PROBES
    for _, lineno, record in iter_jsonl(path):
        try:
            yield Probe.model_validate(record)
        except ValueError as exc:
            raise DataError(f"not a probe: {_first_error(exc)}", path=path, row=lineno) from None


def read_seeds(run_dir: Path, ids: Container[str] | None = None) -> dict[str, Item]:
    """The run's seeds by id (those in ``ids`` alone when given; every line is checked)."""
    path = run_dir / SEEDS
    out: dict[str, Item] = {}
    for _, lineno, record in iter_jsonl(path):
        try:
            item = Item.model_validate(record)
        except ValueError as exc:
            raise DataError(f"not an item: {_first_error(exc)}", path=path, row=lineno) from None
        if ids is None or item.id in ids:
            out[item.id] = item
    return out


def _first_error(exc: ValueError) -> str:
    return str(exc).splitlines()[-1].strip() if str(exc) else type(exc).__name__


def read_reviews(run_dir: Path, scale: Scale | None = None) -> list[dict[str, Any]]:
    """The review decisions of a run, in the order they were made (empty if none yet), each a
    :class:`DecisionLine`, read from the history checked as a whole (``_review_chain``): a
    line written by hand past ``assay review import`` and the review app, edited, moved,
    removed or copied, or the end cut off is a one-line DataError naming the file and the first
    bad row. A final line cut short by a kill mid-write is ignored (it is dropped before the
    next append).

    Each signed line's fields are then checked (:func:`checked_decisions`); a decision off the
    run's scale (with ``scale``) cannot have been recorded by assay, and is refused too.
    """
    path = Path(run_dir) / REVIEWS
    return checked_decisions(review_history(run_dir).lines(), path, scale)


def checked_decisions(
    numbered: list[tuple[int, dict[str, Any]]], path: Path, scale: Scale | None
) -> list[dict[str, Any]]:
    """The lines (row, record) of ``path``, each a :class:`DecisionLine` with its fields
    checked: a probe id or a status missing, an edited response that is not text, an edited
    target that is not a score (with ``scale``: one on it), edited messages that are not
    message indices with text are DataErrors naming the line and field (a message its probe
    has not got, when :func:`apply_reviews` applies it)."""
    out: list[dict[str, Any]] = []
    for lineno, record in numbered:
        if not isinstance(record.get("probe_id"), str):
            raise DataError("missing or not text", path=path, row=lineno, field="probe_id")
        if record.get("status") not in STATUSES:
            raise DataError(
                f"{record.get('status')!r} is not one of {', '.join(STATUSES)}",
                path=path,
                row=lineno,
                field="status",
            )
        _check_edit(record, scale, path, lineno)
        out.append(DecisionLine(record, path, lineno))
    return out


def _check_edit(record: dict[str, Any], scale: Scale | None, path: Path, lineno: int) -> None:
    """An edited decision's fields are what :func:`apply_reviews` can apply."""
    response, target = record.get("response"), record.get("target")
    if response is not None and not isinstance(response, str):
        raise DataError("not text", path=path, row=lineno, field="response")
    _check_messages(record.get("messages"), path, lineno)
    if target is None:
        return
    try:
        if isinstance(target, bool) or not isinstance(target, int):
            raise ValueError(f"{target!r} is not a score (an integer)")
        if scale is not None:
            scale.check(target)
    except ValueError as exc:
        raise DataError(str(exc), path=path, row=lineno, field="target") from None


def _check_messages(messages: Any, path: Path, lineno: int) -> None:
    """Edited messages are a mapping of message indices (numbers from 0, as JSON keys) to
    their text, never empty (whether the probe has those messages is :func:`_decided`'s)."""
    if messages is None:
        return
    if not isinstance(messages, dict):
        raise DataError(
            "not a mapping  <message index>: <text>", path=path, row=lineno, field="messages"
        )
    for key, text in messages.items():
        if not (key.isascii() and key.isdigit()):
            raise DataError(
                f"{key!r} is not a message index (a number from 0)",
                path=path,
                row=lineno,
                field="messages",
            )
        if not isinstance(text, str) or not text.strip():
            raise DataError(
                f"message {key}: must be non-empty text", path=path, row=lineno, field="messages"
            )


# -- applying decisions -----------------------------------------------------------------------
def apply_reviews(probes: list[Probe], reviews: Iterable[dict[str, Any]]) -> list[Probe]:
    """``probes`` with ``review`` set from each probe's latest decision: a probe with a decision
    is copied and the copy changed; one without is the same object (nothing in the run changes
    a probe in place, and a copy of every probe would double what a large harness holds).

    Every decision is about the generated probe, so the latest one replaces earlier ones
    entirely (an ``accepted`` after an ``edited`` keeps the generated text). An ``edited``
    decision replaces the response and/or target it carries, keeps what it replaced in
    ``review.original_response`` / ``review.original_target``, and marks an edited target
    ``target_source="human"``. Decisions about probes not in ``probes`` are ignored.
    """
    latest: dict[str, dict[str, Any]] = {}
    for decision in reviews:
        latest[decision["probe_id"]] = decision  # file order: the last one wins
    return [
        probe if probe.id not in latest else _decided(probe, latest[probe.id]) for probe in probes
    ]


def _decided(probe: Probe, decision: dict[str, Any]) -> Probe:
    """A copy of ``probe`` with ``decision`` applied (see :func:`apply_reviews`)."""
    copy = probe.model_copy(deep=True)
    review = Review(
        status=decision["status"],
        reviewer=decision.get("reviewer"),
        note=decision.get("note"),
        timestamp=decision.get("timestamp"),
    )
    if decision["status"] == "edited":
        if decision.get("response") is not None:
            if probe.transcript:  # its response is its transcript's final answer
                raise _at(
                    decision,
                    copy,
                    "response",
                    "a transcript probe is edited message by message: use messages",
                )
            review.original_response = probe.response
            copy.response = decision["response"]
        if decision.get("target") is not None:
            review.original_target = probe.target
            copy.target = decision["target"]
            copy.target_source = "human"
        if decision.get("messages"):
            _edit_messages(copy, review, decision)
    copy.review = review
    return copy


def _edit_messages(copy: Probe, review: Review, decision: dict[str, Any]) -> None:
    """``decision``'s edited messages applied to ``copy``'s transcript, the originals kept in
    ``review``; a message the probe has not got (or cannot have edited: not the agent's) is a
    DataError naming the decision's line (a :class:`DecisionLine`'s) and ``messages``."""

    def error(message: str) -> DataError:
        return _at(decision, copy, "messages", message)

    if not copy.transcript:
        raise error("only agent transcript probes have messages to edit")
    review.original_messages = {}
    for key, text in decision["messages"].items():
        i = int(key)  # a number: read_reviews checked every key
        try:
            edited = replace_message(copy.transcript, i, content=text)
        except EditError as exc:  # not a message of the transcript, or not the agent's
            raise error(str(exc)) from None
        review.original_messages[i] = copy.transcript[i].content
        copy.transcript = edited
    final = last_assistant_text_index(copy.transcript)
    if final is not None:
        copy.response = copy.transcript[final].content


def _at(decision: dict[str, Any], probe: Probe, field: str, message: str) -> DataError:
    """A decision that cannot apply to ``probe``, as a DataError naming the line it was read
    from (a :class:`DecisionLine`'s) and ``field``."""
    where = {"path": getattr(decision, "path", None), "row": getattr(decision, "line", None)}
    return DataError(f"{message} (probe {probe.id!r})", **where, field=field)


def review_counts(probes_with_reviews: Iterable[Probe]) -> dict[str, int]:
    """How many probes are pending, accepted, edited and rejected (every key present)."""
    counts = dict.fromkeys(STATUSES, 0)
    for probe in probes_with_reviews:
        counts[probe.review.status] += 1
    return counts


def run_scale(run_dir: Path) -> Scale:
    """The scale of a harness run, from its ``config.yaml`` (a one-line error otherwise)."""
    from assay.errors import RunError

    try:
        return Scale.parse(load_yaml((Path(run_dir) / "config.yaml").read_text())["scale"])
    except (OSError, KeyError, TypeError, yaml.YAMLError):
        raise RunError(
            f"{run_dir}: not a harness run directory (no config.yaml with a scale)"
        ) from None
