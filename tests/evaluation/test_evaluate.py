"""evaluate end to end with the scripted LM: exact metrics, unscored handling, no repeated calls."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import dspy
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from assay._files import sha256_file
from assay.evaluation import evaluate
from assay.inputs import load_config
from assay.lm import ScriptedEngine

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "evaluate"
EXPECTED = [1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 0]
SAYS = [1, 1, 1, 0, 1, 0, 0, 1, 0, 0, 1, 0]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURE, tmp_path / "cfg")
    return tmp_path


def counting_factory(engine: ScriptedEngine):
    def factory(cfg):
        return dspy.LM(
            "scripted/test",
            engine=engine,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            num_retries=0,
        )

    return factory


def sheet_engine(**overrides) -> ScriptedEngine:
    def respond(call):
        for needle, out in overrides.items():
            if needle in call.prompt:
                return out
        return {"verdict": "True" if "GOOD answer" in call.prompt else "False"}

    return ScriptedEngine(respond=respond)


def test_known_answer_sheet_gives_exact_metrics(project: Path):
    config, base = load_config(project / "cfg" / "config.yaml")
    res = evaluate(config, workdir=project, config_dir=base, progress=False)
    m = res.summary.model_dump()["metrics"]
    assert res.summary.counts.model_dump() == {
        "items": 12,
        "judged": 12,
        "scored": 12,
        "unscored": 0,
        "unscored_reasons": {},
        "without_reference": 0,
        "paired": 12,
    }
    assert m["accuracy"]["value"] == pytest.approx(10 / 12)
    assert m["kappa_categorical"]["value"] == pytest.approx(cohen_kappa_score(EXPECTED, SAYS))
    # one false positive among 6 negatives, one false negative among 6 positives
    assert m["false_positive_rate"]["value"] == pytest.approx(1 / 6)
    assert m["false_negative_rate"]["value"] == pytest.approx(1 / 6)
    for v in m.values():
        assert v["ci_low"] <= v["value"] <= v["ci_high"]
    assert res.summary.confusion_matrix.rows_reference == [[5, 1], [1, 5]]
    files = {p.name for p in res.run_dir.iterdir()}
    assert {
        "config.yaml",
        "judgments.jsonl",
        "metrics.json",
        "report.md",
        "program.json",
        "run.json",
    } <= files
    lines = (res.run_dir / "judgments.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["item_id"] for x in lines) == [f"q{i:02d}" for i in range(12)]
    # scripted usage: every call counted, local/scripted models cost nothing
    assert res.summary.usage.calls == 12
    assert res.summary.usage.prompt_tokens > 0
    assert "kappa_categorical" in (res.run_dir / "report.md").read_text()


def test_rerun_of_finished_config_makes_no_lm_call(project: Path):
    config, base = load_config(project / "cfg" / "config.yaml")
    engine = sheet_engine()
    first = evaluate(
        config,
        workdir=project,
        config_dir=base,
        progress=False,
        lm_factory=counting_factory(engine),
    )
    assert engine.n_calls == 12
    again = evaluate(
        config,
        workdir=project,
        config_dir=base,
        progress=False,
        lm_factory=counting_factory(engine),
    )
    assert engine.n_calls == 12
    assert again.new_judgments == 0
    assert again.run_dir == first.run_dir
    assert again.summary.metrics == first.summary.metrics


def test_lm_errors_and_parse_errors_are_unscored_not_scores(project: Path):
    config, base = load_config(project / "cfg" / "config.yaml")
    from assay.lm import ScriptedFailure

    def respond(call):
        if "Answer 2." in call.prompt:
            raise ScriptedFailure("provider down")
        if "Answer 4." in call.prompt:
            return "I refuse to answer in JSON"
        return {"verdict": "True" if "GOOD answer" in call.prompt else "False"}

    engine = ScriptedEngine(respond=respond)
    res = evaluate(
        config,
        workdir=project,
        config_dir=base,
        progress=False,
        lm_factory=counting_factory(engine),
    )
    by_id = {j.item_id: j for j in res.judgments}
    assert by_id["q02"].score is None and by_id["q02"].unscored == "lm_error"
    assert by_id["q04"].score is None and by_id["q04"].unscored == "parse_error"
    c = res.summary.counts.model_dump()
    assert c["unscored"] == 2 and c["paired"] == 10
    assert c["unscored_reasons"] == {"lm_error": 1, "parse_error": 1}
    keep = [i for i in range(12) if i not in (2, 4)]
    assert res.summary.metrics["accuracy"].value == pytest.approx(
        np.mean([EXPECTED[i] == SAYS[i] for i in keep])
    )
    assert len((res.run_dir / "judgments.jsonl").read_text().splitlines()) == 12


def test_limit_and_model_override_change_the_run(project: Path):
    config, base = load_config(project / "cfg" / "config.yaml")
    res = evaluate(config, workdir=project, config_dir=base, limit=4, progress=False)
    assert res.summary.counts.items == 4
    full = evaluate(config, workdir=project, config_dir=base, progress=False)
    assert full.run_dir != res.run_dir


def test_mlflow_run_has_params_metrics_and_artifacts(project: Path):
    import mlflow

    config, base = load_config(project / "cfg" / "config.yaml")
    config.tracking.enabled = True
    uri = f"sqlite:///{project / 'mlflow.db'}"
    res = evaluate(config, workdir=project, config_dir=base, progress=False, tracking_uri=uri)
    client = mlflow.MlflowClient(tracking_uri=uri)
    run = client.get_run(res.mlflow_run_id)
    assert run.data.params["judge.model"] == "scripted:sheet.json"
    assert run.data.params["judge.script_content"] == sha256_file(base / "sheet.json")
    assert run.data.params["judge.config_hash"] == config.judge.config_hash()
    assert run.data.metrics["accuracy"] == pytest.approx(10 / 12)
    assert "accuracy_ci_low" in run.data.metrics and "kappa_categorical_ci_high" in run.data.metrics
    artifacts = {a.path for a in client.list_artifacts(res.mlflow_run_id)}
    assert {"judgments.jsonl", "metrics.json", "report.md", "program.json"} <= artifacts


def test_a_run_made_without_tracking_is_logged_once_by_a_later_run_that_tracks(project: Path):
    """The run's name leaves out whether it logs: a run first made with tracking off was found
    finished by the same config with tracking on, and never logged. It is logged then, once."""
    import mlflow

    config, base = load_config(project / "cfg" / "config.yaml")
    uri = f"sqlite:///{project / 'mlflow.db'}"
    config.tracking.enabled = False
    quiet = evaluate(config, workdir=project, config_dir=base, progress=False, tracking_uri=uri)
    assert quiet.mlflow_run_id is None
    config.tracking.enabled = True
    logged = evaluate(config, workdir=project, config_dir=base, progress=False, tracking_uri=uri)
    assert logged.run_dir == quiet.run_dir and logged.new_judgments == 0
    client = mlflow.MlflowClient(tracking_uri=uri)
    run = client.get_run(logged.mlflow_run_id)
    assert run.data.metrics["accuracy"] == pytest.approx(10 / 12)
    assert "assay.seal" in run.data.tags
    again = evaluate(config, workdir=project, config_dir=base, progress=False, tracking_uri=uri)
    assert again.mlflow_run_id == logged.mlflow_run_id
    assert len(client.search_runs([run.info.experiment_id])) == 1


def test_disagreements_are_written_with_texts_and_shown_in_the_report(project: Path):
    config, base = load_config(project / "cfg" / "config.yaml")
    res = evaluate(config, workdir=project, config_dir=base, progress=False)
    lines = (res.run_dir / "disagreements.jsonl").read_text().splitlines()
    wrong = [i for i, (e, s) in enumerate(zip(EXPECTED, SAYS, strict=True)) if e != s]
    assert len(lines) == len(wrong) == res.summary.disagreements == 2
    records = [json.loads(x) for x in lines]
    by_id = {it.id: it for it in res.items}
    for r in records:
        item = by_id[r["id"]]
        assert (r["reference"], r["distance"]) == (item.expected, 1.0)
        assert r["judge"] != item.expected and r["response"] == item.response
    report = (res.run_dir / "report.md").read_text()
    assert "## Where the judge and the reference disagree most" in report
    assert all(f"| {r['id']} |" in report for r in records)


def test_disagreements_are_ranked_and_joined_a_slice_at_a_time(tmp_path: Path, monkeypatch):
    """disagreements.jsonl from several slices (the ranking's slice made tiny) equals the
    ranking of every pair at once, by hand: most distant first, ties by id, each with its
    texts and the judge's reasoning; report.md and report.html show its first ten."""
    import assay.evaluation._evaluate as module

    monkeypatch.setattr(module, "_SLICE", 7)
    rng = np.random.default_rng(3)
    refs, says = rng.integers(1, 6, 40), rng.integers(1, 6, 40)
    ids = [f"e{k:02d}" for k in rng.permutation(40)]  # file order is not id order
    rows = ["id,question,answer,label"] + [
        f"{i},Question {i}?,Answer {i} SAY{s}.,{r}" for i, r, s in zip(ids, refs, says, strict=True)
    ]
    (tmp_path / "items.csv").write_text("\n".join(rows) + "\n")
    rules = [{"match": f"SAY{s}", "output": {"verdict": str(s)}} for s in range(1, 6)]
    (tmp_path / "sheet.json").write_text(json.dumps({"rules": rules, "default": {}}))
    (tmp_path / "config.yaml").write_text(
        "name: ordinal\n"
        "data: {path: items.csv, columns: {id: id, request: question, response: answer,"
        " expected: label}}\n"
        "judge: {name: j, model: 'scripted:sheet.json', rubric: r,"
        " scale: {kind: ordinal, min: 1, max: 5}}\n"
        "tracking: {enabled: false}\n"
    )
    config, base = load_config(tmp_path / "config.yaml")
    res = evaluate(config, workdir=tmp_path, config_dir=base, progress=False)
    got = [json.loads(x) for x in (res.run_dir / "disagreements.jsonl").read_text().splitlines()]
    want = sorted(
        (
            (-abs(int(s) - int(r)), i, int(r), int(s))
            for i, r, s in zip(ids, refs, says, strict=True)
            if r != s
        ),
    )
    assert [(-g["distance"], g["id"], g["reference"], g["judge"]) for g in got] == want
    assert len(got) == res.summary.disagreements > 10
    reasons = {
        json.loads(x)["item_id"]: json.loads(x)["reasoning"]
        for x in (res.run_dir / "judgments.jsonl").read_text().splitlines()
    }
    for g in got:
        assert g["request"] == f"Question {g['id']}?"
        assert g["response"] == f"Answer {g['id']} SAY{g['judge']}."
        assert g["reasoning"] == reasons[g["id"]]
    report = (res.run_dir / "report.md").read_text()
    assert all(f"| {g['id']} |" in report for g in got[:10])
    assert not any(f"| {g['id']} |" in report for g in got[10:])
    page = (res.run_dir / "report.html").read_text()
    assert all(g["id"] in page for g in got[:10])
