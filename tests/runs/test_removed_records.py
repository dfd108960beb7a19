"""Records removed from a run are refused, never judged again: the lines a judge got wrong
deleted from a finished run, and the command run again, would judge those items anew — a
fresh draw of the judge — and seal the run with the lucky draws kept (a coin-flip judge
certified in a few rounds). How many records each file holds, and which, is kept beside the
signing key as the run writes them (``run-heads/``), so the run is refused in one line naming
its folder and what is missing, before any LM call — whether its seal was left in run.json or
removed so that the run looks interrupted, whether the lines were only removed or others copied
in their place, and in a run stopped part-way. A kill's torn last line and records written just
before a kill still resume; a copy of a run reads and goes on as the run, until the other has
gone on."""

from __future__ import annotations

import json
import re
import shutil
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from assay.cli import main
from assay.lm import StubServer
from assay.lm._stub_server import default_respond
from tests.killed_runs import killed_mid_commit, left_by_a_kill, made_before_heads
from tests.signing_keys import key_elsewhere
from tests.stub_judge import stub_config, write_items

N = 24


class _Redrawn:
    """A judge whose verdict is drawn anew at each ask, as at temperature 1: on its first ask
    of an item it is wrong on every third item, on a later ask it is right. ``asked`` counts the
    asks by item."""

    def __init__(self) -> None:
        self.asked: Counter[int] = Counter()

    def __call__(self, body: dict) -> str:
        k = int(re.search(r"Item (\d+) is blue", json.dumps(body["messages"])).group(1))
        self.asked[k] += 1
        wrong = k % 3 == 0 and self.asked[k] == 1
        out = json.loads(default_respond(body))
        out["verdict"] = ["False", "True"][(k + wrong) % 2]  # item k's reference is k % 2
        return json.dumps(out)


@pytest.fixture
def judge():
    redrawn = _Redrawn()
    with StubServer(respond=redrawn) as server:
        server.redrawn = redrawn
        yield server


def _evaluate(folder: Path, stub: StubServer) -> int:
    """``assay evaluate`` of the run, its LM cache removed first (a cache is a cache: without
    it, an item judged again is a new draw, as at temperature 1)."""
    shutil.rmtree(folder / ".assay" / "dspy_cache", ignore_errors=True)
    csv = write_items(folder, N)
    return main(["evaluate", str(stub_config(folder, csv, stub.base_url, name="r")), "--quiet"])


def _run_dir(folder: Path) -> Path:
    return next((folder / "runs").glob("r-*"))


def _drop_the_wrong_lines(run_dir: Path) -> int:
    """The forger's edit: the judgments the judge got wrong deleted (every other line kept as
    it is, its signature valid); how many were deleted."""
    path = run_dir / "judgments.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    kept = [ln for ln in lines if (r := json.loads(ln))["score"] == int(r["item_id"][1:]) % 2]
    path.write_text("".join(kept), encoding="utf-8")
    return len(lines) - len(kept)


def _accuracy(run_dir: Path) -> float:
    metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    return metrics["metrics"]["accuracy"]["value"]


def _refused(err: str, run_dir: Path, stub: StubServer, served: int, what: str) -> None:
    """One line naming the run folder and what is missing, and no LM call."""
    line = err.strip()
    assert len(line.splitlines()) == 1, line
    assert line.startswith(f"assay: error: {run_dir}: "), line
    assert what in line and "run-heads" in line and "not judged again" in line, line
    assert stub.n_requests == served


def test_lines_a_judge_got_wrong_removed_from_a_sealed_run_are_not_judged_again(
    tmp_path, monkeypatch, capsys, judge
):
    """The reroll: before, the run was judged again on the deleted items, sealed anew at
    accuracy 1.0, and certified."""
    monkeypatch.chdir(tmp_path)
    assert _evaluate(tmp_path, judge) == 0
    run_dir = _run_dir(tmp_path)
    assert _accuracy(run_dir) == pytest.approx(1 - 8 / N)
    state = (run_dir / "run.json").read_text(encoding="utf-8")
    assert _drop_the_wrong_lines(run_dir) == 8
    served = judge.n_requests
    capsys.readouterr()
    assert _evaluate(tmp_path, judge) == 2
    _refused(
        capsys.readouterr().err, run_dir, judge, served, "holds 16 records, but this run wrote 24"
    )
    assert (run_dir / "run.json").read_text(encoding="utf-8") == state  # nothing written
    assert _accuracy(run_dir) == pytest.approx(1 - 8 / N)
    (tmp_path / "policy.yaml").write_text("name: gate\nconfidence: 0.9\nbars:\n  accuracy: 0.8\n")
    assert main(["certify", str(run_dir), "--policy", str(tmp_path / "policy.yaml")]) == 2
    assert "not the file the run sealed" in capsys.readouterr().err


def test_a_seal_removed_so_the_run_looks_interrupted_does_not_hide_the_removal(
    tmp_path, monkeypatch, capsys, judge
):
    monkeypatch.chdir(tmp_path)
    assert _evaluate(tmp_path, judge) == 0
    run_dir = _run_dir(tmp_path)
    _drop_the_wrong_lines(run_dir)
    _as_if_running(run_dir)
    served = judge.n_requests
    capsys.readouterr()
    assert _evaluate(tmp_path, judge) == 2
    _refused(
        capsys.readouterr().err, run_dir, judge, served, "holds 16 records, but this run wrote 24"
    )
    assert not (run_dir / "metrics.json").exists()


@pytest.mark.parametrize("how", ["copied in their place", "moved", "the file removed"])
def test_records_replaced_moved_or_removed_whole_are_refused(
    tmp_path, monkeypatch, capsys, judge, how
):
    """As many lines as were removed, copied from the ones kept (the count kept), the lines
    reordered, or the whole file gone."""
    monkeypatch.chdir(tmp_path)
    assert _evaluate(tmp_path, judge) == 0
    run_dir = _run_dir(tmp_path)
    path = run_dir / "judgments.jsonl"
    if how == "copied in their place":
        _drop_the_wrong_lines(run_dir)
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        path.write_text("".join(lines + lines[:8]), encoding="utf-8")
        what = "the records of judgments.jsonl are not the 24 this run wrote"
    elif how == "moved":
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        path.write_text("".join(reversed(lines)), encoding="utf-8")
        what = "are not the 24 this run wrote"
    else:
        path.unlink()
        what = "judgments.jsonl is gone, but this run wrote 24 there"
    served = judge.n_requests
    capsys.readouterr()
    assert _evaluate(tmp_path, judge) == 2
    _refused(capsys.readouterr().err, run_dir, judge, served, what)


def test_records_removed_from_a_stopped_run_are_refused(tmp_path, monkeypatch, capsys, judge):
    """A run killed after 12 records (its heads beside the key at 12); the wrong ones among
    them deleted before it resumes."""
    monkeypatch.chdir(tmp_path)
    assert _evaluate(tmp_path, judge) == 0
    run_dir = _run_dir(tmp_path)
    _stopped_after(run_dir, 12)
    dropped = _drop_the_wrong_lines(run_dir)
    assert dropped
    served = judge.n_requests
    capsys.readouterr()
    assert _evaluate(tmp_path, judge) == 2
    what = f"holds {12 - dropped} records, but this run wrote 12 there"
    _refused(capsys.readouterr().err, run_dir, judge, served, what)


@pytest.mark.parametrize("torn", [0, 50])
def test_records_a_kill_kept_from_their_file_are_written_from_the_heads(
    tmp_path, monkeypatch, judge, torn
):
    """Killed while a commit of three records was written — the heads, written ahead, count
    them; the file holds none of them, or a torn first one: the resume writes the three from
    the heads (whole, as they were) and judges only the items none holds, each once."""
    monkeypatch.chdir(tmp_path)
    assert _evaluate(tmp_path, judge) == 0
    run_dir = _run_dir(tmp_path)
    path = run_dir / "judgments.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    _stopped_after(run_dir, 15)
    path.write_text("".join(lines), encoding="utf-8")  # the state of the kill, set below
    killed_mid_commit(run_dir, keep=12, batch=3, torn=torn)
    served = judge.n_requests
    assert _evaluate(tmp_path, judge) == 0
    again = path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert again[:15] == lines[:15] and len(again) == N
    assert judge.n_requests - served == N - 15
    assert sorted(json.loads(x)["item_id"] for x in again) == sorted(f"i{k}" for k in range(N))
    served = judge.n_requests
    assert _evaluate(tmp_path, judge) == 0 and judge.n_requests == served  # sealed, read back


def test_a_torn_last_line_of_a_run_without_heads_is_still_cut_off(tmp_path, monkeypatch, judge):
    """A run killed while its 13th record was written, with no heads beside the key (made
    before they were kept): the torn line is cut off and its item judged again with the rest."""
    monkeypatch.chdir(tmp_path)
    assert _evaluate(tmp_path, judge) == 0
    run_dir = _run_dir(tmp_path)
    path = run_dir / "judgments.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    _stopped_after(run_dir, 12)
    made_before_heads(run_dir)
    path.write_text("".join(lines[:12]) + lines[12][:50], encoding="utf-8")
    served = judge.n_requests
    assert _evaluate(tmp_path, judge) == 0
    again = path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert again[:12] == lines[:12] and len(again) == N
    assert judge.n_requests - served == N - 12


def test_the_last_commit_before_a_kill_is_protected_too(tmp_path, monkeypatch, capsys, judge):
    """The heads are written ahead of the records: lines of the very last commit before a kill,
    removed, are not judged again — they are written back from the heads."""
    monkeypatch.chdir(tmp_path)
    assert _evaluate(tmp_path, judge) == 0
    run_dir = _run_dir(tmp_path)
    path = run_dir / "judgments.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    killed_mid_commit(run_dir, keep=N - 4, batch=4)
    _stopped_after(run_dir, N - 4, heads=False)
    served = judge.n_requests
    assert _evaluate(tmp_path, judge) == 0
    assert path.read_text(encoding="utf-8").splitlines(keepends=True) == lines
    assert judge.n_requests == served  # nothing judged again


def test_a_copy_goes_on_as_the_run_until_the_other_has(tmp_path, monkeypatch, capsys, judge):
    """A stopped run copied elsewhere resumes there; the run left behind, an older state of
    the same instance, is then refused where it would go on — it would judge its missing items
    again, a second draw beside the copy's."""
    monkeypatch.chdir(tmp_path)
    assert _evaluate(tmp_path, judge) == 0
    run_dir = _run_dir(tmp_path)
    _stopped_after(run_dir, 12)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copytree(tmp_path / "runs", elsewhere / "runs")
    monkeypatch.chdir(elsewhere)
    assert _evaluate(elsewhere, judge) == 0
    assert len((_run_dir(elsewhere) / "judgments.jsonl").read_text().splitlines()) == N
    monkeypatch.chdir(tmp_path)
    served = judge.n_requests
    capsys.readouterr()
    assert _evaluate(tmp_path, judge) == 2
    _refused(
        capsys.readouterr().err, run_dir, judge, served, "holds 12 records, but this run wrote 24"
    )


def test_a_run_made_before_the_heads_reads_and_resumes_as_it_did(
    tmp_path, monkeypatch, capsys, judge
):
    """No heads beside the key (a run written before they were kept, or on a machine whose
    key folder is another): its records are taken as they stand, as before — and counted from
    then on."""
    monkeypatch.chdir(tmp_path)
    assert _evaluate(tmp_path, judge) == 0
    run_dir = _run_dir(tmp_path)
    _stopped_after(run_dir, 12)
    made_before_heads(run_dir)
    assert _evaluate(tmp_path, judge) == 0
    assert len((run_dir / "judgments.jsonl").read_text().splitlines()) == N
    _drop_the_wrong_lines(run_dir)
    capsys.readouterr()
    assert _evaluate(tmp_path, judge) == 2  # counted once it went on here
    assert "but this run wrote 24 there" in capsys.readouterr().err


def test_a_head_edited_is_refused(tmp_path, monkeypatch, capsys, judge):
    """The heads beside the key are signed: the count lowered to the records left after a
    removal is not the count the run recorded."""
    monkeypatch.chdir(tmp_path)
    assert _evaluate(tmp_path, judge) == 0
    run_dir = _run_dir(tmp_path)
    _stopped_after(run_dir, 12)
    head = _head_file(run_dir)
    (header,) = head.read_text(encoding="utf-8").splitlines()  # one entry, nothing pending
    data = json.loads(header)
    data["records"]["judgments.jsonl"][0] = 8
    head.write_text(json.dumps(data) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert _evaluate(tmp_path, judge) == 2
    err = capsys.readouterr().err
    assert f"{run_dir}: {head} is not the count of records this run recorded" in err


def _head_file(run_dir: Path) -> Path:
    from assay.runs._record_heads import RecordHeads

    state = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    return RecordHeads(run_dir, state["run_hash"], state["instance"]).file


def _stopped_after(run_dir: Path, keep: int, *, heads: bool = True) -> None:
    """What a kill after ``keep`` judgments leaves: its first ``keep`` records and (``heads``)
    its heads at them, its state "running", no seal, no metrics."""
    path = run_dir / "judgments.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:keep]), encoding="utf-8")
    if heads:
        left_by_a_kill(run_dir)
    _as_if_running(run_dir)


def _as_if_running(run_dir: Path) -> None:
    """The run's state "running", its seal and metrics gone: a finished run made to look
    interrupted."""
    state = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    state["status"] = "running"
    for sealed in ("seal", "finished", "inputs", "code"):
        state.pop(sealed, None)
    (run_dir / "run.json").write_text(json.dumps(state), encoding="utf-8")
    (run_dir / "metrics.json").unlink()


@pytest.mark.slow
def test_a_record_removed_after_a_real_kill_is_never_judged_again(tmp_path):
    """``assay evaluate`` killed (SIGKILL) mid-run, whenever the kill lands — between two
    commits, or between a commit's heads and its lines —, and its first record removed: the
    resume either refuses the run (the record was counted in an earlier commit) or writes the
    record back from the heads (it was in the last one); it never judges the item again."""
    from tests.processes import REPO, assay_process

    cfg = tmp_path / "cfg"
    shutil.copytree(REPO / "tests" / "fixtures" / "evaluate", cfg)
    sheet = json.loads((cfg / "sheet.json").read_text())
    sheet["delay_s"] = 0.3  # slow enough to be killed mid-run
    (cfg / "sheet.json").write_text(json.dumps(sheet))
    proc = assay_process("evaluate", str(cfg / "config.yaml"), "--quiet", "--json", cwd=tmp_path)
    path = None
    for _ in range(2400):  # at most two minutes: the run is killed once it holds 4 records
        found = list((tmp_path / "runs").glob("*/judgments.jsonl"))
        if found and len(found[0].read_bytes().split(b"\n")) > 4:
            path = found[0]
            break
        assert proc.poll() is None, proc.stderr.read()[-800:]
        time.sleep(0.05)
    assert path is not None, "the run never wrote four judgments"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    lines = [ln for ln in path.read_text().splitlines(keepends=True) if ln.endswith("\n")]
    removed = json.loads(lines[0])["item_id"]
    path.write_text("".join(lines[1:]))
    again = assay_process("evaluate", str(cfg / "config.yaml"), "--quiet", "--json", cwd=tmp_path)
    out, err = again.communicate(timeout=300)
    if again.returncode == 2:
        assert f"{path.parent}: " in err and "removed from a run are refused" in err, err
        return
    assert again.returncode == 0, err
    now = path.read_text().splitlines(keepends=True)
    assert now[0] == lines[0]  # written back where it was
    ids = [json.loads(x)["item_id"] for x in now]
    assert ids.count(removed) == 1 and sorted(ids) == sorted(set(ids))


def test_the_key_read_through_a_copy_elsewhere_finds_the_same_heads(
    tmp_path, monkeypatch, capsys, judge
):
    """Heads kept beside the key file would be missed by the same key copied to another folder
    (a run with no heads there is taken as it stands): they are found by the key's identity."""
    monkeypatch.chdir(tmp_path)
    assert _evaluate(tmp_path, judge) == 0
    run_dir = _run_dir(tmp_path)
    assert _drop_the_wrong_lines(run_dir) == 8
    key_elsewhere(tmp_path / "elsewhere", monkeypatch)
    served = judge.n_requests
    capsys.readouterr()
    assert _evaluate(tmp_path, judge) == 2
    _refused(
        capsys.readouterr().err, run_dir, judge, served, "holds 16 records, but this run wrote 24"
    )
