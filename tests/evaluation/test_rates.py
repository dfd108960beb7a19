"""Rates over their own denominators with exact intervals, and a judge with one verdict said so:
an evaluate run of a judge that says True on every item (the loopback stub) and a harness run of
a judge whose verdict never moves (the scripted LM), through the command line; the counts are
checked against scikit-learn's confusion matrix and the intervals against scipy and
statsmodels."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import scipy.stats
import yaml
from sklearn.metrics import confusion_matrix

from assay.cli import main
from tests.stub_judge import evaluate_cli, personas_stub

stub = pytest.fixture(personas_stub)


def exact(count: int, n: int) -> tuple[float, float]:
    ci = scipy.stats.binomtest(count, n).proportion_ci(0.95, method="exact")
    return ci.low, ci.high


def test_a_judge_with_one_verdict_gets_honest_rates_and_no_kappa(
    tmp_path, stub, capsys, monkeypatch
):
    import mlflow

    stub.personas.constant = {"stub-alarm": "True"}
    run = evaluate_cli(tmp_path, stub, "stub-alarm", n=150, tracking={"enabled": True})
    out = capsys.readouterr().out
    m = json.loads((run / "metrics.json").read_text())["metrics"]

    # denominators and numerators as scikit-learn's confusion matrix counts them
    with (tmp_path / "items.csv").open() as f:
        expected = {r["id"]: int(r["expected"]) for r in csv.DictReader(f)}
    judged = [json.loads(x) for x in (run / "judgments.jsonl").read_text().splitlines()]
    ref = [expected[j["item_id"]] for j in judged]
    (tn, fp), (fn, tp) = confusion_matrix(ref, [j["score"] for j in judged], labels=[0, 1])
    assert (tn, fp, fn, tp) == (0, 75, 0, 75)
    counts = {
        "accuracy": (tp + tn, 150),
        "error_rate": (fp + fn, 150),
        "false_positive_rate": (fp, fp + tn),
        "false_negative_rate": (fn, fn + tp),
    }
    for name, (count, n) in counts.items():
        assert (m[name]["count"], m[name]["n"]) == (count, n), name
        assert (m[name]["ci_low"], m[name]["ci_high"]) == pytest.approx(exact(count, n), abs=1e-12)
        assert m[name]["ci_method"] == "Clopper–Pearson"
    fpr = m["false_positive_rate"]
    assert fpr["value"] == 1.0 and fpr["ci_low"] == pytest.approx(0.952, abs=5e-4)  # not [1, 1]
    assert fpr["note"].startswith("the judge gave one verdict (True) on every item")
    # κ is 0 by its formula here but measures nothing: undefined, null in metrics.json
    kappa = m["kappa_categorical"]
    assert kappa["value"] is None and kappa["ci_low"] is None and kappa["ci_high"] is None
    assert kappa["note"].startswith("undefined: the reference or the judge put every item in one")

    said = "The judge gave one verdict (True) on all 150 scored items"
    assert f"note: {said}" in out
    # the console's n column is the denominator, the CI method named
    assert "| false_positive_rate | 1.000 | [0.952, 1.000] | Clopper–Pearson | 75 | 75 |" in out
    assert "| kappa_categorical | undefined | — |  |  | 150 |" in out
    for report in ("report.md", "report.html"):
        text = (run / report).read_text()
        assert said in text and "Clopper–Pearson" in text, report

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    (logged,) = client.search_runs(client.search_experiments()[0].experiment_id)
    metrics = logged.data.metrics
    assert (metrics["false_positive_rate_count"], metrics["false_positive_rate_n"]) == (75, 75)
    assert "kappa_categorical" not in metrics  # undefined: not logged as a number


def test_a_harness_rate_with_one_outcome_is_not_shown_as_certain(tmp_path, capsys, monkeypatch):
    """A judge whose verdict ignores the response keeps its source verdict on each of its k
    samples: its consistency is 1 on every sample, where a bootstrap over source items has no
    width. The interval is the exact one over the source items instead, named and marked."""
    from assay.lm import ScriptedEngine, register_script
    from assay.reliability.selftest._selftest import judge_responder, write_data

    register_script("rates-blind", lambda: ScriptedEngine(respond=judge_responder("label_blind")))
    config = {
        "name": "blind",
        "data": {"path": str(write_data(tmp_path / "data", n=8))},
        "scale": {"kind": "binary", "labels": ["incorrect", "correct"]},
        "judges": [{"name": "blind", "model": "scripted:rates-blind", "rubric": "the sum"}],
        "tests": {"stochastic_stability": {"k": 3}},
        "retries": 0,
        "tracking": {"enabled": False},
    }
    (tmp_path / "h.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.chdir(tmp_path)
    assert main(["harness", "h.yaml", "--quiet"]) == 0
    out = capsys.readouterr().out
    (run,) = (tmp_path / "runs").iterdir()
    test = json.loads((run / "metrics.json").read_text())["judges"]["blind"]["tests"]
    consistency = test["stochastic_stability"]["consistency"]
    assert test["stochastic_stability"]["judged"] == 24
    assert (consistency["value"], consistency["count"], consistency["n"]) == (1.0, 24, 24)
    # all 8 source items: the exact interval of 8 of 8, not [1, 1]
    assert (consistency["ci_low"], consistency["ci_high"]) == pytest.approx(exact(8, 8))
    assert consistency["ci_method"] == "Clopper–Pearson over clusters"
    assert "over the 8 clusters (source items)" in consistency["note"]
    assert f"1.00 [{exact(8, 8)[0]:.2f}, 1.00] †" in out
    assert "(marked †)" in Path(run / "report.md").read_text()
