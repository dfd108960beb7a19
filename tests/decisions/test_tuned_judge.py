"""A tuned judge measured before and after on held-out items only: ``assay optimize`` records in
the runs folder's ledger the items its optimizer saw and the program it wrote; ``assay certify``
and ``assay compare --paired`` of the tuned judge refuse items that reached the tuning — by id or
by the text the judge read, normalised (renamed, re-spaced or re-cased, an item has been seen) —
and measure it on held-out items as on any others. Through the command line, on the stub server."""

from __future__ import annotations

import json
import os
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
    other = (
        folder / "lax-base.json"
    )  # another claim (a policy of its own): attempts count per judge and claim
    other.write_text(json.dumps({"name": "lax-base", "confidence": 0.9, "bars": {"accuracy": 0.5}}))
    capsys.readouterr()
    assert main(["certify", str(before), "--policy", str(other)]) == 0


@pytest.mark.parametrize(
    "respell",
    [
        lambda t: t + "  ",
        str.upper,
        lambda t: t.replace(" ", "\u00a0"),
        lambda t: t.replace("blue", "bl\u200bu\u00ade"),
        lambda t: t.replace("Item", "\u0399tem").replace("blue", "blu\u0435"),
    ],
    ids=[
        "trailing-spaces",
        "upper-case",
        "no-break-spaces",
        "invisible-characters",
        "look-alike-letters",
    ],
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


# -- a judge tuned outside assay (MLflow's align()), recorded by hand as docs/optimize.md shows --
DOCS = Path(__file__).resolve().parents[2] / "docs" / "optimize.md"


def tuned_elsewhere_snippet() -> str:
    """The page's Python block after "**Tuned elsewhere.**", as a user copies it."""
    page = DOCS.read_text(encoding="utf-8")
    after = page[page.index("**Tuned elsewhere.**") :]
    (block,) = re.findall(r"^```python\n(.*?)^```", after, flags=re.S | re.M)
    return block


def align_elsewhere(folder: Path, base_config: Path, *, logged: bool) -> str:
    """What an alignment outside assay leaves: the judge's DSPy program with new instructions,
    saved as JSON (``align()`` itself needs an LLM optimizer to propose them), and, when
    ``logged``, that file logged to an MLflow run: the reference a config names it by."""
    import mlflow

    from assay.inputs import load_config
    from assay.programs import build_judge, save_program

    config, _ = load_config(base_config)
    program = build_judge(config.judge)
    for predictor in program.predictors():
        predictor.signature = predictor.signature.with_instructions(
            "Aligned with the labels: a response that names a colour is good."
        )
    state = folder / "aligned" / "program.json"
    state.parent.mkdir()
    save_program(program, state)
    if not logged:
        return str(state)
    client = mlflow.MlflowClient(tracking_uri=os.environ["MLFLOW_TRACKING_URI"])
    run = client.create_run(client.create_experiment("alignment")).info.run_id
    client.log_artifact(run, str(state))
    client.set_terminated(run)
    return f"runs:/{run}/program.json"


@pytest.mark.parametrize("logged", [False, True], ids=["state-file", "runs-uri"])
def test_a_judge_tuned_elsewhere_is_recorded_by_hand_and_measured_on_held_out_items_only(
    tmp_path, monkeypatch, capsys, logged
):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # where runs:/ states land
    tuning = items_csv(tmp_path / "alignment-traces.csv", range(20))
    held = items_csv(tmp_path / "held.csv", range(200, 240))
    with StubServer(respond=oracle) as stub:
        url = stub.base_url
        before = stub_config(tmp_path, held, url, name="held-before", file="before.yaml")
        state = align_elsewhere(tmp_path, before, logged=logged)
        stub_config(
            tmp_path,
            held,
            url,
            name="held-after",
            file="aligned.yaml",
            judge={"program_state": state},
        )
        stub_config(tmp_path, tuning, url, name="traces", file="alignment-traces.yaml")
        exec(tuned_elsewhere_snippet(), {})  # noqa: S102 — the page's code, run as written

        (path,) = (tmp_path / "runs" / "certificates" / "tuning").glob("*/tuning.json")
        from assay.decisions import TuningRecord

        record = TuningRecord.model_validate_json(path.read_text())
        assert record.source == "mlflow align (SIMBA)"
        assert sorted(record.items) == sorted(f"i{k}" for k in range(20))
        assert record.program_state_uris == ([state] if logged else [])
        assert record.program_state_digest is not None  # the bytes, downloaded when logged

        # before and after on held-out items: compared and certified like any judge
        for config in ("before.yaml", "aligned.yaml"):
            assert main(["evaluate", config, "--quiet"]) == 0
        (run_before,) = (tmp_path / "runs").glob("held-before-*")
        (run_after,) = (tmp_path / "runs").glob("held-after-*")
        capsys.readouterr()
        assert main(["compare", "--paired", str(run_before), str(run_after), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["n_paired"] == 40
        policy = tmp_path / "lax.json"
        policy.write_text(json.dumps(LAX))
        assert main(["certify", str(run_after), "--policy", str(policy)]) == 0

        # three tuning items among held-out ones, renamed and respelled (case, spaces): refused,
        # for the state as recorded and for a copy of its bytes elsewhere
        seen = {3, 8, 15}
        mixed = items_csv(
            tmp_path / "mixed.csv",
            [*seen, *range(300, 317)],
            ids="renamed-",
            text=lambda k: f"  ITEM {k}   is BLUE. " if k in seen else f"Item {k} is blue.",
        )
        copy = tmp_path / "elsewhere" / "program.json"
        copy.parent.mkdir()
        local = state if not logged else next((tmp_path / "cache").rglob("program.json"))
        copy.write_bytes(Path(local).read_bytes())
        mixed_before = evaluate(tmp_path, "mixed-before", mixed, url)
        for name, ref in (("mixed-after", state), ("mixed-copy", str(copy))):
            run = evaluate(tmp_path, name, mixed, url, program_state=ref)
            err = refusal(capsys, ["certify", str(run), "--policy", str(policy)])
            assert "certify: 3 of these 20 items reached the tuning of judge 'stub-judge'" in err
            assert "(mlflow align (SIMBA), mlflow experiment 12" in err
            assert "0 by id, 3 by normalised text" in err
            err = refusal(capsys, ["compare", "--paired", str(mixed_before), str(run)])
            assert "compare --paired: 3 of these 20 items reached the tuning" in err
