"""Review of agent-transcript probes in the YAML file: each probe's criterion is listed, and a
read-only field changed in an imported file is refused (never accepted and ignored)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from assay.errors import DataError
from assay.reliability.review._review_files import export_review, import_review
from assay.scale import Scale
from tests.agent_review_run import (
    CAUGHT,
    LABELS,
    MISSED,
    RECIPIENT,
    RESULT,
    TOOL_EDIT,
    write_agent_run,
)

SCALE = Scale(kind="binary", labels=LABELS)


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return write_agent_run(tmp_path / "run")


def _export(run: Path, tmp_path: Path, **kw) -> tuple[Path, list[dict]]:
    out = tmp_path / "review.yaml"
    export_review(run, out, SCALE, **kw)
    return out, yaml.safe_load(out.read_text())


def _write(path: Path, entries: list[dict]) -> None:
    path.write_text(yaml.safe_dump(entries, sort_keys=False, allow_unicode=True))


def test_the_export_names_each_probes_criterion(run, tmp_path):
    out, entries = _export(run, tmp_path)
    assert {e["probe_id"]: e["criterion"] for e in entries} == {
        MISSED: RESULT,
        CAUGHT: RESULT,
        TOOL_EDIT: RECIPIENT,
    }
    text = out.read_text()
    assert text.index("criterion: reports_result") < text.index("probe_text:")
    # exported as it is, imported as it is: the criterion is read-only, like the test
    for e in entries:
        e.update(decision="accept", reviewer="ana")
    _write(out, entries)
    assert import_review(run, out, SCALE)["accepted"] == 3


def _row(entries: list[dict], pid: str) -> dict:
    return next(e for e in entries if e["probe_id"] == pid)


def _tool_edit(entries, key, value):
    _row(entries, TOOL_EDIT)["edits"][0][key] = value


READ_ONLY_CHANGES = {
    "test": lambda e: _row(e, MISSED).update(test="agent_positives"),
    "source_id": lambda e: _row(e, MISSED).update(source_id="s5"),
    "source_text": lambda e: _row(e, MISSED).update(source_text="The sum is 6."),
    "criterion": lambda e: _row(e, MISSED).update(criterion=RECIPIENT),
    "status": lambda e: _row(e, MISSED).update(status="accepted"),
    "target_label": lambda e: _row(e, MISSED).update(target_label="passes"),
    "edits.edited_tool_calls": lambda e: _tool_edit(
        e, "edited_tool_calls", ['tool_call EmailSend({"to": "bo@example.com", "body": "5"})']
    ),
    "edits.original_tool_calls": lambda e: _tool_edit(
        e, "original_tool_calls", ['tool_call EmailSend({"to": "x@example.com", "body": "5"})']
    ),
    "edits.message_index": lambda e: _tool_edit(e, "message_index", 1),
    "edits.intent": lambda e: _tool_edit(e, "intent", "something else"),
    "edits.original": lambda e: _tool_edit(e, "original", "I sent it."),
    "edits": lambda e: _row(e, TOOL_EDIT)["edits"].append(dict(_row(e, TOOL_EDIT)["edits"][0])),
}


@pytest.mark.parametrize("field", list(READ_ONLY_CHANGES))
def test_a_read_only_field_changed_in_the_file_is_refused(run, tmp_path, field):
    """What a person changes in place in a read-only field is not what the run holds: it
    would be accepted and ignored. The import refuses it, naming the file, the entry and the
    field, and writes nothing."""
    out, entries = _export(run, tmp_path)
    for e in entries:
        e.update(decision="accept", reviewer="ana")
    READ_ONLY_CHANGES[field](entries)
    _write(out, entries)
    row = 1 + [e["probe_id"] for e in entries].index(TOOL_EDIT if "edits" in field else MISSED)
    with pytest.raises(DataError) as err:
        import_review(run, out, SCALE)
    message = str(err.value)
    assert message.startswith(f"{out}, row {row}, field '{field}': ")
    assert "read-only" in message and "\n" not in message
    assert not (run / "reviews.jsonl").exists()


def test_read_only_fields_of_a_file_exported_before_later_decisions_still_import(run, tmp_path):
    """A file exported with ``--all`` after an edit of the target lists that status and label;
    one exported before shows the generated ones: both are what the probe has had."""
    before, entries = _export(run, tmp_path)
    _write(tmp_path / "before.yaml", entries)
    _row(entries, MISSED).update(decision="edit", edited_target="passes", reviewer="ana")
    _write(before, entries)
    import_review(run, before, SCALE)
    out, after = _export(run, tmp_path, include_reviewed=True)
    assert (_row(after, MISSED)["status"], _row(after, MISSED)["target_label"]) == (
        "edited",
        "passes",
    )
    _row(after, MISSED).update(decision="accept", reviewer="bo")
    _write(out, after)
    assert import_review(run, out, SCALE)["accepted"] == 1
    old = yaml.safe_load((tmp_path / "before.yaml").read_text())
    _row(old, MISSED).update(decision="reject", reviewer="cy")
    _write(out, old)
    assert import_review(run, out, SCALE)["rejected"] == 1
