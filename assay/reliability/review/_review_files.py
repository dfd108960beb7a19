"""The YAML review file: export a run's probes for a person to decide on, import the decisions.

The file lists each probe next to its seed's response with blank fields to fill in; importing
records them through :func:`record_decisions` (the browser's path too), after checking that no
read-only field was changed in place (:class:`ReadOnlyCheck`), where the change would be lost.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from assay._yaml import dump_editable, read_input
from assay.errors import DataError
from assay.reliability._probe import Probe, is_placebo
from assay.reliability.review._review import (
    PROBES,
    SEEDS,
    apply_reviews,
    read_probes,
    read_reviews,
    read_seeds,
)
from assay.reliability.review._review_decisions import Fail, record_decisions
from assay.scale import Scale
from assay.types import Item

__all__ = ["export_review", "import_review"]


# Keys of an entry in the review file; any other key is a typo worth reporting.
_READ_ONLY = (
    "probe_id",
    "status",
    "test",
    "criterion",  # agent probes: the rubric criterion the probe was made for
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
# An agent transcript probe names its `criterion`: the rubric criterion it was made for (its
# target is a judge's verdict on that criterion).
# The other keys are read-only (an import that finds one changed is refused): change the text
# in edited_text, not in probe_text.
# Multi-line text uses YAML block literals: a line "key: |" followed by the text indented.
# Nothing is written unless every entry is valid.
"""


# -- export -----------------------------------------------------------------------------------
def export_review(run_dir: Path, out: Path, scale: Scale, *, include_reviewed: bool = False) -> int:
    """Write a YAML review file of the run's pending probes (all probes with ``include_reviewed``).

    Each entry shows the probe's current text and target next to its seed's response and
    has blank fields for the decision. Written atomically; returns how many probes it lists.
    """
    run_dir, out = Path(run_dir), Path(out)
    probes = apply_reviews(read_probes(run_dir), read_reviews(run_dir, scale))
    seeds = read_seeds(run_dir)
    entries: list[dict[str, Any]] = []
    for row, probe in enumerate(probes, start=1):
        if is_placebo(probe) or (probe.review.status != "pending" and not include_reviewed):
            continue  # a placebo is its source unchanged: nothing to review
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
                **({"criterion": probe.meta["criterion"]} if probe.meta.get("criterion") else {}),
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
    body = dump_editable(entries)
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
        run_dir,
        entries,
        scale,
        reviewer=reviewer,
        source=file,
        check=ReadOnlyCheck(read_seeds(run_dir)),
    )
    counts = {"accepted": 0, "edited": 0, "rejected": 0, "skipped": 0}
    for record in records:
        counts["skipped" if record is None else record["status"]] += 1
    return counts


def _load_review_file(file: Path) -> list[dict[str, Any]]:
    data = read_input(file, DataError, what="review file")
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


def _same(read: Any, exported: Any) -> bool:
    """Whether a read-only value read back from the file is the one exported (text compared
    as :func:`_normalize` leaves it, mappings and lists item by item)."""
    if isinstance(read, str) and isinstance(exported, str):
        return _normalize(read) == _normalize(exported)
    if isinstance(read, dict) and isinstance(exported, dict):
        return read.keys() == exported.keys() and all(_same(read[k], exported[k]) for k in read)
    if isinstance(read, list) and isinstance(exported, list):
        return len(read) == len(exported) and all(map(_same, read, exported))
    return read == exported and isinstance(read, bool) == isinstance(exported, bool)


def _shown(value: Any) -> str:
    """A value in an error message: on one line, cut short."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class ReadOnlyCheck:
    """Refuses an entry whose read-only keys differ from what the run holds for its probe: an
    edit made there (of the probe text, the target, a message) would be lost, and any other
    change (its test, criterion, source, an edit's tool calls) is not what gets judged.

    The file may have been exported before or after earlier decisions, so any status, text or
    target the probe has had counts as unchanged. Called by :func:`record_decisions` on every
    entry before anything is written."""

    def __init__(self, seeds: dict[str, Item]):
        self.seeds = seeds

    def __call__(
        self,
        entry: dict[str, Any],
        probe: Probe,
        history: list[dict[str, Any]],
        scale: Scale,
        fail: Fail,
    ) -> None:
        mine = [r for r in history if r["probe_id"] == probe.id]
        earlier = [r for r in mine if r["status"] == "edited"]
        self._what_the_probe_is(entry, probe, fail)
        had = {"pending"} | {r["status"] for r in mine}  # the statuses an export may show
        if "status" in entry and (
            not isinstance(entry["status"], str) or entry["status"] not in had
        ):
            raise fail(
                "is read-only: put the decision in decision (accept | edit | reject)", "status"
            )
        self._text_and_target(entry, probe, earlier, scale, fail)
        if "edits" in entry:
            self._edits(entry["edits"], probe, earlier, fail)

    def _what_the_probe_is(self, entry: dict[str, Any], probe: Probe, fail: Fail) -> None:
        """The test, criterion, source, source text and judge task: never changed by a review."""
        fixed: dict[str, Any] = {
            "test": probe.test,
            "criterion": probe.meta.get("criterion"),
            "source_id": probe.source_id,
            "judge_task": probe.meta.get("judge_task"),
        }
        seed = self.seeds.get(probe.source_id)
        if seed is not None:
            fixed["source_text"] = seed.response
        for key, value in fixed.items():
            if key in entry and not _same(entry[key], value):
                raise fail(
                    f"is read-only: the run has {_shown(value)} here (put back what was exported)",
                    key,
                )

    @staticmethod
    def _text_and_target(
        entry: dict[str, Any],
        probe: Probe,
        earlier: list[dict[str, Any]],
        scale: Scale,
        fail: Fail,
    ) -> None:
        """The probe text, target and target label: an edit made there would be lost."""
        if "probe_text" in entry and entry["probe_text"] is not None:
            texts = {_normalize(probe.response)}
            texts |= {_normalize(r["response"]) for r in earlier if r.get("response") is not None}
            # a hand-edited final message of a transcript probe is its text too
            texts |= {_normalize(t) for r in earlier for t in (r.get("messages") or {}).values()}
            text = entry["probe_text"]
            if not isinstance(text, str) or _normalize(text) not in texts:
                raise fail(
                    "is read-only: put the corrected text in edited_text (decision: edit)",
                    "probe_text",
                )
        targets = {probe.target} | {r["target"] for r in earlier if r.get("target") is not None}
        if "target" in entry:
            value = entry["target"]
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                try:  # the score as exported; anything else read as a reference is
                    value = scale.coerce(value)
                except ValueError:
                    value = object()  # off the scale: certainly not what was exported
            if value not in targets:
                raise fail(
                    "is read-only: put the corrected target in edited_target (decision: edit)",
                    "target",
                )
        if "target_label" in entry:
            labels = {None if t is None else scale.label_of(t) for t in targets}
            value = entry["target_label"]
            shown = {str(x) for x in labels if x is not None}
            if not (value is None and None in labels) and str(value).strip() not in shown:
                raise fail(
                    "is read-only: put the corrected target in edited_target (decision: edit)",
                    "target_label",
                )

    @staticmethod
    def _edits(rows: Any, probe: Probe, earlier: list[dict[str, Any]], fail: Fail) -> None:
        """A transcript probe's edits, row by row and key by key as exported; an ``edited``
        text may be one a person gave the message since."""
        exported = _edits_entry(probe).get("edits", [])
        if (
            not isinstance(rows, list)
            or len(rows) != len(exported)
            or not all(isinstance(r, dict) for r in rows)
        ):
            raise fail(
                f"is read-only: the probe has {len(exported)} edit(s), to list as exported "
                "(put the corrected text of a message in edited_messages, decision: edit)",
                "edits",
            )
        for row, shown in zip(rows, exported, strict=True):
            i = shown["message_index"]
            for key in row:
                if key not in shown:
                    raise fail(
                        f"is not a key of the edit of message {i} (edits are read-only)",
                        f"edits.{key}",
                    )
            for key, value in shown.items():
                if key not in row:
                    continue
                if key == "edited":
                    texts = {_normalize(value)} if isinstance(value, str) else set()
                    if probe.transcript and isinstance(i, int) and 0 <= i < len(probe.transcript):
                        texts.add(_normalize(probe.transcript[i].content))
                    texts |= {
                        _normalize(r["messages"][str(i)])
                        for r in earlier
                        if str(i) in (r.get("messages") or {})
                    }
                    if isinstance(row[key], str) and _normalize(row[key]) in texts:
                        continue
                    raise fail(
                        f"is read-only: put the corrected text of message {i} in edited_messages "
                        "(decision: edit)",
                        "edits.edited",
                    )
                if not _same(row[key], value):
                    raise fail(
                        f"is read-only: a review does not edit tool calls (message {i}: edit its "
                        "text in edited_messages, or reject the probe)"
                        if key.endswith("tool_calls")
                        else f"is read-only: the edit of message {i} has {_shown(value)} (put "
                        "back what was exported)",
                        f"edits.{key}",
                    )
