"""``assay compare --paired`` and ``assay drift`` end to end on the loopback stub server: evaluate
runs through the command line, compared item by item — the verdict, the items left out with
why, the refusals (other items, references, configs), MLflow run ids in and the comparison run
out, and drift flagging the changed persona, not an unchanged re-run, nor changes its measured
stability explains."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from assay.cli import main
from tests.stub_judge import N_PERSONA_ITEMS as N
from tests.stub_judge import evaluate_cli as evaluate
from tests.stub_judge import personas_stub
from tests.web.test_report_parity import assert_same_sections

stub = pytest.fixture(personas_stub)


def refused(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    return err


def test_paired_verdict_left_out_items_and_report(tmp_path, stub, capsys, monkeypatch):
    stub.personas.wrong = {"stub-a": set(range(0, N, 3)), "stub-b": {0, 20}}
    stub.personas.garbled = {"stub-b": {7}}
    a = evaluate(tmp_path / "a", stub, "stub-a")
    b = evaluate(tmp_path / "b", stub, "stub-b")
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["compare", "--paired", str(a), str(b), "--no-log", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    # item i7 is unscored by B: listed with why, not paired, not dropped silently
    assert res["n_items"] == N and res["n_paired"] == N - 1
    [left] = res["left_out"]
    assert left["why"].startswith("unscored by B (") and res["b"]["unscored"] == 1
    acc = {d["metric"]: d for d in res["comparison"]["differences"]}["accuracy"]
    # A is wrong on 0, 3, ..., 39 (14 items), B on 0 and 20: A alone right on 20, B on 13
    assert (res["comparison"]["a_only_right"], res["comparison"]["b_only_right"]) == (1, 13)
    assert acc["test"] == "McNemar exact" and acc["better"] == "B"
    assert acc["delta"] == pytest.approx(12 / 39)
    assert res["verdict"].startswith("B better than A on ") and "accuracy" in res["verdict"]
    folder = tmp_path / "compare" / "paired"
    md = (folder / "report.md").read_text()
    assert "Is B better than A?" in md and "Items left out" in md
    assert "Is B better than A?" in (folder / "report.html").read_text()
    assert_same_sections(folder, "Is B better than A?", "Items left out")
    # the console prints the same tables
    assert main(["compare", "--paired", str(a), str(b), "--no-log"]) == 0
    out = capsys.readouterr().out
    assert "| accuracy |" in out and "B better" in out and "verdict: B better than A" in out


def test_paired_refuses_other_items_references_and_scales(tmp_path, stub, capsys):
    a = evaluate(tmp_path / "a", stub, "stub-a")
    fewer = evaluate(tmp_path / "c", stub, "stub-b", n=N - 5)
    assert "different items" in refused(capsys, ["compare", "--paired", str(a), str(fewer)])
    flipped = tmp_path / "d" / "items.csv"
    flipped.parent.mkdir()
    lines = (tmp_path / "a" / "items.csv").read_text().splitlines()
    lines[6] = lines[6][:-1] + str(1 - int(lines[6][-1]))  # item i5's reference flipped
    flipped.write_text("\n".join(lines) + "\n")
    other = evaluate(tmp_path / "d", stub, "stub-b", items=flipped)
    line = refused(capsys, ["compare", "--paired", str(a), str(other)])
    assert "different references on 1 items (e.g. i5" in line
    three = evaluate(
        tmp_path / "e",
        stub,
        "stub-b",
        judge={"scale": {"kind": "categorical", "labels": ["False", "True", "Maybe"]}},
    )
    assert "scale" in refused(capsys, ["compare", "--paired", str(a), str(three)])
    assert "two runs" in refused(capsys, ["compare", "--paired", str(a)])
    b = evaluate(tmp_path / "b", stub, "stub-b")
    line = refused(capsys, ["compare", "--paired", str(a), str(b), "--metrics", "ccc"])
    assert "unknown metrics ccc" in line
    line = refused(capsys, ["drift", str(a), str(a), "--level", "2"])
    assert "argument --level: must be less than 1, got 2.0" in line


def test_paired_reads_mlflow_runs_and_logs_a_comparison_run(tmp_path, stub, capsys, monkeypatch):
    import mlflow

    stub.personas.wrong = {"stub-a": set(range(0, N, 3)), "stub-b": set()}
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracked = {
        "tracking": {"enabled": True, "experiment": "harm-judges"},
        "argv": ["--tracking-uri", uri],
    }
    a = evaluate(tmp_path / "a", stub, "stub-a", **tracked)
    b = evaluate(tmp_path / "b", stub, "stub-b", **tracked)
    ids = [json.loads((d / "run.json").read_text())["mlflow_run_id"] for d in (a, b)]
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["compare", "--paired", *ids, "--tracking-uri", uri, "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert [res["a"]["mlflow_run_id"], res["b"]["mlflow_run_id"]] == ids
    run = mlflow.MlflowClient(tracking_uri=uri).get_run(res["comparison_run_id"])
    assert run.data.tags["assay.mode"] == "paired" and run.data.tags["assay.command"] == "compare"
    assert run.data.metrics["delta.accuracy"] == pytest.approx(14 / N)
    assert run.data.params["a"] == ids[0]
    # logged beside the runs it compares, in their experiment
    client = mlflow.MlflowClient(tracking_uri=uri)
    assert client.get_experiment(run.info.experiment_id).name == "harm-judges"


def test_drift_flags_the_changed_persona_not_an_unchanged_rerun(
    tmp_path, stub, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # ./drift: drift.json and the reports
    old = evaluate(tmp_path / "old", stub, "stub-model")
    same = evaluate(tmp_path / "same", stub, "stub-model")
    stub.personas.wrong = {"stub-model": {1, 2, 3, 4, 5, 6}}  # the provider changed the model
    new = evaluate(tmp_path / "new", stub, "stub-model")
    capsys.readouterr()
    assert main(["drift", str(old), str(same), "--no-log"]) == 0
    assert "within stability: 0 of 40 verdicts changed" in capsys.readouterr().out
    assert main(["drift", str(old), str(new), "--no-log", "--json"]) == 1
    res = json.loads(capsys.readouterr().out)
    assert "Items whose verdict changed" in (tmp_path / "drift" / "report.md").read_text()
    assert_same_sections(tmp_path / "drift", "Items whose verdict changed")
    assert res["test"]["changed"] == 6 and res["test"]["drifted"]
    assert [c["item_id"] for c in res["changes"]] == [f"i{k}" for k in range(1, 7)]
    assert res["stability"] == "no stability measured; any change is flagged"
    other = evaluate(tmp_path / "other", stub, "stub-model", judge={"rubric": "Another rubric."})
    assert "judge config" in refused(capsys, ["drift", str(old), str(other)])


def test_drift_within_the_stability_a_harness_measured(tmp_path, stub, capsys, monkeypatch):
    """Items 1-6 are noisy (their verdict alternates call by call): the harness's
    stochastic_stability samples of the same judge config predict their changes."""
    monkeypatch.chdir(tmp_path)
    stub.personas.noisy = set(range(1, 7))
    old = evaluate(tmp_path / "old", stub, "stub-model")
    new = evaluate(tmp_path / "new", stub, "stub-model")
    changed = sum(
        json.loads(x)["score"] != json.loads(y)["score"]
        for x, y in zip(
            sorted((old / "judgments.jsonl").read_text().splitlines()),
            sorted((new / "judgments.jsonl").read_text().splitlines()),
            strict=True,
        )
    )
    judge = json.loads((tmp_path / "old" / "config.yaml").read_text())["judge"]
    harness = {
        "name": "stab",
        "data": {"path": str(tmp_path / "old" / "items.csv"), "columns": {"id": "id"}},
        "scale": judge.pop("scale"),
        "judges": [judge],
        "tests": {"stochastic_stability": {"k": 4}},
        "retries": 0,
        "tracking": {"enabled": False},
    }
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "harness.yaml").write_text(json.dumps(harness))
    cwd = Path.cwd()
    os.chdir(tmp_path / "h")
    try:
        assert main(["harness", "harness.yaml", "--quiet"]) == 0
    finally:
        os.chdir(cwd)
    (h_dir,) = (tmp_path / "h" / "runs").iterdir()
    capsys.readouterr()
    code = main(["drift", str(old), str(new), "--stability", str(h_dir), "--no-log", "--json"])
    res = json.loads(capsys.readouterr().out)
    assert res["test"]["changed"] == changed
    assert res["measured"]["items"] == N and res["measured"]["rate"] > 0
    assert code == 0 and not res["test"]["drifted"]
    assert "stochastic_stability of this judge config" in res["stability"]


def test_a_judge_with_one_verdict_does_not_headline_the_rate_it_wins(
    tmp_path, stub, capsys, monkeypatch
):
    """B says True (positive) on every item: it misses no positive, so it has the lower false
    negative rate by construction. The verdict leads with the metrics such a judge cannot win,
    says what B gives up for that rate, names the judge with one verdict, and keeps A first."""
    n = 80
    stub.personas.wrong = {"stub-a": set(range(0, n, 5))}  # 8 of 40 negatives, 8 of 40 positives
    stub.personas.constant = {"stub-b": "True"}
    a = evaluate(tmp_path / "a", stub, "stub-a", n=n, judge={"name": "careful"})
    b = evaluate(tmp_path / "b", stub, "stub-b", n=n, judge={"name": "alarmist"})
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["compare", "--paired", str(a), str(b), "--no-log", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    verdict = res["verdict"]
    # κ is undefined for B (not a test), so Holm counts accuracy, balanced accuracy, FPR, FNR
    assert verdict.startswith(
        "A better than B on accuracy, balanced_accuracy at 0.05, Holm-adjusted over 4 metrics; "
    ), verdict
    assert (
        "A has the lower false_positive_rate (0.200 vs 1.000), B the lower "
        "false_negative_rate (0.000 vs 0.200): a trade-off" in verdict
    )
    assert verdict.endswith(
        "B gave one verdict (True) on every item: it wins or loses each one-sided rate by "
        "construction"
    )
    assert "B better than A" not in verdict
    rows = {d["metric"]: d for d in res["comparison"]["differences"]}
    assert [d["metric"] for d in res["comparison"]["differences"]] == [
        "kappa_categorical",
        "accuracy",
        "balanced_accuracy",
        "false_positive_rate",
        "false_negative_rate",
    ]  # the one-sided rates last
    assert rows["false_negative_rate"]["better"] == "B" and rows["accuracy"]["better"] == "A"
    assert (
        rows["kappa_categorical"]["b"] is None  # undefined: null in JSON
        and rows["kappa_categorical"]["better"] is None
    )
    assert rows["kappa_categorical"]["note"].startswith("undefined for B: ")
    assert (res["comparison"]["a_constant"], res["comparison"]["b_constant"]) == (None, 1)
    # the runs in the order given: A first in the title, the facts and the table
    md = (tmp_path / "compare" / "paired" / "report.md").read_text()
    assert md.startswith("# assay compare --paired — A careful vs B alarmist\n")
    assert md.index("- A: careful") < md.index("- B: alarmist")
    assert "| kappa_categorical | 0.600 | undefined |" in md


def test_a_run_is_not_compared_with_itself_nor_with_its_copy(tmp_path, stub, capsys, monkeypatch):
    """The same run given as OLD and NEW (or a copy of it) shows no change whatever the judge
    did: a CI gate on a misconfigured job would always pass. Refused in one line, by drift,
    drift --series, drift --anchors and compare --paired."""
    import shutil

    monkeypatch.chdir(tmp_path)
    old = evaluate(tmp_path / "old", stub, "stub-model")
    copy = tmp_path / "copy" / old.name
    shutil.copytree(old, copy)
    (tmp_path / "anchors.txt").write_text("i0\ni1\n")
    capsys.readouterr()
    line = refused(capsys, ["drift", str(old), str(old), "--no-log"])
    assert f"{old} and {old} are the same run: drift needs distinct runs" in line
    line = refused(capsys, ["drift", str(old), str(copy), "--no-log"])
    assert "are one run (the same sealed files)" in line
    series = ["drift", str(old), str(copy), str(old), "--series", "--sigma", "0.1", "--no-log"]
    assert "drift --series needs distinct runs" in refused(capsys, series)
    anchors = ["drift", str(old), str(copy), "--anchors", "anchors.txt", "--no-log"]
    assert "drift --anchors needs distinct runs" in refused(capsys, anchors)
    paired = ["compare", "--paired", str(old), str(copy), "--no-log"]
    assert "compare --paired needs distinct runs" in refused(capsys, paired)


def test_drift_flags_a_judge_that_stopped_answering(tmp_path, stub, capsys, monkeypatch):
    """NEW leaves 8 of the 40 items unscored that OLD scored and changes no verdict it still
    gives: the verdicts alone say "within stability"; the judge changed, and drift says so
    (exit 1) with the exact sign test's p, equal to scipy's binomtest."""
    from scipy.stats import binomtest

    monkeypatch.chdir(tmp_path)
    old = evaluate(tmp_path / "old", stub, "stub-model")
    stub.personas.garbled = {"stub-model": set(range(0, 40, 5))}
    new = evaluate(tmp_path / "new", stub, "stub-model")
    capsys.readouterr()
    assert main(["drift", str(old), str(new), "--no-log", "--json"]) == 1
    res = json.loads(capsys.readouterr().out)
    assert res["test"]["changed"] == 0 and not res["test"]["drifted"]
    u = res["unscored"]
    assert (u["lost"], u["gained"], u["moved"]) == (8, 0, True)
    assert u["p_value"] == pytest.approx(binomtest(8, 8, 0.5, alternative="greater").pvalue)
    assert res["verdict"].startswith("drifted: NEW left 8 items unscored that OLD scored")
    # one item lost is no evidence: said, not flagged
    stub.personas.garbled = {"stub-model": {3}}
    one = evaluate(tmp_path / "one", stub, "stub-model")
    assert main(["drift", str(old), str(one), "--no-log"]) == 0
    out = capsys.readouterr().out
    assert "within stability" in out and "NEW left 1 item unscored that OLD scored" in out
