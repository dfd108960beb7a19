"""A tuned judge measured before and after on held-out items only: ``assay optimize`` records in
the runs folder's ledger the items its optimizer saw and the program it wrote; ``assay certify``
and ``assay compare --paired`` of the tuned judge refuse items that reached the tuning — by id or
by the text the judge read, normalised (renamed, re-spaced or re-cased, an item has been seen) —
and measure it on held-out items as on any others. Through the command line, on the stub server."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from assay.cli import main
from assay.lm import StubServer
from assay.lm._stub_server import default_respond
from tests.stub_judge import stub_config

LAX = {"name": "lax", "confidence": 0.9, "bars": {"tpr": 0.5, "tnr": 0.5}}


def oracle(request: dict) -> str:
    """Every item right: item k's verdict is True when k is odd."""
    found = re.findall(r"item (\d+)", json.dumps(request["messages"]), flags=re.IGNORECASE)
    answer = default_respond(request)
    return answer.replace("False", "True") if int(found[-1]) % 2 else answer


def items_csv(path: Path, ks, *, ids: str = "i", text=None) -> Path:
    text = text or (lambda k: f"Item {k} is blue.")
    rows = ["id,request,response,expected"]
    rows += [f'{ids}{k},What colour is item {k}?,"{text(k)}",{k % 2}' for k in ks]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def evaluate(folder: Path, name: str, csv: Path, base: str, **judge) -> Path:
    cfg = stub_config(folder, csv, base, name=name, file=f"{name}.yaml", judge=judge)
    assert main(["evaluate", str(cfg), "--quiet"]) == 0
    (run_dir,) = (folder / "runs").glob(f"{name}-*")
    return run_dir


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    """An optimize run on items 0..39 (its program state), and the stub serving."""
    folder = tmp_path_factory.mktemp("tuned")
    with StubServer(respond=oracle) as stub, pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        csv = items_csv(folder / "train.csv", range(40))
        cfg = stub_config(
            folder,
            csv,
            stub.base_url,
            name="opt",
            file="opt.yaml",
            optimizer={
                "name": "bootstrap_few_shot",
                "options": {"max_labeled_demos": 2, "max_bootstrapped_demos": 1},
            },
        )
        assert main(["optimize", str(cfg), "--quiet"]) == 0
        (run_dir,) = (folder / "runs").glob("opt-*")
        split = json.loads((run_dir / "split.json").read_text())
        yield folder, stub, run_dir, split


def refusal(capsys, argv: list[str]) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


def test_the_tuning_items_are_recorded_signed_in_the_ledger(tuned):
    folder, _, run_dir, split = tuned
    from assay import _signing
    from assay.decisions import TuningRecord

    (path,) = (folder / "runs" / "certificates" / "tuning").glob("*/tuning.json")
    record = TuningRecord.model_validate_json(path.read_text())
    assert _signing.verify(record.signed_part(), record.signature)
    # bootstrap_few_shot selects on nothing: the train split is what it saw, dev and test not
    assert sorted(record.items) == sorted(split["train_ids"])
    assert record.source == "assay optimize (bootstrap_few_shot)"
    assert Path(record.run) == run_dir


def test_certify_and_compare_refuse_items_the_tuned_judge_was_tuned_on(
    tuned, tmp_path, monkeypatch, capsys
):
    folder, stub, run_dir, split = tuned
    monkeypatch.chdir(folder)
    state = str(run_dir / "program.json")
    csv = items_csv(folder / "all.csv", range(40))
    after = evaluate(folder, "after-all", csv, stub.base_url, program_state=state)
    before = evaluate(folder, "before-all", csv, stub.base_url)
    policy = folder / "lax.json"
    policy.write_text(json.dumps(LAX))
    err = refusal(capsys, ["certify", str(after), "--policy", str(policy)])
    n = len(split["train_ids"])
    assert f"certify: {n} of these 40 items reached the tuning of judge 'stub-judge'" in err
    assert "held-out items only" in err
    assert not list((folder / "runs" / "certificates").glob("*/certificate.json"))  # none consumed
    err = refusal(capsys, ["compare", "--paired", str(before), str(after)])
    assert f"compare --paired: {n} of these 40 items reached the tuning" in err
    # the judge it was tuned from is not the tuned judge: its own certificate is its business
    other = folder / "lax-base.json"  # a policy of its own: attempts count per judge name
    other.write_text(json.dumps({**LAX, "name": "lax-base"}))
    capsys.readouterr()
    assert main(["certify", str(before), "--policy", str(other)]) == 0


@pytest.mark.parametrize(
    "respell",
    [lambda t: t + "  ", str.upper, lambda t: t.replace(" ", "\u00a0")],
    ids=["trailing-spaces", "upper-case", "no-break-spaces"],
)
def test_a_tuning_item_renamed_and_respelled_is_still_refused(
    tuned, tmp_path, monkeypatch, capsys, respell
):
    folder, stub, run_dir, split = tuned
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").symlink_to(folder / "runs")  # the same runs folder and ledger
    seen = set(sorted(int(i[1:]) for i in split["train_ids"])[:3])
    csv = items_csv(
        tmp_path / "mixed.csv",
        [*seen, *range(100, 120)],
        ids="renamed-",
        text=lambda k: respell(f"Item {k} is blue.") if k in seen else f"Item {k} is blue.",
    )
    run = evaluate(
        tmp_path,
        f"mixed-{tmp_path.name}",
        csv,
        stub.base_url,
        program_state=str(run_dir / "program.json"),
    )
    policy = tmp_path / "lax.json"
    policy.write_text(json.dumps(LAX))
    err = refusal(capsys, ["certify", str(run), "--policy", str(policy)])
    assert "3 of these 23 items reached the tuning" in err
    assert "0 by id, 3 by normalised text" in err


def test_held_out_items_measure_the_tuned_judge_before_and_after(
    tuned, tmp_path, monkeypatch, capsys
):
    folder, stub, run_dir, _ = tuned
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").symlink_to(folder / "runs")
    csv = items_csv(tmp_path / "held.csv", range(200, 240))
    # loaded by its MLflow URI or a copy elsewhere, the tuned program is the same judge
    copy = tmp_path / "tuned-program.json"
    copy.write_bytes((run_dir / "program.json").read_bytes())
    after = evaluate(tmp_path, "after-held", csv, stub.base_url, program_state=str(copy))
    before = evaluate(tmp_path, "before-held", csv, stub.base_url)
    capsys.readouterr()
    assert main(["compare", "--paired", str(before), str(after), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n_paired"] == 40
    policy = tmp_path / "lax.json"
    policy.write_text(json.dumps(LAX))
    assert main(["certify", str(after), "--policy", str(policy)]) == 0
    # the copy is the tuned judge: on a tuning item it is refused like the original
    train = items_csv(tmp_path / "train-again.csv", range(40))
    again = evaluate(tmp_path, "copy-train", train, stub.base_url, program_state=str(copy))
    assert "reached the tuning" in refusal(capsys, ["certify", str(again), "--policy", str(policy)])
