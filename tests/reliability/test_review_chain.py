"""A harness run's review decisions decide — which probes are judged when review is required,
and an edited target changes the figures — so ``reviews.jsonl`` is read only as the chain assay
signed: a decision appended by hand (past ``assay review import`` and the review app), lines
moved, removed, copied or cut off the end are refused in one line naming the file and the first
bad row, by the harness and by the review commands alike; decisions recorded through the import
are read, and carry over to a re-run of the same folder with another judge. A run whose
decisions were written before they were signed is adopted once as it stands, and guarded from
then on."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from assay.cli import main
from assay.reliability import record_decision
from assay.scale import Scale
from tests.review_runs import append_by_hand
from tests.signing_keys import key_elsewhere

CONFIG = {
    "name": "colours",
    "data": {"path": "items.csv"},
    "scale": {"kind": "binary", "labels": ["incorrect", "correct"]},
    "judges": [{"name": "whole", "model": "scripted:sheet.json"}],
    "tests": {"format_indent": {}},
    "review": {"required": True},
    "tracking": {"enabled": False},
}
SCALE = Scale.parse(CONFIG["scale"])
ITEMS = """request,response,expected
What colour is the sky?,The sky is blue. Snow is red.,correct
What colour is grass?,Grass is green.,correct
What colour is snow?,Snow is red. It is cold.,incorrect
"""
SHEET = {
    "rules": [{"match": "is red", "output": {"verdict": "incorrect"}}],
    "default": {"verdict": "correct"},
}


@pytest.fixture
def folder(tmp_path: Path, monkeypatch) -> Path:
    """A working folder with the colours harness (review required), run once: 3 probes, none
    reviewed, none judged."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "h.yaml").write_text(yaml.safe_dump(CONFIG))
    (tmp_path / "items.csv").write_text(ITEMS)
    (tmp_path / "sheet.json").write_text(json.dumps(SHEET))
    return tmp_path


def _harness(capsys, code: int = 0) -> str:
    """Run the harness; its output (stdout), or its error (stderr's last line: the progress
    bars come before) when it fails."""
    assert main(["harness", "h.yaml"]) == code
    out, err = capsys.readouterr()
    return out if code == 0 else err.strip().splitlines()[-1]


def _run_dir(folder: Path) -> Path:
    (run,) = (folder / "runs").iterdir()
    return run


def _metrics(run: Path) -> tuple[dict, float | None]:
    m = json.loads((run / "metrics.json").read_text())
    rate = m["judges"]["whole"]["tests"]["format_indent"]["pass_rate"]
    return m["review"], None if rate is None else rate["value"]


def _probe_ids(run: Path) -> list[str]:
    return [json.loads(x)["id"] for x in (run / "probes.jsonl").read_text().splitlines()]


def _line(probe_id: str, status: str = "accepted", **fields) -> dict:
    return {
        "probe_id": probe_id,
        "status": status,
        "reviewer": "chief-reviewer",
        "note": None,
        "response": None,
        "target": None,
        "timestamp": "2026-01-01T00:00:00+00:00",
        **fields,
    }


def _import(run: Path, folder: Path, capsys, decide: dict[str, dict]) -> None:
    """Export the pending probes, fill in ``decide`` (probe id -> entry fields), import."""
    out = folder / "review.yaml"
    assert main(["review", "export", str(run), "-o", str(out)]) == 0
    entries = yaml.safe_load(out.read_text())
    for e in entries:
        e.update(decide.get(e["probe_id"], {}))
    out.write_text(yaml.safe_dump(entries, sort_keys=False))
    assert main(["review", "import", str(run), str(out)]) == 0
    capsys.readouterr()


def _refused(capsys, command: list[str], *says: str) -> str:
    assert main(command) == 2
    err = capsys.readouterr().err.strip().split("\n")[-1]  # after any progress bar
    assert err.startswith("assay: error: "), err
    for s in says:
        assert s in err, (s, err)
    return err


def test_decisions_appended_by_hand_are_refused_and_imported_ones_read(folder, capsys):
    """The reported case: accept lines appended by hand judged every probe (pass 0.67), and one
    more hand line editing a target made it 1.00. Now the harness and the review commands refuse
    them, naming the file and the first hand-written row; the same decisions through `assay
    review import` are read, and carry over to a re-run of the folder with another judge."""
    _harness(capsys)
    run = _run_dir(folder)
    review, rate = _metrics(run)
    assert review["pending"] == 3 and rate is None
    reviews = run / "reviews.jsonl"
    ids = _probe_ids(run)

    append_by_hand(run, *(_line(i) for i in ids))
    where = f"{reviews}, row 1: decision on probe {ids[0]!r} is not signed by the signing key"
    assert _harness(capsys, code=2).startswith(f"assay: error: {where}")
    _refused(capsys, ["review", "export", str(run)], where)

    reviews.unlink()  # what the run recorded: no decision yet
    accept = {"decision": "accept", "reviewer": "chief-reviewer"}
    _import(run, folder, capsys, {i: accept for i in ids})
    _harness(capsys)
    review, rate = _metrics(run)
    assert review["accepted"] == 3 and rate == pytest.approx(2 / 3)

    genuine = reviews.read_bytes()
    append_by_hand(run, _line(ids[0], "edited", target=0, note="fixed"))
    _refused(capsys, ["harness", "h.yaml"], f"{reviews}, row 4:", "not signed by the signing key")
    _refused(capsys, ["review", "export", str(run)], f"{reviews}, row 4:")
    reviews.write_bytes(genuine)

    # a re-run with another judge opens the same folder: its decisions carry over, still valid
    config = {**CONFIG, "judges": [*CONFIG["judges"], {"name": "other", "model": "scripted:s"}]}
    (folder / "h.yaml").write_text(yaml.safe_dump(config))
    (folder / "s").write_text(json.dumps({"default": {"verdict": "correct"}}))
    _harness(capsys)
    assert _run_dir(folder) == run
    review, rate = _metrics(run)
    assert review["accepted"] == 3 and rate == pytest.approx(2 / 3)


def test_decisions_moved_removed_cut_or_copied_are_refused(folder, capsys):
    """The latest decision of a probe counts, so the file's order and end decide: a probe
    rejected then accepted is judged; the lines swapped, the acceptance removed or cut off the
    end, or a line copied to the end each change what is judged, and each is refused in one line
    naming the file and the first bad row (the count kept beside the key tells the end)."""
    _harness(capsys)
    run = _run_dir(folder)
    ids = _probe_ids(run)
    reject = {"decision": "reject", "reviewer": "ana"}
    _import(run, folder, capsys, {i: reject for i in ids})
    for i in ids:  # each rejection undone by an acceptance, through the review app's path
        record_decision(run, {"probe_id": i, "decision": "accept", "reviewer": "bo"}, SCALE)
    _harness(capsys)
    assert _metrics(run)[0]["accepted"] == 3

    reviews = run / "reviews.jsonl"
    genuine = reviews.read_text().splitlines(keepends=True)
    tampered = {
        "the acceptances moved above the rejections": (genuine[3:] + genuine[:3], "row 1"),
        "an acceptance removed from the middle": (genuine[:4] + genuine[5:], "row 5"),
        "the last acceptance cut off": (genuine[:-1], "holds 5 decisions, but 6 were recorded"),
        "every acceptance cut off": (genuine[:3], "holds 3 decisions, but 6"),
        "a rejection copied to the end": (genuine + [genuine[2]], "row 7"),
        "the file removed": ([], "holds 0 decisions, but 6"),
    }
    for what, (lines, where) in tampered.items():
        reviews.write_text("".join(lines))
        err = _refused(capsys, ["harness", "h.yaml"], str(reviews), where)
        assert err == _refused(capsys, ["review", "export", str(run)], where), what
    reviews.write_text("".join(genuine))
    _harness(capsys)
    assert _metrics(run)[0]["accepted"] == 3


@pytest.mark.parametrize("how", ["symlink", "copy"])
def test_decisions_cut_off_are_refused_whatever_path_the_key_is_read_from(
    folder, capsys, monkeypatch, how
):
    """The head that says how many decisions were recorded is found by the key's identity: the
    same key through a symlink in another folder, or a copy of it there, still tells decisions
    cut off the end."""

    _harness(capsys)
    run = _run_dir(folder)
    _import(
        run, folder, capsys, {i: {"decision": "accept", "reviewer": "ana"} for i in _probe_ids(run)}
    )
    reviews = run / "reviews.jsonl"
    reviews.write_text("".join(reviews.read_text().splitlines(keepends=True)[:-1]))
    key_elsewhere(folder / "other-folder", monkeypatch, how)
    _refused(capsys, ["harness", "h.yaml"], str(reviews), "holds 2 decisions, but 3 were recorded")


def test_decisions_written_before_they_were_signed_are_adopted_once(folder, capsys):
    """A run reviewed before decisions were signed (its lines plain JSON, no head recorded) is
    read as it stands the first time — its lines could not be checked — chained in place, and
    guarded from then on: a line appended by hand after is refused, and so is the older file
    put back in its place."""
    from assay.reliability.review._review_chain import review_history

    _harness(capsys)
    run = _run_dir(folder)
    ids = _probe_ids(run)
    history = review_history(run)
    for mark in (history.head_file(), history.started_file()):  # as before signed decisions
        mark.unlink()
    old = [_line(i) for i in ids] + [_line(ids[0], "edited", target=0)]
    reviews = run / "reviews.jsonl"
    reviews.write_text("".join(json.dumps(r) + "\n" for r in old))

    _harness(capsys)
    review, rate = _metrics(run)
    assert review["accepted"] == 2 and review["edited"] == 1 and rate == pytest.approx(1.0)
    adopted = [json.loads(x) for x in reviews.read_text().splitlines()]
    assert [{k: r[k] for k in old[0]} for r in adopted] == old
    assert all(r["signature"] for r in adopted) and adopted[0]["previous"] == ""

    append_by_hand(run, _line(ids[1], "rejected"))
    _refused(capsys, ["harness", "h.yaml"], f"{reviews}, row 5:", "not signed")
    reviews.write_text("".join(json.dumps(r) + "\n" for r in old))  # the older file put back
    _refused(capsys, ["harness", "h.yaml"], f"{reviews}, row 1:", "not signed")


def test_a_copied_run_folder_adopts_no_hand_written_decisions(folder, tmp_path, capsys):
    """A run folder copied elsewhere (a new place has no head yet) is still the same run: once
    this machine has signed its decisions, a file of unsigned decisions in the copy is not
    adopted as one written before signing, but refused."""
    _harness(capsys)
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns(".assay"))
    run = _run_dir(copy)
    append_by_hand(run, *(_line(i) for i in _probe_ids(run)))
    err = _refused(capsys, ["review", "export", str(run)], str(run / "reviews.jsonl"), "not signed")
    assert "signed in another folder on this machine" in err


def test_a_run_folder_deleted_and_run_again_has_a_history_of_its_own(folder, capsys):
    """A run folder deleted and made again is a new instance of the run: its decisions start
    empty (no refusal against the old folder's count), and the old folder's decisions, signed
    for the old instance, are refused if copied into it."""
    _harness(capsys)
    run = _run_dir(folder)
    accept = {"decision": "accept", "reviewer": "ana"}
    _import(run, folder, capsys, {i: accept for i in _probe_ids(run)})
    old = (run / "reviews.jsonl").read_bytes()
    shutil.rmtree(run)
    _harness(capsys)
    again = _run_dir(folder)
    assert again == run and _metrics(again)[0]["pending"] == 3
    (again / "reviews.jsonl").write_bytes(old)
    _refused(capsys, ["harness", "h.yaml"], "reviews.jsonl, row 1:", "not signed")


def test_a_decision_recorded_while_the_history_is_read_is_not_lines_cut_off(
    folder, capsys, monkeypatch
):
    """A reader takes no lock: a decision recorded between its reading of the file and of the
    count kept beside the key looked like lines cut off ("holds 1 decisions, but 2 were
    recorded", seen under load in the threads-and-processes test). The count is read first:
    the writer appends its line before it moves the count, so the file read after is never
    short of it."""
    from assay.reliability import read_reviews
    from assay.runs import SignedHistory

    _harness(capsys)
    run = _run_dir(folder)
    ids = _probe_ids(run)
    record_decision(run, {"probe_id": ids[0], "decision": "accept", "reviewer": "ana"}, SCALE)
    original, fired = SignedHistory.read_head, []

    def racing(self):  # another reviewer's decision lands just before the count is read
        if not fired:
            fired.append(True)
            accept = {"probe_id": ids[1], "decision": "accept", "reviewer": "bo"}
            record_decision(run, accept, SCALE)
        return original(self)

    monkeypatch.setattr(SignedHistory, "read_head", racing)
    seen = [r["probe_id"] for r in read_reviews(run, SCALE)]
    assert fired and seen == ids[:2]
