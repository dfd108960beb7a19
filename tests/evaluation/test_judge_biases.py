"""Self-preference and scale use in ``assay evaluate`` (and ``assay agreement``) through the
command line, judged by stub-server personas: a judge that favours its own model family is
flagged and a fair one is not; a strict judge is told from one that cannot tell items apart;
each figure equal to its independent computation in metrics.json, report.md, report.html and
MLflow."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import mlflow
import numpy as np
import pytest
from scipy import stats

from assay.cli import main
from assay.lm import StubServer, model_family
from assay.lm._stub_server import default_respond
from tests.stub_judge import stub_config

OWN, OTHER = "openai/gpt-4o", "anthropic/claude-3-5-sonnet"


class Personas:
    """Each served model's verdict on item ``k`` (read from the response "Answer k."):
    ``favours`` its own family (+1 on items written by ``OWN``), ``fair`` (the reference with
    noise that does not depend on who wrote the item), ``strict`` and ``gpt-4.1-nano`` (one
    category below the reference), ``random`` (a score that has nothing to do with the item's)."""

    def __init__(self, reference: np.ndarray, generators: list[str], seed: int = 0):
        rng = np.random.default_rng(seed)
        self.reference = reference
        self.generators = generators
        self.noise = rng.choice([-1, 0, 0, 1], size=reference.size)
        self.random = rng.integers(1, 6, size=reference.size)

    def verdict(self, model: str, k: int) -> int:
        ref = int(self.reference[k])
        if model == "random":
            return int(self.random[k])
        if model in ("strict", "gpt-4.1-nano"):  # the latter of family gpt
            return max(1, ref - 1)
        bonus = int(model == "gpt-4o-mini" and self.generators[k] == OWN)  # favours
        return int(np.clip(ref + self.noise[k] + bonus, 1, 5))

    def __call__(self, body: dict) -> str:
        k = int(re.search(r"Answer (\d+)\.", json.dumps(body["messages"])).group(1))
        out = json.loads(default_respond(body))
        out["verdict"] = self.verdict(body["model"], k)
        return json.dumps(out)


def write_items(folder: Path, reference: np.ndarray, generators: list[str] | None) -> Path:
    path = folder / "items.csv"
    head = "id,request,response,expected" + (",written_by" if generators else "")
    rows = [
        f"i{k},Question {k}?,Answer {k}.,{r}" + (f",{generators[k]}" if generators else "")
        for k, r in enumerate(reference)
    ]
    path.write_text("\n".join([head, *rows]) + "\n", encoding="utf-8")
    return path


def run(folder: Path, stub: StubServer, model: str, csv: Path, *, generator: str | None) -> Path:
    """An evaluate run of ``model`` through the command line, logged to MLflow in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    columns = {"id": "id", **({"generator": generator} if generator else {})}
    cfg = stub_config(
        folder,
        csv,
        stub.base_url,
        name=model.replace(".", "-"),
        judge={"model": f"openai/{model}", "scale": "1-5"},
        data={"path": str(csv), "columns": columns},
        tracking={"uri": f"sqlite:///{folder / 'mlflow.db'}"},
    )
    cwd = Path.cwd()
    try:
        os.chdir(folder)
        assert main(["evaluate", str(cfg), "--quiet"]) == 0
    finally:
        os.chdir(cwd)
    (run_dir,) = (folder / "runs").iterdir()
    return run_dir


def logged_metrics(folder: Path) -> dict[str, float]:
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}")
    (logged,) = client.search_runs(client.search_experiments()[0].experiment_id)
    return logged.data.metrics


def scores_of(run_dir: Path) -> dict[str, int]:
    lines = (run_dir / "judgments.jsonl").read_text().splitlines()
    return {j["item_id"]: j["score"] for j in map(json.loads, lines)}


N_FAMILY = 60


@pytest.fixture(scope="module")
def family_runs(tmp_path_factory):
    """The favouring, the fair and the strict persona (all of family gpt) on the same 60
    items, half written by each family."""
    rng = np.random.default_rng(7)
    reference = rng.integers(2, 5, size=N_FAMILY)
    generators = [OWN if k % 2 == 0 else OTHER for k in range(N_FAMILY)]
    personas = Personas(reference, generators)
    root = tmp_path_factory.mktemp("family")
    csv = write_items(root, reference, generators)
    with StubServer(respond=personas) as stub:
        runs = {
            model: run(root / model, stub, model, csv, generator="written_by")
            for model in ("gpt-4o-mini", "gpt-4.1-mini", "gpt-4.1-nano")
        }
    return runs, reference, generators


def test_a_judge_favouring_its_own_family_is_flagged_and_a_fair_one_is_not(family_runs, capsys):
    runs, reference, generators = family_runs
    own = np.array([model_family(g) == "gpt" for g in generators])
    for model, flagged in (("gpt-4o-mini", True), ("gpt-4.1-mini", False)):
        run_dir = runs[model]
        summary = json.loads((run_dir / "metrics.json").read_text())
        sp = summary["self_preference"]
        assert sp["judge_family"] == "gpt" and sp["flagged"] is flagged, model
        assert sp["families"] == {"claude": N_FAMILY // 2, "gpt": N_FAMILY // 2}
        # Δ against the reference: Welch's t-test of (judge − reference), own against others
        scores = scores_of(run_dir)
        error = np.array([scores[f"i{k}"] for k in range(N_FAMILY)]) - reference
        welch = stats.ttest_ind(error[own], error[~own], equal_var=False)  # two-sided
        f = sp["figures"]
        assert f["adjusted"] is True
        assert f["difference"] == pytest.approx(error[own].mean() - error[~own].mean())
        assert f["p_value"] == pytest.approx(welch.pvalue)
        assert f["df"] == pytest.approx(welch.df)
        ci = welch.confidence_interval(0.95)
        assert (f["ci_low"], f["ci_high"]) == pytest.approx((ci.low, ci.high))
        assert (f["ci_low"] > 0) is flagged
        assert (f["p_value"] < 0.05 and f["difference"] > 0) is flagged

        report = (run_dir / "report.md").read_text()
        assert "## Self-preference" in report
        assert ("**Flagged**" in report) is flagged
        html = (run_dir / "report.html").read_text()
        assert "Self-preference" in html and "<th>own family (gpt)</th>" in html
        logged = logged_metrics(run_dir.parent.parent)
        assert logged["self_preference_difference"] == pytest.approx(f["difference"])
        assert logged["self_preference_difference_ci_low"] == pytest.approx(f["ci_low"])
        assert logged["self_preference_flagged"] == float(flagged)
    # the fair judge's errors do not depend on the family; the favouring one's do by about +1
    favours = json.loads((runs["gpt-4o-mini"] / "metrics.json").read_text())
    assert favours["self_preference"]["figures"]["difference"] > 0.6


def test_errors_of_one_value_give_no_interval_and_say_why(family_runs, tmp_path, capsys):
    """The strict persona's error is -1 on every item: Δ is 0 with no standard error, neither
    flagged nor said to show no preference, and the reason is on the console and in report.md."""
    runs, _, _ = family_runs
    run_dir = runs["gpt-4.1-nano"]
    sp = json.loads((run_dir / "metrics.json").read_text())["self_preference"]
    why = "no variation within either group"
    assert sp["flagged"] is False and sp["figures"]["difference"] == 0
    assert sp["figures"]["ci_low"] is None and why in sp["figures"]["note"]  # JSON has no NaN
    report = (run_dir / "report.md").read_text()
    assert f"Not flagged: {why}" in report and "detected at this sample size" not in report
    cfg = next(run_dir.parent.parent.glob("*.yaml"))
    cwd = Path.cwd()
    try:
        os.chdir(run_dir.parent.parent)  # the same run again: read back, no new LM call
        assert main(["evaluate", str(cfg)]) == 0
    finally:
        os.chdir(cwd)
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("self-pref"))
    assert "not flagged" in line and why in line


def test_without_a_generator_column_there_is_no_self_preference(tmp_path):
    reference = np.random.default_rng(1).integers(1, 6, size=12)
    personas = Personas(reference, [OWN] * 12)
    csv = write_items(tmp_path, reference, None)
    with StubServer(respond=personas) as stub:
        run_dir = run(tmp_path / "run", stub, "gpt-4.1-mini", csv, generator=None)
    summary = json.loads((run_dir / "metrics.json").read_text())
    assert summary["self_preference"] is None
    assert "Self-preference" not in (run_dir / "report.md").read_text()
    assert summary["scale_use"]["compression"]["n"] == 12  # measured whatever the generator


def test_a_generator_column_that_is_not_there_is_one_line(tmp_path, capsys):
    reference = np.array([1, 2, 3])
    csv = write_items(tmp_path, reference, None)
    cfg = stub_config(
        tmp_path,
        csv,
        "http://127.0.0.1:9",
        name="missing",
        judge={"scale": "1-5"},
        data={"path": str(csv), "columns": {"id": "id", "generator": "model"}},
    )
    assert main(["evaluate", str(cfg), "--quiet"]) != 0
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1
    assert "no column 'model' (mapped to generator)" in err and "items.csv" in err


def test_a_generator_column_on_a_categorical_scale_is_one_line(tmp_path, capsys):
    csv = write_items(tmp_path, np.array([1, 2, 3]), [OWN, OTHER, OWN])
    data = {"path": str(csv), "columns": {"id": "id", "generator": "written_by"}}
    judge = {"scale": {"kind": "categorical", "labels": ["1", "2", "3"]}}
    cfg = stub_config(tmp_path, csv, "http://127.0.0.1:9", name="c", judge=judge, data=data)
    assert main(["evaluate", str(cfg), "--quiet"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "self-preference compares scores" in err


def test_a_panel_of_several_families_needs_judge_family(tmp_path, capsys):
    csv = write_items(tmp_path, np.array([1, 2, 3]), [OWN, OTHER, OWN])
    member = {"rubric": "r", "scale": "1-5"}
    judge = {
        "program": "panel",
        "scale": "1-5",
        "members": [
            {**member, "name": "a", "model": "openai/gpt-4o-mini"},
            {**member, "name": "b", "model": "anthropic/claude-3-5-haiku"},
            {**member, "name": "c", "model": "ollama/llama3"},
        ],
    }
    data = {"path": str(csv), "columns": {"id": "id", "generator": "written_by"}}
    cfg = stub_config(tmp_path, csv, "http://127.0.0.1:9", name="p", judge=judge, data=data)
    assert main(["evaluate", str(cfg), "--quiet"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "set judge.family" in err
    assert "claude, gpt, llama" in err


N_SCALE = 60


@pytest.fixture(scope="module")
def scale_runs(tmp_path_factory):
    """A strict judge and one scoring at random on the same 60 items with one reference."""
    reference = np.random.default_rng(3).integers(1, 6, size=N_SCALE)
    personas = Personas(reference, [OWN] * N_SCALE)
    root = tmp_path_factory.mktemp("scale")
    csv = write_items(root, reference, None)
    with StubServer(respond=personas) as stub:
        runs = {m: run(root / m, stub, m, csv, generator=None) for m in ("strict", "random")}
    return runs, reference


def test_against_one_reference_a_strict_judge_is_told_from_one_that_cannot_tell_items_apart(
    scale_runs,
):
    runs, reference = scale_runs
    h = reference - 1.0  # 0-based positions
    for model, run_dir in runs.items():
        summary = json.loads((run_dir / "metrics.json").read_text())
        use = summary["scale_use"]
        scores = scores_of(run_dir)
        j = np.array([scores[f"i{k}"] for k in range(N_SCALE)]) - 1.0
        c = use["compression"]
        assert c["sd_ratio"]["value"] == pytest.approx(j.std(ddof=1) / h.std(ddof=1))
        assert c["slope"]["value"] == pytest.approx(stats.linregress(h, j).slope)
        assert c["mean_difference"]["value"] == pytest.approx(j.mean() - h.mean())
        middle = lambda x: np.mean((x > 0) & (x < 4))  # noqa: E731
        assert c["middle_share_difference"]["value"] == pytest.approx(middle(j) - middle(h))
        # one reference: the rater model would not know which of the two raters is at fault
        assert use["rater_model"] is None
        report = (run_dir / "report.md").read_text()
        assert "## Scale compression (central tendency)" in report
        assert "Rater model not fitted: beside one reference" in report
        assert "Scale compression" in (run_dir / "report.html").read_text()
        logged = logged_metrics(run_dir.parent.parent)
        assert logged["compression_sd_ratio"] == pytest.approx(c["sd_ratio"]["value"])
        assert logged["compression_mean_difference_ci_high"] == pytest.approx(
            c["mean_difference"]["ci_high"]
        )
        lead = report.split("## Scale compression (central tendency)")[1].split("\n\n")[1]
        if model == "strict":
            assert c["slope"]["ci_low"] > 0.5 and c["mean_difference"]["ci_high"] < 0
            assert "it is stricter" in lead and "it cannot tell items apart" not in lead
        else:
            assert c["slope"]["ci_low"] < 0 < c["slope"]["ci_high"]
            assert "it cannot tell items apart" in lead and "it is stricter" not in lead


def test_agreement_fits_the_rater_model_with_the_annotators_as_raters(tmp_path, capsys):
    """Several annotators: each one a rater beside the candidate; compression against their
    majority."""
    rng = np.random.default_rng(5)
    n = 120
    quality = rng.normal(size=n)
    cut = np.array([-1.2, -0.4, 0.4, 1.2])

    def rate(noise: float, shift: float = 0.0) -> np.ndarray:
        return 1 + (quality[:, None] + rng.normal(0, noise, n)[:, None] - shift > cut).sum(axis=1)

    annotators = {f"ann{a}": rate(0.5) for a in range(3)}
    rows = ["item,annotator,label"] + [
        f"i{i},{a},{v[i]}" for a, v in annotators.items() for i in range(n)
    ]
    (tmp_path / "ann.csv").write_text("\n".join(rows) + "\n")
    judge = rate(0.5, shift=0.8)  # strict: a category lower at the same quality
    (tmp_path / "judge.jsonl").write_text(
        "".join(
            json.dumps({"item_id": f"i{i}", "judge": "j", "score": int(judge[i])}) + "\n"
            for i in range(n)
        )
    )
    argv = ["agreement", str(tmp_path / "ann.csv"), str(tmp_path / "judge.jsonl"), "--scale"]
    argv += ["1-5", "--id-column", "item", "--score-column", "label"]
    argv += ["--annotator-column", "annotator"]
    assert main([*argv, "--json"]) == 0
    use = json.loads(capsys.readouterr().out)["scale_use"]
    assert use["raters"] == ["candidate", "ann0", "ann1", "ann2"]
    readings = {r["rater"]: r["reading"] for r in use["rater_model"]["raters"]}
    assert readings["candidate"] == "strict"
    assert "annotators' majority" in " ".join(use["notes"])
    assert main(argv) == 0
    assert "rater model: candidate strict" in capsys.readouterr().out


N_TRACES = 60


def log_model_traces(uri: str, annotations: np.ndarray, models: list[str]) -> list[str]:
    """One chat trace per item whose model span names ``models[k]``, with a HUMAN Feedback
    ``quality`` from each annotator (a column of ``annotations``); the trace ids."""
    from mlflow.entities import AssessmentSource, SpanType
    from mlflow.tracing.constant import SpanAttributeKey

    from tests.integrations.traces import logging_to

    ids = []
    with logging_to(uri):
        mlflow.set_experiment("biases")
        for k, model in enumerate(models):
            with mlflow.start_span(name="agent", span_type=SpanType.AGENT) as root:
                root.set_inputs({"question": f"Question {k}?"})
                with mlflow.start_span(name="llm", span_type=SpanType.CHAT_MODEL) as llm:
                    llm.set_attribute(SpanAttributeKey.MODEL, model)
                root.set_outputs({"answer": f"Answer {k}."})
            for a, label in enumerate(annotations[k]):
                mlflow.log_feedback(
                    trace_id=root.trace_id,
                    name="quality",
                    value=int(label),
                    source=AssessmentSource(source_type="HUMAN", source_id=f"ann{a}"),
                )
            ids.append(root.trace_id)
    return ids


def test_traces_name_their_generator_and_their_annotators_are_raters(tmp_path, monkeypatch):
    """MLflow traces: the model a span names is the generator (no column to map), and with
    several annotators the rater model has the judge and each of them as raters."""
    rng = np.random.default_rng(11)
    quality = rng.integers(2, 5, size=N_TRACES)
    annotations = np.clip(quality[:, None] + rng.choice([-1, 0, 0, 0, 1], (N_TRACES, 3)), 1, 5)
    models = ["gpt-4o-mini" if k % 2 == 0 else "claude-3-haiku" for k in range(N_TRACES)]
    uri = f"sqlite:///{tmp_path / 'traces.db'}"
    ids = log_model_traces(uri, annotations, models)
    personas = Personas(quality, [OWN if m.startswith("gpt") else OTHER for m in models])
    data = {
        "format": "mlflow",
        "tracking_uri": uri,
        "experiment": "biases",
        "request": "inputs.question",
        "response": "outputs.answer",
        "expectation": "quality",
        "annotators": True,
    }
    monkeypatch.chdir(tmp_path)
    with StubServer(respond=personas) as stub:
        cfg = stub_config(
            tmp_path,
            Path("unused.csv"),
            stub.base_url,
            name="traces",
            judge={"model": "openai/gpt-4o-mini", "scale": "1-5"},
            data=data,
            concurrency=8,
            tracking={"uri": f"sqlite:///{tmp_path / 'mlflow.db'}"},
        )
        assert main(["evaluate", str(cfg), "--quiet"]) == 0
    (run_dir,) = (tmp_path / "runs").iterdir()
    summary = json.loads((run_dir / "metrics.json").read_text())
    sp = summary["self_preference"]
    assert sp["source"] == "the trace's model" and sp["flagged"] is True
    assert sp["families"] == {"claude": N_TRACES // 2, "gpt": N_TRACES // 2}
    use = summary["scale_use"]
    assert use["raters"] == ["stub-judge", "ann0", "ann1", "ann2"]
    raters = {r["rater"]: r for r in use["rater_model"]["raters"]}
    assert set(raters) == {"stub-judge", "ann0", "ann1", "ann2"}
    assert all(r["n"] == N_TRACES for r in raters.values())
    assert use["rater_model"]["n_items"] == N_TRACES and len(use["rater_model"]["hardest"]) == 10
    report = (run_dir / "report.md").read_text()
    assert "## The raters under an item response model" in report
    assert "| ann0 | 60 |" in report and "annotators' majority" in report

    # each rater's parameters in both reports and on the MLflow run, as metrics.json has them
    from assay.metrics import fmt_ci
    from tests.web.test_report_parity import both, shown

    logged = logged_metrics(tmp_path)
    title = "The raters under an item response model"
    for name, tables in both(run_dir).items():
        assert any(t[0] == title for t in tables), name
        for rater, r in raters.items():
            for column in ("discrimination", "severity"):
                text = fmt_ci(r[column])
                assert shown(tables, title, column, text, (rater,)), (name, rater, column)
    for rater, r in raters.items():
        for figure in ("discrimination", "severity"):
            for part, suffix in (("value", ""), ("ci_low", "_ci_low"), ("ci_high", "_ci_high")):
                key = f"rater_{figure}.{rater}{suffix}"
                assert logged[key] == pytest.approx(r[figure][part]), key
    hardest = use["rater_model"]["hardest"]
    for name, tables in both(run_dir).items():
        table = "Items of the lowest latent quality (hardest to score high on)"
        hardest_shown = f"{hardest[0]['quality']:.2f}"
        assert shown(tables, table, "quality", hardest_shown, (hardest[0]["item"],)), name

    # the items' latent quality in four figures, from the fit on every item, and in MLflow
    from assay.metrics import AnnotationMatrix, rater_model

    scores = scores_of(run_dir)
    rows = [(i, "stub-judge", scores[i] - 1) for i in ids]
    rows += [
        (i, f"ann{a}", int(annotations[k, a]) - 1) for k, i in enumerate(ids) for a in range(3)
    ]
    fit = rater_model(AnnotationMatrix.from_long(*zip(*rows, strict=True)))
    quality = np.array([q.quality for q in fit.items])
    within = np.mean([q.sd**2 for q in fit.items])
    spread = use["rater_model"]["item_quality"]
    assert spread["mean"] == pytest.approx(quality.mean(), abs=1e-6)
    assert spread["sd"] == pytest.approx(quality.std(), rel=1e-6)
    assert spread["reliability"] == pytest.approx(
        quality.var() / (quality.var() + within), rel=1e-6
    )
    assert spread["lowest"] == pytest.approx(quality.min())
    assert spread["lowest"] == pytest.approx(hardest[0]["quality"])
    assert 0 < spread["reliability"] < 1
    for figure in ("mean", "sd", "reliability", "lowest"):
        assert logged[f"item_quality.{figure}"] == pytest.approx(spread[figure]), figure


def test_judge_family_says_whose_outputs_are_the_judges_own(tmp_path, monkeypatch):
    """``judge.family`` overrides the model's: the same verdicts, read against the other
    family, in a run of its own (the family is part of the run's identity, not the judge's)."""
    n = 24
    reference = np.random.default_rng(2).integers(2, 5, size=n)
    generators = [OWN if k % 2 == 0 else OTHER for k in range(n)]
    csv = write_items(tmp_path, reference, generators)
    summaries = {}
    with StubServer(respond=Personas(reference, generators)) as stub:
        for family in (None, "claude"):
            folder = tmp_path / str(family)
            folder.mkdir()
            monkeypatch.chdir(folder)
            judge = {"model": "openai/gpt-4o-mini", "scale": "1-5"}
            cfg = stub_config(
                folder,
                csv,
                stub.base_url,
                name="fam",
                judge={**judge, **({"family": family} if family else {})},
                data={"path": str(csv), "columns": {"id": "id", "generator": "written_by"}},
            )
            assert main(["evaluate", str(cfg), "--quiet"]) == 0
            (run_dir,) = (folder / "runs").iterdir()
            summaries[family] = (run_dir.name, json.loads((run_dir / "metrics.json").read_text()))
    (plain, by_model), (named, by_family) = summaries[None], summaries["claude"]
    assert plain != named  # another run
    assert by_model["config_hash"] == by_family["config_hash"]  # the same judge
    gpt, claude = by_model["self_preference"], by_family["self_preference"]
    assert (gpt["judge_family"], claude["judge_family"]) == ("gpt", "claude")
    assert gpt["flagged"] and not claude["flagged"]
    assert claude["figures"]["difference"] == pytest.approx(-gpt["figures"]["difference"])
