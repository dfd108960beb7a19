"""``assay selective calibrate`` then ``apply`` on the loopback stub: two
personas — a cheap judge, sure and right on two items in three and unsure and wrong on the third,
and a strong one, sure and right except on the apply items it was never calibrated on past
``item 108`` — with the verdict's probability as confidence. Counts are checked, and the stub's
requests show that escalated items were judged by the strong judge only."""

from __future__ import annotations

import io
import json
import re
import shutil
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from assay.cli import main
from assay.lm import StubServer
from tests.web.test_report_parity import assert_same_sections

SCALE = {"kind": "binary", "labels": ["False", "True"]}


def number(request: dict) -> int:
    return int(re.search(r"item (\d+)", request["messages"][-1]["content"]).group(1))


def persona(request: dict) -> tuple[str, float]:
    """The cheap persona is right with P = 0.95 on items k % 3 ≠ 0, wrong with P = 0.55 on
    the rest; the strong one right with P = 0.9, except unsure (0.6) on items ≥ 108."""
    k = number(request)
    truth = k % 2
    if request["model"] == "stub-cheap":
        verdict, p = (truth, 0.95) if k % 3 else (1 - truth, 0.55)
    else:
        verdict, p = (truth, 0.6 if k >= 108 else 0.9)
    return ["False", "True"][verdict], p


def respond(request: dict) -> str:
    return json.dumps({"verdict": persona(request)[0]})


def verdict_probs(request: dict) -> dict[str, float]:
    label, p = persona(request)
    return {label: p, ("True" if label == "False" else "False"): 1 - p}


def write_csv(path: Path, ks: range) -> Path:
    rows = ["id,request,response,expected"]
    rows += [f"i{k},What colour is item {k}?,Item {k} is blue.,{k % 2}" for k in ks]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def write_config(folder: Path, api_base: str, **extra: object) -> Path:
    judge = {"api_base": api_base, "scale": SCALE, "rubric": "A good response names a colour."}
    confidence = {"source": "probability"}
    config = {
        "name": "cascade",
        "data": {
            "path": str(write_csv(folder / "labelled.csv", range(60))),
            "columns": {"id": "id"},
        },
        "unlabelled": {
            "path": str(write_csv(folder / "new.csv", range(100, 112))),
            "columns": {"id": "id", "expected": None},
        },
        "judges": [
            {**judge, "name": "cheap", "model": "openai/stub-cheap", "confidence": confidence},
            {**judge, "name": "strong", "model": "openai/stub-strong", "confidence": confidence},
        ],
        "alpha": 0.2,
        "delta": 0.2,
        "holdout": 0.25,
        "concurrency": 4,
        "tracking": {"enabled": False},
        **extra,
    }
    path = folder / "selective.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def cli_json(argv: list[str]) -> dict:
    """What a command prints with ``--json`` (its progress quiet), as a dict."""
    out = io.StringIO()
    with redirect_stdout(out):
        assert main([*argv, "--quiet", "--json"]) == 0
    return json.loads(out.getvalue().strip().splitlines()[-1])


def finished_cascade(folder: Path) -> tuple[list[str], Path]:
    """(the apply command line, its run directory) of the stub cascade, calibrated and applied
    in ``folder`` (abstaining on i108 and i111)."""
    with (
        pytest.MonkeyPatch.context() as mp,
        StubServer(respond=respond, verdict_probs=verdict_probs) as stub,
    ):
        mp.chdir(folder)
        cfg = str(write_config(folder, stub.base_url))
        calibration = (
            Path(cli_json(["selective", "calibrate", cfg])["run_dir"]) / "calibration.json"
        )
        apply = ["selective", "apply", cfg, "--calibration", str(calibration)]
        out = cli_json(apply)
    assert (out["parts"][0]["abstained"], out["human_verdicts"]) == (2, 0)
    return apply, Path(out["run_dir"])


def asked(stub: StubServer, model: str) -> list[int]:
    return sorted(number(r) for r in stub.requests if r["model"] == model)


def test_calibrate_then_apply_keeps_escalates_and_abstains(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with StubServer(respond=respond, verdict_probs=verdict_probs) as stub:
        cfg = write_config(tmp_path, stub.base_url)
        assert main(["selective", "calibrate", str(cfg), "--quiet", "--json"]) == 0
        out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        cheap, strong = out["thresholds"]
        assert (cheap["threshold"], strong["threshold"]) == (
            pytest.approx(0.95),
            pytest.approx(0.9),
        )
        assert cheap["delta"] == strong["delta"] == pytest.approx(0.1)  # δ/2 per stage
        cal, hold = out["parts"]
        assert (cal["items"], hold["items"]) == (45, 15)
        for part in (cal, hold):  # the cheap judge keeps what it is sure of, the strong the rest
            n_unsure = part["stages"][0]["escalated"]
            assert part["stages"][1]["reached"] == part["stages"][1]["kept"] == n_unsure
            assert (part["abstained"], part["agreement_kept"]) == (0, 1.0)
            # the exact interval is over the kept items with a reference, and says that n
            from scipy.stats import beta

            n = part["labelled_kept"]
            assert n == part["kept"] and part["agreement_ci"][0] == pytest.approx(
                beta.ppf(0.025, n, 1)
            )
        assert main(["selective", "calibrate", str(cfg), "--quiet"]) == 0
        printed = capsys.readouterr().out
        assert f"(exact 95%; {cal['kept']} of {cal['kept']} kept items with a reference;" in printed
        assert asked(stub, "stub-cheap") == list(range(60))
        assert asked(stub, "stub-strong") == [k for k in range(60) if k % 3 == 0]
        run_dir = Path(out["run_dir"])
        calibration = run_dir / "calibration.json"
        assert json.loads(calibration.read_text())["stages"][0]["judge"] == "cheap"
        assert "agreement with humans ≥ 0.8 on kept items" in (run_dir / "report.md").read_text()
        assert_same_sections(run_dir)

        stub.reset()
        code = main(
            ["selective", "apply", str(cfg), "--calibration", str(calibration), "--quiet", "--json"]
        )
        assert code == 0
        out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        (part,) = out["parts"]
        assert [(s["reached"], s["kept"], s["escalated"]) for s in part["stages"]] == [
            (12, 8, 4),
            (4, 2, 2),
        ]
        assert (part["kept"], part["abstained"], part["agreement_kept"]) == (10, 2, None)
        assert asked(stub, "stub-cheap") == list(range(100, 112))
        assert asked(stub, "stub-strong") == [102, 105, 108, 111]  # the escalated, only
        abstained = (Path(out["run_dir"]) / "abstained.jsonl").read_text().splitlines()
        assert [json.loads(line)["item_id"] for line in abstained] == ["i108", "i111"]
        assert json.loads(abstained[0])["stages"][1]["confidence"] == pytest.approx(0.6)

        stub.reset()  # finished: re-read, no LM call
        assert main(["selective", "apply", str(cfg), "--calibration", str(calibration)]) == 0
        assert stub.n_requests == 0


DEAR = {"input_per_mtok": 1000.0, "output_per_mtok": 1000.0}
CHEAP = {"input_per_mtok": 1.0, "output_per_mtok": 2.0}


def test_calibrate_and_apply_at_another_price_cost_the_cascade_at_that_price(
    tmp_path, monkeypatch, capsys
):
    """The cascade's judges priced dear, then cheap: calibrate and apply each judge again from
    the LM cache (no call) and cost the work at the cheap price — not the dear runs' costs read
    back. A price is no part of a stage's config hash: a calibration made at one price applies
    at another. The same price again re-reads, no call."""
    monkeypatch.chdir(tmp_path)
    with StubServer(respond=respond, verdict_probs=verdict_probs) as stub:

        def config(price: dict[str, float]) -> str:
            path = write_config(tmp_path, stub.base_url)
            raw = json.loads(path.read_text())
            for judge in raw["judges"]:
                judge["price"] = price
            path.write_text(json.dumps(raw))
            return str(path)

        def at(price: dict[str, float], responses: list[dict]) -> float:
            p = sum(r["usage"]["prompt_tokens"] for r in responses)
            c = sum(r["usage"]["completion_tokens"] for r in responses)
            return (p * price["input_per_mtok"] + c * price["output_per_mtok"]) / 1e6

        dear = cli_json(["selective", "calibrate", config(DEAR)])
        calibrated = list(stub.responses)
        assert dear["work"]["cost_usd"] == pytest.approx(at(DEAR, calibrated), rel=1e-9)
        cheap = cli_json(["selective", "calibrate", config(CHEAP)])
        assert stub.n_requests == len(calibrated)  # from the LM cache
        assert cheap["work"]["cost_usd"] == pytest.approx(at(CHEAP, calibrated), rel=1e-9)
        assert cheap["usage"]["calls"] == 0 and cheap["thresholds"] == dear["thresholds"]

        calibration = str(Path(dear["run_dir"]) / "calibration.json")
        applied = cli_json(["selective", "apply", config(DEAR), "--calibration", calibration])
        served = stub.responses[len(calibrated) :]
        assert applied["work"]["cost_usd"] == pytest.approx(at(DEAR, served), rel=1e-9)
        again = ["selective", "apply", config(CHEAP), "--calibration", calibration]
        cheap_apply = cli_json(again)
        assert stub.n_requests == len(calibrated) + len(served)
        assert cheap_apply["work"]["cost_usd"] == pytest.approx(at(CHEAP, served), rel=1e-9)
        capsys.readouterr()
        assert main(again) == 0  # unchanged: re-read, no call
        assert f"${at(CHEAP, served):.6f}" in capsys.readouterr().out
        assert stub.n_requests == len(calibrated) + len(served)


def test_apply_refuses_a_calibration_of_another_judge_config(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with StubServer(respond=respond, verdict_probs=verdict_probs) as stub:
        cfg = write_config(tmp_path, stub.base_url)
        main(["selective", "calibrate", str(cfg), "--quiet", "--json"])
        run_dir = Path(json.loads(capsys.readouterr().out.strip().splitlines()[-1])["run_dir"])
        changed = write_config(tmp_path, stub.base_url, alpha=0.2)
        raw = json.loads(changed.read_text())
        raw["judges"][1]["max_tokens"] = 100
        changed.write_text(json.dumps(raw))
        assert main(["selective", "apply", str(changed), "--calibration", str(run_dir)]) != 0
    err = capsys.readouterr().err
    assert "stage strong was calibrated for judge config" in err and "calibrate again" in err


def test_apply_refuses_an_edited_calibration_or_calibrate_run(tmp_path, monkeypatch, capsys):
    """``apply`` obeys a threshold only as its calibrate run, in this folder's runs, signed
    and sealed it: calibration.json with a lowered threshold (the printed guarantee would be a
    lie), a stage's judgments edited in the calibrate run, or a calibration whose run is in
    another folder's runs — each refused in one line before any request."""
    monkeypatch.chdir(tmp_path)
    with StubServer(respond=respond, verdict_probs=verdict_probs) as stub:
        cfg = write_config(tmp_path, stub.base_url)
        run_dir = Path(cli_json(["selective", "calibrate", str(cfg)])["run_dir"])
        calibration = run_dir / "calibration.json"
        original = calibration.read_text()
        stub.reset()

        def refused(path: Path) -> str:
            argv = ["selective", "apply", str(cfg), "--calibration", str(path)]
            assert main([*argv, "--quiet"]) == 2
            err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
            assert len(err) == 1, err
            return err[0]

        edited = json.loads(original)
        edited["stages"][0]["threshold"] = 0.5  # keep more of the cheap judge's verdicts
        calibration.write_text(json.dumps(edited))
        assert "the calibration does not match its signature" in refused(calibration)
        copy = tmp_path / "copy.json"
        copy.write_text(json.dumps(edited | {"signature": ""}))
        assert "the calibration is not signed" in refused(copy)
        calibration.write_text(original)
        # a stage's verdicts in the calibrate run edited since it finished
        stage = run_dir / "judgments.cheap.jsonl"
        judged = stage.read_text()
        surer = judged.replace('"confidence":0.55', '"confidence":0.95')
        assert surer != judged
        stage.write_text(surer)
        assert "judgments.cheap.jsonl is not the file the run sealed" in refused(calibration)
        stage.write_text(judged)
        # the genuine calibration, its run in another folder's runs
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        shutil.copy(calibration, elsewhere / "calibration.json")
        shutil.move(run_dir, elsewhere / run_dir.name)
        assert "is not in this folder's runs" in refused(elsewhere / "calibration.json")
        assert stub.n_requests == 0
        shutil.move(elsewhere / run_dir.name, run_dir)  # back: the calibration applies
        assert cli_json(["selective", "apply", str(cfg), "--calibration", str(calibration)])


def test_certify_refuses_a_stage_judge_on_the_items_its_threshold_was_fitted_on(
    tmp_path, monkeypatch, capsys
):
    """``selective calibrate`` fits each stage's threshold on the calibration part's labels: a
    tuning, recorded in the runs folder's ledger as ``assay calibrate`` records its fit. An
    evaluate run of a stage's judge config (with its ``confidence``: the judge deciding by the
    selective rule) on the labelled items is refused by ``certify`` on the 45 calibration items
    (the 15 held out were not fitted on); the judge without a confidence was not tuned."""
    monkeypatch.chdir(tmp_path)
    lax = {"name": "lax", "confidence": 0.9, "bars": {"accuracy": 0.5}}
    policy = tmp_path / "lax.json"
    policy.write_text(json.dumps(lax), encoding="utf-8")
    with StubServer(respond=respond, verdict_probs=verdict_probs) as stub:
        raw = json.loads(write_config(tmp_path, stub.base_url).read_text())
        out = cli_json(["selective", "calibrate", str(tmp_path / "selective.yaml")])
        fitted = out["parts"][0]["items"]
        cheap = raw["judges"][0]

        def evaluated(name: str, judge: dict) -> str:
            config = {
                "name": name,
                "data": raw["data"],
                "judge": judge,
                "tracking": raw["tracking"],
            }
            path = tmp_path / f"{name}.yaml"
            path.write_text(json.dumps(config), encoding="utf-8")
            assert main(["evaluate", str(path), "--quiet"]) == 0
            (run_dir,) = (tmp_path / "runs").glob(f"{name}-*")
            return str(run_dir)

        staged = evaluated("staged", cheap)
        plain = evaluated("plain", {k: v for k, v in cheap.items() if k != "confidence"})
    capsys.readouterr()
    assert main(["certify", staged, "--policy", str(policy)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert f"certify: {fitted} of these 60 items reached the tuning of judge 'cheap'" in err
    assert "(assay selective calibrate," in err
    assert not list((tmp_path / "runs" / "certificates").glob("*/certificate.json"))
    assert main(["certify", plain, "--policy", str(policy)]) in (0, 1)
    assert "reached the tuning" not in capsys.readouterr().err
    records = list((tmp_path / "runs" / "certificates" / "tuning").glob("*/tuning.json"))
    assert len(records) == 2  # one a stage


def test_mlflow_names_the_stages_as_the_reports_do(tmp_path, monkeypatch):
    """The cascade's judge params in MLflow are stage1.* and stage2.*, as report.md counts its
    stages (they were stage0.* and stage1.*: a stage 1 that was the reports' stage 2)."""
    import mlflow

    monkeypatch.chdir(tmp_path)
    with StubServer(respond=respond, verdict_probs=verdict_probs) as stub:
        cfg = write_config(tmp_path, stub.base_url, tracking={"enabled": True})
        out = cli_json(["selective", "calibrate", str(cfg)])
    params = (
        mlflow.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
        .get_run(out["mlflow_run_id"])
        .data.params
    )
    assert (params["stage1.judge.model"], params["stage2.judge.model"]) == (
        "openai/stub-cheap",
        "openai/stub-strong",
    )
    assert not any(k.startswith("stage0.") for k in params)
