"""The one decision path shared by ``assay review import`` and the browser: validation, versions
(stale views are refused), reset, and a file lock that keeps concurrent writers whole."""

from __future__ import annotations

import json
import multiprocessing
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from assay.errors import DataError
from assay.reliability._probe import Probe
from assay.reliability.review._review import apply_reviews, read_reviews
from assay.reliability.review._review_decisions import (
    ReviewConflict,
    decision_history,
    record_decision,
)
from assay.scale import Scale
from tests.review_runs import name_run, sign_by_hand

SCALE = Scale(kind="ordinal", min=1, max=3, labels=["poor", "fair", "good"])


@pytest.fixture
def run(tmp_path: Path) -> Path:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    probes = [
        Probe(id=f"p{i}", test="demo", source_id="s1", response=f"text {i}", target=2)
        for i in range(40)
    ]
    (run_dir / "probes.jsonl").write_text("".join(p.model_dump_json() + "\n" for p in probes))
    name_run(run_dir)
    return run_dir


def _decide(run_dir: Path, **entry):
    version = entry.pop("version", None)
    return record_decision(
        run_dir, {"reviewer": "ana", **entry}, SCALE, version=version, allow_reset=True
    )


def test_a_decision_is_appended_with_reviewer_time_and_version_check(run):
    rec = _decide(run, probe_id="p1", decision="edit", edited_target="good", version=0)
    assert rec["status"] == "edited" and rec["target"] == 3 and rec["reviewer"] == "ana"
    assert rec["timestamp"] and read_reviews(run) == [rec]
    # a second reviewer who loaded the probe before the first decision is refused
    with pytest.raises(ReviewConflict) as err:
        _decide(run, probe_id="p1", decision="reject", reviewer="bo", version=0)
    assert err.value.latest["reviewer"] == "ana" and err.value.count == 1
    assert "ana" in str(err.value) and len(read_reviews(run)) == 1
    _decide(run, probe_id="p1", decision="reset", reviewer="bo", version=1)
    (probe,) = apply_reviews(
        [Probe.model_validate_json((run / "probes.jsonl").read_text().splitlines()[1])],
        read_reviews(run),
    )
    assert probe.review.status == "pending" and probe.target == 2
    assert len(decision_history(run, "p1")) == 2


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"probe_id": "nope", "decision": "accept"}, "probe_id"),
        ({"probe_id": "p1", "decision": "edit", "edited_target": 9}, "edited_target"),
        ({"probe_id": "p1", "decision": "edit", "edited_target": "superb"}, "edited_target"),
        ({"probe_id": "p1", "decision": "edit", "edited_text": "text 1"}, "edited_text"),
        ({"probe_id": "p1", "decision": "accept", "reviewer": " "}, "reviewer"),
        ({"probe_id": "p1", "decision": ""}, "decision"),
        ({"probe_id": "p1", "decision": "approve"}, "decision"),
    ],
)
def test_an_invalid_decision_writes_nothing(run, entry, field):
    with pytest.raises(DataError) as err:
        _decide(run, **entry)
    assert f"field '{field}'" in str(err.value)
    assert not (run / "reviews.jsonl").exists() or read_reviews(run) == []


def _race(run_dir: str, who: str, k: int) -> int:
    """Decide on one probe k times, each time against the version just read (as a browser
    does), retrying on a conflict; the note records the version the decision was made on."""
    made = 0
    while made < k:
        version = len(decision_history(Path(run_dir), "p0"))
        entry = {"probe_id": "p0", "decision": "accept", "reviewer": who, "note": f"v{version}"}
        try:
            record_decision(Path(run_dir), entry, SCALE, version=version)
        except ReviewConflict:
            continue
        made += 1
    return made


def _proc(args: tuple[str, str, int]) -> int:
    return _race(*args)


def test_concurrent_writers_in_threads_and_processes_lose_and_interleave_nothing(run, monkeypatch):
    import assay.reliability.review._review_decisions as review

    append = review._append

    def slow_append(path: Path, text: str) -> None:  # widen the window the lock must close
        time.sleep(0.005)
        append(path, text)

    monkeypatch.setattr(review, "_append", slow_append)  # forked workers inherit it
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(2) as procs, ThreadPoolExecutor(2) as threads:
        in_procs = procs.map_async(_proc, [(str(run), "proc-a", 25), (str(run), "proc-b", 25)])
        in_threads = list(threads.map(lambda w: _race(str(run), w, 25), ["th-a", "th-b"]))
        assert in_procs.get(timeout=120) == [25, 25] and in_threads == [25, 25]
    lines = (run / "reviews.jsonl").read_text().splitlines()
    assert len(lines) == 100
    notes = [json.loads(line)["note"] for line in lines]  # every line is whole JSON
    # exactly one decision was accepted per version: no two writers decided on the same view
    assert notes == [f"v{i}" for i in range(100)]


@pytest.mark.parametrize(
    "fields, field, says",
    [
        ({"status": "edited", "target": 7}, "target", "7 is not on the ordinal 1..3"),
        ({"status": "edited", "target": "good"}, "target", "'good' is not a score"),
        ({"status": "edited", "target": True}, "target", "True is not a score"),
        ({"status": "edited", "response": 5}, "response", "not text"),
    ],
)
def test_a_decision_signed_past_the_import_is_read_by_the_rules_import_keeps(
    run, fields, field, says
):
    """``reviews.jsonl`` is appended by ``assay review`` and its import, which refuse an edited
    target off the scale; a line signed with the key past them (a line written by hand is
    refused before: ``test_review_chain.py``) is refused as the run reads it, naming the
    file, the line and the field — never a pass rate moved by a target no judge can give."""
    good = {"probe_id": "p1", "status": "accepted", "reviewer": "ann", "timestamp": "t"}
    bad = {"probe_id": "p2", "reviewer": "eve", "timestamp": "t", **fields}
    sign_by_hand(run, good, bad)
    with pytest.raises(DataError) as caught:
        read_reviews(run, SCALE)
    message = str(caught.value)
    assert "reviews.jsonl" in message and "row 2" in message and f"field '{field}'" in message
    assert says in message
