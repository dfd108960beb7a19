"""Human review of probes: YAML export, all-or-nothing import, and applying decisions."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
import yaml

from assay.errors import DataError
from assay.reliability._probe import Probe
from assay.reliability.review._review import apply_reviews, read_reviews, review_counts
from assay.reliability.review._review_decisions import record_decision
from assay.reliability.review._review_files import export_review, import_review
from assay.scale import Scale
from assay.types import Item
from tests.review_runs import name_run

SCALE = Scale(kind="ordinal", min=1, max=3, labels=["poor", "fair", "good"])

SEEDS = [
    Item(id="s1", request="Describe the river.", response="The river runs east.\nIt is wide."),
    Item(id="s2", request="Name a color.", response="Blue."),
    Item(id="s3", request="List two fruits.", response="Apples\nPears\n"),
]
PROBE_TEXTS = {
    "p1": ("s1", "The river runs west.\nIt is wide.", 1),
    "p2": ("s1", "The river runs east.\nIt is narrow.", 2),
    "p3": ("s2", "Green.", 3),
    "p4": ("s3", "Apples\nStones\n", 1),
    "p5": ("s3", "Pears\nApples\n", 3),
    "p6": ("s2", "Red.", 2),  # already reviewed before the export
}


def _probe(pid: str) -> Probe:
    source, text, target = PROBE_TEXTS[pid]
    seed = next(s for s in SEEDS if s.id == source)
    return Probe(
        id=pid, test="demo", source_id=source, request=seed.request, response=text, target=target
    )


@pytest.fixture
def run(tmp_path: Path) -> Path:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "seeds.jsonl").write_text("".join(s.model_dump_json() + "\n" for s in SEEDS))
    (run_dir / "probes.jsonl").write_text(
        "".join(_probe(pid).model_dump_json() + "\n" for pid in PROBE_TEXTS)
    )
    name_run(run_dir)
    record_decision(run_dir, {"probe_id": "p6", "decision": "accept", "reviewer": "ana"}, SCALE)
    return run_dir


def _probes(run_dir: Path) -> dict[str, Probe]:
    probes = [Probe.model_validate_json(line) for line in (run_dir / "probes.jsonl").open()]
    return {p.id: p for p in apply_reviews(probes, read_reviews(run_dir))}


def _exported(run_dir: Path, tmp_path: Path) -> tuple[Path, list[dict]]:
    out = tmp_path / "review.yaml"
    export_review(run_dir, out, SCALE)
    return out, yaml.safe_load(out.read_text())


def _filled(entries: list[dict]) -> list[dict]:
    """What a person does: accept p1, edit p2's text, edit p3's target by label, reject p4."""
    by_id = {e["probe_id"]: e for e in entries}
    by_id["p1"].update(decision="accept", reviewer="ana")
    by_id["p2"].update(
        decision="edit",
        edited_text="The river runs east.\nIt is shallow.\n",  # a `|` block adds a final newline
        note="clearer change",
    )  # no reviewer: comes from the argument
    by_id["p3"].update(decision="Edit", edited_target="fair", reviewer="bo")
    by_id["p4"].update(decision="reject", reviewer="bo", note="nonsense")
    return entries  # p5 left blank


def _write(path: Path, entries: list[dict]) -> None:
    path.write_text(yaml.safe_dump(entries, sort_keys=False, allow_unicode=True))


def test_export_lists_pending_probes_with_source_text_as_block_literals(run, tmp_path):
    out = tmp_path / "review.yaml"
    assert export_review(run, out, SCALE) == 5
    text = out.read_text()
    assert text.startswith("#") and "decision:" in text.split("\n- ")[0]  # header explains
    assert "probe_text: |" in text and "source_text: |" in text
    assert not (tmp_path / "review.yaml.tmp").exists()

    entries = yaml.safe_load(text)
    assert [e["probe_id"] for e in entries] == ["p1", "p2", "p3", "p4", "p5"]
    for e in entries:
        source, probe_text, target = PROBE_TEXTS[e["probe_id"]]
        assert e["source_id"] == source and e["test"] == "demo"
        assert e["source_text"] == next(s.response for s in SEEDS if s.id == source)
        assert e["probe_text"] == probe_text  # exact round trip, final newline or not
        assert e["target"] == target and e["target_label"] == SCALE.label_of(target)
        assert e["decision"] == "" and e["reviewer"] == "" and e["note"] == ""
        assert e["edited_text"] is None and e["edited_target"] is None

    assert export_review(run, out, SCALE, include_reviewed=True) == 6


def test_import_records_decisions_and_apply_reviews_keeps_originals(run, tmp_path):
    out, entries = _exported(run, tmp_path)
    _write(out, _filled(entries))

    counts = import_review(run, out, SCALE, reviewer="cy")
    assert counts == {"accepted": 1, "edited": 2, "rejected": 1, "skipped": 1}

    lines = read_reviews(run)[1:]  # after the earlier decision on p6
    assert [(r["probe_id"], r["status"], r["reviewer"]) for r in lines] == [
        ("p1", "accepted", "ana"),
        ("p2", "edited", "cy"),
        ("p3", "edited", "bo"),
        ("p4", "rejected", "bo"),
    ]
    assert datetime.fromisoformat(lines[0]["timestamp"]).utcoffset().total_seconds() == 0
    assert lines[2] == {**lines[2], "response": None, "target": 2}

    probes = _probes(run)
    assert (
        probes["p1"].review.status == "accepted" and probes["p1"].response == PROBE_TEXTS["p1"][1]
    )
    p2 = probes["p2"]
    assert (p2.review.status, p2.response, p2.target) == (
        "edited",
        "The river runs east.\nIt is shallow.",
        2,
    )
    assert (
        p2.review.original_response == PROBE_TEXTS["p2"][1] and p2.review.note == "clearer change"
    )
    assert p2.target_source == "construction" and p2.review.original_target is None
    p3 = probes["p3"]
    assert (p3.review.status, p3.response, p3.target, p3.target_source) == (
        "edited",
        "Green.",
        2,
        "human",
    )
    assert p3.review.original_target == 3 and p3.review.original_response is None
    assert probes["p4"].review.status == "rejected" and probes["p4"].review.note == "nonsense"
    assert probes["p5"].review.status == "pending"
    assert review_counts(probes.values()) == {
        "pending": 1,
        "accepted": 2,
        "edited": 2,
        "rejected": 1,
    }

    again = tmp_path / "again.yaml"
    assert export_review(run, again, SCALE) == 1
    assert [e["probe_id"] for e in yaml.safe_load(again.read_text())] == ["p5"]
    # Everything, re-exported, shows the current text and target and imports cleanly.
    assert export_review(run, again, SCALE, include_reviewed=True) == 6
    shown = {e["probe_id"]: e for e in yaml.safe_load(again.read_text())}
    assert shown["p3"]["target"] == 2 and shown["p3"]["status"] == "edited"
    assert import_review(run, again, SCALE)["skipped"] == 6


def test_latest_decision_wins_and_replaces_earlier_edits():
    probe = _probe("p1")
    edit = {"probe_id": "p1", "status": "edited", "reviewer": "a", "response": "X.", "target": 3}
    accept = {"probe_id": "p1", "status": "accepted", "reviewer": "b"}
    (edited,) = apply_reviews([probe], [accept, edit])
    assert (edited.response, edited.target, edited.review.reviewer) == ("X.", 3, "a")
    (accepted,) = apply_reviews([probe], [edit, accept])
    assert (accepted.response, accepted.target) == (probe.response, probe.target)
    assert accepted.review.status == "accepted" and accepted.review.original_response is None
    assert probe.review.status == "pending"  # the input is not modified


def _bad_id(e):
    e[3]["probe_id"] = "p99"


def _bad_decision(e):
    e[3]["decision"] = "approve"


def _off_scale(e):
    e[3].update(decision="edit", edited_target="excellent")


def _off_scale_number(e):
    e[3].update(decision="edit", edited_target=7)


def _edit_without_change(e):
    e[3].update(decision="edit", edited_text=e[3]["probe_text"], edited_target=e[3]["target"])


def _edit_without_fields(e):
    e[3].update(decision="edit", edited_text=None, edited_target=None)


def _no_reviewer(e):
    e[1]["reviewer"] = "cy"  # row 2 names one; row 4 has none and no argument is given
    e[3]["reviewer"] = ""


def _edited_in_place(e):
    e[4].update(probe_text="Pears\nPlums\n")


def _edit_without_decision(e):
    e[4].update(edited_target=2)


@pytest.mark.parametrize(
    ("mutate", "row", "field"),
    [
        (_bad_id, 4, "probe_id"),
        (_bad_decision, 4, "decision"),
        (_off_scale, 4, "edited_target"),
        (_off_scale_number, 4, "edited_target"),
        (_edit_without_change, 4, "edited_target"),
        (_edit_without_fields, 4, "decision"),
        (_no_reviewer, 4, "reviewer"),
        (_edited_in_place, 5, "probe_text"),
        (_edit_without_decision, 5, "edited_target"),
    ],
)
def test_a_bad_entry_names_file_row_and_field_and_writes_nothing(run, tmp_path, mutate, row, field):
    out, entries = _exported(run, tmp_path)
    entries = _filled(entries)
    mutate(entries)  # rows 1-3 stay valid: nothing of them may be written either
    _write(out, entries)
    before = (run / "reviews.jsonl").read_bytes()

    with pytest.raises(DataError) as err:
        import_review(run, out, SCALE, reviewer=None if field == "reviewer" else "cy")
    message = str(err.value)
    assert str(out) in message and f"row {row}" in message and f"field '{field}'" in message
    assert "\n" not in message
    assert (run / "reviews.jsonl").read_bytes() == before


@pytest.mark.parametrize(
    "content", ["- probe_id: p1\n  decision: [accept\n", "just some words\n", "- p1\n- p2\n"]
)
def test_a_file_that_is_not_a_list_of_entries_is_refused(run, tmp_path, content):
    bad = tmp_path / "review.yaml"
    bad.write_text(content)
    before = (run / "reviews.jsonl").read_bytes()
    with pytest.raises(DataError, match=str(bad)):
        import_review(run, bad, SCALE, reviewer="cy")
    assert (run / "reviews.jsonl").read_bytes() == before


def test_a_decision_given_twice_in_one_entry_is_refused_with_both_lines(run, tmp_path):
    """YAML keeps the last of two equal keys silently; a reviewer who wrote ``decision``
    twice meant one of them, and guessing which would record the wrong verdict."""
    out, entries = _exported(run, tmp_path)
    _write(out, _filled(entries))
    text = out.read_text()
    first = text.index("decision: accept")
    out.write_text(text[:first] + "decision: reject\n  " + text[first:])
    before = (run / "reviews.jsonl").read_bytes()
    with pytest.raises(DataError) as err:
        import_review(run, out, SCALE, reviewer="cy")
    message = str(err.value)
    assert str(out) in message and "duplicate key 'decision'" in message and "\n" not in message
    assert (run / "reviews.jsonl").read_bytes() == before


def test_a_torn_last_line_is_ignored_then_replaced(run, tmp_path):
    with (run / "reviews.jsonl").open("a") as fh:
        fh.write('{"probe_id": "p1", "sta')  # killed mid-write
    assert [r["probe_id"] for r in read_reviews(run)] == ["p6"]
    out, entries = _exported(run, tmp_path)
    _write(out, _filled(entries))
    import_review(run, out, SCALE, reviewer="cy")
    assert [r["probe_id"] for r in read_reviews(run)] == ["p6", "p1", "p2", "p3", "p4"]
