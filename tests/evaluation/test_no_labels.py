"""Judges combined without labels, through the command line: ``assay agreement`` with several
annotators reports each one's Dawid–Skene accuracy, sensitivity and specificity (equal to
crowd-kit on the same table) and warns when two of them err together; an evaluate run of a
panel reports its members under Dawid–Skene in metrics.json, report.md, report.html and
MLflow, and ``aggregate: dawid_skene`` / ``weighted`` replace the panel's verdicts by ones
fitted over the run (crowd-kit's labels; a member always wrong outvoted)."""

from __future__ import annotations

import csv
import json
import re

import numpy as np
import pandas as pd
import pytest
from crowdkit.aggregation import DawidSkene

from assay.cli import main
from assay.errors import ConfigError
from assay.lm import StubServer
from assay.lm._stub_server import default_respond
from tests.stub_judge import stub_config

N = 120


def annotation_table(tmp_path, *, copied: float = 0.0, n: int = 300):
    """Five annotators (accuracies .85 .8 .75 .8 .7) on ``n`` binary items; ann1 copies ann0
    on a share ``copied`` of them. The long table, a judge's verdicts, and the table as
    crowd-kit reads it."""
    rng = np.random.default_rng(5)
    truth = (rng.random(n) < 0.4).astype(int)
    labels = np.stack(
        [np.where(rng.random(n) < a, truth, 1 - truth) for a in (0.85, 0.8, 0.75, 0.8, 0.7)],
        axis=1,
    )
    copy = rng.random(n) < copied
    labels[copy, 1] = labels[copy, 0]
    rows = [(f"i{i:03d}", f"ann{a}", int(labels[i, a])) for i in range(n) for a in range(5)]
    with (tmp_path / "ann.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["item", "annotator", "label"])
        w.writerows(rows)
    judge = np.where(rng.random(n) < 0.85, truth, 1 - truth)
    (tmp_path / "judge.jsonl").write_text(
        "".join(
            json.dumps({"item_id": f"i{i:03d}", "judge": "j", "score": int(judge[i])}) + "\n"
            for i in range(n)
        )
    )
    return pd.DataFrame(rows, columns=["task", "worker", "label"])


def agreement(tmp_path, capsys, *more):
    argv = ["agreement", str(tmp_path / "ann.csv"), str(tmp_path / "judge.jsonl")]
    argv += ["--id-column", "item", "--score-column", "label", "--annotator-column", "annotator"]
    assert main([*argv, "--scale", "binary", *more]) == 0
    return capsys.readouterr().out


def test_agreement_reports_each_annotator_under_dawid_skene_as_crowdkit(tmp_path, capsys):
    table = annotation_table(tmp_path)
    ds = json.loads(agreement(tmp_path, capsys, "--json"))["annotators"]["dawid_skene"]
    theirs = DawidSkene(n_iter=100, tol=1e-5).fit(table)
    assert [f["judge"] for f in ds["judges"]] == [f"ann{a}" for a in range(5)]
    for f in ds["judges"]:
        errors = theirs.errors_.loc[f["judge"]]  # rows: verdict, columns: true class
        assert f["sensitivity"]["value"] == pytest.approx(errors.loc[1, 1], abs=0.01)
        assert f["specificity"]["value"] == pytest.approx(errors.loc[0, 0], abs=0.01)
        assert f["sensitivity"]["ci_low"] < f["sensitivity"]["value"] < f["sensitivity"]["ci_high"]
        assert f["accuracy"]["ci_method"] == "percentile bootstrap" and f["n"] == 300
    assert ds["priors"]["1"] == pytest.approx(theirs.priors_[1], abs=0.01)
    majority = table.groupby("task")["label"].mean().gt(0.5).astype(int)  # five: no tie
    assert ds["differs_from_majority"] == int((theirs.labels_.sort_index() != majority).sum())
    assert ds["warning"] is None and not any(p["flagged"] for p in ds["pairs"])
    assert len(ds["pairs"]) == 10

    printed = agreement(tmp_path, capsys)
    assert "Dawid–Skene: Estimated from the judges' verdicts alone" in printed
    assert re.search(r"\| ann0 sensitivity \| \d\.\d{3} \| \[", printed)
    assert "| ann0 · ann1 |" in printed


def test_agreement_warns_when_two_annotators_err_together(tmp_path, capsys):
    annotation_table(tmp_path, copied=0.7, n=600)
    ds = json.loads(agreement(tmp_path, capsys, "--json"))["annotators"]["dawid_skene"]
    assert "not independent given the class" in ds["warning"]
    flagged = [p for p in ds["pairs"] if p["flagged"]]
    assert flagged and all(p["p_value"] < 0.05 and p["excess"]["value"] >= 0.03 for p in flagged)
    assert "**Warning:** the judges' errors are not independent" in agreement(tmp_path, capsys)


def test_an_annotator_of_one_label_has_no_excess_agreement_with_the_others(tmp_path, capsys):
    """ann4 labels every item 0: its agreement with another annotator is that one's share of
    0s, which is what the model predicts — an excess of 0 in exact arithmetic, reported as 0
    with an interval of [0, 0] and p = 1, on the console as in the JSON (it was the
    rounding's: −3.3e-16 for ann0 · ann4, its interval's ends about 1e-15)."""
    annotation_table(tmp_path)
    rows = (tmp_path / "ann.csv").read_text().splitlines()
    (tmp_path / "ann.csv").write_text(
        "\n".join(r[: r.rindex(",")] + ",0" if ",ann4," in r else r for r in rows) + "\n"
    )
    ds = json.loads(agreement(tmp_path, capsys, "--json"))["annotators"]["dawid_skene"]
    with_ann4 = [p for p in ds["pairs"] if "ann4" in p["judges"]]
    assert len(with_ann4) == 4
    for p in with_ann4:
        excess = p["excess"]
        assert (excess["value"], excess["ci_low"], excess["ci_high"]) == (0.0, 0.0, 0.0)
        assert p["p_value"] == 1.0 and not p["flagged"]
    printed = agreement(tmp_path, capsys)
    assert re.search(r"\| ann0 · ann4 \| 0\.000 \| \[0\.000, 0\.000\] \|.*; p = 1\.000", printed)


# -- a panel in an evaluate run ---------------------------------------------------------------
class Personas:
    """The stub as three judges, one per served model name: item k's truth is k odd; ``good``
    is wrong on k % 5 == 0, ``fair`` on k % 4 == 1, ``contrarian`` always wrong."""

    WRONG = {
        "good": lambda k: k % 5 == 0,
        "fair": lambda k: k % 4 == 1,
        "contrarian": lambda k: True,
    }

    def __call__(self, body: dict) -> str:
        k = int(re.findall(r"item (\d+)\?", json.dumps(body["messages"]))[-1])
        out = json.loads(default_respond(body))
        out["verdict"] = str((k % 2 == 1) != self.WRONG[body["model"]](k))
        return json.dumps(out)

    @classmethod
    def verdict(cls, model: str, k: int) -> int:
        return int((k % 2 == 1) != cls.WRONG[model](k))


@pytest.fixture(scope="module")
def stub():
    with StubServer(respond=Personas()) as server:
        yield server


def panel_run(tmp_path, stub, aggregate: str, *, tracking: bool = False, **judge):
    data = tmp_path / "items.csv"
    data.write_text(
        "id,request,response,expected\n"
        + "".join(f"i{k},What colour is item {k}?,Item {k} is blue.,{k % 2}\n" for k in range(N))
    )
    members = [
        {
            "name": m,
            "model": f"openai/{m}",
            "api_base": stub.base_url,
            "rubric": "A good response names a colour.",
            "scale": {"kind": "binary", "labels": ["False", "True"]},
        }
        for m in ("good", "fair", "contrarian")
    ]
    extra = {"tracking": {"enabled": True}} if tracking else {}
    cfg = stub_config(
        tmp_path,
        data,
        stub.base_url,
        name=f"panel-{aggregate}",
        file=f"{aggregate}.yaml",
        judge={
            "name": "panel",
            "program": "panel",
            "members": members,
            "aggregate": aggregate,
            **judge,
        },
        **extra,
    )
    argv = ["evaluate", str(cfg), "--quiet"]
    if tracking:
        argv += ["--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}"]
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path)
        assert main(argv) in (0, 1)
    (run_dir,) = (tmp_path / "runs").glob(f"panel-{aggregate}-*")
    return run_dir


def latest_verdicts(run_dir) -> dict[str, int]:
    out = {}
    for line in (run_dir / "judgments.jsonl").read_text().splitlines():
        j = json.loads(line)
        out[j["item_id"]] = j["score"]
    return out


def members_table() -> pd.DataFrame:
    rows = [
        (f"i{k}", m, Personas.verdict(m, k))
        for k in range(N)
        for m in ("good", "fair", "contrarian")
    ]
    return pd.DataFrame(rows, columns=["task", "worker", "label"])


def test_a_dawid_skene_panel_gives_crowdkits_labels_and_reports_its_members(tmp_path, stub):
    run_dir = panel_run(tmp_path, stub, "dawid_skene", tracking=True)
    theirs = DawidSkene(n_iter=100, tol=1e-5).fit(members_table()).labels_
    verdicts = latest_verdicts(run_dir)
    assert verdicts == {i: int(v) for i, v in theirs.items()}
    truth = {f"i{k}": k % 2 for k in range(N)}
    # the contrarian is learnt to answer the opposite: every verdict is right
    assert sum(verdicts[i] == truth[i] for i in truth) == N

    summary = json.loads((run_dir / "metrics.json").read_text())
    panel = summary["panel"]
    assert panel["aggregate"] == "dawid_skene" and panel["members"] == [
        "good",
        "fair",
        "contrarian",
    ]
    majority = {
        i: int(sum(Personas.verdict(m, int(i[1:])) for m in ("good", "fair", "contrarian")) >= 2)
        for i in truth
    }
    assert panel["changed"] == sum(verdicts[i] != majority[i] for i in truth) > 0
    figures = {f["judge"]: f for f in panel["dawid_skene"]["judges"]}
    assert figures["contrarian"]["accuracy"]["value"] < 0.05
    assert figures["good"]["accuracy"]["value"] == pytest.approx(
        np.mean([not Personas.WRONG["good"](k) for k in range(N)]), abs=0.03
    )
    assert summary["metrics"]["accuracy"]["value"] == 1.0  # against the reference

    report = (run_dir / "report.md").read_text()
    assert "The panel's members under Dawid–Skene (no reference needed)" in report
    assert "it changed " in report and "| contrarian accuracy |" in report
    assert "Dawid–Skene" in (run_dir / "report.html").read_text()

    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    (logged,) = mlflow.search_runs(search_all_experiments=True, output_format="list")
    m = logged.data.metrics
    assert m["panel_ds_accuracy.contrarian"] == figures["contrarian"]["accuracy"]["value"]
    assert m["panel_changed"] == panel["changed"]
    assert "panel_ds_sensitivity.good_ci_low" in m
    # three judges on two classes: the console warns (the model can fit any table), and so
    # does MLflow (it logged 0: only a flagged pair counted)
    assert panel["dawid_skene"]["warning"].startswith("with 3 judges on 2 classes")
    assert m["panel_ds_warning"] == 1.0 and m["panel_ds_dependence_flagged"] == 0.0
    # the panel's model is its members' (it was "local", the embedded model, never called)
    shown = "panel of openai/good, openai/fair, openai/contrarian"
    params = logged.data.params
    assert params["judge.model"] == shown
    assert "judge.runtime" not in params and "judge.prompt_layout" not in params
    assert (
        f"model `{shown}`" in report and f"model {shown}" in (run_dir / "report.html").read_text()
    )
    lines = (run_dir / "judgments.jsonl").read_text().splitlines()
    assert {json.loads(line)["model"] for line in lines} == {shown}

    # re-read: the finished run's verdicts and figures, no refit needed
    again = panel_run(tmp_path, stub, "dawid_skene")
    assert again == run_dir and latest_verdicts(again) == verdicts


def test_agreement_reads_a_runs_journal_latest_judgment_first(tmp_path, stub, capsys):
    """The run's judgments.jsonl holds the panel's per-item majority and, later, the verdicts
    fitted over the run: ``assay agreement`` takes the latest, as the run does; a second
    judgment by another judge config (files concatenated) is still a one-line error."""
    run_dir = panel_run(tmp_path, stub, "dawid_skene")
    journal = run_dir / "judgments.jsonl"
    assert len(journal.read_text().splitlines()) > N  # the changed verdicts appended
    argv = ["agreement", "--json", str(tmp_path / "items.csv"), str(journal)]
    argv += ["--id-column", "id", "--score-column", "expected", "--scale", "binary"]
    capsys.readouterr()
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == N and out["metrics"]["accuracy"]["value"] == 1.0

    first = json.loads(journal.read_text().splitlines()[0])
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(journal.read_text() + json.dumps({**first, "config_hash": "other"}) + "\n")
    argv[3] = str(mixed)
    assert main(argv) == 2
    assert (
        f"second judgment of item '{first['item_id']}' (first in row 1)" in capsys.readouterr().err
    )


def test_the_aggregate_is_part_of_the_judges_identity_and_majority_is_left_alone(
    tmp_path, stub, capsys
):
    majority_dir = panel_run(tmp_path, stub, "majority")
    capsys.readouterr()
    weighted_dir = panel_run(tmp_path, stub, "weighted")
    printed = capsys.readouterr().out
    assert "aggregate `weighted`: fitted over the run's items" in printed
    assert "shares of the vote: good 0.50, fair 0.50, contrarian 0.00" in printed
    assert "| contrarian accuracy |" in printed
    assert majority_dir != weighted_dir
    truth = {f"i{k}": k % 2 for k in range(N)}

    majority = json.loads((majority_dir / "metrics.json").read_text())
    assert majority["panel"]["changed"] == 0 and majority["panel"]["dawid_skene"] is not None
    right = sum(latest_verdicts(majority_dir)[i] == truth[i] for i in truth)
    # the contrarian's vote costs the majority every item the other two split on
    assert right == sum(
        not Personas.WRONG["good"](k) and not Personas.WRONG["fair"](k) for k in range(N)
    )

    # weighted: the contrarian weighs 0 and the two others, fewer than 1 / cap, share equally
    # (neither outvotes the other): a split is a tie, broken to the lower class
    weighted = json.loads((weighted_dir / "metrics.json").read_text())["panel"]
    assert weighted["weights"] == {"good": 0.5, "fair": 0.5, "contrarian": 0.0}
    right_weighted = sum(latest_verdicts(weighted_dir)[i] == truth[i] for i in truth)
    split = [k for k in range(N) if Personas.WRONG["good"](k) != Personas.WRONG["fair"](k)]
    assert right_weighted == right + sum(k % 2 == 0 for k in split) > right


def test_run_level_aggregates_need_three_members_and_are_refused_by_the_harness(tmp_path):
    from assay.inputs import load_config
    from assay.reliability import HarnessConfig

    member = {"model": "openai/x", "scale": "binary"}
    two = {"program": "panel", "aggregate": "dawid_skene", "members": [member, member]}
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps({"name": "c", "data": {"path": "d.csv"}, "judge": two}))
    with pytest.raises(ConfigError, match="aggregate 'dawid_skene' needs at least 3 members"):
        load_config(path)

    three = {**two, "name": "p", "members": [{**member, "name": f"m{i}"} for i in range(3)]}
    harness = {
        "name": "h",
        "data": {"path": "d.csv"},
        "scale": "binary",
        "judges": [three],
        "tests": {"position": {}},
    }
    path.write_text(json.dumps(harness))
    with pytest.raises(ConfigError, match="the harness compares each probe's verdict"):
        load_config(path, model=HarnessConfig)


def test_a_second_label_by_the_same_annotator_is_one_line(tmp_path, capsys):
    """A long table with an (item, annotator) twice — e.g. written from a run's journal without
    taking each item's latest judgment — names the file, the row and the first one."""
    annotation_table(tmp_path, n=20)
    with (tmp_path / "ann.csv").open("a") as fh:
        fh.write("i007,ann3,1\n")
    argv = ["agreement", str(tmp_path / "ann.csv"), str(tmp_path / "judge.jsonl")]
    argv += ["--id-column", "item", "--score-column", "label", "--annotator-column", "annotator"]
    assert main([*argv, "--scale", "binary"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(
        "ann.csv, row 101, field 'annotator': a second label of item 'i007' by annotator "
        "'ann3' (the first in row 39)"
    )
    assert "\n" not in err and "Traceback" not in err


def test_a_panel_with_no_scored_judgment_is_left_as_it_is():
    """Every member down: every judgment unscored (panel_quorum), nothing to fit — the run
    reports it as any all-unscored run, without a Dawid–Skene report and without an error."""
    from assay.evaluation import panel_over_run
    from assay.programs import JudgeConfig
    from assay.types import Judgment

    members = [{"name": f"m{i}", "model": "openai/x", "scale": "binary"} for i in range(3)]
    config = JudgeConfig(name="p", program="panel", aggregate="dawid_skene", members=members)
    down = [{"judge": f"m{k}", "score": None, "unscored": "lm_error"} for k in range(3)]
    judgments = [
        Judgment(item_id=str(i), judge="p", unscored="panel_quorum", members=down) for i in range(4)
    ]
    out, panel = panel_over_run(config, judgments, seed=0, n_resamples=1000, confidence=0.95)
    assert out == judgments and panel.dawid_skene is None and panel.changed == 0
    assert panel.note == "Dawid–Skene needs at least 3 judges; there are 0"


def test_a_panel_of_hosted_members_is_not_called_the_embedded_model(tmp_path, stub, capsys):
    """A panel's own ``model`` is never called (its members' are): the embedded model's warning
    belongs to a panel only when a member runs on it."""
    run_dir = panel_run(tmp_path, stub, "majority", model="local")  # the default model
    printed = capsys.readouterr().out
    assert "paired with reference" in printed
    assert "embedded model" not in printed
    assert "embedded local model" not in (run_dir / "report.md").read_text()


def test_members_votes_on_items_the_quorum_left_unscored_are_counted():
    """Every member's verdict is evidence of its reliability: on items where one member failed
    and the panel's quorum left the item unscored, the others' votes still enter the fit (they
    were dropped silently: 575 valid votes, 520 fitted). The fit equals crowd-kit's on every
    valid vote; the items stay unscored; a recall's n is the class's expected size."""
    from assay.evaluation import panel_over_run
    from assay.programs import JudgeConfig
    from assay.types import Judgment

    rng = np.random.default_rng(3)
    names = ["m0", "m1", "m2", "m3"]
    members = [{"name": m, "model": "openai/x", "scale": "binary"} for m in names]
    config = JudgeConfig(name="p", program="panel", aggregate="dawid_skene", members=members)
    truth = rng.random(150) < 0.35
    judgments, rows = [], []
    for i, t in enumerate(truth):
        votes = []
        for a, m in enumerate(names):
            failed = (a == 1 and i % 10 == 0) or (a == 2 and i % 15 == 0)
            score = None if failed else int(t if rng.random() < 0.8 + 0.04 * a else not t)
            votes.append(
                {"judge": m, "score": score, "unscored": "parse_error" if failed else None}
            )
            if score is not None:
                rows.append((f"i{i}", m, score))
        quorum = all(v["score"] is not None for v in votes)
        judgments.append(
            Judgment(
                item_id=f"i{i}",
                judge="p",
                score=int(np.mean([v["score"] for v in votes]) > 0.5) if quorum else None,
                unscored=None if quorum else "panel_quorum",
                members=votes,
            )
        )
    out, panel = panel_over_run(config, judgments, seed=0, n_resamples=1000, confidence=0.95)
    ds = panel.dawid_skene
    assert ds is not None and ds.items == 150  # not the 130 the quorum scored
    table = pd.DataFrame(rows, columns=["task", "worker", "label"])
    assert len(table) == 575
    theirs = DawidSkene(n_iter=100, tol=1e-5).fit(table)
    posterior = theirs.probas_
    for f in ds.judges:
        errors = theirs.errors_.loc[f.judge]
        assert f.sensitivity.value == pytest.approx(errors.loc[1, 1], abs=0.01)
        assert f.specificity.value == pytest.approx(errors.loc[0, 0], abs=0.01)
        rated = table[table.worker == f.judge].task
        assert f.sensitivity.n == round(posterior.loc[rated, 1].sum())
        assert f.specificity.n == round(posterior.loc[rated, 0].sum())
        assert "as the model expects them" in (f.sensitivity.note or "")
    assert ds.priors["1"] == pytest.approx(theirs.priors_[1], abs=0.01)
    unscored = [j.item_id for j in judgments if j.unscored == "panel_quorum"]
    assert len(unscored) == 20
    assert all(o.score is None for o in out if o.item_id in unscored)


def test_two_labels_of_a_categorical_scale_have_no_sensitivity(tmp_path, capsys):
    """``--scale True,False`` names two categories, not a positive class: Dawid–Skene printed a
    'sensitivity' that was the recall of whichever label was listed second (the auditor's
    careful: sensitivity 0.795 under True,False, 0.898 under False,True; its specificity the
    other). Each label's recall now, the same in either order; on ``--scale binary`` the same
    verdicts keep sensitivity and specificity, the recalls of True (score 1) and False."""
    annotation_table(tmp_path)
    word = {"0": "False", "1": "True"}
    rows = list(csv.reader((tmp_path / "ann.csv").open()))
    with (tmp_path / "ann.csv").open("w", newline="") as fh:
        csv.writer(fh).writerows([rows[0], *([i, a, word[s]] for i, a, s in rows[1:])])
    judged = [json.loads(line) for line in (tmp_path / "judge.jsonl").read_text().splitlines()]
    (tmp_path / "judge.csv").write_text(
        "item,label\n" + "".join(f"{j['item_id']},{word[str(j['score'])]}\n" for j in judged)
    )
    argv = ["agreement", str(tmp_path / "ann.csv"), str(tmp_path / "judge.csv")]
    argv += ["--id-column", "item", "--score-column", "label", "--annotator-column", "annotator"]

    def judges(scale: str) -> tuple[dict[str, dict], str]:
        assert main([*argv, "--scale", scale, "--json"]) == 0
        ds = json.loads(capsys.readouterr().out)["annotators"]["dawid_skene"]
        assert main([*argv, "--scale", scale]) == 0
        return {f["judge"]: f for f in ds["judges"]}, capsys.readouterr().out

    listed, listed_out = judges("True,False")
    swapped, swapped_out = judges("False,True")
    for figures, printed in ((listed, listed_out), (swapped, swapped_out)):
        assert "sensitivity" not in printed and "specificity" not in printed
        assert re.search(r"\| ann0 recall True \| \d\.\d{3} \| \[", printed)
        assert re.search(r"\| ann0 recall False \| \d\.\d{3} \| \[", printed)
        for f in figures.values():
            assert f["sensitivity"] is None and f["specificity"] is None
            assert set(f["recall"]) == {"True", "False"}
    binary, binary_out = judges("binary")
    assert "| ann0 sensitivity |" in binary_out and "| ann0 recall" not in binary_out
    for name, f in listed.items():
        for label in ("True", "False"):
            assert f["recall"][label]["value"] == pytest.approx(
                swapped[name]["recall"][label]["value"], abs=1e-6
            )
        assert binary[name]["sensitivity"]["value"] == pytest.approx(
            f["recall"]["True"]["value"], abs=1e-6
        )
        assert binary[name]["specificity"]["value"] == pytest.approx(
            f["recall"]["False"]["value"], abs=1e-6
        )


def test_a_panel_on_two_named_labels_logs_and_prints_no_sensitivity():
    """A panel whose members answer A or B (a pairwise judge's labels) has no positive class:
    its members' figures are each label's recall on the console, and MLflow gets no
    ``ds_sensitivity`` / ``ds_specificity`` (they were the recall of B and of A). The same
    verdicts on a binary scale keep them."""
    from assay.evaluation import panel_over_run
    from assay.evaluation._no_labels import dawid_skene_console, panel_metrics
    from assay.programs import JudgeConfig
    from assay.types import Judgment

    rng = np.random.default_rng(4)
    names = ["m0", "m1", "m2", "m3"]
    truth = rng.random(200) < 0.4
    votes = [
        [int(t if rng.random() < 0.75 + 0.05 * a else not t) for a in range(len(names))]
        for t in truth
    ]

    def fitted(scale):
        members = [{"name": m, "model": "openai/x", "scale": scale} for m in names]
        config = JudgeConfig(name="p", program="panel", aggregate="majority", members=members)
        judgments = [
            Judgment(
                item_id=f"i{i}",
                judge="p",
                score=int(sum(v) > 2),
                members=[{"judge": m, "score": s} for m, s in zip(names, v, strict=True)],
            )
            for i, v in enumerate(votes)
        ]
        _, panel = panel_over_run(config, judgments, seed=0, n_resamples=1000, confidence=0.95)
        assert panel.dawid_skene is not None
        return panel, dawid_skene_console(panel.dawid_skene)

    named, printed = fitted("categorical:A,B")
    logged = panel_metrics(named)
    assert "ds_sensitivity" not in logged and "ds_specificity" not in logged
    assert set(logged["ds_accuracy"]) == set(names)
    assert "sensitivity" not in printed and "specificity" not in printed
    assert "| m0 recall A |" in printed and "| m0 recall B |" in printed
    binary, printed = fitted("binary")
    logged = panel_metrics(binary)
    assert set(logged["ds_sensitivity"]) == set(names) == set(logged["ds_specificity"])
    assert "| m0 sensitivity |" in printed
    for a, b in zip(named.dawid_skene.judges, binary.dawid_skene.judges, strict=True):
        assert a.recall["B"].value == pytest.approx(b.sensitivity.value, abs=1e-9)


def test_the_bootstrap_line_says_a_level_of_97_5_percent():
    """The Dawid–Skene bootstrap line said "98% intervals" of 97.5% ones (``:.0%``)."""
    from assay.evaluation._no_labels import dawid_skene_report
    from assay.scale import Scale

    rng = np.random.default_rng(1)
    truth = rng.random(60) < 0.5
    rows = [
        (f"i{i}", f"m{a}", int(t if rng.random() < 0.8 else not t))
        for i, t in enumerate(truth)
        for a in range(3)
    ]
    report, _, _ = dawid_skene_report(
        rows, Scale(kind="binary"), {}, seed=0, n_resamples=1000, confidence=0.975
    )
    assert report is not None and report.bootstrap.endswith(", seed 0, 97.5% intervals")
