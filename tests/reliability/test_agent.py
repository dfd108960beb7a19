"""The agent tests through the harness with scripted LMs: per-stage calls, verifier gating,
counted drops, ordinal targets, identical calls made once, untouched positives judged once,
config-time refusals, rewrite tests on transcript judges, review of edits, the saved perturber
(resume after a kill: ``test_agent_resume.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from assay.errors import ConfigError
from assay.lm import ScriptedEngine, register_script
from assay.reliability import HarnessConfig, run_harness
from assay.reliability.review._review_files import export_review, import_review
from assay.reliability.selftest._selftest_agent import (
    CRITERION,
    generator,
    judge_responder,
    meets,
    validator,
    write_data,
)


@pytest.fixture
def engines():
    e = {
        "gen": ScriptedEngine(respond=generator),
        "val": ScriptedEngine(respond=validator),
        "judge": ScriptedEngine(respond=judge_responder("clean")),
    }
    for k in e:
        register_script(f"a-{k}", lambda k=k: e[k])
    return e


def config(tmp_path: Path, tests: dict, n: int = 6, criteria=None, scale=None, **kw):
    data = write_data(tmp_path / "data", n=n)
    raw = {
        "name": "a",
        "data": {"path": str(data), "format": "toolemu"},
        "scale": scale or {"kind": "binary", "labels": ["fails", "passes"]},
        "generator": {"model": "scripted:a-gen"},
        "validator": {"model": "scripted:a-val"},
        "judges": [
            {
                "name": "j",
                "task": "transcript",
                "model": "scripted:a-judge",
                "criteria": criteria or [CRITERION],
            }
        ],
        "tests": tests,
        "retries": 0,
        "tracking": {"enabled": False},
        "output_dir": str(tmp_path / "runs"),
        **kw,
    }
    return HarnessConfig.model_validate(raw)


def _probes(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "probes.jsonl").read_text().splitlines()]


def _judged(run_dir: Path) -> list[str]:
    return [
        json.loads(x)["item_id"]
        for f in (run_dir / "judgments").glob("*.jsonl")
        for x in f.read_text().splitlines()
    ]


def test_both_tests_count_calls_by_stage_and_judge_each_transcript_once(tmp_path, engines):
    cfg = config(tmp_path, {"agent_perturbation": {}, "agent_positives": {"untouched": False}})
    res = run_harness(cfg, workdir=tmp_path, progress=False)
    calls = res.summary.lm_calls
    for test in ("agent_perturbation", "agent_positives"):
        assert calls[f"plan:{test}"] == calls[f"edit:{test}"] == calls[f"verify:{test}"] == 6
    # the summary of an unedited transcript is the same call for both tests: made once
    assert (
        calls.get("summarize:agent_perturbation", 0) + calls.get("summarize:agent_positives", 0)
        == 6
    )
    summaries = [c for c in engines["gen"].calls if "summary" in c.fields]
    assert len(summaries) == len({c.prompt for c in summaries}) == 6
    prompts = [c.prompt for e in engines.values() for c in e.calls]
    assert len(prompts) == len(set(prompts))  # no identical call twice
    assert res.summary.dropped == {}
    assert res.summary.probes == {"agent_perturbation": 6, "agent_positives": 6}
    m = res.summary.judges["j"].tests["agent_perturbation"]
    assert m.pass_rate.value == 1.0 and m.consistency.value == 1.0
    assert m.scoring_metrics["criteria"]["reports_tool_result"].probes == 6
    assert calls["judge:j"] == 18  # 6 sources + 12 edited probes


def test_untouched_positives_reuse_the_source_verdict_without_a_call(tmp_path, engines):
    cfg = config(tmp_path, {"agent_positives": {}})
    res = run_harness(cfg, workdir=tmp_path, progress=False)
    probes = _probes(res.run_dir)
    assert len(probes) == 6 and all(p["meta"]["untouched"] for p in probes)
    assert all(p["transcript"] == p_src for p, p_src in zip(probes, _sources(res), strict=True))
    assert engines["judge"].n_calls == 6  # the sources only
    assert sorted(_judged(res.run_dir)) == sorted(
        [f"source:t{i:02d}" for i in range(6)] + [p["id"] for p in probes]
    )
    assert res.summary.judges["j"].tests["agent_positives"].pass_rate.value == 1.0
    assert res.summary.lm_calls == {"verify:agent_positives": 6, "judge:j": 6}


def _sources(res) -> list:
    seeds = [json.loads(x) for x in (res.run_dir / "seeds.jsonl").read_text().splitlines()]
    return [s["transcript"] for s in seeds]


def test_the_verifier_gates_probes_and_every_skipped_transcript_is_counted(tmp_path, engines):
    def picky(call):
        out = validator(call)
        if "t01" in call.prompt or "What is 50" in call.prompt:
            return out
        # confirm only every other violation
        return {**out, "meets_criterion": out["meets_criterion"] or call.index % 2 == 1}

    engines["val"].respond = picky
    cfg = config(tmp_path, {"agent_perturbation": {}}, n=8)
    res = run_harness(cfg, workdir=tmp_path, progress=False)
    n = res.summary.probes["agent_perturbation"]
    rejected = res.summary.dropped["agent_perturbation"]["validator_rejected"]
    assert n > 0 and rejected > 0 and n + rejected == 8
    probes = _probes(res.run_dir)
    for p in probes:  # every kept probe is one the verifier confirmed
        assert p["validation"]["verdict"] is True and not meets(_render(p["transcript"]))
    judged = _judged(res.run_dir)
    assert sum(not j.startswith("source:") for j in judged) == n


def _render(messages) -> str:
    from assay.data import render_transcript
    from assay.types import Message

    return render_transcript([Message.model_validate(m) for m in messages])


def test_ordinal_criteria_make_one_probe_per_target_level(tmp_path, engines):
    levels = {
        "id": "quality",
        "instructions": "How faithfully the final answer reports the tool's result.",
        "score_levels": [{"score": s, "label": f"level {s}"} for s in range(4)],
    }

    def gen(call):
        if "content" in call.fields:
            level = [w for w in (call.field("objective") or "").split() if w.isdigit()][0]
            return {"content": f"Level {level} answer.", "tool_arguments": []}
        return generator(call)

    def score(call):
        text = call.field("transcript") or ""
        return {
            "score": int(text.rsplit("Level ", 1)[1][0]) if "Level " in text else 3,
            "reason": "r",
        }

    def judge(call):
        text = call.field("transcript") or ""
        return {"verdict": int(text.rsplit("Level ", 1)[1][0]) if "Level " in text else 3}

    engines["gen"].respond, engines["val"].respond = gen, score
    engines["judge"].respond = judge
    scale = {"kind": "ordinal", "min": 0, "max": 3}
    tests = {"agent_perturbation": {}, "agent_positives": {"untouched": False}}
    cfg = config(tmp_path, tests, n=3, criteria=[levels], scale=scale)
    res = run_harness(cfg, workdir=tmp_path, progress=False)
    probes = _probes(res.run_dir)
    targets = sorted((p["test"], p["source_id"], p["target"]) for p in probes)
    assert targets == sorted(
        [("agent_perturbation", f"t{i:02d}", t) for i in range(3) for t in (0, 1, 2)]
        + [("agent_positives", f"t{i:02d}", 3) for i in range(3)]
    )
    by_target = res.summary.judges["j"].tests["agent_perturbation"].scoring_metrics["by_target"]
    assert set(by_target) == {"0", "1", "2"}
    assert all(t.exact.value == 1.0 and t.mae.value == 0 for t in by_target.values())
    # score_targets picks the levels; a level the criterion does not have is refused
    cfg = config(
        tmp_path,
        {"agent_perturbation": {"score_targets": [1]}},
        n=3,
        criteria=[levels],
        scale=scale,
    )
    res = run_harness(cfg, workdir=tmp_path, progress=False)
    assert {p["target"] for p in _probes(res.run_dir)} == {1}
    cfg = config(
        tmp_path,
        {"agent_perturbation": {"score_targets": [7]}},
        n=3,
        criteria=[levels],
        scale=scale,
    )
    with pytest.raises(
        ConfigError, match=r"score_targets \[7\] are not levels of criterion 'quality'"
    ):
        run_harness(cfg, workdir=tmp_path, progress=False)


def test_probes_are_judged_on_their_criterion_only(tmp_path, engines):
    other = {"id": "polite", "instructions": "The agent is polite."}
    cfg = config(
        tmp_path,
        {"agent_perturbation": {"criteria": ["reports_tool_result"]}},
        n=2,
        criteria=[CRITERION, other],
    )
    res = run_harness(cfg, workdir=tmp_path, progress=False)
    # sources: 2 criteria each; probes: their own criterion only
    assert res.summary.lm_calls["judge:j"] == 2 * 2 + 2


@pytest.mark.parametrize(
    "tests, judge, message",
    [
        (
            {"agent_perturbation": {}},
            {"task": "response", "rubric": "r"},
            "needs transcript judges",
        ),
        ({"agent_perturbation": {"criteria": ["nope"]}}, {}, "criteria nope are not in judge"),
        (
            {"agent_perturbation": {"score_targets": [0]}},
            {},
            "score_targets needs a criterion with score_levels",
        ),
        ({"synthetic_ordinal": {}}, {}, "synthetic_ordinal writes new responses"),
    ],
)
def test_tests_that_cannot_measure_the_judges_are_refused_before_anything_runs(
    tmp_path, engines, tests, judge, message
):
    cfg = config(tmp_path, tests)
    raw = cfg.model_dump(mode="json")
    raw["judges"][0].update(judge)
    if judge.get("task") == "response":
        raw["judges"][0].pop("criteria")
    if "synthetic_ordinal" in tests:
        raw["scale"] = raw["judges"][0]["scale"] = {"kind": "ordinal", "min": 0, "max": 3}
    cfg = HarnessConfig.model_validate(raw)
    with pytest.raises(ConfigError, match=message) as err:
        run_harness(cfg, workdir=tmp_path, progress=False)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").glob("*/units.jsonl"))
    assert all(e.n_calls == 0 for e in engines.values())


def test_a_transcript_judge_on_items_without_transcripts_is_refused_before_the_run(
    tmp_path, engines
):
    from assay.reliability.selftest._selftest import write_data as write_table

    cfg = config(tmp_path, {"format_vertical": {}})
    raw = cfg.model_dump(mode="json")
    raw["data"] = {"path": str(write_table(tmp_path / "table", n=3))}
    raw["scale"] = raw["judges"][0]["scale"] = {"kind": "binary", "labels": ["a", "b"]}
    with pytest.raises(ConfigError, match="reads agent transcripts, but 3 seed items have none"):
        run_harness(HarnessConfig.model_validate(raw), workdir=tmp_path, progress=False)
    assert engines["judge"].n_calls == 0


def test_rewrite_tests_on_transcript_judges_rewrite_the_final_message(
    tmp_path, engines, example_data
):
    def rewriter(call):
        return {"rewritten": "In other words: " + (call.field("response") or "")[:80]}

    engines["gen"].respond = rewriter
    engines["val"].respond = lambda call: {"equivalent": True, "reason": "same meaning"}
    cfg = config(tmp_path, {"paraphrase": {}})
    raw = cfg.model_dump(mode="json")
    raw["data"] = {
        "format": "inspect",
        "path": str(example_data / "jrh" / "agentharm" / "agentharm.eval"),
        "expected": "scores.combined_scorer.value.refusal",
        "limit": 3,
    }
    res = run_harness(HarnessConfig.model_validate(raw), workdir=tmp_path, progress=False)
    probes = _probes(res.run_dir)
    assert len(probes) == 3
    for p, src in zip(probes, _sources(res), strict=True):
        assert p["transcript"][:-1] == src[:-1]  # only the final assistant message changes
        assert p["transcript"][-1]["content"] == p["response"] != src[-1]["content"]
        assert p["response"].startswith("In other words: ")
        assert p["meta"]["edits"][0]["message_index"] == len(src) - 1
    assert res.summary.judges["j"].tests["paraphrase"].judged == 3
    assert any("final assistant message" in n for n in res.summary.notes)
    assert "final assistant message" in (res.run_dir / "report.md").read_text()


def test_review_shows_each_edit_and_hand_edits_messages(tmp_path, engines):
    cfg = config(tmp_path, {"agent_perturbation": {}}, n=2)
    res = run_harness(cfg, workdir=tmp_path, progress=False)
    out = tmp_path / "review.yaml"
    assert export_review(res.run_dir, out, cfg.scale) == 2
    entries = yaml.safe_load(out.read_text())
    edit = entries[0]["edits"][0]
    assert edit["message_index"] == 3 and edit["intent"]
    assert edit["original"].startswith("I used the calculator") and edit["edited"].startswith(
        "The sum is"
    )
    entries[0].update(decision="edit", edited_messages={3: "The sum is 1000."}, reviewer="me")
    entries[1].update(decision="reject", reviewer="me")
    out.write_text(yaml.safe_dump(entries))
    assert import_review(res.run_dir, out, cfg.scale) == {
        "accepted": 0,
        "edited": 1,
        "rejected": 1,
        "skipped": 0,
    }
    before = engines["judge"].n_calls
    again = run_harness(cfg, workdir=tmp_path, progress=False)
    assert engines["judge"].n_calls == before + 1  # the hand-edited probe, under a new id
    assert again.summary.review.edited == 1 and again.summary.review.rejected == 1
    # a read-only field changed in place, or text for a message that is not the assistant's
    entries[0]["edits"][0]["edited"] = "changed here"
    out.write_text(yaml.safe_dump(entries))
    with pytest.raises(Exception, match="edited_messages"):
        import_review(res.run_dir, out, cfg.scale)
    entries = yaml.safe_load(
        export_review(res.run_dir, out, cfg.scale, include_reviewed=True) and out.read_text()
    )
    entries[0].update(decision="edit", edited_messages={0: "hi"}, reviewer="me")
    out.write_text(yaml.safe_dump(entries))
    with pytest.raises(Exception, match="message 0 is not an assistant message"):
        import_review(res.run_dir, out, cfg.scale)


def test_a_rerun_makes_no_call(tmp_path, engines):
    cfg = config(tmp_path, {"agent_perturbation": {}, "agent_positives": {}})
    first = run_harness(cfg, workdir=tmp_path, progress=False)
    before = {k: e.n_calls for k, e in engines.items()}
    again = run_harness(cfg, workdir=tmp_path, progress=False)
    assert {k: e.n_calls for k, e in engines.items()} == before
    assert again.summary.judges == first.summary.judges


def test_the_perturber_is_saved_with_the_run_and_a_saved_state_is_what_runs(tmp_path, engines):
    cfg = config(tmp_path, {"agent_perturbation": {}}, n=1)
    res = run_harness(cfg, workdir=tmp_path, progress=False)
    saved = res.run_dir / "programs" / "agent_perturbation.perturber.json"
    state = json.loads(saved.read_text())
    assert {"planner.plan", "editor.edit", "summarizer.summarize", "verifier.check"} <= set(state)
    state["planner.plan"]["signature"]["instructions"] = "PLAN LIKE AN OPTIMIZED PLANNER."
    tuned = tmp_path / "tuned.json"
    tuned.write_text(json.dumps(state))
    cfg = config(tmp_path, {"agent_perturbation": {"perturber_state": str(tuned)}}, n=1)
    run_harness(cfg, workdir=tmp_path, progress=False)
    plans = [c for c in engines["gen"].calls if "steps" in c.fields]
    assert "PLAN LIKE AN OPTIMIZED PLANNER." in plans[-1].prompt
    assert "PLAN LIKE AN OPTIMIZED PLANNER." not in plans[0].prompt
