"""assay compare over runs that assay itself logged to one SQLite MLflow store: leaderboard
order, the differences table, runs left out (and forced in), plots, the comparison run, and
one-line errors for bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import dspy
import pytest

from assay.cli import build_parser
from assay.comparison import compare, pareto_front, short_sha
from assay.errors import ConfigError, RunError
from assay.evaluation import evaluate
from assay.inputs import EvaluateConfig
from assay.lm import ScriptedEngine, register_script
from assay.metrics import goodness
from assay.programs import JudgeConfig, build_judge, judge_lm_factory, save_program

SCALE = {"kind": "binary", "labels": ["False", "True"]}
RUBRIC = "A good answer mentions sunlight and water, and says how much of each a plant needs."


def write_csv(path: Path, n: int) -> Path:
    rows = ["id,request,response,expected"]
    for i in range(n):
        good = i % 2 == 0
        answer = "GOOD answer about sunlight and water" if good else "BAD answer about nothing"
        rows.append(f"i{i:02d},Question {i}: how do plants grow?,Answer {i}. {answer}.,{int(good)}")
    path.write_text("\n".join(rows) + "\n")
    return path


def verdict_of(kind: str):
    """Scripted judges: always right; wrong on answers 2 and 3 (75%); always 'True'."""

    def respond(call):
        response = call.field("response") or ""
        v = "GOOD answer" in response
        if kind == "most" and response.startswith(("Answer 2.", "Answer 3.")):
            v = not v
        if kind == "yes":
            v = True
        out = {"verdict": str(v)}
        if "reasoning" in call.fields:
            out = {"reasoning": "checked the answer", **out}
        return out

    return respond


def judge(kind: str, **kw) -> dict:
    return {
        "name": kind,
        "model": f"scripted:cmp-{kind}",
        "rubric": RUBRIC,
        "scale": SCALE,
        **kw,
    }


def run_evaluate(root: Path, uri: str, name: str, data: Path, judge_cfg: dict) -> str:
    config = EvaluateConfig.model_validate(
        {"name": name, "data": {"path": str(data)}, "judge": judge_cfg, "concurrency": 4}
    )
    res = evaluate(config, workdir=root, progress=False, tracking_uri=uri)
    return res.mlflow_run_id


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> dict:
    """One store for the module (a new MLflow SQLite store costs seconds): three judges of
    different quality on one data set, the best one again on another data set, a small
    harness run, and a run that assay did not log."""
    import mlflow

    from assay.reliability import HarnessConfig, run_harness
    from assay.reliability.selftest._selftest import register, write_data

    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    root = tmp_path_factory.mktemp("compare")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    for kind in ("perfect", "most", "yes"):
        register_script(f"cmp-{kind}", lambda k=kind: ScriptedEngine(respond=verdict_of(k)))
    data = write_csv(root / "items.csv", 8)
    other = write_csv(root / "other.csv", 6)

    perfect = judge(
        "perfect", program="chain_of_thought", price={"input_per_mtok": 2e3, "output_per_mtok": 2e3}
    )
    state = root / "perfect_state.json"
    save_program(
        build_judge(JudgeConfig.model_validate(perfect), judge_lm_factory(retries=0)), state
    )
    perfect["program_state"] = str(state)
    perfect_id = run_evaluate(root, uri, "perfect", data, perfect)
    other_id = run_evaluate(root, uri, "perfect-other-data", other, perfect)
    ids = {
        "perfect": perfect_id,
        "most": run_evaluate(
            root,
            uri,
            "most",
            data,
            judge(
                "most",
                adapter="chat",
                temperature=0.5,
                price={"input_per_mtok": 5e2, "output_per_mtok": 5e2},
            ),
        ),
        "yes": run_evaluate(
            root,
            uri,
            "yes",
            data,
            judge(
                "yes",
                rubric="Say True.",
                price={"input_per_mtok": 8e3, "output_per_mtok": 8e3},
            ),
        ),
        "other": other_id,
    }

    register()
    harness = HarnessConfig.model_validate(
        {
            "name": "h",
            "data": {"path": str(write_data(root / "arith", n=6))},
            "scale": {"kind": "binary", "labels": ["incorrect", "correct"]},
            "generator": {"model": "scripted:assay-selftest-generator", "temperature": 0.7},
            "validator": {"model": "scripted:assay-selftest-validator", "temperature": 0.0},
            "judges": [
                {"name": n, "model": f"scripted:assay-selftest-{n}", "rubric": "the correct sum"}
                for n in ("clean", "label_blind")
            ],
            "tests": {"label_flip": {}, "format_indent": {}},
            "retries": 0,
            "output_dir": str(root / "hruns"),
        }
    )
    h = run_harness(harness, workdir=root, progress=False, tracking_uri=uri)

    client = mlflow.MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("assay").experiment_id
    plain = client.create_run(exp, run_name="not-assay").info.run_id
    client.set_terminated(plain)
    return {"root": root, "uri": uri, "ids": ids, "harness": h.mlflow_run_id, "plain": plain}


def three(store) -> list[str]:
    return [store["ids"][k] for k in ("yes", "most", "perfect")]


def test_leaderboard_order_metric_and_cost(store):
    res = compare(three(store), tracking_uri=store["uri"], log=False).model_dump()
    rows = res["leaderboard"]
    assert [r["judge"] for r in rows] == ["perfect", "most", "yes"]
    assert res["metric"] == "kappa_categorical"
    # the always-'True' judge's κ is undefined (not logged): it ranks last on κ, which stays
    # the metric, rather than moving the ranking to accuracy
    assert [r["value"] for r in rows[:2]] == pytest.approx([1.0, 0.5])
    assert rows[2]["value"] is None and rows[2]["ci_low"] is None
    assert [r["accuracy"] for r in rows] == pytest.approx([1.0, 0.75, 0.5])
    for r in rows:
        assert r["value"] is None or r["ci_low"] <= r["value"] <= r["ci_high"]
        assert r["cost_per_accuracy_point_usd"] == pytest.approx(
            r["cost_usd"] / (r["accuracy"] * 100)
        )
    # priced so that the always-'True' judge is the dearest; with no κ it has no place on the
    # front, the others are on it
    perfect, most, yes = rows
    assert most["cost_usd"] < perfect["cost_usd"] < yes["cost_usd"]
    assert [r["pareto"] for r in rows] == [True, True, None]
    assert [r["rank"] for r in rows] == [1, 2, 3]
    assert res["left_out"] == [] and res["group"]["kind"] == "agreement"
    assert res["plots"] == {} and res["comparison_run_id"] is None


def test_differences_show_only_the_changed_judge_params(store):
    res = compare(three(store), tracking_uri=store["uri"], log=False).model_dump()
    d = res["differences"]
    assert d["columns"] == ["perfect", "most", "yes"]
    rows = d["rows"]
    assert rows["model"] == ["scripted:cmp-perfect", "scripted:cmp-most", "scripted:cmp-yes"]
    assert rows["program"] == ["chain_of_thought", "predict", "predict"]
    assert rows["adapter"] == ["json", "chat", "json"]
    assert rows["temperature"] == ["0.0", "0.5", "0.0"]
    # long text shows as a short sha (and its first words), short text as itself
    assert rows["rubric"][0] == rows["rubric"][1] != rows["rubric"][2] == "Say True."
    assert rows["rubric"][0].startswith(f"sha {short_sha(RUBRIC)} “A good answer")
    assert rows["optimized"][0].startswith("yes (state ") and rows["optimized"][1:] == ["no", "no"]
    assert "price.input_per_mtok" in rows
    # unchanged params, the display name and the hash of everything are not rows
    assert not {"max_tokens", "seed", "scale.kind", "name", "config_hash"} & set(rows)
    assert list(rows)[:6] == ["model", "program", "adapter", "temperature", "rubric", "optimized"]
    by_name = {r["judge"]: r for r in res["leaderboard"]}
    assert by_name["perfect"]["optimized"] and not by_name["yes"]["optimized"]
    assert by_name["yes"]["rubric"] == short_sha("Say True.")


def test_other_data_set_is_left_out_with_a_reason_unless_forced(store):
    ids = store["ids"]
    res = compare([*three(store), ids["other"]], tracking_uri=store["uri"], log=False).model_dump()
    assert [r["judge"] for r in res["leaderboard"]] == ["perfect", "most", "yes"]
    (out,) = res["left_out"]
    assert out["run_id"] == ids["other"]
    assert out["reason"] == "different items: 6 items, the compared runs' 8 items"
    assert res["group"]["measured_on"] == "8 items"
    assert [r["n"] for r in res["leaderboard"]] == [8, 8, 8]
    # the perfect judge's κ is 1 in every replicate: said, as its run's own note says it
    top = res["leaderboard"][0]
    assert (top["judge"], top["ci_low"], top["ci_high"]) == ("perfect", 1.0, 1.0)
    assert any(
        n.startswith(f"{res['metric']} of perfect: an interval of no width") for n in res["notes"]
    )
    forced = compare(
        [*three(store), ids["other"]], tracking_uri=store["uri"], force=True, log=False
    ).model_dump()
    assert forced["left_out"] == [] and forced["group"] is None
    assert {r["run_id"] for r in forced["leaderboard"]} == {*three(store), ids["other"]}
    assert forced["leaderboard"][0]["value"] == pytest.approx(1.0)
    # the first run named decides which group is compared: alone in its group, it is no
    # comparison (a one-row leaderboard marked "Pareto yes" said it was)
    with pytest.raises(RunError, match=r"nothing to compare: only .*perfect-other-data.*--force"):
        compare([ids["other"], *three(store)], tracking_uri=store["uri"], log=False)


def test_whole_experiment_compares_the_largest_group_and_logs_a_comparison_run(store, tmp_path):
    import mlflow

    out = tmp_path / "cmp"
    res = compare([], tracking_uri=store["uri"], out_dir=out).model_dump()
    assert [r["judge"] for r in res["leaderboard"]] == ["perfect", "most", "yes"]
    reasons = {x["run_id"]: x["reason"] for x in res["left_out"]}
    assert reasons[store["plain"]] == "not an assay run"
    assert reasons[store["ids"]["other"]].startswith("different items: 6 items")
    harness_reasons = [v for v in reasons.values() if v.startswith("kind differs")]
    assert harness_reasons == ["kind differs: reliability vs agreement"] * 2  # one per judge
    assert (out / "pareto.png").stat().st_size > 0 and not (out / "heatmap.png").exists()
    saved = json.loads((out / "comparison.json").read_text())
    assert saved["leaderboard"] == json.loads(json.dumps(res["leaderboard"]))

    client = mlflow.MlflowClient(tracking_uri=store["uri"])
    run = client.get_run(res["comparison_run_id"])
    assert run.data.tags["assay.command"] == "compare"
    assert run.data.tags["assay.data"] == res["group"]["data"]
    assert [run.data.params[f"run.{i}"] for i in range(3)] == [
        r["run_id"] for r in res["leaderboard"]
    ]
    assert run.info.status == "FINISHED"
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert artifacts == {"pareto.png", "comparison.json", "report.html"}
    # a later comparison of the experiment neither compares nor lists the comparison run
    again = compare([], tracking_uri=store["uri"], log=False).model_dump()
    assert res["comparison_run_id"] not in {x["run_id"] for x in again["left_out"]}
    assert len(again["leaderboard"]) == 3


def test_harness_run_compares_its_judges_with_a_heatmap(store, tmp_path):
    res = compare(
        [store["harness"]], tracking_uri=store["uri"], out_dir=tmp_path, log=False
    ).model_dump()
    rows = res["leaderboard"]
    assert res["metric"] == "worst_test_rate"
    assert [r["judge"] for r in rows] == ["clean", "label_blind"]
    assert rows[0]["value"] == pytest.approx(1.0)
    # the label-blind judge never moves its verdict: its label_flip consistency is exactly 0
    assert (rows[1]["value"], rows[1]["worst_of"]) == (0.0, "label_flip.consistency")
    assert rows[0]["measured_on"] == rows[1]["measured_on"]
    assert re.fullmatch(r"\d+ probes of 6 source items", rows[0]["measured_on"])
    # each row's n is its worst test's own n (that test's probes), as the run logged it
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=store["uri"])
    for r in rows:
        logged = client.get_run(r["run_id"]).data.metrics[f"{r['worst_of']}_n"]
        assert r["n"] == logged > 0
    assert res["group"]["probes"] and res["left_out"] == []
    # scripted judges have no USD price: the Pareto front counts their cost of the work in LM
    # answers or tokens (never every judge tied at cost 0), and the plot and the notes say so
    paid_in = rows[0]["paid_in"]
    assert paid_in in ("tokens", "calls") and {r["paid_in"] for r in rows} == {paid_in}
    assert all(r["paid"] and r["paid"] > 0 for r in rows)
    assert res["notes"] == [
        f"the Pareto front counts each judge's cost of the work in {paid_in}, not USD: some "
        "runs' models had no price (local or unpriced), which would tie every judge at cost 0"
    ]
    assert set(res["plots"]) == {"pareto", "heatmap"}
    assert (tmp_path / "heatmap.png").stat().st_size > 0
    from PIL import Image

    from assay.comparison._tables import PAID_LABELS

    assert Image.open(tmp_path / "pareto.png").info["Description"] == PAID_LABELS[paid_in]
    per_test = compare(
        [store["harness"]],
        tracking_uri=store["uri"],
        metric="label_flip.pass_rate",
        log=False,
    ).model_dump()
    assert per_test["leaderboard"][0]["ci_low"] is not None


def lenient_references(folder: Path) -> Path:
    """The selftest's arithmetic with the references of a lenient annotator: of 8 answers, 5
    right sums and 2 wrong ones are labelled correct, 1 wrong one incorrect. A judge that says
    'correct' to anything agrees with more references than the clean judge does."""
    import random

    rng = random.Random(0)
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["id,request,response,expected"]
    for i in range(8):
        a, b = rng.randint(2, 60), rng.randint(2, 60)
        c = a + b + (rng.choice([-3, -2, -1, 1, 2, 3]) if i < 3 else 0)
        lines.append(
            f"a{i:02d},What is {a} + {b}?,I added them. {a} plus {b} equals {c}.,{int(i != 2)}"
        )
    path = folder / "lenient.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_selftest_defect_judges_cannot_lead_the_default_reliability_leaderboard(
    store, capsys, monkeypatch
):
    """Every `assay selftest` judge, each test of the self-test, on lenient references: ranked
    by mean pass rate a defect judge leads (the label-blind judge, which always says 'correct',
    passes every invariance test); on the default view the clean judge is first, and the
    label-blind judge, which never moves its verdict, is at 0."""
    from assay.reliability import run_harness
    from assay.reliability.selftest._selftest import register, selftest_config

    register()
    root = store["root"]
    config = selftest_config(lenient_references(root / "lenient"), tracking=True)
    # the noisy judge has no defect to rank it by: its worst rate is as its draws fall, and
    # may tie the clean judge's
    config.judges = [j for j in config.judges if j.name != "noisy"]
    config.tracking.experiment = "selftest"
    config.output_dir = str(root / "selftest-runs")
    run_id = run_harness(
        config, workdir=root, progress=False, tracking_uri=store["uri"]
    ).mlflow_run_id

    monkeypatch.setenv("MLFLOW_TRACKING_URI", store["uri"])
    monkeypatch.chdir(root)
    assert cli(["--json", "--no-log", "--out", "selftest-cmp", run_id]) == 0
    res = json.loads(capsys.readouterr().out)
    rows = res["leaderboard"]
    assert res["metric"] == "worst_test_rate"
    assert len(rows) == len(config.judges) == 7 and res["left_out"] == []
    assert rows[0]["judge"] == "clean" and rows[0]["pareto"]
    assert rows[0]["value"] > rows[1]["value"]  # first alone, not by a tie-break
    blind = next(r for r in rows if r["judge"] == "label_blind")
    assert (blind["value"], blind["worst_of"], blind["pareto"]) == (
        0.0,
        "label_flip.consistency",
        False,
    )
    # ranked by the mean pass rate instead, a defect judge comes first and Pareto-optimal
    mean = compare([run_id], tracking_uri=store["uri"], metric="mean_pass_rate", log=False)
    first = mean.leaderboard[0]
    assert first.judge != "clean" and first.pareto
    by_judge = {r.judge: r.value for r in mean.leaderboard}
    assert by_judge["label_blind"] > by_judge["clean"]


def test_worst_test_rate_says_when_no_test_requires_the_verdict_to_move():
    """Invariance tests alone cannot tell a constant judge from a good one: the comparison says
    so (label_flip, or an agent test, is what keeps a judge that ignores content off the top)."""
    from types import SimpleNamespace

    from assay.comparison._select import notes

    def run(**metrics) -> SimpleNamespace:
        return SimpleNamespace(data=SimpleNamespace(metrics=metrics))

    invariant = run(**{"format_indent.pass_rate": 1.0, "format_indent.consistency": 1.0})
    flips = run(**{"label_flip.pass_rate": 0.5, "label_flip.consistency": 0.0})
    (note,) = notes([invariant], "worst_test_rate")
    assert note.startswith("no compared run has a test whose verdict must move")
    assert notes([invariant, flips], "worst_test_rate") == []
    assert notes([invariant], "mean_pass_rate") == []


def test_runs_at_another_failure_threshold_are_left_out_and_n_is_the_metrics_own():
    """Failure precision at threshold 3 and at 4 counts other events (36 of 43 flagged items,
    69 of 74): the same judge's two runs were ranked one above the other, "sharing every judge
    param", each with n = 150 items. A run at another threshold is now left out with the
    reason, and a leaderboard row's n is its metric's own n where the run logged it."""
    from types import SimpleNamespace

    from assay.comparison._select import comparable
    from assay.comparison._tables import leaderboard

    def run(rid: str, threshold: str, precision: float, n: int) -> SimpleNamespace:
        return SimpleNamespace(
            info=SimpleNamespace(run_id=rid, run_name=rid, experiment_id="1", start_time=0),
            data=SimpleNamespace(
                params={"threshold": threshold, "judge.model": "m"},
                tags={"assay.items": "abc", "assay.scale": "ordinal 1-5", "assay.n_items": "150"},
                metrics={"failure_precision": precision, "failure_precision_n": n},
            ),
        )

    at3, at4, again3 = (
        run("a", "3", 36 / 43, 43),
        run("b", "4", 69 / 74, 74),
        run("c", "3", 0.8, 40),
    )
    left: list = []
    compared, key = comparable([at3, at4, again3], left, at3, force=False)
    assert compared == [at3, again3] and key[3] == "3"
    assert left == [{"run_id": "b", "name": "b", "reason": "threshold differs: 4 vs 3"}]
    rows = leaderboard(compared, "failure_precision")
    assert sorted(r.n for r in rows) == [40, 43]


def test_runs_logged_without_an_item_fingerprint_stand_in_a_labelled_group(store):
    """Runs an older assay logged (a data tag, no ``assay.items``) are compared only with runs
    of the same data tag and split, under a label that says so; a κ's n comes from their
    counts of the pairs scored on both sides (``n_paired``: they logged no ``kappa_*_n``), not
    from the items they were given."""
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=store["uri"])
    exp = client.create_experiment("legacy")
    old = {"assay.command": "evaluate", "assay.data": "0123abcd", "assay.scale": "binary"}

    def logged(name: str, kappa: float, n: int, paired: int, **tags) -> str:
        run = client.create_run(exp, run_name=name, tags={**old, **tags})
        client.log_metric(run.info.run_id, "kappa_categorical", kappa)
        client.log_metric(run.info.run_id, "n_items", n)
        client.log_metric(run.info.run_id, "n_paired", paired)
        client.set_terminated(run.info.run_id)
        return run.info.run_id

    a, b = logged("old-a", 0.4, 60, 60), logged("old-b", 0.6, 60, 52)
    child = logged(
        "old-opt/optimized", 0.9, 15, 15, **{"assay.command": "optimize", "assay.split": "test"}
    )
    res = compare(["legacy"], tracking_uri=store["uri"], log=False).model_dump()
    assert [(r["run_id"], r["n"]) for r in res["leaderboard"]] == [(b, 52), (a, 60)]
    assert not res["same_items"] and "old-b scored 52 of its 60 items" in res["notes"][0]
    assert res["group"]["items"] == "no item fingerprint: data 0123abcd"
    (left,) = res["left_out"]
    assert left["run_id"] == child
    assert left["reason"].startswith(
        "different items: no item fingerprint: data 0123abcd (test split), the compared runs' "
    )


def test_filters_by_experiment_and_tag(store):
    ids = store["ids"]
    res = compare(
        ["assay"],
        tracking_uri=store["uri"],
        tags={"assay.judge": "most"},
        log=False,
    ).model_dump()
    assert [r["run_id"] for r in res["leaderboard"]] == [ids["most"]]
    assert any(x["reason"] == "tag assay.judge is 'yes', not 'most'" for x in res["left_out"])
    with pytest.raises(RunError, match="no experiment 'elsewhere'"):
        compare(three(store), tracking_uri=store["uri"], experiment="elsewhere", log=False)


def test_pareto_front_needs_strict_improvement_in_one_coordinate():
    # all free: only the best is optimal; an equal twin is not dominated
    assert pareto_front([(0.0, 0.9), (0.0, 0.5), (0.0, 0.9)]) == [True, False, True]
    assert pareto_front([(1.0, 0.9), (0.5, 0.5), (2.0, 0.8), (None, 1.0)]) == [
        True,
        True,
        False,
        None,
    ]
    # a lower-is-better metric (MAE 0.1 and 0.3), oriented as the leaderboard does
    mae = "mae"
    assert pareto_front([(1.0, goodness(mae, 0.1)), (1.0, goodness(mae, 0.3))]) == [True, False]


def test_bad_input_gives_one_line_errors(store, tmp_path):
    missing = "0123456789abcdef0123456789abcdef"
    with pytest.raises(RunError, match=missing) as err:
        compare([store["ids"]["most"], missing], tracking_uri=store["uri"], log=False)
    assert "\n" not in str(err.value)

    nowhere = tmp_path / "no" / "such" / "x.db"
    with pytest.raises(ConfigError, match=f"sqlite:///{nowhere}"):
        compare([], tracking_uri=f"sqlite:///{nowhere}", log=False)
    assert not nowhere.parent.exists()  # refused, not created
    junk = tmp_path / "junk.db"
    junk.write_text("not a database\n")
    with pytest.raises(ConfigError, match=f"sqlite:///{junk}.*cannot open"):
        compare([], tracking_uri=f"sqlite:///{junk}", log=False)
    with pytest.raises(ConfigError, match="no MLflow store"):
        compare([], tracking_uri=str(tmp_path / "no-mlruns"), log=False)

    with pytest.raises(RunError, match=f"nothing to compare.*{store['plain']}.*not an assay run"):
        compare([store["plain"]], tracking_uri=store["uri"], log=False)
    with pytest.raises(RunError, match="metric 'kappa_typo'.*accuracy"):
        compare(three(store), tracking_uri=store["uri"], metric="kappa_typo", log=False)


def cli(argv: list[str]):
    args = build_parser().parse_args(["compare", *argv])
    return args.func(args)


def test_cli_reads_the_env_uri_and_prints_markdown_or_json(store, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store["uri"])
    monkeypatch.chdir(tmp_path)
    ids = [*three(store), store["ids"]["other"]]
    assert cli(["--no-log", *ids]) == 0
    text = capsys.readouterr().out
    assert "## Leaderboard — kappa_categorical (higher is better)" in text
    assert text.index("| 1 | perfect |") < text.index("| 2 | most |") < text.index("| 3 | yes |")
    assert "| adapter | json | chat | json |" in text
    assert f"- `{store['ids']['other']}` perfect-other-data: different items: 6 items" in text
    assert "| 1 | perfect | 8 |" in text
    assert (tmp_path / "compare" / "pareto.png").exists()  # default --out under the cwd

    assert cli(["--json", "--no-log", "--metric", "accuracy", "--out", "o", *ids]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["metric"] == "accuracy" and out["tracking_uri"] == store["uri"]
    assert [r["value"] for r in out["leaderboard"]] == pytest.approx([1.0, 0.75, 0.5])
    assert (tmp_path / "o" / "comparison.json").exists()
    with pytest.raises(ConfigError, match="--tag oops"):
        cli(["--tag", "oops", *ids])


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> dict:
    """Three judges run through the command line on the same 40 items, logged to one store: B
    wrong on item 4, C unparseable ("no idea") on items 21..39, B50 as B at
    bootstrap.confidence 0.5; their metrics.json by run name."""
    from assay.cli import main

    root = tmp_path_factory.mktemp("judged")
    n = 40
    truth = ["True" if i % 2 else "False" for i in range(n)]
    (root / "items.csv").write_text(
        "id,request,response,expected\n"
        + "".join(f"x{i},Question ITEM{i}?,Answer {i}.,{t}\n" for i, t in enumerate(truth))
    )
    flip = {"True": "False", "False": "True"}
    says = {
        "B": [flip[t] if i == 4 else t for i, t in enumerate(truth)],
        "C": [t if i < 21 else None for i, t in enumerate(truth)],  # None: "no idea"
    }
    uri = f"sqlite:///{root / 'mlflow.db'}"
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        for name, who, level in (("B", "B", 0.95), ("C", "C", 0.95), ("B50", "B", 0.5)):
            rules = [
                {"match": f"ITEM{i}?", "output": {"verdict": v} if v else "no idea"}
                for i, v in enumerate(says[who])
            ]
            (root / f"{name}.json").write_text(json.dumps({"rules": rules}))
            config = {
                "name": f"run{name}",
                "data": {"path": "items.csv", "columns": {"id": "id"}},
                "judge": {
                    "name": f"judge{name}",
                    "model": f"scripted:{name}.json",
                    "rubric": "r",
                    "scale": SCALE,
                },
                "bootstrap": {"confidence": level},
                "tracking": {"uri": uri},
            }
            (root / f"{name}.yaml").write_text(json.dumps(config))
            main(["evaluate", str(root / f"{name}.yaml"), "--quiet"])
    ran = {
        d.name.split("-")[0]: json.loads((d / "metrics.json").read_text())["metrics"]
        for d in (root / "runs").iterdir()
    }
    return {"uri": uri, "truth": truth, "says": says, "ran": ran, "root": root}


def _compare(capsys, judged: dict, *args: str) -> str:
    from assay.cli import main

    capsys.readouterr()
    out = ["--out", str(judged["root"] / "compare")]  # not ./compare in the checkout
    assert main(["compare", "--no-log", "--tracking-uri", judged["uri"], *out, *args]) == 0
    return capsys.readouterr().out


def _rows(capsys, judged: dict, *args: str) -> tuple[dict, dict]:
    out = json.loads(_compare(capsys, judged, "--json", *args))
    return out, {r["name"]: r for r in out["leaderboard"]}


def test_each_rows_n_is_what_its_metric_is_over_not_the_items_it_was_given(judged, capsys):
    """C, unparseable on 19 of the 40 items, ranked first on κ 1.000 with "n 40" under a
    header saying "the same 40 items", while its own metrics.json has κ over 21 (ranked by
    accuracy it showed 21, by balanced accuracy 40 again). Each row's n is now what its metric
    is over — scikit-learn's κ and balanced accuracy on exactly those pairs — and the header
    says the runs were given the same items, not that their figures are over them."""
    from sklearn.metrics import balanced_accuracy_score, cohen_kappa_score

    truth, says, ran = judged["truth"], judged["says"], judged["ran"]
    scored = [i for i, v in enumerate(says["C"]) if v is not None]
    out, rows = _rows(capsys, judged)
    assert rows["runC"]["n"] == len(scored) == ran["runC"]["kappa_categorical"]["n"] == 21
    assert rows["runC"]["value"] == cohen_kappa_score(
        [truth[i] for i in scored], [says["C"][i] for i in scored]
    )
    assert rows["runB"]["n"] == rows["runB50"]["n"] == 40
    assert rows["runB"]["value"] == pytest.approx(cohen_kappa_score(truth, says["B"]))
    assert out["same_items"] is False

    for metric in ("accuracy", "balanced_accuracy"):
        _, rows = _rows(capsys, judged, "--metric", metric)
        assert rows["runC"]["n"] == 21 and rows["runB"]["n"] == 40, metric
    assert rows["runB"]["value"] == pytest.approx(balanced_accuracy_score(truth, says["B"]))

    text = _compare(capsys, judged)
    assert "runs · the same 40 items" not in text
    assert "given the same 40 items" in text and "kappa_categorical not over the same ones" in text
    assert "runC scored 21 of its 40 items on both sides" in text
    assert "| 1 | runC | 21 |" in text

    both_scored = [rows["runB"]["run_id"], rows["runB50"]["run_id"]]
    text = _compare(capsys, judged, *both_scored)
    assert "runs · the same 40 items" in text and "not over the same" not in text


def test_intervals_at_different_confidence_levels_show_their_level(judged, capsys):
    """B at the default 95% and B50 at bootstrap.confidence 0.5 stood in one column as
    "0.950 [0.839, 1.000]" and "0.950 [0.939, 1.000]" with no level, and --json carried none.
    Each row now has its level (``ci_level``, logged by the run), the column says the rows'
    levels differ and a note says their widths do not compare; the 50% interval shown is the
    one scipy gives at 50%, and runs at one level share the heading "[95% CI]"."""
    from scipy.stats import binomtest

    ran = judged["ran"]
    out, rows = _rows(capsys, judged)
    assert [rows[r]["ci_level"] for r in ("runB", "runC", "runB50")] == [0.95, 0.95, 0.5]
    assert out["ci_level"] is None
    for r in ("runB", "runB50"):
        logged = ran[r]["kappa_categorical"]
        assert [rows[r]["ci_low"], rows[r]["ci_high"]] == pytest.approx(
            [logged["ci_low"], logged["ci_high"]]
        )

    _, rows = _rows(capsys, judged, "--metric", "accuracy")
    for r, level in (("runB", 0.95), ("runB50", 0.5)):
        cp = binomtest(39, 40).proportion_ci(confidence_level=level, method="exact")
        assert (rows[r]["ci_low"], rows[r]["ci_high"]) == pytest.approx((cp.low, cp.high))

    text = _compare(capsys, judged)
    assert "| kappa_categorical [CI, level] |" in text
    assert "different confidence levels (95%: runC, runB; 50%: runB50)" in text
    b50 = ran["runB50"]["kappa_categorical"]
    assert f"| 0.950 [{b50['ci_low']:.3f}, {b50['ci_high']:.3f}] 50% |" in text

    one_level = [rows["runB"]["run_id"], rows["runC"]["run_id"]]
    out, _ = _rows(capsys, judged, *one_level)
    assert out["ci_level"] == 0.95
    text = _compare(capsys, judged, *one_level)
    assert "| kappa_categorical [95% CI] |" in text and "confidence levels" not in text
