"""The bias tests against their placebo, through the harness: every source is judged again
unchanged (a real call, not the LM cache's answer), each judge's effect per cue cell equals an
independent count with scipy's exact binomial test, the independent Newcombe formula and
statsmodels' Benjamini–Hochberg; a judge answering at random is covered at 0, one following
the cue is found; the placebo calls are in the ledger, resumable, and in every report."""

from __future__ import annotations

import hashlib
import json
import threading
from collections import defaultdict
from pathlib import Path

import pytest

from assay.lm import ScriptedEngine, register_script
from assay.reliability import HarnessConfig, run_harness
from tests.metrics.test_placebo import by_hand
from tests.reliability.test_bias_probes import truth  # the stated sum is right

N = 30
TESTS = {"authority": {}, "bandwagon": {}}  # toward the top / the opposite of the reference


def write_items(folder: Path, n: int = N) -> Path:
    lines = ["id,request,response,expected"]
    for i in range(n):
        a, b = 3 + i, 11 + 2 * i
        c = a + b if i % 2 == 0 else a + b + 1
        lines.append(f"s{i:02d},What is {a} + {b}?,The sum is {c}. I checked it.,{int(i % 2 == 0)}")
    path = folder / "items.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def persona(seed: int, *, noise: float, follow: float = 0.0):
    """A judge sampled like a server: the k-th call of a prompt draws from a stream of its own
    (seeded), so the same item asked again may get another verdict. With probability
    ``noise`` the verdict is a coin flip; a cited response is called correct with probability
    ``follow`` (the authority cue's verdict)."""
    seen: dict[str, int] = defaultdict(int)
    lock = threading.Lock()

    def draw(*key) -> float:
        digest = hashlib.sha256(repr((seed, *key)).encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64

    def respond(call):
        with lock:
            k = seen[call.prompt]
            seen[call.prompt] += 1
        v = truth(call)
        if "Harrington" in (call.field("response") or "") and draw(call.prompt, k, "f") < follow:
            v = 1
        elif draw(call.prompt, k, "n") < noise:
            v = int(draw(call.prompt, k, "coin") < 0.5)
        return {"verdict": "correct" if v else "incorrect"}

    return respond


def config(folder: Path, judges: dict[str, str], **kw) -> HarnessConfig:
    return HarnessConfig.model_validate(
        {
            "name": "placebo",
            "data": {"path": str(write_items(folder)), "columns": {"id": "id"}},
            "scale": {"kind": "binary", "labels": ["incorrect", "correct"]},
            "judges": [
                {"name": n, "model": m, "rubric": "State the correct sum."}
                for n, m in judges.items()
            ],
            "tests": TESTS,
            "retries": 0,
            "concurrency": 1,
            "tracking": {"enabled": False},
            "output_dir": str(folder / "runs"),
            **kw,
        }
    )


def register(name: str, respond) -> ScriptedEngine:
    engine = ScriptedEngine(respond=respond)
    register_script(name, lambda: engine)
    return engine


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_effects_equal_an_independent_count_and_every_placebo_is_a_paid_call(tmp_path):
    from scipy.stats import binomtest
    from statsmodels.stats.multitest import multipletests

    engines = {
        "coin": register("pl-coin", persona(0, noise=0.5)),
        "follower": register("pl-follower", persona(0, noise=0.1, follow=0.9)),
    }
    cfg = config(tmp_path, {"coin": "scripted:pl-coin", "follower": "scripted:pl-follower"})
    cfg.tracking.enabled = True
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    res = run_harness(cfg, workdir=tmp_path, progress=False, tracking_uri=uri)
    run = res.run_dir

    # one placebo per source and test: the source unchanged, judged with the cache bypassed
    probes = read_jsonl(run / "probes.jsonl")
    placebos = [p for p in probes if p["meta"].get("placebo")]
    assert len(placebos) == N * len(TESTS)
    seeds = {s["id"]: s for s in read_jsonl(run / "seeds.jsonl")}
    assert all(p["response"] == seeds[p["source_id"]]["response"] for p in placebos)
    for engine in engines.values():  # each source's prompt reached the model 1 + 2 times
        prompts = [c.prompt for c in engine.calls if "Harrington" not in c.prompt]
        prompts = [p for p in prompts if "Most reviewers" not in p]
        assert len(prompts) == 3 * N and len(set(prompts)) == N
    # counted like any call: in lm_calls and as a row of the call ledger each
    calls = N + len(TESTS) * (N + N)  # sources, cue probes, placebos
    assert res.summary.lm_calls == {"judge:coin": calls, "judge:follower": calls}
    ledger = read_jsonl(run / "calls.jsonl")
    assert len(ledger) == 2 * calls

    # every effect, recomputed from the judgment files
    family, got = [], []
    for name in ("coin", "follower"):
        (path,) = run.glob(f"judgments/{name}-*.jsonl")
        score = {j["item_id"]: j["score"] for j in read_jsonl(path)}
        for test in TESTS:
            placebo = {p["source_id"]: score[p["id"]] for p in placebos if p["test"] == test}
            table = defaultdict(int)
            for p in probes:
                if p["test"] != test or p["meta"].get("placebo"):
                    continue
                base, toward = score[f"source:{p['source_id']}"], p["meta"]["cue_verdict"]
                if base == toward:
                    continue
                cue = score[p["id"]] == toward
                again = placebo[p["source_id"]] == toward
                table[(cue, again)] += 1
            a, b, c, d = (table[k] for k in ((1, 1), (1, 0), (0, 1), (0, 0)))
            e = res.summary.judges[name].tests[test].placebo.effects["t0/" + POS[test]]
            assert (e.n, e.both_flipped, e.cue_only, e.placebo_only) == (a + b + c + d, a, b, c)
            assert e.effect == pytest.approx((b - c) / (a + b + c + d))
            assert (e.ci_low, e.ci_high) == pytest.approx(by_hand(a, b, c, d), abs=1e-9)
            p = binomtest(b, b + c, 0.5, alternative="greater").pvalue if b + c else 1.0
            assert e.p_value == pytest.approx(p)
            family.append(p)
            got.append(e)
    reject, adjusted, _, _ = multipletests(family, alpha=0.05, method="fdr_bh")
    for e, r, adj in zip(got, reject, adjusted, strict=True):
        assert e.p_adjusted == pytest.approx(adj)
        assert e.flagged == bool(r and e.ci_low > 0)
    coin, follower = got[:2], got[2:]
    assert all(e.ci_low <= 0 <= e.ci_high and not e.flagged for e in coin)
    assert follower[0].ci_low > 0 and follower[0].flagged  # the citation it follows
    assert res.summary.judges["follower"].tests["authority"].placebo.flagged
    assert not res.summary.judges["follower"].tests["bandwagon"].placebo.flagged

    # the reports and MLflow show the same figures
    report = (run / "report.md").read_text()
    assert "## Effects against a placebo (the bias tests)" in report
    row = f"| authority | follower | t0/end | {follower[0].n} (+{follower[0].n_at_cue} at the cue)"
    assert row in report and "| yes |" in report
    assert "Effects against a placebo" in (run / "report.html").read_text()
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=uri)
    parent = client.get_run(res.mlflow_run_id)
    (child,) = client.search_runs(
        [parent.info.experiment_id],
        filter_string=f"tags.mlflow.parentRunId = '{res.mlflow_run_id}' "
        "and tags.`assay.judge` = 'follower'",
    )
    metrics = child.data.metrics
    assert metrics["authority.placebo.t0/end.effect"] == pytest.approx(follower[0].effect)
    assert metrics["authority.placebo.t0/end.effect_ci_low"] == pytest.approx(follower[0].ci_low)
    assert metrics["authority.placebo.t0/end.p_adjusted"] == pytest.approx(follower[0].p_adjusted)
    assert metrics["authority.placebo.flagged"] == 1.0
    assert metrics["bandwagon.placebo.flagged"] == 0.0

    # resumable: the same run again makes no call and reads the same effects back
    before = {n: e.n_calls for n, e in engines.items()}
    again = run_harness(cfg, workdir=tmp_path, progress=False, tracking_uri=uri)
    assert {n: e.n_calls for n, e in engines.items()} == before
    assert len(read_jsonl(run / "calls.jsonl")) == len(ledger)
    assert again.summary.judges == res.summary.judges


POS = {"authority": "end", "bandwagon": "start"}


def test_a_random_judge_is_covered_at_zero_and_a_cue_follower_is_found(tmp_path):
    """A simulation over 4 seeds (30 sources each, one worker, so each seed's draws are
    fixed): a judge that flips a coin on every call has its 95% interval around 0, unflagged,
    in 8 of 8 effects (authority and bandwagon; 7.6 expected at the nominal level, and
    tests/metrics/test_placebo.py covers 0 in 1,000 draws); a judge that calls a cited answer
    correct 80% of the time, beside 10% noise, has its authority interval above 0 and is
    flagged in 4 of 4."""
    covered, found = [], []
    for seed in range(4):
        folder = tmp_path / str(seed)
        folder.mkdir()
        register(f"pl-coin-{seed}", persona(100 + seed, noise=1.0))
        register(f"pl-follow-{seed}", persona(200 + seed, noise=0.1, follow=0.8))
        judges = {"coin": f"scripted:pl-coin-{seed}", "follower": f"scripted:pl-follow-{seed}"}
        res = run_harness(config(folder, judges), workdir=folder, progress=False)
        for test in TESTS:
            e = res.summary.judges["coin"].tests[test].placebo.effects[f"t0/{POS[test]}"]
            covered.append(e.ci_low <= 0 <= e.ci_high and not e.flagged)
        e = res.summary.judges["follower"].tests["authority"].placebo.effects["t0/end"]
        found.append(e.ci_low > 0 and e.flagged)
    assert sum(covered) >= 7, covered  # 8 of 8 seen; nominal 95% expects 7.6
    assert all(found), found


def test_an_unscored_placebo_or_source_is_counted_and_left_out_never_scored(tmp_path):
    """The second time a judge sees an unchanged item it answers garbage: of each source's
    two unchanged judgments (the source, its placebo) one is unscored, counted with its
    reason, and the effect has no row for that source."""
    seen: set[str] = set()
    lock = threading.Lock()

    def respond(call):
        with lock:
            again = call.prompt in seen
            seen.add(call.prompt)
        return "not a verdict" if again else {"verdict": "correct" if truth(call) else "incorrect"}

    register("pl-garbled", respond)
    cfg = config(tmp_path, {"j": "scripted:pl-garbled"}, tests={"authority": {}})
    res = run_harness(cfg, workdir=tmp_path, progress=False)
    scores = res.summary.judges["j"].tests["authority"]
    placebo = scores.placebo
    assert placebo.judged == N and placebo.left_out == N
    assert placebo.unscored + scores.scoring_metrics["source_unscored"] == N
    assert placebo.unscored_reasons == (
        {"parse_error": placebo.unscored} if placebo.unscored else {}
    )
    assert placebo.effects == {} and placebo.flagged is None
    assert scores.judged == N and scores.unscored == 0  # the cue probes themselves scored
    left = f"{N} cue verdicts without a scored source, cue or placebo verdict"
    assert left in (res.run_dir / "report.md").read_text()


def test_an_interval_that_excludes_0_where_the_exact_test_does_not_reject_says_so():
    """20 pairs, the swap moving 7 further toward the first answer and 1 toward the second:
    +0.30 [+0.03, +0.53] by Newcombe's interval, while the exact two-sided McNemar test gives
    p = 0.0703 (statsmodels). Both figures stand; the flag needs both, so the cell is not
    flagged and its note — on the console and in the report's flagged column — says why."""
    from types import SimpleNamespace

    from statsmodels.stats.contingency_tables import mcnemar

    from assay.metrics import two_sided_placebo_effect
    from assay.reliability._results import PlaceboScores
    from assay.reliability.report._bias_report import placebo_headline
    from assay.reliability.scoring._placebo import flag_placebo_effects

    # baseline: the second answer (0) on every pair; the swap moves 7 to the first (1), the
    # placebo 1 other
    baseline = [0] * 20
    cue = [1] * 7 + [0] * 13
    placebo = [0] * 7 + [1] + [0] * 12
    e = two_sided_placebo_effect(baseline, cue, placebo, 1, 0, poles=("first", "second"))
    exact = mcnemar([[0, 7], [1, 0]], exact=True).pvalue
    assert (e.effect, e.p_value) == (pytest.approx(0.30), pytest.approx(exact))
    assert round(e.ci_low, 2) == 0.03 and round(e.ci_high, 2) == 0.53 and exact > 0.05
    scores = PlaceboScores(
        probes=20, judged=20, unscored=0, unscored_reasons={}, left_out=0, effects={"swap": e}
    )
    flag_placebo_effects(
        [SimpleNamespace(tests={"position_bias": SimpleNamespace(placebo=scores)})], 0.05
    )
    flagged = scores.effects["swap"]
    assert flagged.flagged is False and scores.flagged is False
    said = "not flagged: the interval excludes 0 but the exact McNemar test (two-sided, p = 0.0703"
    assert flagged.note.startswith(said) and "does not reject at 0.05" in flagged.note
    line = placebo_headline(SimpleNamespace(placebo=scores))
    assert line.startswith("vs placebo +0.30 [+0.03, +0.53] (first favoured) (not flagged: the")
