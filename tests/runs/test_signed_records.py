"""A run's records are signed as they are written, so the seal holds from the first record, not
only from the finish: a run stopped part-way (killed) whose judgments are then edited —
every verdict set to the reference, the forgery that would pass any bar — is refused when it
resumes, in one line naming the file and the line, and makes no LM call; so is a record taken
from another run, a run set back to "running" with its seal removed and its records edited, and
a harness run whose generated units or judgments were edited. A torn last line (a kill while it
was written) is still cut off and its item judged again; an unedited run resumes where it
stopped."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from assay.cli import main
from assay.lm import StubServer
from tests.killed_runs import left_by_a_kill, made_before_heads
from tests.stub_judge import stub_config, write_items

N = 12


@pytest.fixture
def stub():
    with StubServer() as server:
        yield server


def _evaluate(folder: Path, stub: StubServer, name: str = "r", *args: str) -> int:
    """``assay evaluate`` of the run ``name``: its judge's rubric names it, so two names are two
    judge configs (two run hashes)."""
    csv = write_items(folder, N)
    judge = {"rubric": f"A good response names a colour ({name})."}
    cfg = stub_config(folder, csv, stub.base_url, name=name, file=f"{name}.yaml", judge=judge)
    return main(["evaluate", str(cfg), "--quiet", *args])


def _judgments(folder: Path, name: str = "r") -> Path:
    return next((folder / "runs").glob(f"{name}-*")) / "judgments.jsonl"


def _stopped_part_way(path: Path, keep: int = 6) -> None:
    """What a kill after ``keep`` judgments leaves of a run: its first ``keep`` records (and
    its heads beside the key at them), its state still "running", no seal (and no metrics)."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:keep]), encoding="utf-8")
    left_by_a_kill(path.parent)
    state_file = path.parent / "run.json"
    state = json.loads(state_file.read_text(encoding="utf-8"))
    state["status"] = "running"
    state.pop("seal", None)
    state_file.write_text(json.dumps(state), encoding="utf-8")
    (path.parent / "metrics.json").unlink()


def _set_every_verdict_to_the_reference(path: Path) -> None:
    """The forger's edit: each judged item's score becomes its reference (item k: k % 2), the
    line otherwise as it was (its signature too)."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        k = int(record["item_id"].removeprefix("i"))
        record["score"] = k % 2
        lines.append(json.dumps(record, separators=(",", ":"), ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_a_record_carries_its_signature_and_readers_do_not_see_it(tmp_path, monkeypatch, stub):
    monkeypatch.chdir(tmp_path)
    assert _evaluate(tmp_path, stub) == 0
    first = json.loads(_judgments(tmp_path).read_text(encoding="utf-8").splitlines()[0])
    assert len(first["_mac"]) == 64
    from assay.report import read_jsonl

    assert all("_mac" not in r for r in read_jsonl(_judgments(tmp_path)))


def test_records_edited_in_a_stopped_run_are_refused_when_it_resumes(
    tmp_path, monkeypatch, capsys, stub
):
    monkeypatch.chdir(tmp_path)
    assert _evaluate(tmp_path, stub) == 0
    path = _judgments(tmp_path)
    _stopped_part_way(path)
    _set_every_verdict_to_the_reference(path)
    served = stub.n_requests
    capsys.readouterr()
    assert _evaluate(tmp_path, stub) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert re.search(
        rf"^assay: error: {re.escape(str(path))}: line \d+ is not the record this run wrote there",
        err,
    )
    assert stub.n_requests == served  # refused before any call


def test_a_record_from_another_run_is_refused(tmp_path, monkeypatch, capsys, stub):
    """Two runs of other configs on the same items: a line of one appended to the other (or
    replacing one of its lines) is not that run's record."""
    monkeypatch.chdir(tmp_path)
    assert _evaluate(tmp_path, stub, "a") == 0
    assert _evaluate(tmp_path, stub, "b") == 0
    a, b = _judgments(tmp_path, "a"), _judgments(tmp_path, "b")
    _stopped_part_way(a)
    theirs = b.read_text(encoding="utf-8").splitlines()
    ours = a.read_text(encoding="utf-8").splitlines()
    a.write_text("\n".join([*ours, theirs[-1]]) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert _evaluate(tmp_path, stub, "a") == 2
    assert f"{a}: line 7 is not the record this run wrote there" in capsys.readouterr().err


def test_a_finished_run_set_back_to_running_is_refused_too(tmp_path, monkeypatch, capsys, stub):
    monkeypatch.chdir(tmp_path)
    assert _evaluate(tmp_path, stub) == 0
    path = _judgments(tmp_path)
    _stopped_part_way(path, keep=N)  # every record kept: only the state set back
    _set_every_verdict_to_the_reference(path)
    capsys.readouterr()
    assert _evaluate(tmp_path, stub) == 2
    assert "is not the record this run wrote there" in capsys.readouterr().err


def test_records_written_before_they_were_signed_are_refused(tmp_path, monkeypatch, capsys, stub):
    monkeypatch.chdir(tmp_path)
    assert _evaluate(tmp_path, stub) == 0
    path = _judgments(tmp_path)
    _stopped_part_way(path)
    unsigned = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for record in unsigned:
        record.pop("_mac")
    path.write_text("".join(json.dumps(r) + "\n" for r in unsigned), encoding="utf-8")
    made_before_heads(path.parent)  # as a run written then: no count of its records either
    capsys.readouterr()
    assert _evaluate(tmp_path, stub) == 2
    err = capsys.readouterr().err
    assert "line 1 carries no signature" in err and "move the run directory aside" in err


def test_a_torn_last_line_is_still_cut_off_and_judged_again(tmp_path, monkeypatch, stub):
    monkeypatch.chdir(tmp_path)
    assert _evaluate(tmp_path, stub) == 0
    path = _judgments(tmp_path)
    _stopped_part_way(path)
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: len(text) - 40], encoding="utf-8")  # the sixth line cut short
    left_by_a_kill(path.parent)  # killed while it was written: counted up to the fifth
    assert _evaluate(tmp_path, stub) == 0
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == N and all(json.loads(line)["_mac"] for line in lines)


def test_an_unedited_stopped_run_resumes_with_what_it_kept(tmp_path, monkeypatch, stub):
    monkeypatch.chdir(tmp_path)
    assert _evaluate(tmp_path, stub) == 0
    path = _judgments(tmp_path)
    kept = path.read_text(encoding="utf-8").splitlines()[:6]
    _stopped_part_way(path)
    assert _evaluate(tmp_path, stub) == 0
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[:6] == kept and len(lines) == N  # the six kept, the rest judged again


def test_a_copied_run_keeps_its_signatures(tmp_path, monkeypatch, stub):
    """A record is bound to its run's hash and file, not to the folder: a run moved or copied
    elsewhere (a backup, an artifact download) still reads."""
    monkeypatch.chdir(tmp_path)
    assert _evaluate(tmp_path, stub) == 0
    _stopped_part_way(_judgments(tmp_path))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copytree(tmp_path / "runs", elsewhere / "runs")
    monkeypatch.chdir(elsewhere)
    assert _evaluate(elsewhere, stub) == 0
    assert len(_judgments(elsewhere).read_text(encoding="utf-8").splitlines()) == N


@pytest.mark.parametrize("edited", ["units.jsonl", "judgments"])
def test_a_harness_run_resumes_only_from_its_own_records(tmp_path, edited):
    """The harness's generated units (probe texts and targets) and its judges' verdicts are
    records too: a target or a verdict edited in a stopped harness run is refused on resume."""
    from assay.errors import RunError
    from assay.reliability import run_harness
    from tests.web.conftest import harness_config, make_harness_run

    run_dir = make_harness_run(tmp_path).run_dir
    if edited == "units.jsonl":
        path = run_dir / "units.jsonl"
    else:
        path = sorted((run_dir / "judgments").glob("*.jsonl"))[0]
    state = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    state["status"] = "running"
    state.pop("seal", None)
    (run_dir / "run.json").write_text(json.dumps(state), encoding="utf-8")
    lines = path.read_text(encoding="utf-8").splitlines()
    field = "target" if edited == "units.jsonl" else "score"
    flipped = re.sub(
        rf'"{field}":([01])', lambda m: f'"{field}":{1 - int(m[1])}', lines[0], count=1
    )
    assert flipped != lines[0]
    lines[0] = flipped
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(RunError, match=r"line 1 is not the record this run wrote there"):
        run_harness(harness_config(tmp_path), workdir=tmp_path, progress=False)


class _Flipping:
    """The stub's judge, truthful (item k's verdict is its reference, k % 2) until ``flip`` is
    set, then wrong on every item."""

    def __init__(self) -> None:
        self.flip = False

    def __call__(self, body: dict) -> str:
        from assay.lm._stub_server import default_respond

        k = int(re.search(r"Item (\d+) is blue", json.dumps(body["messages"])).group(1))
        out = json.loads(default_respond(body))
        out["verdict"] = ["False", "True"][(k + self.flip) % 2]
        return json.dumps(out)


def _same_config_in(folders: list[Path], flipping: _Flipping, stub: StubServer) -> list[Path]:
    """``evaluate ../config.yaml`` in each folder — one config and data, so one run hash —, the
    judge truthful in the first and flipped in the others; their judgments files."""
    csv = write_items(folders[0].parent, N)
    cfg = stub_config(folders[0].parent, csv, stub.base_url, name="same")
    out = []
    for k, folder in enumerate(folders):
        folder.mkdir()
        flipping.flip = k > 0
        with pytest.MonkeyPatch.context() as mp:
            mp.chdir(folder)
            assert main(["evaluate", str(cfg), "--quiet"]) == 0
        out.append(_judgments(folder, "same"))
    assert out[0].parent.name == out[-1].parent.name  # one hash
    return out


def test_judgments_of_another_run_of_the_same_config_do_not_fake_a_drift(
    tmp_path, monkeypatch, capsys
):
    """Two runs of one config in two folders, the judge truthful in the first and wrong on
    every item in the second: drift says so. The second's judgments replaced by the first's
    (reordered): evaluate refuses to re-score them, naming the file and line, and drift still
    refuses the second run — it never reads 'within stability'. A record is bound to the run
    instance that wrote it, not to its config."""
    monkeypatch.chdir(tmp_path)
    flipping = _Flipping()
    with StubServer(respond=flipping) as stub:
        old, new = _same_config_in([tmp_path / "old", tmp_path / "new"], flipping, stub)
        capsys.readouterr()
        assert main(["drift", str(old.parent), str(new.parent), "--no-log"]) == 1  # drifted
        assert f"drifted: {N} of {N}" in capsys.readouterr().out
        lines = old.read_text(encoding="utf-8").splitlines()
        new.write_text("\n".join(reversed(lines)) + "\n", encoding="utf-8")
        served = stub.n_requests
        with pytest.MonkeyPatch.context() as mp:
            mp.chdir(tmp_path / "new")
            assert main(["evaluate", str(tmp_path / "config.yaml"), "--quiet"]) == 2
        err = capsys.readouterr().err
        assert f"{new}: line 1 is not the record this run wrote there" in err
        assert stub.n_requests == served
        assert main(["drift", str(old.parent), str(new.parent), "--no-log"]) == 2
        out = capsys.readouterr()
        assert "within stability" not in out.out and str(new.parent) in out.err


def test_a_line_from_another_run_of_the_same_config_is_refused(tmp_path, capsys):
    """A stopped run of a config, and a line of another run of that config (another folder,
    the same hash) appended to it: the resume refuses that line, before any LM call."""
    flipping = _Flipping()
    with StubServer(respond=flipping) as stub:
        ours, theirs = _same_config_in([tmp_path / "a", tmp_path / "b"], flipping, stub)
        _stopped_part_way(ours)
        lines = ours.read_text(encoding="utf-8").splitlines()
        other = theirs.read_text(encoding="utf-8").splitlines()[-1]
        ours.write_text("\n".join([*lines, other]) + "\n", encoding="utf-8")
        served = stub.n_requests
        capsys.readouterr()
        with pytest.MonkeyPatch.context() as mp:
            mp.chdir(tmp_path / "a")
            assert main(["evaluate", str(tmp_path / "config.yaml"), "--quiet"]) == 2
        assert f"{ours}: line 7 is not the record this run wrote there" in capsys.readouterr().err
        assert stub.n_requests == served


def _as_made_before_instances(run_dir: Path) -> None:
    """A finished run as assay wrote it before runs had an instance: no ``instance`` in its
    run.json, each record signed over the run's hash, the file's name and the line alone, its
    seal made over its kind, hash and files."""
    from assay.runs._seal import SEALED, seal
    from assay.runs._signed import RecordSeal

    state = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    del state["instance"]
    before = RecordSeal(run_dir, state["run_hash"], None, create=False)
    path = run_dir / "judgments.jsonl"
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        body = re.sub(r',"_mac":"[0-9a-f]{64}"\}$', "}", line)
        lines.append(before.sign("judgments.jsonl", body))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    state["seal"] = seal(run_dir, SEALED, kind=state["kind"], run_hash=state["run_hash"])
    (run_dir / "run.json").write_text(json.dumps(state), encoding="utf-8")


def test_a_run_made_before_instances_is_read_as_it_sealed_it(tmp_path, monkeypatch, stub):
    """A finished run with no instance is read back, and its sealed judgments scored again by
    newer code, as before — no LM call, still no instance."""
    monkeypatch.chdir(tmp_path)
    assert _evaluate(tmp_path, stub) == 0
    run_dir = _judgments(tmp_path).parent
    _as_made_before_instances(run_dir)
    served = stub.n_requests
    assert _evaluate(tmp_path, stub) == 0
    state = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    state["code"] = "made by other code"
    state.pop("inputs", None)  # not found again by its inputs: opened, and its code compared
    (run_dir / "run.json").write_text(json.dumps(state), encoding="utf-8")
    assert _evaluate(tmp_path, stub) == 0  # scored again from its sealed judgments
    state = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    assert "instance" not in state and state["status"] == "finished"
    assert state["code"] != "made by other code" and stub.n_requests == served


@pytest.mark.parametrize("how", ["judgments of another run", "stopped part-way"])
def test_a_run_made_before_instances_is_not_rebuilt_from_unsealed_records(
    tmp_path, monkeypatch, capsys, stub, how
):
    """A run with no instance whose records its seal does not vouch for — its judgments
    replaced by another such run's of the same config (the drift forgery, on a run made
    before instances), or the run stopped part-way — is refused, not scored again or resumed:
    its records cannot be told from another run's."""
    monkeypatch.chdir(tmp_path)
    assert _evaluate(tmp_path, stub) == 0
    run_dir = _judgments(tmp_path).parent
    other = tmp_path / "other"
    shutil.copytree(run_dir, other)
    _as_made_before_instances(run_dir)
    _as_made_before_instances(other)
    path = run_dir / "judgments.jsonl"
    if how == "stopped part-way":
        _stopped_part_way(path)
    else:
        theirs = (other / "judgments.jsonl").read_text(encoding="utf-8").splitlines()
        path.write_text("\n".join(reversed(theirs)) + "\n", encoding="utf-8")
    served = stub.n_requests
    capsys.readouterr()
    assert _evaluate(tmp_path, stub) == 2
    err = capsys.readouterr().err
    assert f"{run_dir}: created before runs had an instance, and " in err
    assert "move it aside and run its config again" in err and stub.n_requests == served


def test_a_record_signed_before_instances_is_refused_in_a_run_that_has_one(
    tmp_path, monkeypatch, capsys, stub
):
    monkeypatch.chdir(tmp_path)
    assert _evaluate(tmp_path, stub) == 0
    path = _judgments(tmp_path)
    ours = path.read_text(encoding="utf-8").splitlines()
    elsewhere = tmp_path / "before"
    shutil.copytree(path.parent, elsewhere)
    _as_made_before_instances(elsewhere)
    theirs = (elsewhere / "judgments.jsonl").read_text(encoding="utf-8").splitlines()
    _stopped_part_way(path)
    path.write_text("\n".join([*ours[:6], theirs[-1]]) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert _evaluate(tmp_path, stub) == 2
    assert f"{path}: line 7 is not the record this run wrote there" in capsys.readouterr().err
