"""Review of agent-transcript probes in the YAML file and in ``reviews.jsonl``: each probe's
criterion is listed, a read-only field changed in an imported file is refused (never accepted
and ignored), and a decision line signed with the key past the import that edits a message the
probe cannot have edited is a one-line error naming the file, its line and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from assay.cli import main
from assay.errors import DataError
from assay.reliability.review import ReviewRun
from assay.reliability.review._review import apply_reviews, read_probes, read_reviews
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
from tests.review_runs import sign_by_hand

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


def _line(probe_id: str, messages) -> str:
    return json.dumps(
        {
            "probe_id": probe_id,
            "status": "edited",
            "reviewer": "eve",
            "note": None,
            "response": None,
            "target": None,
            "messages": messages,
            "timestamp": "2026-01-01T00:00:00+00:00",
        }
    )


@pytest.mark.parametrize(
    ("messages", "says"),
    [
        ({"99": "The sum is 9."}, "out of range"),
        ({"2": "The sum is 9."}, "is a tool message, not an assistant one"),
        ({"-1": "The sum is 9."}, "'-1' is not a message index"),
        ({"last": "The sum is 9."}, "'last' is not a message index"),
        ({"5": ""}, "message 5: must be non-empty text"),
        ({"5": 9}, "message 5: must be non-empty text"),
        (["The sum is 9."], "not a mapping"),
    ],
)
def test_a_decision_signed_past_the_import_with_a_bad_message_is_a_one_line_error(
    run, messages, says
):
    good = json.dumps(
        {"probe_id": CAUGHT, "status": "accepted", "reviewer": "ana", "timestamp": "t"}
    )
    sign_by_hand(run, json.loads(good), json.loads(_line(MISSED, messages)))
    where = f"{run / 'reviews.jsonl'}, row 2, field 'messages': "

    def refused(read) -> str:
        with pytest.raises(DataError) as err:
            read()
        message = str(err.value)
        assert message.startswith(where) and says in message and "\n" not in message
        return message

    refused(lambda: apply_reviews(read_probes(run), read_reviews(run)))
    refused(lambda: ReviewRun(run))  # `assay review serve` refuses it at start
    refused(lambda: export_review(run, run / "review.yaml", SCALE))


def test_the_command_line_names_the_bad_line(run, capsys):
    sign_by_hand(run, json.loads(_line(MISSED, {"99": "The sum is 9."})))
    assert main(["review", "export", str(run)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("assay: error: ") and "\n" not in err
    assert "reviews.jsonl, row 1, field 'messages'" in err and "out of range" in err


def test_a_response_signed_past_the_import_on_a_transcript_probe_is_refused(run):
    """A transcript probe's response is its transcript's final answer: a line signed with the
    key past the import (one written by hand is refused before: ``test_review_chain.py``)
    setting ``response`` on one (the import refuses it) would change the text the judges see
    but not the transcript the page shows; refused, naming the line and field."""
    line = json.loads(_line(MISSED, None))
    line["response"] = "The sum is 9."
    sign_by_hand(run, line)
    with pytest.raises(DataError) as err:
        apply_reviews(read_probes(run), read_reviews(run))
    message = str(err.value)
    assert message.startswith(f"{run / 'reviews.jsonl'}, row 1, field 'response': ")
    assert "message by message" in message and "\n" not in message


def test_a_target_off_the_scale_signed_past_the_import_is_refused_by_serve_and_export(run):
    """A target off the run's scale, signed with the key past the import in ``reviews.jsonl``:
    `assay harness` refused it, but the review app showed it and the export listed it; now both
    refuse it at start, naming the line and field."""
    line = json.loads(_line(MISSED, None))
    line["target"] = 7
    sign_by_hand(run, line)
    for read in (lambda: ReviewRun(run), lambda: export_review(run, run / "r.yaml", SCALE)):
        with pytest.raises(DataError) as err:
            read()
        assert str(err.value).startswith(f"{run / 'reviews.jsonl'}, row 1, field 'target': ")
