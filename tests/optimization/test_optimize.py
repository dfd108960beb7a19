"""assay optimize: few-shot demos fix a scripted judge's systematic mistake; the optimized program
is a reloadable artifact; the reliability-aware objective penalises a format-sensitive judge."""

from __future__ import annotations

import json
import math
from pathlib import Path

import dspy
import numpy as np
import pytest
import yaml

from assay.errors import ConfigError, RunError
from assay.inputs import load_config
from assay.lm import ScriptedEngine, make_adapter, register_script
from assay.optimization import (
    InvariantJudge,
    OptimizeConfig,
    SplitConfig,
    examples,
    make_metric,
    min_items_per_label,
    optimize,
    split_three,
)
from assay.programs import JudgeConfig, build_judge, judge_lm_factory
from assay.programs._state import load_program_state, resolve_program_state
from assay.runs import judge_items
from assay.types import Item

BINARY = {"kind": "binary", "labels": ["False", "True"]}
# The field-format block DSPy writes once into the system message; each demonstration and the
# actual input add one more "[[ ## response ## ]]".
MARKERS_WITHOUT_DEMOS = 2


def make_data(tmp_path: Path, n: int = 24) -> Path:
    rows = ["id,request,response,expected"]
    for i in range(n):
        y = i % 2
        response = (
            f"Sure. Here is how to do task {i}. Step one is simple."
            if y
            else f"No. I cannot help with task {i}. Please ask something else."
        )
        rows.append(f"o{i:02d},Do task {i},{response},{y}")
    path = tmp_path / "items.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def _truth(call) -> str:
    return "True" if "Sure" in (call.field("response") or "") else "False"


def needs_demos(call):
    """Systematic mistake: without demonstrations in the prompt it always says False."""
    demos = call.prompt.count("[[ ## response ## ]]") - MARKERS_WITHOUT_DEMOS
    return {"verdict": _truth(call) if demos > 0 else "False"}


def format_sensitive(call):
    """Right on clean text; flips its verdict on blank lines, space runs or indentation."""
    r = call.field("response") or ""
    odd = "\n" in r or "  " in r or "\t" in r or r != r.strip()
    truth = _truth(call)
    return {"verdict": ("False" if truth == "True" else "True") if odd else truth}


def clean(call):
    return {"verdict": _truth(call)}


ENGINES: dict[str, ScriptedEngine] = {}


def engine(name: str, respond) -> ScriptedEngine:
    """One shared engine per script, so a test can count every call a run made."""
    ENGINES[name] = ScriptedEngine(respond=respond, name=name)
    register_script(name, lambda: ENGINES[name])
    return ENGINES[name]


def make_config(tmp_path: Path, model: str, **overrides) -> OptimizeConfig:
    raw = {
        "name": "opt",
        "data": {"path": str(make_data(tmp_path))},
        "judge": {"model": f"scripted:{model}", "scale": BINARY, "rubric": "harmful = True"},
        "optimizer": {
            "name": "bootstrap_few_shot",
            "options": {"max_labeled_demos": 2, "max_bootstrapped_demos": 1},
        },
        "tracking": {"enabled": False},
        "concurrency": 2,
    }
    raw.update(overrides)
    return OptimizeConfig.model_validate(raw)


def dev_accuracy(program, items, judge_config) -> float:
    js = judge_items(program, items, judge_config, progress=False)
    return sum(j.score == it.expected for j, it in zip(js, items, strict=True)) / len(items)


@pytest.fixture(scope="module")
def mlflow_uri(tmp_path_factory) -> str:
    """One SQLite store for the module: creating its tables takes seconds."""
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"


def test_demos_fix_the_systematic_mistake_and_the_program_reloads(tmp_path, mlflow_uri):
    eng = engine("needs-demos", needs_demos)
    uri = mlflow_uri
    config = make_config(tmp_path, "needs-demos", tracking={"enabled": True, "experiment": "opt"})
    out = optimize(config, workdir=tmp_path, progress=False, tracking_uri=uri).model_dump()

    before, after = out["before"]["dev"]["metrics"], out["after"]["dev"]["metrics"]
    assert before["accuracy"]["value"] == pytest.approx(0.5)
    # without demos it says False on every item: κ measures nothing there, so it is undefined
    assert math.isnan(before["kappa_categorical"]["value"])
    assert "gave one verdict (False) on every item" in before["kappa_categorical"]["note"]
    assert after["accuracy"]["value"] == pytest.approx(1.0)
    assert after["kappa_categorical"]["value"] == pytest.approx(1.0)
    assert out["after"]["test"]["metrics"]["accuracy"]["value"] == pytest.approx(1.0)
    assert "ci_low" in after["accuracy"] and "ci_high" in after["accuracy"]
    assert out["objective"]["before"]["value"] < out["objective"]["after"]["value"] == 1.0

    # splits: stratified, disjoint, 12/6/6, ids logged
    s = out["split"]
    assert s["sizes"] == {"train": 12, "dev": 6, "test": 6}
    assert s["labels"]["dev"] == {"False": 3, "True": 3}
    assert not set(s["train_ids"]) & (set(s["dev_ids"]) | set(s["test_ids"]))
    # every optimizer call is counted: one bootstrapped trace (the teacher holds 2 labelled demos)
    u = out["usage"]
    assert u["optimization"]["calls"] == 1 and out["demos"] == 2
    assert u["baseline"]["calls"] == u["after"]["calls"] == 12
    assert u["total"]["calls"] == eng.n_calls == 25

    run_dir = Path(out["run_dir"])
    for f in ("baseline.json", "compile.json", "program.json", "result.json", "split.json"):
        assert (run_dir / f).exists()

    # the saved program reloads and reproduces its dev score exactly
    judge_cfg = config.judge
    dev = [it for it in _items(config) if it.id in s["dev_ids"]]
    reloaded = build_judge(judge_cfg, judge_lm_factory(retries=0))
    load_program_state(reloaded, out["program"])
    with dspy.context(adapter=make_adapter("json")):
        assert dev_accuracy(reloaded, dev, judge_cfg) == after["accuracy"]["value"]

    # MLflow: params, before/after metrics with CI bounds, program.json usable by reference
    import mlflow

    run = mlflow.MlflowClient(tracking_uri=uri).get_run(out["mlflow_run_id"])
    assert run.data.params["optimizer.name"] == "bootstrap_few_shot"
    assert run.data.params["split.n_train"] == "12"
    assert run.data.metrics["after.dev.accuracy"] == 1.0
    assert "after.dev.kappa_categorical_ci_low" in run.data.metrics
    assert "before.dev.kappa_categorical" not in run.data.metrics  # undefined: not a number
    assert run.data.metrics["before.dev.false_negative_rate_n"] == 3.0  # its own denominator
    assert run.data.metrics["optimization.calls"] == 1.0
    assert run.data.tags["assay.command"] == "optimize"
    ref = out["use"]["judge"]["program_state"]
    assert ref == f"runs:/{out['mlflow_run_id']}/program.json"
    local = resolve_program_state(ref, uri, cache_dir=tmp_path / "cache")
    assert json.loads(Path(local).read_text()) == json.loads(Path(out["program"]).read_text())
    by_ref = build_judge(judge_cfg, judge_lm_factory(retries=0))
    load_program_state(by_ref, ref, tracking_uri=uri, cache_dir=tmp_path / "cache")
    with dspy.context(adapter=make_adapter("json")):
        assert dev_accuracy(by_ref, dev, judge_cfg) == 1.0
    # no pickled model unless asked for (log_mlflow_model): loading one runs arbitrary code
    assert out["mlflow_model"] is None

    # a finished run is re-read: no LM call
    n = eng.n_calls
    again = optimize(config, workdir=tmp_path, progress=False, tracking_uri=uri).model_dump()
    assert again["reused"] and eng.n_calls == n


def _items(config: OptimizeConfig) -> list[Item]:
    from assay.inputs import load_items

    return load_items(config.data, config.judge.scale)


def test_a_run_optimized_without_tracking_is_logged_once_by_a_later_call_that_tracks(
    tmp_path, mlflow_uri
):
    """The same run made with tracking off, then asked again with it on: read back (no call),
    logged now — the parent and its two judge entries — with its run id and the tuned program's
    reference in its result; a third call finds it logged and logs nothing more."""
    eng = engine("needs-demos", needs_demos)
    first = optimize(make_config(tmp_path, "needs-demos"), workdir=tmp_path, progress=False)
    assert first.mlflow_run_id is None
    calls = eng.n_calls
    tracked = make_config(
        tmp_path, "needs-demos", tracking={"enabled": True, "experiment": "opt-late"}
    )
    again = optimize(tracked, workdir=tmp_path, progress=False, tracking_uri=mlflow_uri)
    assert again.reused and eng.n_calls == calls and again.run_dir == first.run_dir
    assert again.mlflow_run_id is not None
    assert again.use == {"judge": {"program_state": f"runs:/{again.mlflow_run_id}/program.json"}}
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=mlflow_uri)
    experiment = client.get_experiment_by_name("opt-late").experiment_id
    assert len(client.search_runs([experiment])) == 3  # the parent and its two judge entries
    logged = client.get_run(again.mlflow_run_id).data.metrics
    after = again.model_dump()["after"]["dev"]["metrics"]
    assert logged["after.dev.accuracy"] == after["accuracy"]["value"]
    third = optimize(tracked, workdir=tmp_path, progress=False, tracking_uri=mlflow_uri)
    assert third.mlflow_run_id == again.mlflow_run_id
    assert len(client.search_runs([experiment])) == 3


def test_build_judge_with_program_state_keeps_its_lm(tmp_path):
    engine("needs-demos", needs_demos)
    out = optimize(
        make_config(tmp_path, "needs-demos"), workdir=tmp_path, progress=False
    ).model_dump()
    cfg = JudgeConfig(
        model="scripted:needs-demos",
        scale=BINARY,
        rubric="harmful = True",
        program_state=out["program"],
    )
    program = build_judge(cfg, judge_lm_factory(retries=0))
    with dspy.context(adapter=make_adapter("json")):
        pred = program(rubric="harmful = True", request="x", response="Sure. Here it is.")
    assert pred.score == 1


def test_program_state_errors_are_one_line(tmp_path, mlflow_uri):
    with pytest.raises(ConfigError, match="file not found"):
        resolve_program_state("nowhere/program.json", base=tmp_path)
    with pytest.raises(ConfigError, match="cannot download from MLflow") as err:
        resolve_program_state("runs:/0123456789abcdef/program.json", mlflow_uri, cache_dir=tmp_path)
    assert "\n" not in str(err.value)


# -- the reliability-aware objective ------------------------------------------------------------
def test_invariance_metric_lowers_a_format_sensitive_judge_only(tmp_path):
    engine("sensitive", format_sensitive)
    engine("clean", clean)
    config = make_config(tmp_path, "clean", invariance={"enabled": True, "weight": 0.5})
    plain_config = make_config(tmp_path, "clean")
    items = _items(config)[:8]
    with_inv, plain = make_metric(config), make_metric(plain_config)
    scores: dict[str, dict[str, list[float]]] = {}
    for name in ("clean", "sensitive"):
        cfg = config.judge.model_copy(update={"model": f"scripted:{name}"})
        program = InvariantJudge(
            build_judge(cfg, judge_lm_factory(retries=0)), config.invariance.variants
        )
        exs = examples(program, items, cfg)
        with dspy.context(adapter=make_adapter("json")):
            preds = [program(**ex.inputs()) for ex in exs]
        assert all(len(p.variant_scores) == 3 for p in preds)  # every variant applies
        scores[name] = {
            "plain": [plain(ex, p) for ex, p in zip(exs, preds, strict=True)],
            "invariance": [with_inv(ex, p) for ex, p in zip(exs, preds, strict=True)],
            "trace": [with_inv(ex, p, trace=[]) for ex, p in zip(exs, preds, strict=True)],
        }
    # the plain metric cannot tell them apart; the reliability-aware one can
    assert scores["clean"]["plain"] == scores["sensitive"]["plain"] == [1.0] * 8
    assert scores["clean"]["invariance"] == [1.0] * 8
    assert scores["sensitive"]["invariance"] == [0.5] * 8  # right label, every variant flipped
    # while bootstrapping, a demo must be right *and* stable
    assert scores["clean"]["trace"] == [True] * 8 and scores["sensitive"]["trace"] == [False] * 8


def test_variant_calls_stay_out_of_the_trace(tmp_path):
    engine("clean", clean)
    cfg = make_config(tmp_path, "clean").judge
    program = InvariantJudge(build_judge(cfg, judge_lm_factory(retries=0)), ["format_vertical"])
    with dspy.context(adapter=make_adapter("json"), trace=[]):
        program(rubric="r", request="q", response="Sure. Here it is. Step one.")
        assert len(dspy.settings.trace) == 1


def test_both_parts_are_reported_before_and_after(tmp_path):
    engine("sensitive", format_sensitive)
    config = make_config(tmp_path, "sensitive", invariance={"enabled": True, "weight": 0.5})
    out = optimize(config, workdir=tmp_path, progress=False).model_dump()
    for phase in ("before", "after"):
        o = out["objective"][phase]
        assert o["label_agreement"] == 1.0
        assert o["consistency"] == 0.0 and o["with_variants"] == 6
        assert o["value"] == pytest.approx(0.5)
    # the dev format variants were judged too (3 per dev item), before and after
    assert out["usage"]["baseline"]["calls"] == 12 + 18


def test_a_judge_that_never_answers_fails_the_run_with_the_reasons(tmp_path, monkeypatch, capsys):
    """Every baseline judgment an LM error: the command stops before compiling (which would
    call the same dead judge) with one line counting the reasons."""
    from assay.cli import main
    from assay.lm import ScriptedFailure

    def down(call):
        raise ScriptedFailure("provider down")

    engine("down", down)
    path = tmp_path / "opt.yaml"
    config = make_config(tmp_path, "down", retries=0)
    path.write_text(yaml.safe_dump(config.model_dump(mode="json")))
    monkeypatch.chdir(tmp_path)
    assert main(["optimize", str(path), "--quiet"]) == 2
    (line,) = [x for x in capsys.readouterr().err.splitlines() if x.startswith("assay:")]
    # 24 items: 12 train, 6 dev, 6 test; dev and test judged
    assert line.endswith(
        ": before optimizing: all 12 judgments unscored: lm_error 12; nothing to optimize "
        "(once the cause is fixed, remove this run directory and run again)"
    )
    assert ENGINES["down"].n_calls == 12  # the baseline's calls, no optimizer's


# -- bad input and crashes ----------------------------------------------------------------------
def test_unknown_optimizer_lists_the_known_ones(tmp_path):
    raw = make_config(tmp_path, "clean").model_dump(mode="json")
    raw["optimizer"]["name"] = "annealing"
    path = tmp_path / "opt.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError) as err:
        load_config(path, model=OptimizeConfig)
    msg = str(err.value)
    assert "unknown optimizer 'annealing'" in msg and "\n" not in msg
    for name in ("bootstrap_few_shot", "random_search", "mipro", "simba", "gepa"):
        assert name in msg


def test_too_small_data_set_says_the_minimum(tmp_path):
    engine("clean", clean)
    config = make_config(tmp_path, "clean")
    config.data.path = str(make_data(tmp_path, n=10))  # 5 per label
    assert min_items_per_label(config.split) == 8
    with pytest.raises(ConfigError, match="needs at least 8 per label"):
        optimize(config, workdir=tmp_path, progress=False)
    assert not (tmp_path / "runs").exists()  # nothing written before input is validated


def test_optimizer_option_errors_are_config_errors(tmp_path):
    engine("clean", clean)
    bad = make_config(
        tmp_path, "clean", optimizer={"name": "bootstrap_few_shot", "options": {"nope": 1}}
    )
    with pytest.raises(ConfigError, match="options"):
        optimize(bad, workdir=tmp_path, progress=False)
    gepa = make_config(tmp_path, "clean", optimizer={"name": "gepa", "options": {"auto": "light"}})
    with pytest.raises(ConfigError, match="reflection_lm"):
        optimize(gepa, workdir=tmp_path, progress=False)


def test_splits_are_stratified_seeded_and_disjoint():
    labels = {f"i{k:02d}": int(k % 3 == 0) for k in range(30)}
    a = split_three(labels, SplitConfig(seed=1))
    assert a == split_three(labels, SplitConfig(seed=1))
    assert a != split_three(labels, SplitConfig(seed=2))
    assert sorted(a["train"] + a["dev"] + a["test"]) == sorted(labels)
    # 10 positives: 5 train, then 5 split 2.5/2.5, rounded half to even like split_ids
    for part, want in (("train", 5), ("dev", 2), ("test", 3)):
        assert sum(labels[i] for i in a[part]) == want


def test_baseline_survives_a_crash_in_compile_and_is_reused(tmp_path, monkeypatch):
    eng = engine("needs-demos", needs_demos)
    config = make_config(tmp_path, "needs-demos")

    def boom(self, student, **kwargs):
        raise RuntimeError("optimizer crashed")

    monkeypatch.setattr(dspy.BootstrapFewShot, "compile", boom)
    with pytest.raises(RuntimeError, match="optimizer crashed"):
        optimize(config, workdir=tmp_path, progress=False)
    run_dir = next((tmp_path / "runs").iterdir())
    baseline = json.loads((run_dir / "baseline.json").read_text())
    assert baseline["measure"]["dev"]["metrics"]["accuracy"]["value"] == pytest.approx(0.5)
    assert eng.n_calls == 12 and not (run_dir / "program.json").exists()

    monkeypatch.undo()
    out = optimize(config, workdir=tmp_path, progress=False).model_dump()
    assert out["before"]["reused"]
    assert out["before"]["dev"] == baseline["measure"]["dev"]
    # the re-run judged no baseline item again: optimizer + after only
    assert eng.n_calls - 12 == out["usage"]["optimization"]["calls"] + 12
    assert out["after"]["dev"]["metrics"]["accuracy"]["value"] == pytest.approx(1.0)


def test_another_judge_price_optimizes_again_from_the_lm_cache_at_that_price(tmp_path):
    """The judge priced dear, then cheap: the cheap run is a run of its own (not the dear one's
    result read back), its answers from the LM cache (no call), every stage costed at the cheap
    price; the tuned program is the same."""
    eng = engine("needs-demos", needs_demos)
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=True)  # as a command has

    def run(price: dict[str, float]) -> dict:
        judge = {"model": "scripted:needs-demos", "scale": BINARY, "rubric": "harmful = True"}
        config = make_config(tmp_path, "needs-demos", judge={**judge, "price": price})
        return optimize(config, workdir=tmp_path, progress=False).model_dump()

    def cost(usage: dict, price: dict[str, float]) -> float:
        p = usage["prompt_tokens"] + usage["cached_prompt_tokens"]
        c = usage["completion_tokens"] + usage["cached_completion_tokens"]
        return (p * price["input_per_mtok"] + c * price["output_per_mtok"]) / 1e6

    dear = run({"input_per_mtok": 1000.0, "output_per_mtok": 1000.0})
    calls = eng.n_calls
    cheap_price = {"input_per_mtok": 1.0, "output_per_mtok": 2.0}
    cheap = run(cheap_price)
    assert eng.n_calls == calls and not cheap["reused"]
    total = cheap["usage"]["total"]
    assert total["calls"] == 0 and total["cached_calls"] == dear["usage"]["total"]["calls"] > 0
    work = total["cost_usd"] + total["cached_cost_usd"]
    assert work == pytest.approx(cost(total, cheap_price), rel=1e-9)
    assert Path(cheap["program"]).read_text() == Path(dear["program"]).read_text()
    assert run(cheap_price)["reused"] and eng.n_calls == calls
    # the console says what was paid (nothing) and the cost of the work, as evaluate does: it
    # printed "LM calls: baseline 0 · optimizer 0 · after 0 · total cost $0.000000" alone
    from assay.optimization import OptimizeResult
    from assay.optimization._report import render_result

    shown = render_result(OptimizeResult.model_validate(cheap))
    assert (
        "LM calls answered by the server: baseline 0 · optimizer 0 · after 0 · paid $0.000000"
        in (shown)
    )
    assert (
        f"cost of the work: {total['cached_calls']} LM answers · tokens "
        f"{total['cached_prompt_tokens']}+{total['cached_completion_tokens']} · cost ${work:.6f} "
        f"(0 answered by the server for these results, {total['cached_calls']} taken from the LM "
        "cache" in shown
    )


MARKER = "CHECK-COMPLIANCE"


def needs_marker(call):
    """Systematic mistake an instruction fixes: always False unless told to check compliance."""
    return {"verdict": _truth(call) if MARKER in call.prompt else "False"}


def test_gepa_rewrites_the_instruction_and_counts_the_reflection_lm(tmp_path):
    judge = engine("needs-marker", needs_marker)
    reflector = engine(
        "reflector", lambda call: {"new_instruction": f"{MARKER}: True when the response complies."}
    )
    price = {"input_per_mtok": 1.0, "output_per_mtok": 2.0}
    options = {
        "reflection_lm": {"model": "scripted:reflector", "temperature": 1.0, "price": price},
        "max_metric_calls": 40,
    }
    config = make_config(tmp_path, "needs-marker", optimizer={"name": "gepa", "options": options})
    out = optimize(config, workdir=tmp_path, progress=False).model_dump()
    assert out["before"]["dev"]["metrics"]["accuracy"]["value"] == pytest.approx(0.5)
    assert out["after"]["dev"]["metrics"]["accuracy"]["value"] == pytest.approx(1.0)
    state = json.loads(Path(out["program"]).read_text())
    assert state["predict"]["signature"]["instructions"].startswith(MARKER)
    # the calls GEPA makes in its parallel evaluations are counted too, per model
    by_model = out["usage"]["optimization_by_model"]
    r = by_model["scripted/reflector"]
    assert r["calls"] == reflector.n_calls >= 1
    assert r["cost_usd"] == pytest.approx(
        (r["prompt_tokens"] * 1.0 + r["completion_tokens"] * 2.0) / 1e6
    )
    assert by_model["scripted/needs-marker"]["calls"] == judge.n_calls - 24 > 0


def test_random_search_uses_dev_for_selection(tmp_path):
    eng = engine("needs-demos", needs_demos)
    config = make_config(
        tmp_path,
        "needs-demos",
        optimizer={
            "name": "random_search",
            "options": {
                "max_labeled_demos": 2,
                "max_bootstrapped_demos": 1,
                "num_candidate_programs": 1,
            },
        },
    )
    out = optimize(config, workdir=tmp_path, progress=False).model_dump()
    assert out["after"]["dev"]["metrics"]["accuracy"]["value"] == pytest.approx(1.0)
    # its candidate evaluations run in DSPy worker threads: every call is still counted
    assert out["usage"]["optimization"]["calls"] == eng.n_calls - 24 > 12


# -- end to end on the embedded model -----------------------------------------------------------
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.local_model
def test_optimize_harmbench_example_end_to_end(tmp_path, example_data):
    """The example loop on SmolLM2-135M. A 135M model does not get much better from two
    demonstrations (it may get worse): this checks that the loop runs end to end, not that the
    judge improves. 16 items (8 per label, the least a stratified 0.5/0.25/0.25 split takes)
    keep it to 16 judge calls: 8 baseline, 8 with the demos; the optimizer itself makes none."""
    pytest.importorskip("llama_cpp", reason="pip install 'assay[local]'")
    import mlflow

    from tests.evaluation.test_local_model import short_copy

    data = short_copy(tmp_path, "data/jrh/harmbench/harmbench.csv", ("test_case", "generation"))
    config, base = load_config(
        EXAMPLES / "optimize_harmbench.yaml",
        {"data.limit": 16, "data.path": data, "judge.max_tokens": 16},
        model=OptimizeConfig,
    )
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    out = optimize(
        config, workdir=tmp_path, config_dir=base, progress=False, tracking_uri=uri
    ).model_dump()
    assert out["split"]["sizes"] == {"train": 8, "dev": 4, "test": 4}
    for phase in ("before", "after"):
        for part in ("dev", "test"):
            c = out[phase][part]["counts"]
            assert c["scored"] == c["paired"] == 4  # constrained decoding: every verdict parses
            assert "kappa_categorical" in out[phase][part]["metrics"]
    u = out["usage"]
    assert u["optimization"]["calls"] == 0 and out["demos"] == 2
    assert u["baseline"]["calls"] == u["after"]["calls"] == 8
    assert u["after"]["prompt_tokens"] > u["baseline"]["prompt_tokens"]  # the demos are sent

    reloaded = build_judge(config.judge, lambda _c: None)
    load_program_state(reloaded, out["use"]["judge"]["program_state"], tracking_uri=uri)
    assert sum(len(p.demos) for p in reloaded.predictors()) == 2
    run = mlflow.MlflowClient(tracking_uri=uri).get_run(out["mlflow_run_id"])
    assert run.data.params["judge.model"] == "local"
    assert "after.test.accuracy" in run.data.metrics


def test_compare_ranks_the_optimize_children_only_beside_runs_on_their_test_items(
    tmp_path, mlflow_uri, capsys, monkeypatch
):
    """An optimize run's baseline and optimized judges are measured on its test split (6 of
    24 items): an evaluate run on all 24 items is left out, with why, and one on exactly those
    6 items (another file, other row order) is ranked with them; every row shows its n."""
    import csv

    from assay.cli import build_parser
    from assay.comparison import compare
    from assay.evaluation import evaluate
    from assay.inputs import EvaluateConfig
    from assay.inputs._config import DataConfig
    from assay.inputs._items import load_items

    engine("needs-demos-cmp", needs_demos)
    engine("clean-cmp", clean)
    tracking = {"enabled": True, "experiment": "opt-cmp"}
    config = make_config(tmp_path, "needs-demos-cmp", tracking=tracking)
    out = optimize(config, workdir=tmp_path, progress=False, tracking_uri=mlflow_uri).model_dump()
    test_ids = set(json.loads((Path(out["run_dir"]) / "split.json").read_text())["test_ids"])

    def run_evaluate(name: str, data: Path) -> str:
        cfg = {
            "name": name,
            "data": {"path": str(data)},
            "judge": {"model": "scripted:clean-cmp", "scale": BINARY, "rubric": "harmful = True"},
            "tracking": tracking,
        }
        return evaluate(
            EvaluateConfig.model_validate(cfg),
            workdir=tmp_path,
            progress=False,
            tracking_uri=mlflow_uri,
        ).mlflow_run_id

    full = make_data(tmp_path)
    everything = run_evaluate("clean-all", full)
    # the test split's rows, written to another file in reverse order
    scale = config.judge.scale
    rows = {
        it.meta["id"] for it in load_items(DataConfig(path=str(full)), scale) if it.id in test_ids
    }
    with full.open() as f:
        table = list(csv.DictReader(f))
    subset = tmp_path / "test-split.csv"
    with subset.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(table[0]))
        w.writeheader()
        w.writerows(reversed([r for r in table if r["id"] in rows]))
    same_items = run_evaluate("clean-test-items", subset)

    res = compare(
        [], tracking_uri=mlflow_uri, experiment="opt-cmp", metric="accuracy", log=False
    ).model_dump()
    by_name = {r["name"]: r for r in res["leaderboard"]}
    assert sorted(by_name) == ["clean-test-items", "opt/baseline", "opt/optimized"]
    assert {r["n"] for r in res["leaderboard"]} == {len(test_ids)} == {6}
    assert {r["measured_on"] for r in res["leaderboard"]} >= {"6 of 24 items (test split)"}
    assert by_name["clean-test-items"]["measured_on"] == "6 items"
    assert len({r["items"] for r in res["leaderboard"]}) == 1
    assert res["group"]["measured_on"] == "6 items = 6 of 24 items (test split)"
    (left,) = res["left_out"]
    assert left["run_id"] == everything
    assert left["reason"] == (
        "different items: 24 items, the compared runs' 6 items = 6 of 24 items (test split)"
    )
    test_acc = {p: out[p]["test"]["metrics"]["accuracy"]["value"] for p in ("before", "after")}
    assert by_name["opt/baseline"]["value"] == pytest.approx(test_acc["before"])
    assert by_name["opt/optimized"]["value"] == pytest.approx(test_acc["after"])
    assert by_name["opt/optimized"]["optimized"] and not by_name["opt/baseline"]["optimized"]
    assert res["group"]["kind"] == "agreement"
    optimizers = res["differences"]["rows"]["optimizer"]
    column = {c: i for i, c in enumerate(res["differences"]["columns"])}
    assert optimizers[column["opt/optimized"]] == "bootstrap_few_shot"
    assert optimizers[column["opt/baseline"]] == "none"

    # naming the evaluate run on all items first compares its group: it alone — no comparison,
    # refused in one line naming the run left out
    with pytest.raises(RunError, match=f"nothing to compare: only {everything}.*{same_items}"):
        compare([everything, same_items], tracking_uri=mlflow_uri, log=False)

    # the command line: n on every row, the reason in the list of runs left out
    monkeypatch.chdir(tmp_path)
    args = build_parser().parse_args(
        ["compare", "--no-log", "--tracking-uri", mlflow_uri, "--experiment", "opt-cmp"]
    )
    assert args.func(args) == 0
    text = capsys.readouterr().out
    assert "· the same 6 items = 6 of 24 items (test split) (items `" in text
    for name in ("opt/baseline", "opt/optimized", "clean-test-items"):
        assert f"| {name} | 6 |" in text
    assert f"- `{everything}` clean-all: different items: 24 items, the compared" in text
    html = (tmp_path / "compare" / "report.html").read_text()
    assert "6 of 24 items (test split)" in html


def test_within_one_and_log_loss_objectives(tmp_path):
    """The per-example surrogates an optimizer can target: within-one on an ordinal scale, and
    the bounded log loss of the probability a binary judge gives the right verdict."""
    ordinal = make_config(
        tmp_path, "x", metric="within_one", judge={"model": "scripted:x", "scale": "1-6"}
    )
    metric = make_metric(ordinal)
    ex = dspy.Example(expected=3)
    assert [metric(ex, dspy.Prediction(score=s)) for s in (2, 3, 4, 5, None)] == [1, 1, 1, 0, 0]
    binary = make_config(
        tmp_path,
        "x",
        metric="log_loss",
        judge={"model": "scripted:x", "scale": BINARY, "score_mode": "expected"},
    )
    metric = make_metric(binary)
    right = metric(dspy.Example(expected=1), dspy.Prediction(score=1, expected_score=0.9))
    assert right == pytest.approx(1 + np.log(0.9) / np.log(100))
    assert metric(dspy.Example(expected=0), dspy.Prediction(score=1, expected_score=0.999)) == 0.0
    with pytest.raises(ValueError, match="metric 'log_loss' needs a binary judge"):
        make_config(tmp_path, "x", metric="log_loss")


def test_a_finished_run_with_an_edited_file_is_refused_not_sealed_again(tmp_path):
    """A verdict edited in baseline.jsonl, or a figure in baseline.json, of a finished run:
    the re-run rebuilt the run on them and sealed it again — the seal then vouched for the
    forged verdict. What the optimizer made cannot be told from the files: the run is refused
    in one line, left as it is, every time."""
    engine("needs-demos", needs_demos)
    config = make_config(tmp_path, "needs-demos")
    run_dir = Path(optimize(config, workdir=tmp_path, progress=False).run_dir)
    state = (run_dir / "run.json").read_text()
    path = run_dir / "baseline.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    lines[0]["score"] = 1 - lines[0]["score"]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    for _ in range(2):
        with pytest.raises(RunError, match="baseline.jsonl is not the file the run sealed"):
            optimize(config, workdir=tmp_path, progress=False)
        assert (run_dir / "run.json").read_text() == state  # not reopened, not sealed again


def test_the_dev_table_says_when_the_optimizer_selected_on_it(tmp_path):
    """random_search, mipro and gepa select among candidates on dev: its after is in-sample, and
    the dev table said nothing of it, in the held-out test table's very format."""
    from assay.optimization import OptimizeResult
    from assay.optimization._report import render_result

    engine("needs-demos", needs_demos)
    result = optimize(make_config(tmp_path, "needs-demos"), workdir=tmp_path, progress=False)
    shown = render_result(result)
    assert "dev (6 paired) — held out: the optimizer did not see them:" in shown
    data = result.model_dump()
    data["optimizer"]["name"] = "random_search"
    shown = render_result(OptimizeResult.model_validate(data))
    assert "dev (6 paired) — the optimizer selected on these items: not held out" in shown
    assert "test (6 paired) — held out: the optimizer did not see them:" in shown
