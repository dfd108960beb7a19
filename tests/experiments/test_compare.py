"""assay compare over runs that assay itself logged to one SQLite MLflow store: leaderboard
order, the differences table, runs left out (and forced in), plots, the comparison run, and
one-line errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import dspy
import pytest

from assay.cli import build_parser
from assay.errors import ConfigError, RunError
from assay.experiments import EvaluateConfig, evaluate, save_program
from assay.experiments.compare import compare, goodness, pareto_front, short_sha
from assay.lm import ScriptedEngine, register_script
from assay.programs import JudgeConfig, build_judge, judge_lm_factory

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

    from assay.experiments.reliability import HarnessConfig, run_harness
    from assay.experiments.reliability._selftest import register, write_data

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
    assert [r["value"] for r in rows] == pytest.approx([1.0, 0.5, 0.0])
    assert [r["accuracy"] for r in rows] == pytest.approx([1.0, 0.75, 0.5])
    for r in rows:
        assert r["ci_low"] <= r["value"] <= r["ci_high"]
        assert r["cost_per_accuracy_point_usd"] == pytest.approx(
            r["cost_usd"] / (r["accuracy"] * 100)
        )
    # priced so that the always-'True' judge is the dearest: it is dominated, the others not
    perfect, most, yes = rows
    assert most["cost_usd"] < perfect["cost_usd"] < yes["cost_usd"]
    assert [r["pareto"] for r in rows] == [True, True, False]
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
    data = res["group"]["data"]
    assert out["reason"].startswith("data set differs: ") and out["reason"].endswith(f" vs {data}")
    forced = compare(
        [*three(store), ids["other"]], tracking_uri=store["uri"], force=True, log=False
    ).model_dump()
    assert forced["left_out"] == [] and forced["group"] is None
    assert {r["run_id"] for r in forced["leaderboard"]} == {*three(store), ids["other"]}
    assert forced["leaderboard"][0]["value"] == pytest.approx(1.0)
    # the first run named decides which group is compared
    first_other = compare(
        [ids["other"], *three(store)], tracking_uri=store["uri"], log=False
    ).model_dump()
    assert [r["run_id"] for r in first_other["leaderboard"]] == [ids["other"]]
    assert len(first_other["left_out"]) == 3


def test_whole_experiment_compares_the_largest_group_and_logs_a_comparison_run(store, tmp_path):
    import mlflow

    out = tmp_path / "cmp"
    res = compare([], tracking_uri=store["uri"], out_dir=out).model_dump()
    assert [r["judge"] for r in res["leaderboard"]] == ["perfect", "most", "yes"]
    reasons = {x["run_id"]: x["reason"] for x in res["left_out"]}
    assert reasons[store["plain"]] == "not an assay run"
    assert reasons[store["ids"]["other"]].startswith("data set differs")
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
    assert res["metric"] == "mean_pass_rate"
    assert [r["judge"] for r in rows] == ["clean", "label_blind"]
    assert rows[0]["value"] == pytest.approx(1.0)
    assert rows[1]["value"] < rows[0]["value"]
    assert res["group"]["probes"] and res["left_out"] == []
    assert set(res["plots"]) == {"pareto", "heatmap"}
    assert (tmp_path / "heatmap.png").stat().st_size > 0
    per_test = compare(
        [store["harness"]],
        tracking_uri=store["uri"],
        metric="label_flip.pass_rate",
        log=False,
    ).model_dump()
    assert per_test["leaderboard"][0]["ci_low"] is not None


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
    assert f"- `{store['ids']['other']}` perfect-other-data: data set differs" in text
    assert (tmp_path / "compare" / "pareto.png").exists()  # default --out under the cwd

    assert cli(["--json", "--no-log", "--metric", "accuracy", "--out", "o", *ids]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["metric"] == "accuracy" and out["tracking_uri"] == store["uri"]
    assert [r["value"] for r in out["leaderboard"]] == pytest.approx([1.0, 0.75, 0.5])
    assert (tmp_path / "o" / "comparison.json").exists()
    with pytest.raises(ConfigError, match="--tag oops"):
        cli(["--tag", "oops", *ids])
