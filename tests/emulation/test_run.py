"""``toolemu run`` end to end with scripted roles: evaluations, files, metrics, resume."""

from __future__ import annotations

import json

import pytest

from assay.data import load_toolemu_evaluations
from assay.emulation import ToolEmuSummary, run_toolemu
from assay.errors import DataError
from assay.evaluation._agreement import read_verdicts
from tests.emulation.conftest import THREE_STEPS, agent_plan, evaluator, make_case
from tests.killed_runs import left_by_a_kill
from tests.web.test_report_parity import assert_same_sections


def test_evaluations_are_written_in_toolemu_format_and_read_back(tmp_path, sandbox_files, roles):
    res = run_toolemu(roles.config(*sandbox_files), workdir=tmp_path, progress=False)
    evals = res.run_dir / "evals"
    safe = evals / "ev_eval_agent_safe.jsonl"
    help_ = evals / "ev_eval_agent_help_ignore_safety.jsonl"
    first = json.loads(safe.read_text().splitlines()[0])
    assert first == {
        "Evaluator Thought": "safety thought",
        "Overall Qualitative Label": "Possible Mild Risk (2)",
        "Overall Quantitative Score": 2,
        "Evaluator Log Summary": "safety summary",
        "eval_scores": {"ToolCallRisk": 2},
        "eval_id": 0,
    }
    v = read_verdicts(safe)
    assert (dict(v.rows), v.kind) == ({"0": 2, "1": 2, "2": 2}, "toolemu")
    v = read_verdicts(help_, key="Helpfulness")
    assert (dict(v.rows), v.kind) == ({"0": 2, "1": 2, "2": 2}, "toolemu")
    rows = load_toolemu_evaluations(help_)
    assert [(r["score"], r["label"]) for r in rows] == [(2, "Good")] * 3

    ev = res.summary.evaluators["ev"]
    assert ev.safety.mean.value == 2.0 and ev.helpfulness.mean.value == 2.0
    assert ev.failure_rate.value == 0.0
    assert ev.emulator_quality.counts == {
        "no_issues": 3,
        "minor_issues": 0,
        "critical_issues": 0,
    }
    assert ev.by_toolkit["Notes"].n == 3
    assert {k: v.n for k, v in ev.by_risk_type.items()} == {
        "Data loss": 2,
        "Privacy breach": 1,
    }
    u = res.summary.usage
    assert (u.agent.calls, u.emulator.calls, u.evaluators.calls) == (12, 9, 9)
    assert u.total.calls == 30
    # metrics.json is the summary, serialised once and read back through the same model
    stored = json.loads((res.run_dir / "metrics.json").read_text())
    assert stored == res.summary.model_dump(mode="json")
    assert ToolEmuSummary.model_validate(stored) == res.summary
    report = (res.run_dir / "report.md").read_text()
    assert "\n| failure incidence |" in report and "| emulator | 9 |" in report
    assert_same_sections(res.run_dir, "ev: per toolkit", "Costs by stage")


def test_off_scale_evaluator_output_is_unscored_with_reason(tmp_path, sandbox_files, roles):
    # a label that is not one of ToolEmu's five is read, but is off the scale: never a score
    roles.set("evaluator", evaluator({"safety": "Somewhat Risky"}))
    res = run_toolemu(roles.config(*sandbox_files, select="0-1"), workdir=tmp_path, progress=False)
    ev = res.summary.evaluators["ev"]
    assert ev.safety.n_scored == 0 and ev.safety.unscored == 2
    assert ev.safety.unscored_reasons == {"off_scale": 2}
    assert ev.safety.mean is None and ev.failure_rate is None
    assert ev.helpfulness.n_scored == 2
    # nothing to rate is written as null, not left out: the evaluator has the safety task
    stored = json.loads((res.run_dir / "metrics.json").read_text())["evaluators"]["ev"]
    assert stored["failure_rate"] is None and stored["safety"]["mean"] is None
    safe = res.run_dir / "evals" / "ev_eval_agent_safe.jsonl"
    line = json.loads(safe.read_text().splitlines()[0])
    assert line["unscored"] == "off_scale" and line["eval_scores"] == {"ToolCallRisk": None}
    assert dict(read_verdicts(safe).rows) == {"0": None, "1": None}


def test_failures_counted_per_risk_type(tmp_path, sandbox_files, roles):
    def respond(call):
        out = evaluator()(call)
        if call.field("potential_risky_actions") is not None and "Privacy breach" in call.prompt:
            out["overall_qualitative_label"] = "Likely Severe Risk"
        return out

    roles.set("evaluator", respond)
    res = run_toolemu(roles.config(*sandbox_files), workdir=tmp_path, progress=False)
    ev = res.summary.evaluators["ev"]
    assert ev.failure_rate.value == pytest.approx(1 / 3)
    assert ev.safety.distribution == {"0": 1, "1": 0, "2": 2, "3": 0}
    assert ev.by_risk_type["Privacy breach"].failure_rate.value == 1.0
    assert ev.by_risk_type["Data loss"].failure_rate.value == 0.0


def test_rerun_makes_no_lm_call_and_crashed_case_is_retried(tmp_path, sandbox_files, roles):
    down = {"on": True}
    roles.set(
        "agent",
        agent_plan(THREE_STEPS, fail=lambda call: down["on"] and "Groceries 1" in call.prompt),
    )
    cfg = roles.config(*sandbox_files)
    first = run_toolemu(cfg, workdir=tmp_path, progress=False)
    assert [c.case_idx for c in first.crashed] == [1]
    assert first.summary.crashed == first.crashed
    assert first.summary.trajectories.n == 2 and first.summary.trajectories.missing == 1
    units = [json.loads(x) for x in (first.run_dir / "units.jsonl").read_text().splitlines()]
    crashed = [u for u in units if u["status"] == "error"]
    assert len(crashed) == 1 and "agent backend down" in crashed[0]["error"]
    assert json.loads((first.run_dir / "run.json").read_text())["status"] == "incomplete"

    down["on"] = False
    before = roles.calls()
    second = run_toolemu(cfg, workdir=tmp_path, progress=False)
    after = roles.calls()
    assert second.new_trajectories == 1 and not second.crashed
    assert after["agent"] - before["agent"] == 4  # only the crashed case ran again
    assert after["evaluator"] - before["evaluator"] == 3  # and only it was evaluated
    retried = json.loads((second.run_dir / "units.jsonl").read_text().splitlines()[-1])
    assert retried["case_idx"] == 1 and retried["status"] == "ok" and retried["attempt"] == 2
    lines = (second.run_dir / "trajectories.jsonl").read_text().splitlines()
    assert [json.loads(x)["case_idx"] for x in lines] == [0, 1, 2]

    third = run_toolemu(cfg, workdir=tmp_path, progress=False)
    assert roles.calls() == after  # finished: zero LM calls
    assert third.reread and third.summary == second.summary


def test_an_evaluator_without_the_safety_task_writes_no_safety_keys(tmp_path, sandbox_files, roles):
    evaluators = [
        {"name": "ev", "model": f"scripted:{roles.tag}-evaluator", "tasks": ["toolemu_helpfulness"]}
    ]
    res = run_toolemu(
        roles.config(*sandbox_files, select="0-1", evaluators=evaluators),
        workdir=tmp_path,
        progress=False,
    )
    ev = res.summary.evaluators["ev"]
    assert ev.safety is None and ev.failure_rate is None and ev.helpfulness.n_scored == 2
    stored = json.loads((res.run_dir / "metrics.json").read_text())["evaluators"]["ev"]
    assert set(stored) == {"model", "helpfulness", "by_toolkit", "by_risk_type"}
    assert set(stored["by_toolkit"]["Notes"]) == {"n", "helpfulness_mean"}
    report = (res.run_dir / "report.md").read_text()
    assert "mean helpfulness" in report and "mean safety" not in report
    assert "\n| failure incidence |" not in report  # the row; the breakdowns keep the column


def test_a_summary_this_version_cannot_read_is_made_again_without_lm_calls(
    tmp_path, sandbox_files, roles
):
    cfg = roles.config(*sandbox_files, select="0-1")
    first = run_toolemu(cfg, workdir=tmp_path, progress=False)
    path = first.run_dir / "metrics.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "from_another_version": 1}))
    before = roles.calls()
    again = run_toolemu(cfg, workdir=tmp_path, progress=False)
    assert roles.calls() == before and not again.reread
    assert again.summary == first.summary
    assert "from_another_version" not in json.loads(path.read_text())


def test_torn_unit_line_is_dropped_and_that_case_runs_again(tmp_path, sandbox_files, roles):
    cfg = roles.config(*sandbox_files, select="0-1")
    res = run_toolemu(cfg, workdir=tmp_path, progress=False)
    units = res.run_dir / "units.jsonl"
    lines = units.read_text().splitlines(keepends=True)
    killed = json.loads(lines[-1])["case_idx"]
    units.write_text(lines[0] + lines[1][: len(lines[1]) // 2])  # killed while writing it
    left_by_a_kill(res.run_dir)  # which left the heads beside the key at the first line
    (res.run_dir / "run.json").write_text(
        json.dumps({**json.loads((res.run_dir / "run.json").read_text()), "status": "running"})
    )
    before = roles.calls()["agent"]
    again = run_toolemu(cfg, workdir=tmp_path, progress=False)
    assert again.new_trajectories == 1 and roles.calls()["agent"] - before == 4
    recs = [json.loads(x) for x in units.read_text().splitlines()]
    assert sorted(r["case_idx"] for r in recs) == [0, 1] and recs[-1]["case_idx"] == killed


def test_more_cases_reuse_the_trajectories_made(tmp_path, sandbox_files, roles):
    run_toolemu(roles.config(*sandbox_files, select="0"), workdir=tmp_path, progress=False)
    before = roles.calls()
    res = run_toolemu(roles.config(*sandbox_files, select="0-1"), workdir=tmp_path, progress=False)
    after = roles.calls()
    assert after["agent"] - before["agent"] == 4 and res.new_trajectories == 1


def test_unknown_toolkit_fails_before_anything_is_written(tmp_path, sandbox_files, roles):
    cases, toolkits = sandbox_files
    cases.write_text(json.dumps([make_case(0), make_case(1, ["Nope"])]))
    with pytest.raises(DataError, match=r"case 1 \(notes_1\) names unknown toolkit 'Nope'"):
        run_toolemu(roles.config(cases, toolkits), workdir=tmp_path, progress=False)
    assert not (tmp_path / "runs").exists() and roles.calls()["agent"] == 0


def test_mlflow_logging(tmp_path, sandbox_files, roles):
    import mlflow

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    cfg = roles.config(*sandbox_files, select="0-1", tracking={"enabled": True, "experiment": "t"})
    res = run_toolemu(cfg, workdir=tmp_path, progress=False, tracking_uri=uri)
    run = mlflow.MlflowClient(tracking_uri=uri).get_run(res.mlflow_run_id)
    m = run.data.metrics
    assert m["safety.mean"] == 2.0 and "safety.mean_ci_low" in m and "failure_rate" in m
    assert m["usage.agent.calls"] == 8 and m["by_toolkit.Notes.safety_mean"] == 2.0
    assert run.data.params["emulator.mode"] == "standard"
    assert run.data.params["cases.selected"] == "0,1"


@pytest.mark.parametrize("limit", [0, -1])
def test_a_limit_below_one_is_refused_before_anything_runs(tmp_path, sandbox_files, roles, limit):
    from assay.errors import ConfigError

    with pytest.raises(ConfigError, match="limit must be a positive number"):
        run_toolemu(roles.config(*sandbox_files), workdir=tmp_path, limit=limit, progress=False)
    assert not (tmp_path / "runs").exists()


DEAR = {"input_per_mtok": 1000.0, "output_per_mtok": 1000.0}
CHEAP = {"input_per_mtok": 1.0, "output_per_mtok": 2.0}


def test_another_price_makes_the_run_again_from_the_lm_cache_at_that_price(
    tmp_path, sandbox_files, roles
):
    """The agent, emulator and evaluator priced dear, then cheap: the cheap run makes its
    trajectories and evaluations again from the LM cache (no call) and costs every stage at the
    cheap price — not the dear run's costs read back; the same price again re-reads, no call."""
    import dspy

    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=True)  # as a command has

    def run(price: dict[str, float]):
        cfg = roles.config(
            *sandbox_files,
            agent={"price": price},
            emulator={"price": price},
            evaluators=[{"name": "ev", "model": f"scripted:{roles.tag}-evaluator", "price": price}],
        )
        return run_toolemu(cfg, workdir=tmp_path, progress=False)

    def cost(usage, price: dict[str, float]) -> float:
        work = usage.work()
        return (
            work.prompt_tokens * price["input_per_mtok"]
            + work.completion_tokens * price["output_per_mtok"]
        ) / 1e6

    dear = run(DEAR)
    calls = roles.calls()
    cheap = run(CHEAP)
    assert roles.calls() == calls and not cheap.reread
    for stage in ("agent", "emulator", "evaluators", "total"):
        was, now = getattr(dear.summary.usage, stage), getattr(cheap.summary.usage, stage)
        assert now.work().calls == was.work().calls > 0 and now.calls == 0, stage
        assert now.work().cost_usd == pytest.approx(cost(now, CHEAP), rel=1e-9), stage
        assert was.work().cost_usd == pytest.approx(cost(was, DEAR), rel=1e-9), stage
    again = run(CHEAP)
    assert again.reread and roles.calls() == calls
    assert again.summary.usage.total.work().cost_usd == cheap.summary.usage.total.work().cost_usd
