"""A finished run found again by its inputs (``assay/runs/_reread.py``): the same command on the
same inputs prints what the run's own re-read prints, makes no LM call, and imports neither
DSPy nor the config models, nor starts a helper interpreter; every input that can change a
result — a ``@file`` rubric, the data, the endpoint, a sampling parameter, the scale, the
program, a program state, the judge's model family, a generator column, the bias tests' false
discovery rate, the code's options — makes the command judge or score again; and what it reads
back is vouched for by the run's seal and a record signed with the key, never by a file beside
it: judgments edited after the seal, a record or a pointer edited, are caught by the run as
before. A harness run's review decisions added after it finished are folded in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from assay.cli import main
from assay.lm import StubServer
from tests.evaluation.test_judge_biases import write_items as items_written_by
from tests.processes import REPO
from tests.stub_judge import stub_config, write_items

N = 6

FACTS = """\
import atexit, json, sys


def facts():  # at the command's exit: what the process loaded and started
    from assay.runs import _sidecar

    loaded = {m: m in sys.modules for m in ("dspy", "assay.inputs._config", "pandas")}
    print(json.dumps({**loaded, "helper": _sidecar._spare is not None}), file=sys.stderr)


atexit.register(facts)
sys.argv = ["assay", *sys.argv[1:]]
from assay.cli import main

sys.exit(main())
"""


@pytest.fixture
def stub():
    with StubServer() as server:
        yield server


def _config(folder: Path, stub: StubServer, **judge: object) -> Path:
    """An evaluate config of the stub judge with its rubric in a file (``rubric.md``)."""
    rubric = folder / "rubric.md"
    if not rubric.exists():
        rubric.write_text("A good response names a colour.", encoding="utf-8")
    csv = folder / "items.csv"
    if not csv.exists():
        write_items(folder, N)
    return stub_config(
        folder, csv, stub.base_url, name="r", judge={"rubric": "@rubric.md", **judge}
    )


def _evaluate(cfg: Path, capsys, *args: str) -> str:
    capsys.readouterr()
    assert main(["evaluate", str(cfg), "--quiet", *args]) == 0
    return capsys.readouterr().out


def _run_dir(folder: Path) -> Path:
    (run_dir,) = (folder / "runs").iterdir()
    return run_dir


def _in_a_fresh_process(cwd: Path, *args: str) -> tuple[str, dict[str, bool]]:
    """``assay *args`` in a process of its own, as a user starts it (the run's helper as by
    default): what it printed, and what it had loaded and started when it exited."""
    env = {k: v for k, v in os.environ.items() if k != "ASSAY_SIDECAR"}
    proc = subprocess.run(
        [sys.executable, "-c", FACTS, *args],
        cwd=cwd,
        env={**env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, json.loads(proc.stderr.strip().splitlines()[-1])


def _slow_reread(folder: Path, cfg: Path, capsys) -> str:
    """What the command prints re-reading the finished run without its record of inputs."""
    for pointer in (folder / ".assay" / "finished").iterdir():
        pointer.unlink()
    return _evaluate(cfg, capsys)


def test_a_finished_run_is_read_back_without_dspy_a_config_model_or_a_helper(
    tmp_path, monkeypatch, capsys, stub
):
    monkeypatch.chdir(tmp_path)
    cfg = _config(tmp_path, stub)
    _evaluate(cfg, capsys)
    served = stub.n_requests
    assert served == N
    (pointer,) = (tmp_path / ".assay" / "finished").iterdir()
    state = json.loads((_run_dir(tmp_path) / "run.json").read_text(encoding="utf-8"))
    assert state["inputs"]["digest"] == pointer.name
    out, facts = _in_a_fresh_process(tmp_path, "evaluate", str(cfg), "--quiet")
    assert facts == {"dspy": False, "assay.inputs._config": False, "pandas": False, "helper": False}
    assert stub.n_requests == served
    assert "r: re-read (finished before; no LM call)" in out
    assert out == _slow_reread(tmp_path, cfg, capsys)
    assert stub.n_requests == served


def test_without_a_record_a_finished_run_is_re_read_as_before_and_recorded(
    tmp_path, monkeypatch, capsys, stub
):
    """A run finished before runs recorded their inputs: re-read by the run itself (no call),
    and recorded then, so the next re-run finds it."""
    monkeypatch.chdir(tmp_path)
    cfg = _config(tmp_path, stub)
    _evaluate(cfg, capsys)
    state_file = _run_dir(tmp_path) / "run.json"
    state = json.loads(state_file.read_text(encoding="utf-8"))
    record = state.pop("inputs")
    state_file.write_text(json.dumps(state), encoding="utf-8")
    out = _evaluate(cfg, capsys)
    assert "re-read (finished before; no LM call)" in out and stub.n_requests == N
    assert json.loads(state_file.read_text(encoding="utf-8"))["inputs"] == record


def _edit_rubric(folder: Path) -> dict:
    (folder / "rubric.md").write_text("A good response names a colour and a shape.")
    return {}


def _edit_data(folder: Path) -> dict:
    csv = folder / "items.csv"
    csv.write_text(csv.read_text().replace("Item 3 is blue.", "Item 3 is blue I think."))
    return {}


CHANGES = {
    "the @file rubric's text": _edit_rubric,
    "the data file": _edit_data,
    "a sampling parameter": lambda folder: {"temperature": 0.7},
    "the token limit": lambda folder: {"max_tokens": 77},
    "the scale": lambda folder: {"scale": {"kind": "binary", "labels": ["bad", "good"]}},
    "the program": lambda folder: {"program": "chain_of_thought"},
    "the judge's model family": lambda folder: {"family": "llama"},
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_each_input_that_can_change_a_result_judges_again(
    tmp_path, monkeypatch, capsys, stub, change
):
    monkeypatch.chdir(tmp_path)
    _evaluate(_config(tmp_path, stub), capsys)
    assert "re-read" in _evaluate(_config(tmp_path, stub), capsys)
    assert stub.n_requests == N
    judge = CHANGES[change](tmp_path)
    out = _evaluate(_config(tmp_path, stub, **judge), capsys)
    assert "re-read" not in out and f"{N} judgments" in out
    assert len(list((tmp_path / "runs").iterdir())) == 2  # another run: another identity


def test_a_generator_column_measures_self_preference_and_is_read_back_with_it(
    tmp_path, monkeypatch, capsys, stub
):
    """Naming the column of who wrote each response is another run (self-preference is measured
    by it); its re-run prints the self-preference and scale-use figures the run's own re-read
    prints, with no call."""
    monkeypatch.chdir(tmp_path)
    writers = ["openai/stub-model" if k % 2 else "openai/gpt-4o" for k in range(N)]
    csv = items_written_by(tmp_path, [k % 2 for k in range(N)], writers)
    _evaluate(_config(tmp_path, stub), capsys)
    assert "re-read" in _evaluate(_config(tmp_path, stub), capsys)
    columns = {"id": "id", "generator": "written_by"}
    cfg = stub_config(
        tmp_path,
        csv,
        stub.base_url,
        name="r",
        judge={"rubric": "@rubric.md"},
        data={"path": str(csv), "columns": columns},
    )
    out = _evaluate(cfg, capsys)
    assert "re-read" not in out and f"r: {N} judgments" in out
    assert "self-preference" in out.lower()
    served = stub.n_requests
    again = _evaluate(cfg, capsys)
    assert "re-read (finished before; no LM call)" in again
    assert again == _slow_reread(tmp_path, cfg, capsys)
    assert again.replace("re-read (finished before; no LM call)", f"{N} judgments") == out
    assert stub.n_requests == served


def test_another_endpoint_judges_again(tmp_path, monkeypatch, capsys, stub):
    monkeypatch.chdir(tmp_path)
    _evaluate(_config(tmp_path, stub), capsys)
    with StubServer() as other:
        out = _evaluate(_config(tmp_path, other), capsys)
        assert other.n_requests == N and "re-read" not in out


def test_a_program_state_file_rewritten_judges_again(tmp_path, monkeypatch, capsys, stub):
    """A program state counts by its bytes, as in the judge's identity: the same state written
    again with another indentation is another judge."""
    from assay.programs import JudgeConfig, build_judge, save_program

    monkeypatch.chdir(tmp_path)
    judge = JudgeConfig.model_validate(
        {"model": "openai/stub-model", "api_base": stub.base_url, "scale": "binary"}
    )
    save_program(build_judge(judge), tmp_path / "state.json")
    cfg = _config(tmp_path, stub, program_state="state.json")
    _evaluate(cfg, capsys)
    assert "re-read" in _evaluate(cfg, capsys)
    assert stub.n_requests == N
    state = json.loads((tmp_path / "state.json").read_text())
    (tmp_path / "state.json").write_text(json.dumps(state, indent=4))
    assert f"r: {N} judgments" in _evaluate(cfg, capsys)
    assert len(list((tmp_path / "runs").iterdir())) == 2


def test_an_option_that_changes_the_run_is_part_of_its_inputs(tmp_path, monkeypatch, capsys, stub):
    monkeypatch.chdir(tmp_path)
    cfg = _config(tmp_path, stub)
    _evaluate(cfg, capsys)
    assert "r: 3 judgments" in _evaluate(cfg, capsys, "--limit", "3")
    served = stub.n_requests
    assert "re-read" in _evaluate(cfg, capsys)  # the first run, found again
    assert "items 3 " in _evaluate(cfg, capsys, "--limit", "3")  # and the second
    assert stub.n_requests == served
    assert len(list((tmp_path / ".assay" / "finished").iterdir())) == 2


def _named(folder: Path, stub: StubServer, name: str) -> Path:
    """A config of its own (its rubric names it): another run in the same folder."""
    csv = folder / "items.csv"
    if not csv.exists():
        write_items(folder, N)
    judge = {"rubric": f"A good response names a colour ({name})."}
    return stub_config(folder, csv, stub.base_url, name=name, file=f"{name}.yaml", judge=judge)


def test_judgments_edited_after_the_seal_are_caught(tmp_path, monkeypatch, capsys, stub):
    """The forger's edit of a finished run (every verdict set to its reference, each line's
    signature kept): its seal no longer holds, so nothing is read back by the inputs; the run
    refuses the records in one line, before any call."""
    monkeypatch.chdir(tmp_path)
    cfg = _named(tmp_path, stub, "r")
    _evaluate(cfg, capsys)
    assert "re-read" in _evaluate(cfg, capsys)
    path = _run_dir(tmp_path) / "judgments.jsonl"
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        record["score"] = int(record["item_id"].removeprefix("i")) % 2
        lines.append(json.dumps(record, separators=(",", ":"), ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    served = stub.n_requests
    capsys.readouterr()
    assert main(["evaluate", str(cfg), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not the record this run wrote there" in err[0]
    assert stub.n_requests == served


def test_a_judgment_removed_after_the_seal_is_refused_not_judged_again(
    tmp_path, monkeypatch, capsys, stub
):
    """Its seal no longer holds, so nothing is read back by the inputs; judging the item again
    would be a second draw in place of the one removed (tests/runs/test_removed_records.py):
    refused in one line, before any call. The file restored, the run reads back again."""
    monkeypatch.chdir(tmp_path)
    cfg = _named(tmp_path, stub, "r")
    _evaluate(cfg, capsys)
    path = _run_dir(tmp_path) / "judgments.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:-1]), encoding="utf-8")
    served = stub.n_requests
    capsys.readouterr()
    assert main(["evaluate", str(cfg), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"holds {N - 1} records, but this run wrote {N} there" in err[0]
    assert stub.n_requests == served
    path.write_text("".join(lines), encoding="utf-8")
    assert "re-read" in _evaluate(cfg, capsys)


def test_a_record_edited_or_a_pointer_moved_vouches_for_nothing(
    tmp_path, monkeypatch, capsys, stub
):
    monkeypatch.chdir(tmp_path)
    a, b = _named(tmp_path, stub, "a"), _named(tmp_path, stub, "b")
    _evaluate(a, capsys)
    _evaluate(b, capsys)
    run_a, run_b = (next((tmp_path / "runs").glob(f"{n}-*")) for n in ("a", "b"))
    state_file = run_a / "run.json"
    state = json.loads(state_file.read_text(encoding="utf-8"))
    state["inputs"]["shown"]["name"] = "forged"  # what the console would print
    state_file.write_text(json.dumps(state), encoding="utf-8")
    out = _evaluate(a, capsys)
    assert "a: re-read (finished before; no LM call)" in out and "forged" not in out
    pointer = tmp_path / ".assay" / "finished" / state["inputs"]["digest"]
    pointer.write_text(str(run_b), encoding="utf-8")  # a's inputs, b's run
    out = _evaluate(a, capsys)
    assert f"run directory: {run_a}" in out and "a: re-read" in out
    assert stub.n_requests == 2 * N


# -- the harness ----------------------------------------------------------------------------


HARNESS = ["--tests", "paraphrase,format_intraline,stochastic_stability", "--judges", "clean"]


def _harness(folder: Path) -> Path:
    """The self-test's harness config (its scripted models registered in this process) as a
    YAML file."""
    from assay.reliability.selftest._selftest import register, selftest_config, write_data

    register()
    raw = selftest_config(write_data(folder / "data", n=N)).model_dump(mode="json")
    path = folder / "h.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


def _answers(folder: Path) -> int:
    """The LM answers the folder's runs have received (their call ledgers' lines)."""
    ledgers = (folder / "runs").glob("*/calls.jsonl")
    return sum(len(p.read_text(encoding="utf-8").splitlines()) for p in ledgers)


def test_a_finished_harness_run_is_read_back_without_dspy_or_a_helper(
    tmp_path, monkeypatch, capsys
):
    """The JRH suite's zero-call re-run: in a fresh process (whose scripted models are not
    even registered: a call would fail), nothing of DSPy, the tests or the config models."""
    monkeypatch.chdir(tmp_path)
    cfg = _harness(tmp_path)
    assert main(["harness", str(cfg), *HARNESS, "--quiet"]) == 0
    capsys.readouterr()
    answers = _answers(tmp_path)
    assert answers > 0
    out, facts = _in_a_fresh_process(tmp_path, "harness", str(cfg), *HARNESS, "--quiet")
    assert facts == {"dspy": False, "assay.inputs._config": False, "pandas": False, "helper": False}
    assert "probes reused from an earlier run (same inputs): " in out
    for pointer in (tmp_path / ".assay" / "finished").iterdir():
        pointer.unlink()
    assert main(["harness", str(cfg), *HARNESS, "--quiet"]) == 0  # re-read by the run itself
    assert capsys.readouterr().out == out
    assert _answers(tmp_path) == answers


def test_another_false_discovery_rate_flags_the_harness_run_again(tmp_path, monkeypatch, capsys):
    """The bias tests' false discovery rate decides which effects against the placebo are
    flagged: a run of another ``fdr`` scores the stored probes again (no call) under it, and is
    read back under it after."""
    monkeypatch.chdir(tmp_path)
    cfg = _harness(tmp_path)
    tests = ["--tests", "paraphrase,authority", "--judges", "clean"]
    assert main(["harness", str(cfg), *tests, "--quiet", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["fdr"] == 0.05
    answers = _answers(tmp_path)
    raw = yaml.safe_load(cfg.read_text(encoding="utf-8"))
    cfg.write_text(yaml.safe_dump({**raw, "fdr": 0.2}), encoding="utf-8")
    assert main(["harness", str(cfg), *tests, "--quiet", "--json"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["fdr"] == 0.2 and second["run_dir"] == first["run_dir"]
    assert main(["harness", str(cfg), *tests, "--quiet", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == second
    assert _answers(tmp_path) == answers


def test_a_review_decision_added_after_a_harness_run_is_folded_in(tmp_path, monkeypatch, capsys):
    from assay.reliability import read_probes, record_decision
    from assay.scale import Scale

    monkeypatch.chdir(tmp_path)
    cfg = _harness(tmp_path)
    assert main(["harness", str(cfg), *HARNESS, "--quiet", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert main(["harness", str(cfg), *HARNESS, "--quiet", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == first
    answers = _answers(tmp_path)
    run_dir = Path(first["run_dir"])
    probe = next(p for p in read_probes(run_dir) if p.test == "paraphrase")
    scale = Scale.model_validate({"kind": "binary", "labels": ["incorrect", "correct"]})
    decision = {"probe_id": probe.id, "decision": "reject", "reviewer": "ana"}
    record_decision(run_dir, decision, scale)
    assert main(["harness", str(cfg), *HARNESS, "--quiet", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert first["review"]["rejected"] == 0 and again["review"]["rejected"] == 1
    assert _answers(tmp_path) == answers  # scored again from the run's files: no LM call
    assert main(["harness", str(cfg), *HARNESS, "--quiet", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == again


def test_an_answer_sheet_edited_judges_again(tmp_path, monkeypatch, capsys):
    """A scripted model (``scripted:<sheet.json>``) counts by its sheet's content, as an
    ``@file`` rubric does: the sheet edited is another model, judged again — its answers not
    taken from the LM cache of the old sheet's — and the old sheet back finds its run again."""
    monkeypatch.chdir(tmp_path)
    write_items(tmp_path, N)
    sheet = tmp_path / "sheet.json"
    every_true = json.dumps({"rules": [], "default": {"verdict": "True"}})
    sheet.write_text(every_true)
    judge = {"name": "j", "model": "scripted:sheet.json", "rubric": "Names a colour."}
    judge["scale"] = {"kind": "binary", "labels": ["False", "True"]}
    data = {"path": "items.csv", "columns": {"id": "id"}}
    cfg = tmp_path / "w.yaml"
    cfg.write_text(json.dumps({"name": "w", "data": data, "judge": judge}))

    def evaluate() -> dict:
        capsys.readouterr()
        assert main(["evaluate", str(cfg), "--quiet", "--json"]) == 0
        return json.loads(capsys.readouterr().out.strip().splitlines()[-1])

    first = evaluate()
    assert first["metrics"]["accuracy"]["value"] == pytest.approx(0.5)
    rule = {"match": "Item 0 is blue", "output": {"verdict": "False"}}
    sheet.write_text(json.dumps({"rules": [rule], "default": {"verdict": "True"}}))
    edited = evaluate()
    assert edited["run_dir"] != first["run_dir"] and edited["new_judgments"] == N
    assert edited["metrics"]["accuracy"]["value"] == pytest.approx(4 / 6)
    sheet.write_text(every_true)
    again = evaluate()
    assert again["run_dir"] == first["run_dir"] and again["new_judgments"] == 0
