"""The harness pipeline with scripted LMs: counted calls, cache bypass for stability, dropped
probes, resume after a kill, zero calls on a re-run, review gating, the self-test."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dspy
import pytest

from assay.errors import ConfigError
from assay.lm import ScriptedEngine, register_script
from assay.reliability import HarnessConfig, run_harness
from assay.reliability.selftest._selftest import (
    generator,
    judge_responder,
    register,
    validator,
    write_data,
)


@pytest.fixture
def engines():
    """Shared scripted engines (so calls are counted across the whole run)."""
    e = {
        "gen": ScriptedEngine(respond=generator),
        "val": ScriptedEngine(respond=validator),
        "judge": ScriptedEngine(respond=judge_responder("unstable")),
    }
    register_script("t-gen", lambda: e["gen"])
    register_script("t-val", lambda: e["val"])
    register_script("t-judge", lambda: e["judge"])
    return e


def config(tmp_path: Path, tests: dict, **kw) -> HarnessConfig:
    data = write_data(tmp_path / "data", n=6)
    raw = {
        "name": "t",
        "data": {"path": str(data)},
        "scale": {"kind": "binary", "labels": ["incorrect", "correct"]},
        "generator": {"model": "scripted:t-gen", "temperature": 0.7},
        "validator": {"model": "scripted:t-val", "temperature": 0.0},
        "judges": [{"name": "j", "model": "scripted:t-judge", "rubric": "state the correct sum"}],
        "tests": tests,
        "retries": 0,
        "tracking": {"enabled": False},
        "output_dir": str(tmp_path / "runs"),
        **kw,
    }
    return HarnessConfig.model_validate(raw)


def test_stochastic_stability_makes_k_fresh_calls_at_the_configured_temperature(tmp_path, engines):
    # the DSPy cache is ON here: stability probes must still reach the model (distinct rollouts)
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=True)
    cfg = config(tmp_path, {"stochastic_stability": {"k": 4, "temperature": 0.9}})
    res = run_harness(cfg, workdir=tmp_path, progress=False)
    calls = engines["judge"].calls
    sampled = [c for c in calls if c.temperature == 0.9]
    assert len(sampled) == 6 * 4  # k per seed, none served from the cache
    assert len(calls) == 6 * 4 + 6  # plus one deterministic call per source
    assert {c.temperature for c in calls} == {0.9, 0.0}
    assert engines["gen"].n_calls == 0 and engines["val"].n_calls == 0
    m = res.summary.judges["j"].tests["stochastic_stability"]
    assert m.scoring_metrics["items"] == 6 and m.pass_rate.n == 6


def test_label_flip_drops_probes_the_validator_does_not_confirm(tmp_path, engines):
    def picky(call):
        if "confirmed" in call.fields and "a00" not in call.prompt and "a01" not in call.prompt:
            out = validator(call)
            # refuse every second confirmation
            return {**out, "confirmed": out["confirmed"] and call.index % 2 == 0}
        return validator(call)

    engines["val"].respond = picky
    cfg = config(tmp_path, {"label_flip": {}})
    res = run_harness(cfg, workdir=tmp_path, progress=False)
    n_probes = res.summary.probes["label_flip"]
    rejected = res.summary.dropped.get("label_flip", {}).get("validator_rejected", 0)
    assert rejected > 0 and n_probes + rejected == 6
    probes = [json.loads(x) for x in (res.run_dir / "probes.jsonl").read_text().splitlines()]
    assert len(probes) == n_probes and all(p["validation"]["verdict"] for p in probes)


def test_generation_keeps_no_call_in_dspy_history_or_trace(tmp_path, engines):
    """DSPy keeps the last 10,000 calls of every LM and module, and the last 10,000
    predictions, with the texts: a harness's generator and validator calls (and its judges')
    are in the run's files instead, so its memory does not grow with them."""
    from dspy.clients.base_lm import GLOBAL_HISTORY

    def kept() -> tuple:
        """Each one's length and last entry (when one is full, the oldest goes as one comes)."""
        trace = dspy.settings.trace or []
        last = [id(x) for x in (*GLOBAL_HISTORY[-1:], *trace[-1:])]
        return len(GLOBAL_HISTORY), len(trace), last

    before = kept()
    cfg = config(tmp_path, {"label_flip": {}})
    res = run_harness(cfg, workdir=tmp_path, progress=False)
    assert engines["gen"].n_calls > 0 and engines["val"].n_calls > 0
    assert res.summary.probes["label_flip"] > 0
    assert kept() == before


def test_the_probes_are_released_before_the_reports_are_written(tmp_path, engines, monkeypatch):
    """The end of a run (the reports, MLflow's logging) reads the run's files: the probes the
    run judged, reviewed or not, are no longer held by then, nor copied by the review step."""
    import gc
    import weakref

    import assay.reliability.engine._run_files as run_files
    import assay.reliability.report as report

    monkeypatch.setenv("ASSAY_SIDECAR", "0")  # the reports drawn in this process
    given, copied, ids = [], [], set()
    apply = run_files.apply_reviews

    def reviewed(probes, reviews):  # each reading of a test's probes back from probes.jsonl
        out = apply(probes, reviews)
        given.extend(weakref.ref(p) for p in out)
        ids.update(p.id for p in out)
        copied.extend(a is not b for a, b in zip(probes, out, strict=True))
        return out

    alive_at_reports = []
    write = report.write_reports

    def write_reports(run_dir):
        gc.collect()
        alive_at_reports.append(sum(r() is not None for r in given))
        return write(run_dir)

    monkeypatch.setattr(run_files, "apply_reviews", reviewed)
    monkeypatch.setattr(report, "write_reports", write_reports)
    res = run_harness(config(tmp_path, {"paraphrase": {}}), workdir=tmp_path, progress=False)
    assert res.summary.probes["paraphrase"] == 6 and len(ids) == 6
    assert copied == [False] * len(given)  # no decision: nothing to copy
    assert alive_at_reports == [0]
    assert (res.run_dir / "report.html").is_file()


def test_failed_generations_are_dropped_and_counted_never_judged(tmp_path, engines):
    from assay.lm import ScriptedFailure

    def flaky(call):
        if "twice as long" in call.prompt:
            raise ScriptedFailure("generator down")
        return generator(call)

    engines["gen"].respond = flaky
    cfg = config(tmp_path, {"verbosity_long": {}, "paraphrase": {}})
    res = run_harness(cfg, workdir=tmp_path, progress=False)
    assert res.summary.probes["verbosity_long"] == 0
    assert res.summary.dropped["verbosity_long"] == {"generation_failed": 6}
    assert res.summary.probes["paraphrase"] == 6
    judged = (res.run_dir / "judgments").glob("*.jsonl")
    texts = [json.loads(x)["item_id"] for f in judged for x in f.read_text().splitlines()]
    assert not any(t.startswith("verbosity_long") for t in texts)


def test_rerun_of_a_finished_harness_makes_no_lm_call(tmp_path, engines):
    cfg = config(
        tmp_path, {"paraphrase": {}, "format_intraline": {}, "stochastic_stability": {"k": 3}}
    )
    first = run_harness(cfg, workdir=tmp_path, progress=False)
    before = {k: e.n_calls for k, e in engines.items()}
    assert before["gen"] == 6 and before["val"] == 6
    again = run_harness(cfg, workdir=tmp_path, progress=False)
    assert {k: e.n_calls for k, e in engines.items()} == before
    assert again.summary == first.summary  # metrics.json read back into the same summary


def test_a_summary_this_version_cannot_read_is_scored_again_without_lm_calls(tmp_path, engines):
    cfg = config(tmp_path, {"paraphrase": {}})
    first = run_harness(cfg, workdir=tmp_path, progress=False)
    path = first.run_dir / "metrics.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "from_another_version": 1}))
    before = {k: e.n_calls for k, e in engines.items()}
    again = run_harness(cfg, workdir=tmp_path, progress=False)
    assert {k: e.n_calls for k, e in engines.items()} == before
    assert again.summary == first.summary
    assert json.loads(path.read_text()) == first.summary.model_dump(mode="json")


def test_cli_prints_the_summary_and_its_json(tmp_path, engines, capsys, monkeypatch):
    import yaml

    from assay.cli import main
    from assay.reliability import HarnessSummary

    monkeypatch.chdir(tmp_path)
    path = tmp_path / "h.yaml"
    tests = {"paraphrase": {}, "stochastic_stability": {"k": 3}}
    path.write_text(yaml.safe_dump(config(tmp_path, tests).model_dump(mode="json")))
    assert main(["harness", str(path), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "t: 6 seeds · probes paraphrase 6, stochastic_stability 18" in out
    assert "stochastic_stability" in out and "samples for 95%" in out
    assert main(["harness", str(path), "--quiet", "--json"]) == 0  # re-read: no LM call
    printed = json.loads(capsys.readouterr().out)
    run_dir = Path(printed.pop("run_dir"))
    assert printed.pop("mlflow_run_id") is None
    assert printed == json.loads((run_dir / "metrics.json").read_text())
    summary = HarnessSummary.model_validate(printed)
    assert summary.judges["j"].tests["stochastic_stability"].scoring_metrics["items"] == 6


def test_a_new_judge_reuses_the_probes(tmp_path, engines):
    cfg = config(tmp_path, {"paraphrase": {}})
    run_harness(cfg, workdir=tmp_path, progress=False)
    gen_calls = engines["gen"].n_calls
    register()  # the self-test judges
    cfg2 = config(tmp_path, {"paraphrase": {}})
    cfg2.judges.append(
        cfg2.judges[0].model_copy(
            update={"name": "clean", "model": "scripted:assay-selftest-clean"}
        )
    )
    res = run_harness(cfg2, workdir=tmp_path, progress=False)
    assert engines["gen"].n_calls == gen_calls
    assert set(res.summary.judges) == {"j", "clean"}


def test_unknown_test_and_missing_labels_are_config_errors(tmp_path, engines):
    with pytest.raises(ConfigError, match="known tests: .*format_indent"):
        run_harness(config(tmp_path, {"no_such_test": {}}), workdir=tmp_path, progress=False)
    data = tmp_path / "nolabels.csv"
    data.write_text("id,request,response\na,What is 1 + 1?,It is 2.\n")
    cfg = config(tmp_path, {"paraphrase": {}})
    cfg.data.path = str(data)
    cfg.data.columns.expected = None
    with pytest.raises(ConfigError, match="needs reference labels"):
        run_harness(cfg, workdir=tmp_path, progress=False)
    assert not (tmp_path / "runs").exists()


def test_review_required_judges_only_accepted_or_edited_probes(tmp_path, engines):
    import yaml

    from assay.reliability import export_review, import_review

    cfg = config(tmp_path, {"paraphrase": {}}, review={"required": True})
    res = run_harness(cfg, workdir=tmp_path, progress=False)
    assert res.summary.judges["j"].tests["paraphrase"].judged == 0
    assert res.summary.review.pending == 6
    out = tmp_path / "review.yaml"
    assert export_review(res.run_dir, out, cfg.scale) == 6
    entries = yaml.safe_load(out.read_text())
    entries[0].update(decision="accept", reviewer="ana")
    entries[1].update(
        decision="edit", edited_target="correct", reviewer="ana", note="target was wrong"
    )
    entries[2].update(decision="reject", reviewer="ana")
    out.write_text(yaml.safe_dump(entries))
    import_review(res.run_dir, out, cfg.scale)
    res = run_harness(cfg, workdir=tmp_path, progress=False)
    review = res.summary.review
    assert review.accepted == 1 and review.edited == 1 and review.rejected == 1
    assert res.summary.judges["j"].tests["paraphrase"].judged == 2
    assert "review" in (res.run_dir / "report.md").read_text()


def test_selftest_flags_each_defect_with_its_test(tmp_path, capsys):
    from assay.cli import main

    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        code = main(["selftest", "--json", "--quiet"])
    finally:
        os.chdir(cwd)
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["ok"]
    j = out["judges"]
    assert j["clean"]["flagged"] == []
    assert {"format_vertical", "format_intraline", "format_indent"} <= set(
        j["format_sensitive"]["flagged"]
    )
    assert "verbosity_long" in j["length_loving"]["flagged"]
    assert "stochastic_stability" in j["unstable"]["flagged"]
    # k random verdicts per item rarely all agree; the clean judge always does
    assert j["unstable"]["tests"]["stochastic_stability"]["pass_rate"] < 0.5
    assert j["clean"]["tests"]["stochastic_stability"]["pass_rate"] == 1.0
    assert "label_flip" in j["label_blind"]["flagged"]
    # the bias probes: each implanted bias is caught by its test, the clean judges by none
    assert "prompt_injection" in j["injection_obedient"]["flagged"]
    assert "authority" in j["cue_swayed"]["flagged"]
    assert "position_bias" in j["position_biased"]["flagged"]
    assert j["clean_pairwise"]["flagged"] == []
    pb = j["position_biased"]["tests"]["position_bias"]
    assert pb["consistency"] < j["clean_pairwise"]["tests"]["position_bias"]["consistency"] == 1
    # the bias tests flag by the effect against the placebo: a judge that flips a coin on a
    # quarter of the items moves under every cue, and as much when asked again unchanged
    bias = {"prompt_injection", "authority", "bandwagon", "distraction", "polarity"}
    assert j["noisy"]["flagged"] == [] and set(j["noisy"]["must_not_flag"]) == bias
    # Its coin is one stream shared by calls made in thread order, so which verdicts move
    # differs from run to run. Never flagged (each exact p-value is at least 1/16); each
    # interval holds 0 but for a 0.06% chance (20,000 simulated runs), so at most one of the
    # five may miss it; under a given cue all four coins keep their verdict with chance 1/16,
    # under all five about once in a million runs.
    noisy = [j["noisy"]["tests"][t] for t in sorted(bias)]
    assert all(m["placebo_flagged"] is False for m in noisy)
    assert sum(not (m["placebo_ci_low"] <= 0 <= m["placebo_ci_high"]) for m in noisy) <= 1
    assert min(m["consistency"] for m in noisy) < 1  # it did move under a cue
    swayed = j["cue_swayed"]["tests"]["authority"]
    assert swayed["placebo_flagged"] and swayed["placebo_ci_low"] > 0
    for name in ("clean", "format_sensitive", "length_loving", "unstable", "label_blind"):
        for t, m in j[name]["tests"].items():
            placebo = {"placebo_effect", "placebo_ci_low", "placebo_ci_high", "placebo_flagged"}
            assert set(m) == {"pass_rate", "consistency", "ci_low", "ci_high"} | placebo
            if t not in bias | {"prompt_paraphrase"}:
                assert m["placebo_effect"] is None and m["placebo_flagged"] is None
    # the prompt suite: reworded, the prompt-sensitive judge inverts every verdict, beyond its
    # placebo; the clean judge keeps them under every paraphrase and on the 1-4 scale
    clean = j["clean"]["tests"]
    sensitive = j["prompt_sensitive"]["tests"]["prompt_paraphrase"]
    assert "prompt_paraphrase" in j["prompt_sensitive"]["flagged"]
    assert sensitive["placebo_flagged"] and sensitive["placebo_effect"] == 1.0
    assert sensitive["placebo_ci_low"] > 0.5
    assert sensitive["pass_rate"] == 0.0
    assert sensitive["ci_high"] < clean["prompt_paraphrase"]["ci_low"]
    assert clean["prompt_paraphrase"]["placebo_flagged"] is False
    assert clean["prompt_paraphrase"]["placebo_effect"] == 0.0
    assert clean["prompt_paraphrase"]["pass_rate"] == clean["scale_granularity"]["pass_rate"] == 1.0
    # the scale-bound judge answers the top of the 1-4 scale: 'correct' for every answer
    bound = j["scale_bound"]["tests"]["scale_granularity"]
    assert j["scale_bound"]["flagged"] == ["scale_granularity"]
    assert bound["pass_rate"] == 0.5 and bound["ci_high"] < clean["scale_granularity"]["ci_low"]
    # the same figures from the prompt run's files: its probes and each judge's judgments
    (run,) = (tmp_path / ".assay" / "selftest" / "runs").glob("selftest-prompt-*")
    probes = [json.loads(x) for x in (run / "probes.jsonl").read_text().splitlines()]

    def scores(judge: str) -> dict[str, int]:
        (path,) = (run / "judgments").glob(f"{judge}-*.jsonl")
        return {r["item_id"]: r["score"] for r in map(json.loads, path.read_text().splitlines())}

    said = scores("prompt_sensitive")
    cues = [p for p in probes if p["meta"].get("paraphrase")]
    assert len(cues) == 48  # 3 paraphrases written and accepted × 16 sources
    assert sum(said[p["id"]] == p["target"] for p in cues) / len(cues) == sensitive["pass_rate"]
    again = {p["source_id"]: said[p["id"]] for p in probes if p["meta"].get("placebo")}
    for cell in ("p1", "p2", "p3"):
        rows = [p for p in cues if p["meta"]["paraphrase"] == cell]
        own = [said[f"source:{p['source_id']}"] for p in rows]
        moved = sum(said[p["id"]] != o for p, o in zip(rows, own, strict=True))
        moved_again = sum(again[p["source_id"]] != o for p, o in zip(rows, own, strict=True))
        assert (moved - moved_again) / len(rows) == sensitive["placebo_effect"]
    said = scores("scale_bound")
    asked = [p for p in probes if p["test"] == "scale_granularity"]
    mapped = [p["meta"]["maps_back"][str(said[p["id"]])] for p in asked]
    hits = sum(m == p["target"] for m, p in zip(mapped, asked, strict=True))
    assert hits / len(asked) == bound["pass_rate"]


def test_killed_harness_resumes_with_the_same_probes_and_no_repeated_call(tmp_path):
    """SIGKILL mid-judging, then re-run: every probe and judgment once, same results."""
    script = tmp_path / "run.py"
    script.write_text(
        f"""
import json, sys, time
from pathlib import Path
import assay
import dspy
dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)  # count every real call
from assay.reliability import HarnessConfig, run_harness
from assay.reliability.selftest._selftest import generator, judge_responder, validator, write_data
from assay.lm import ScriptedEngine, register_script
slow = float(sys.argv[1])
def judge(call):
    time.sleep(slow)
    return judge_responder("clean")(call)
calls = {{"n": 0}}
def count(fn):
    def f(call):
        with open({str(tmp_path / "calls.log")!r}, "a") as fh:
            fh.write(call.prompt[-80:].replace("\\n", " ") + "\\n")
        return fn(call)
    return f
register_script("k-gen", lambda: ScriptedEngine(respond=count(generator)))
register_script("k-val", lambda: ScriptedEngine(respond=count(validator)))
register_script("k-judge", lambda: ScriptedEngine(respond=count(judge)))
data = write_data(Path({str(tmp_path)!r}) / "data", n=6)
cfg = HarnessConfig.model_validate({{
    "name": "k", "data": {{"path": str(data)}},
    "scale": {{"kind": "binary", "labels": ["incorrect", "correct"]}},
    "generator": {{"model": "scripted:k-gen"}}, "validator": {{"model": "scripted:k-val"}},
    "judges": [{{"name": "j", "model": "scripted:k-judge"}}],
    "tests": {{"paraphrase": {{}}, "format_indent": {{}}, "verbosity_short": {{}}, "authority": {{}}}},
    "concurrency": 1, "retries": 0, "tracking": {{"enabled": False}},
    "output_dir": {str(tmp_path / "runs")!r},
}})
res = run_harness(cfg, workdir=Path({str(tmp_path)!r}), progress=False)
print(json.dumps(res.summary.model_dump(mode="json")["judges"]["j"]["tests"]))
"""
    )
    log = tmp_path / "calls.log"
    # this checkout's assay, not whichever one is installed
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen(
        [sys.executable, str(script), "0.15"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.time() + 120
    judged = None
    while time.time() < deadline:
        files = (
            list((tmp_path / "runs").glob("*/judgments/*.jsonl"))
            if (tmp_path / "runs").exists()
            else []
        )
        # sources are judged while probes are generated: wait until generation is done
        if (
            files
            and len(files[0].read_text().splitlines()) >= 4
            and (files[0].parents[1] / "probes.jsonl").exists()
        ):
            judged = files[0]
            break
        time.sleep(0.05)
    assert judged is not None, proc.communicate()[1]
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    calls_before = log.read_text().splitlines()
    done_before = len([x for x in judged.read_text().splitlines() if x.endswith("}")])
    probes_before = (judged.parents[1] / "probes.jsonl").read_text()

    out, err = subprocess.Popen(
        [sys.executable, str(script), "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    ).communicate(timeout=300)
    assert out.strip(), err
    calls_after = log.read_text().splitlines()[len(calls_before) :]
    ids = [json.loads(x)["item_id"] for x in judged.read_text().splitlines()]
    assert len(ids) == len(set(ids))  # nothing judged twice
    # authority's placebos (each source judged again, the cache bypassed) are judged once too
    probes = [json.loads(x) for x in (judged.parents[1] / "probes.jsonl").read_text().splitlines()]
    placebos = {p["id"] for p in probes if p["meta"].get("placebo")}
    assert len(placebos) == 6 and placebos <= set(ids)
    assert (judged.parents[1] / "probes.jsonl").read_text() == probes_before  # same probes
    # the re-run made only the judge calls that had not finished (no generation, no validation)
    assert len(calls_after) == len(ids) - done_before
    first = json.loads(out.strip().splitlines()[-1])
    out2, _ = subprocess.Popen(
        [sys.executable, str(script), "0"], stdout=subprocess.PIPE, text=True, env=env
    ).communicate(timeout=300)
    assert json.loads(out2.strip().splitlines()[-1]) == first
    assert len(log.read_text().splitlines()) == len(calls_before) + len(
        calls_after
    )  # third run: zero calls


def test_mlflow_parent_run_and_a_child_run_per_judge(tmp_path, engines):
    import mlflow

    register()
    cfg = config(tmp_path, {"paraphrase": {}, "format_indent": {}})
    cfg.judges.append(
        cfg.judges[0].model_copy(update={"name": "clean", "model": "scripted:assay-selftest-clean"})
    )
    cfg.tracking.enabled = True
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    res = run_harness(cfg, workdir=tmp_path, progress=False, tracking_uri=uri)
    client = mlflow.MlflowClient(tracking_uri=uri)
    parent = client.get_run(res.mlflow_run_id)
    assert parent.data.metrics["probes.paraphrase"] == 6
    assert parent.data.metrics["probes_reused.paraphrase"] == 0  # all made in this run
    assert parent.data.params["generator.model"] == "scripted:t-gen"
    children = client.search_runs(
        [parent.info.experiment_id],
        filter_string=f"tags.mlflow.parentRunId = '{res.mlflow_run_id}'",
    )
    assert {c.data.tags["assay.judge"] for c in children} == {"j", "clean"}
    clean = next(c for c in children if c.data.tags["assay.judge"] == "clean")
    assert clean.data.metrics["paraphrase.pass_rate"] == 1.0
    assert "paraphrase.consistency_ci_low" in clean.data.metrics
    assert clean.data.params["judge.model"] == "scripted:assay-selftest-clean"
    artifacts = {a.path for a in client.list_artifacts(res.mlflow_run_id)}
    assert {"report.md", "heatmap.png", "cost_accuracy.png", "probes.jsonl"} <= artifacts


def test_perturber_programs_are_saved_and_a_saved_state_is_what_generates(tmp_path, engines):
    """The generator and validator of a rewrite test are DSPy programs: their state is saved with
    the run, and a config can point a test at a saved (e.g. optimized) state."""
    cfg = config(tmp_path, {"paraphrase": {}})
    res = run_harness(cfg, workdir=tmp_path, progress=False)
    saved = res.run_dir / "programs" / "paraphrase.generator.json"
    assert saved.is_file() and (res.run_dir / "programs" / "paraphrase.validator.json").is_file()
    state = json.loads(saved.read_text())
    assert "Reword the response" in json.dumps(state)

    # a hand-edited state: another instruction reaches the generator's prompt
    state["rewrite"]["signature"]["instructions"] = "Reword the response. MARKER-7731"
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(state))
    engines["gen"].calls.clear()
    cfg2 = config(tmp_path, {"paraphrase": {"generator_state": str(edited)}})
    res2 = run_harness(cfg2, workdir=tmp_path, progress=False)
    assert res2.run_dir != res.run_dir  # another generator, another probe set
    assert engines["gen"].calls and all("MARKER-7731" in c.prompt for c in engines["gen"].calls)


def test_a_missing_program_state_is_a_one_line_error_before_anything_runs(tmp_path, engines):
    cfg = config(tmp_path, {"paraphrase": {"validator_state": str(tmp_path / "nope.json")}})
    with pytest.raises(ConfigError, match="program_state .*nope.json: file not found"):
        run_harness(cfg, workdir=tmp_path, progress=False)
    assert engines["gen"].n_calls == 0 and not (tmp_path / "runs").exists()


def test_a_finished_run_s_headlines_print_without_numpy(tmp_path):
    """A zero-call re-run reads metrics.json back and prints every test's headlines, which
    looks through every scoring kind: none of them may load NumPy before it scores (it cost
    the re-run a tenth of a second of CPU). Printed in a fresh interpreter."""
    register()
    from assay.reliability.selftest._selftest import selftest_config

    res = run_harness(
        selftest_config(write_data(tmp_path / "data", n=6)),
        workdir=tmp_path,
        tests=["format_indent", "stochastic_stability"],
        judges=["clean"],
        progress=False,
    )
    from assay.reliability import headline

    printed = [headline(tm) for r in res.summary.judges.values() for tm in r.tests.values()]
    assert any("samples for 95%" in line for line in printed)
    script = (
        "import json, sys\n"
        "from assay.reliability import HarnessSummary, headline\n"
        "s = HarnessSummary.model_validate_json(open(sys.argv[1]).read())\n"
        "lines = [headline(tm) for r in s.judges.values() for tm in r.tests.values()]\n"
        "print(json.dumps({'numpy': 'numpy' in sys.modules, 'lines': lines}))\n"
    )
    from tests.processes import REPO

    out = subprocess.run(
        [sys.executable, "-c", script, str(res.run_dir / "metrics.json")],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=True,
    )
    again = json.loads(out.stdout.strip().splitlines()[-1])
    assert again == {"numpy": False, "lines": printed}


def test_a_binary_harness_and_evaluate_score_without_scipy_stats(tmp_path):
    """Every figure of a harness run on a binary scale (the self-test's tests, the bias tests'
    placebo effects among them) and of a binary evaluate run comes from NumPy and
    scipy.special: scipy.stats, nine-tenths of a second to import, is not loaded, in the
    background while the calls run nor at the end. Run in a fresh interpreter."""
    from tests.processes import REPO

    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from assay.reliability import run_harness\n"
        "from assay.reliability.selftest._selftest import register, selftest_config, write_data\n"
        "from assay.evaluation import evaluate\n"
        "from assay.inputs import EvaluateConfig\n"
        "register()\n"
        "work = Path(sys.argv[1])\n"
        "data = write_data(work / 'data', n=8)\n"
        "res = run_harness(selftest_config(data), workdir=work, judges=['clean'], progress=False)\n"
        "config = EvaluateConfig.model_validate({'name': 'e', 'data': {'path': str(data)},\n"
        "    'judge': {'name': 'clean', 'model': 'scripted:assay-selftest-clean',\n"
        "              'scale': {'kind': 'binary', 'labels': ['incorrect', 'correct']}},\n"
        "    'tracking': {'enabled': False}})\n"
        "ev = evaluate(config, workdir=work, progress=False)\n"
        "tests = res.summary.judges['clean'].tests\n"
        "print(json.dumps({'stats': 'scipy.stats' in sys.modules, 'tests': len(tests),\n"
        "    'placebo': sum(t.placebo is not None for t in tests.values()),\n"
        "    'accuracy': ev.summary.metrics['accuracy'].ci_method}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        env={**os.environ, "PYTHONPATH": str(REPO), "ASSAY_SIDECAR": "0"},
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["tests"] > 5 and seen["placebo"] > 0, seen
    assert seen == {**seen, "stats": False, "accuracy": "Clopper–Pearson"}
