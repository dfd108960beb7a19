"""What ``certify`` and ``--require-certificate`` decide on is found by the command, never where a
file says: the positive class a certificate's bars counted on is the use's (a certificate of
failures below 1 is no certificate of failures below 3), the ledger is the one of the runs folder
of the directory the command runs in (not the one a run's ``config.yaml`` names), and the
journal's head is found by the signing key's identity (not the path it is read from). And a run
certify refuses says what differs: the endpoint from the environment, a plug-in's code, the data.

Every judge here is a scripted answer sheet (no server, no call), run through the command line
as a user types it."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from assay.cli import main
from tests.signing_keys import key_elsewhere

POLICY = {"name": "gate", "confidence": 0.9, "bars": {"accuracy": 0.8}}


def write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")  # JSON is YAML
    return path


def one_line_refusal(capsys, argv: list[str]) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1, err
    return err[0]


def colour_items(folder: Path, ks: range = range(60)) -> Path:
    """Items whose reference the sheet of :func:`colour_config` gets right: "incorrect" for
    the red ones."""
    path = folder / "items.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, ["id", "request", "response", "expected"])
        w.writeheader()
        for k in ks:
            red = k % 2 == 0
            w.writerow(
                {
                    "id": f"q{k}",
                    "request": f"Question {k}?",
                    "response": f"Item {k}: the {'snow is red' if red else 'grass is green'}.",
                    "expected": "incorrect" if red else "correct",
                }
            )
    return path


def colour_config(folder: Path, name: str = "colours", **extra: object) -> Path:
    """A binary judge on an answer sheet: "incorrect" when the response says "is red"."""
    sheet = folder / "sheet.json"
    if not sheet.exists():
        rules = [{"match": "is red", "output": {"verdict": "incorrect"}}]
        write(sheet, {"rules": rules, "default": {"verdict": "correct"}})
    config = {
        "name": name,
        "data": {"path": str(folder / "items.csv")},
        "judge": {
            "name": "colour-judge",
            "model": f"scripted:{sheet}",
            "rubric": "The response names the right colour.",
            "scale": {"kind": "binary", "labels": ["incorrect", "correct"]},
        },
        "tracking": {"enabled": False},
        **extra,
    }
    return write(folder / f"{name}.yaml", config)


# -- 1. the positive class a certificate counted on is the use's -----------------------------------


def severity_config(folder: Path, threshold: int) -> Path:
    """A 0–3 judge on an answer sheet: right on levels 0 and 3, 3 on levels 1 and 2; a score
    below ``threshold`` is a failure."""
    items = folder / "items.csv"
    if not items.exists():
        with items.open("w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, ["id", "request", "response", "expected"])
            w.writeheader()
            for k in range(120):
                response = f"Case {k} severity level{k % 4} outcome."
                w.writerow({"id": f"t{k}", "request": f"Case {k}", "response": response,
                            "expected": k % 4})  # fmt: skip
        rules = [{"match": "level0", "output": {"verdict": 0}}]
        write(folder / "sheet.json", {"rules": rules, "default": {"verdict": 3}})
    config = {
        "name": f"severity{threshold}",
        "data": {"path": str(items)},
        "judge": {
            "name": "severity-judge",
            "model": f"scripted:{folder / 'sheet.json'}",
            "rubric": "Rate the severity.",
            "scale": {"kind": "ordinal", "min": 0, "max": 3},
        },
        "threshold": threshold,
        "tracking": {"enabled": False},
    }
    return write(folder / f"severity{threshold}.yaml", config)


def test_a_certificate_of_failures_below_one_threshold_admits_no_use_of_another(
    tmp_path, monkeypatch, capsys
):
    """Certified on ``failure_incidence ≥ 0.8`` where a failure is a score below 1 (every one
    caught: bound 0.926), the judge is refused for a run where a failure is a score below 3 (it
    catches a third of those) — by the policy and by the certificate file — before any run
    starts; the run with the certificate's threshold passes."""
    monkeypatch.chdir(tmp_path)
    at1, at3 = severity_config(tmp_path, 1), severity_config(tmp_path, 3)
    policy = write(
        tmp_path / "failgate.yaml",
        {"name": "failgate", "confidence": 0.9, "bars": {"failure_incidence": 0.8}},
    )
    assert main(["evaluate", str(at1), "--quiet"]) == 0
    (run,) = (tmp_path / "runs").glob("severity1-*")
    out = tmp_path / "cert.json"
    argv = ["certify", str(run), "--policy", str(policy), "--out", str(out)]
    assert main(argv) == 0
    assert json.loads(out.read_text())["event"] == "score < 1"
    for required in (policy, out):
        line = one_line_refusal(
            capsys, ["evaluate", str(at3), "--quiet", "--require-certificate", str(required)]
        )
        assert "does not hold for" in line
        assert "its bounds counted score < 1 as positive" in line
        assert "failure_incidence counts score < 3" in line
    assert not list((tmp_path / "runs").glob("severity3-*"))  # refused before the run
    assert main(["evaluate", str(at1), "--quiet", "--require-certificate", str(policy)]) == 0
    assert main(["evaluate", str(at1), "--quiet", "--require-certificate", str(out)]) == 0


def test_a_tpr_certificate_of_one_label_admits_no_use_counting_failures(
    tmp_path, monkeypatch, capsys
):
    """A binary judge certified on ``tpr`` without ``positive`` counted its second label
    ("correct"); a use whose run has ``threshold: 1`` counts failures (score below 1:
    "incorrect") — the other class — and is refused."""
    monkeypatch.chdir(tmp_path)
    colour_items(tmp_path)
    plain = colour_config(tmp_path)
    failing = colour_config(tmp_path, "failing", threshold=1)
    policy = write(tmp_path / "tpr.yaml", {"name": "tpr", "confidence": 0.9, "bars": {"tpr": 0.8}})
    assert main(["evaluate", str(plain), "--quiet"]) == 0
    (run,) = (tmp_path / "runs").glob("colours-*")
    assert main(["certify", str(run), "--policy", str(policy)]) == 0
    line = one_line_refusal(
        capsys, ["evaluate", str(failing), "--quiet", "--require-certificate", str(policy)]
    )
    assert "its bounds counted verdict correct as positive, where tpr's tpr counts score < 1" in (
        line
    )
    assert main(["evaluate", str(plain), "--quiet", "--require-certificate", str(policy)]) == 0


# -- 2. the ledger is the runs folder's of the directory certify runs in ---------------------------


def test_certify_counts_in_this_folders_ledger_not_the_one_the_run_names(
    tmp_path, monkeypatch, capsys
):
    """Certified here, the items are consumed in ``./runs``'s ledger. The same config evaluated
    with ``output_dir`` pointed at another folder, its run copied into ``./runs`` and certified
    from here: refused (it was made for another runs folder — say which ledger counts it), and
    with ``--output-dir runs`` refused as consumed; nothing is issued in the other ledger."""
    monkeypatch.chdir(tmp_path)
    colour_items(tmp_path)
    elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere"
    here = colour_config(tmp_path)
    there = colour_config(tmp_path, "there", output_dir=str(elsewhere))
    policy = write(tmp_path / "gate.yaml", POLICY)
    assert main(["evaluate", str(here), "--quiet"]) == 0
    (run,) = (tmp_path / "runs").glob("colours-*")
    assert main(["certify", str(run), "--policy", str(policy)]) == 0
    assert main(["evaluate", str(there), "--quiet"]) == 0
    (made,) = elsewhere.glob("there-*")
    copy = tmp_path / "runs" / "copy"
    shutil.copytree(made, copy)
    line = one_line_refusal(capsys, ["certify", "runs/copy", "--policy", str(policy)])
    assert f"runs/copy: made for the runs folder {elsewhere} (its output_dir)" in line
    assert "give --output-dir DIR" in line
    argv = ["certify", "runs/copy", "--policy", str(policy), "--output-dir", "runs"]
    assert "60 of these 60 items were already consumed" in one_line_refusal(capsys, argv)
    assert not (elsewhere / "certificates").exists()


def test_a_runs_folder_of_its_own_is_named_with_output_dir(tmp_path, monkeypatch, capsys):
    """A project whose runs go to ``results``: certify is told so (``--output-dir results``),
    issues in ``results/certificates``, and the gate of a run of that config finds it there."""
    monkeypatch.chdir(tmp_path)
    colour_items(tmp_path)
    config = colour_config(tmp_path, output_dir="results")
    policy = write(tmp_path / "gate.yaml", POLICY)
    assert main(["evaluate", str(config), "--quiet"]) == 0
    (run,) = (tmp_path / "results").glob("colours-*")
    line = one_line_refusal(capsys, ["certify", str(run), "--policy", str(policy)])
    assert "made for the runs folder" in line and "give --output-dir DIR" in line
    argv = ["certify", str(run), "--policy", str(policy), "--output-dir", "results"]
    assert main(argv) == 0
    assert list((tmp_path / "results" / "certificates").glob("*/certificate.json"))
    assert not (tmp_path / "runs").exists()
    assert main(["evaluate", str(config), "--quiet", "--require-certificate", str(policy)]) == 0


def test_the_estimate_gate_reads_this_folders_ledger_not_the_one_the_run_names(
    tmp_path, monkeypatch, capsys
):
    """The judge certified only in another folder's ledger; its run, made with ``output_dir``
    pointed there, copied into ``./runs``: ``estimate --require-certificate`` from here is
    refused (made for another runs folder), with ``--output-dir runs`` refused for want of a
    certificate in this ledger, and passes only when ``--output-dir`` names the other folder."""
    monkeypatch.chdir(tmp_path)
    colour_items(tmp_path)
    elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere"
    there = colour_config(tmp_path, "there", output_dir=str(elsewhere))
    policy = write(tmp_path / "gate.yaml", POLICY)
    assert main(["evaluate", str(there), "--quiet"]) == 0
    (made,) = elsewhere.glob("there-*")
    certify = ["certify", str(made), "--policy", str(policy), "--output-dir", str(elsewhere)]
    assert main(certify) == 0
    shutil.copytree(made, tmp_path / "runs" / "copy")
    argv = ["estimate", "runs/copy", "--require-certificate", str(policy)]
    line = one_line_refusal(capsys, argv)
    assert f"runs/copy: made for the runs folder {elsewhere} (its output_dir)" in line
    assert "estimate --require-certificate looks in" in line and "give --output-dir DIR" in line
    line = one_line_refusal(capsys, [*argv, "--output-dir", "runs"])
    assert "no certificate for judge colour-judge" in line
    assert not list((tmp_path / "runs").glob("there-estimate-*"))
    assert main([*argv, "--output-dir", str(elsewhere)]) == 0
    assert list(elsewhere.glob("there-estimate-*"))


def test_the_tuning_check_reads_this_folders_ledger_not_the_one_the_run_names(
    tmp_path, monkeypatch, capsys
):
    """A judge tuned on these items (recorded in ``./runs``'s ledger), its run made with
    ``output_dir`` elsewhere and copied here: certified into this folder's ledger, it is refused
    for the tuning, whatever the run's config names."""
    from assay.decisions import ledger_of, record_tuning
    from assay.inputs._config import EvaluateConfig
    from assay.inputs._items import load_items

    monkeypatch.chdir(tmp_path)
    colour_items(tmp_path)
    elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere"
    there = colour_config(tmp_path, "there", output_dir=str(elsewhere))
    assert main(["evaluate", str(there), "--quiet"]) == 0
    (made,) = elsewhere.glob("there-*")
    shutil.copytree(made, tmp_path / "runs" / "copy")
    config = EvaluateConfig.model_validate_json(json.dumps(json.loads(there.read_text())))
    items = load_items(config.data, config.judge.scale)
    ledger = ledger_of(tmp_path, "runs")
    record_tuning(config.judge, config.judge, items, source="test", run="t", ledger=ledger)
    policy = write(tmp_path / "gate.yaml", POLICY)
    argv = ["certify", "runs/copy", "--policy", str(policy), "--output-dir", "runs"]
    assert "reached the tuning of judge 'colour-judge'" in one_line_refusal(capsys, argv)
    assert not list((tmp_path / "runs" / "certificates").glob("*/certificate.json"))


# -- 3. the journal's head is found by the key's identity; the gate reads the journal -------------


def _certified(tmp_path: Path, monkeypatch) -> tuple[Path, Path, Path, Path]:
    """An admitted certificate of the colour judge in ``./runs``: (config, run, policy,
    ledger)."""
    monkeypatch.chdir(tmp_path)
    colour_items(tmp_path)
    config = colour_config(tmp_path)
    policy = write(tmp_path / "gate.yaml", POLICY)
    assert main(["evaluate", str(config), "--quiet"]) == 0
    (run,) = (tmp_path / "runs").glob("colours-*")
    assert main(["certify", str(run), "--policy", str(policy)]) == 0
    return config, run, policy, tmp_path / "runs" / "certificates"


def _cut(ledger: Path) -> None:
    """The journal emptied and the certificate's folder deleted: the items look new."""
    (ledger / "journal.jsonl").write_text("", encoding="utf-8")
    for folder in ledger.iterdir():
        if folder.is_dir():
            shutil.rmtree(folder)


@pytest.mark.parametrize("how", ["symlink", "copy"])
def test_a_cut_journal_is_refused_whatever_path_the_key_is_read_from(
    tmp_path, monkeypatch, capsys, how
):
    """The journal's head is found by the key's identity: the same key through a symlink in
    another folder, or a copy of it there, finds the head that says the journal held one
    certificate — the cut journal is refused, the items stay consumed."""

    _, run, policy, ledger = _certified(tmp_path, monkeypatch)
    _cut(ledger)
    argv = ["certify", str(run), "--policy", str(policy)]
    held = "the journal holds 0 certificates, but this ledger recorded 1"
    assert held in one_line_refusal(capsys, argv)
    key_elsewhere(tmp_path / "other-folder", monkeypatch, how)
    assert held in one_line_refusal(capsys, argv)
    assert not [d for d in ledger.iterdir() if d.is_dir()]


def test_a_head_kept_beside_the_key_before_still_counts(tmp_path, monkeypatch, capsys):
    """A ledger whose head was written beside the key file (before heads were found by the
    key's identity) is still guarded by it."""
    from assay._signing import key_file
    from assay.decisions._ledger_journal import head_file

    _, run, policy, ledger = _certified(tmp_path, monkeypatch)
    head = head_file((ledger / "ledger-id").read_text().strip())
    before = key_file().parent / "ledgers" / head.name
    before.parent.mkdir(exist_ok=True)
    head.rename(before)  # where an earlier assay kept it
    _cut(ledger)
    line = one_line_refusal(capsys, ["certify", str(run), "--policy", str(policy)])
    assert f"but this ledger recorded 1 ({before})" in line


def test_the_gate_reads_the_ledgers_journal_not_only_its_folders(tmp_path, monkeypatch, capsys):
    """The journal cut and the items certified again where this machine's records are not
    found (another copy of the key, another state folder): the new certificate is admitted
    there, but the gate here reads the journal against its head and refuses it, before any
    run; and a certificate folder the journal does not hold (its line torn by a kill) admits
    nothing until certify adopts it."""
    from assay._signing import KEY_FILE_ENV, key_file

    config, run, policy, ledger = _certified(tmp_path, monkeypatch)
    require = ["evaluate", str(config), "--quiet", "--require-certificate", str(policy)]
    assert main(require) == 0
    _cut(ledger)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(key_file(), elsewhere / "signing.key")
    with monkeypatch.context() as env:
        env.setenv(KEY_FILE_ENV, str(elsewhere / "signing.key"))
        env.setenv("XDG_STATE_HOME", str(elsewhere / "state"))
        # under another policy's name (the same bars): another certificate than the one cut
        again = write(tmp_path / "again.yaml", POLICY | {"name": "again"})
        assert main(["certify", str(run), "--policy", str(again)]) == 0
    line = one_line_refusal(capsys, require)
    assert "journal.jsonl: the journal does not hold the 1 certificates this ledger recorded" in (
        line
    )
    # a ledger this machine never saw, whose last line was torn by a kill: its folder is there,
    # its journal line is not
    from assay.decisions._ledger_journal import head_file

    head_file((ledger / "ledger-id").read_text().strip()).unlink()
    journal = ledger / "journal.jsonl"
    journal.write_text(journal.read_text()[:-20], encoding="utf-8")
    line = one_line_refusal(capsys, require)
    assert "is not in the ledger's journal" in line and "the next certify here adopts it" in line


def test_a_ledger_written_before_the_journal_still_admits(tmp_path, monkeypatch, capsys):
    """A ledger with no journal and no head on this machine (written before the journal
    existed): its certificates admit as they did."""
    from assay.decisions._ledger_journal import head_file

    config, _, policy, ledger = _certified(tmp_path, monkeypatch)
    head_file((ledger / "ledger-id").read_text().strip()).unlink()
    (ledger / "journal.jsonl").unlink()
    assert main(["evaluate", str(config), "--quiet", "--require-certificate", str(policy)]) == 0


# -- 4. a run certify refuses says what differs --------------------------------------------------


def _colour_run(tmp_path: Path, monkeypatch, **extra: object) -> tuple[Path, Path, Path]:
    monkeypatch.chdir(tmp_path)
    colour_items(tmp_path)
    config = colour_config(tmp_path, **extra)
    assert main(["evaluate", str(config), "--quiet"]) == 0
    (run,) = (tmp_path / "runs").glob("colours-*")
    return config, run, write(tmp_path / "gate.yaml", POLICY)


def test_an_endpoint_taken_from_the_environment_is_named_not_the_data(
    tmp_path, monkeypatch, capsys
):
    """A judge called through ``OPENAI_BASE_URL``: certified from a shell without the variable
    (or with another), the refusal names the endpoint, not the data; with the run's, it
    certifies."""
    from assay.lm import StubServer

    def respond(request: dict) -> str:
        red = "is red" in json.dumps(request["messages"])
        return json.dumps({"verdict": "incorrect" if red else "correct"})

    monkeypatch.chdir(tmp_path)
    colour_items(tmp_path)
    monkeypatch.setenv("STUB_KEY", "x")
    with StubServer(respond=respond) as stub:
        config = colour_config(tmp_path)
        data = json.loads(config.read_text())
        data["judge"] |= {"model": "openai/stub", "client": "litellm", "api_key_env": "STUB_KEY"}
        write(config, data)
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        assert main(["evaluate", str(config), "--quiet"]) == 0
        (run,) = (tmp_path / "runs").glob("colours-*")
        policy = write(tmp_path / "gate.yaml", POLICY)
        argv = ["certify", str(run), "--policy", str(policy)]
        monkeypatch.delenv("OPENAI_BASE_URL")
        line = one_line_refusal(capsys, argv)
        assert "the data changed" not in line
        assert "the judge is not the one the run judged with" in line
        assert "the data are as they were" in line
        assert "the endpoint of openai/stub comes from the environment (OPENAI_BASE_URL" in line
        assert "none set here" in line
        monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        assert "http://127.0.0.1:9/v1 here" in one_line_refusal(capsys, argv)
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        calls = stub.n_requests
        assert main(argv) == 0
        assert stub.n_requests == calls


def test_an_edited_answer_sheet_is_named_not_the_data(tmp_path, monkeypatch, capsys):
    _, run, policy = _colour_run(tmp_path, monkeypatch)
    sheet = tmp_path / "sheet.json"
    sheet.write_text(sheet.read_text() + "\n", encoding="utf-8")
    line = one_line_refusal(capsys, ["certify", str(run), "--policy", str(policy)])
    assert "the data changed" not in line
    assert f"its answer sheet {sheet} counts by its content: edited since?" in line


def test_an_edited_plugin_is_named_not_the_data(tmp_path, monkeypatch, capsys):
    """A comment edited in the run's plug-in file: the refusal names the plug-in."""
    plugin = tmp_path / "noop_plugin.py"
    plugin.write_text('"""A plug-in that registers nothing."""\n', encoding="utf-8")
    _, run, policy = _colour_run(tmp_path, monkeypatch, plugins=[str(plugin)])
    plugin.write_text('"""A plug-in that registers nothing."""\n# edited\n', encoding="utf-8")
    line = one_line_refusal(capsys, ["certify", str(run), "--policy", str(policy)])
    assert "the data changed" not in line
    assert f"the code of a plug-in the run names ({plugin}) is not the code it ran with" in line
    # a run finished before run.json recorded its items' fingerprint: either may have changed
    state = json.loads((run / "run.json").read_text())
    del state["data_fingerprint"]
    write(run / "run.json", state)
    line = one_line_refusal(capsys, ["certify", str(run), "--policy", str(policy)])
    assert f"or the code of a plug-in the run names ({plugin}) changed since the run" in line


def test_changed_data_is_still_named_as_such(tmp_path, monkeypatch, capsys):
    _, run, policy = _colour_run(tmp_path, monkeypatch)
    items = tmp_path / "items.csv"  # a reference changed (the ids are the texts' digests)
    items.write_text(items.read_text().replace("green.,correct", "green.,incorrect", 1))
    line = one_line_refusal(capsys, ["certify", str(run), "--policy", str(policy)])
    assert "the data changed since the run judged it" in line
