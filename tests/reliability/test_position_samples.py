"""Position bias on a scripted pairwise judge and the samples-needed curve of
stochastic_stability: every statistic against a hand computation and an independent one."""

from __future__ import annotations

import base64
import json
import random
from collections import Counter
from itertools import combinations
from math import comb
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

from assay.lm import ScriptedEngine, register_script
from assay.metrics import held_out_majority_agreement
from assay.reliability import HarnessConfig, run_harness

# canonical verdict of the scripted judge per pair when shown A first (AB) / B first (BA)
SHEET = {
    0: ("A", "B"),  # always the first shown: flips
    1: ("A", "A"),  # consistent, right
    2: ("B", "B"),  # consistent, wrong
    3: ("tie", "A"),  # not decisive in AB
    4: ("B", "A"),  # always the second shown: flips
    5: ("A", "A"),  # consistent, right
}
REF = ["A", "A", "A", "A", "B", "A"]
MIRROR = {"A": "B", "B": "A", "tie": "tie"}


def pair_table(tmp_path: Path) -> Path:
    lines = ["id,request,response,response_b,expected"]
    lines += [f"p{i},Which is better ({i})?,X{i},Y{i},{REF[i]}" for i in SHEET]
    path = tmp_path / "pairs.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def sheet_judge():
    def respond(call):
        shown_a = call.field("response_a") or ""
        i = int(shown_a[1:])
        order = "AB" if shown_a.startswith("X") else "BA"
        canonical = SHEET[i][0 if order == "AB" else 1]
        return {"verdict": canonical if order == "AB" else MIRROR[canonical]}

    engine = ScriptedEngine(respond=respond)
    register_script("pos-sheet", lambda: engine)
    return engine


def harness(tmp_path: Path, data: Path, tests: dict, judges: list[dict], **kw) -> HarnessConfig:
    raw = {
        "name": "pos",
        "data": {"path": str(data), "columns": {"id": "id"}},
        "scale": {"kind": "categorical", "labels": ["A", "B", "tie"]},
        "generator": {"model": "scripted:pos-sheet"},
        "validator": {"model": "scripted:pos-sheet"},
        "judges": judges,
        "tests": tests,
        "retries": 0,
        "concurrency": 1,
        "tracking": {"enabled": False},
        "output_dir": str(tmp_path / "runs"),
        **kw,
    }
    return HarnessConfig.model_validate(raw)


def cluster_ci(values: list[float], clusters: list[str], seed: int = 0, b: int = 1000):
    """An independent cluster bootstrap: draw clusters with replacement, numbered in the order
    of their contents (each cluster's sorted values: what they are called is no input); the
    replicate is the pooled mean of every unit of the drawn clusters."""
    members = {
        i: sorted(v for v, c in zip(values, clusters, strict=True) if c == i) for i in clusters
    }
    ids = sorted(members, key=members.__getitem__)
    sums = np.array([sum(v for v, c in zip(values, clusters, strict=True) if c == i) for i in ids])
    counts = np.array([sum(c == i for c in clusters) for i in ids])
    drawn = np.random.default_rng(seed).integers(0, len(ids), size=(b, len(ids)))
    reps = sums[drawn].sum(axis=1) / counts[drawn].sum(axis=1)
    return tuple(np.percentile(reps, [2.5, 97.5]))


def test_position_bias_statistics_equal_a_hand_computation(tmp_path, sheet_judge):
    judge = {"name": "pj", "task": "pairwise", "model": "scripted:pos-sheet", "rubric": "r"}
    res = run_harness(
        harness(tmp_path, pair_table(tmp_path), {"position_bias": {}}, [judge]),
        workdir=tmp_path,
        progress=False,
    )
    scores = res.summary.judges["pj"].tests["position_bias"]
    m = scores.scoring_metrics  # what the position scoring adds to the envelope
    # exactly three judge calls per pair (the source in its order, the probe in the other, the
    # placebo: the source's order again) and no generation or validation call
    assert len(sheet_judge.calls) == 3 * len(SHEET) == res.summary.lm_calls["judge:pj"]
    assert not [k for k in res.summary.lm_calls if not k.startswith("judge:")]
    shown = Counter((c.field("response_a"), c.field("response_b")) for c in sheet_judge.calls)
    assert set(shown) == {(f"X{i}", f"Y{i}") for i in SHEET} | {(f"Y{i}", f"X{i}") for i in SHEET}

    # by hand: consistent p1 p2 p5; decisive p0 p1 p2 p4 p5, of which p0 p4 flip;
    # decisive verdicts that chose the first shown: p0 2/2, p1 1/2, p2 1/2, p3 0/1, p4 0/2,
    # p5 1/2; accuracy A first: p0 p1 p4 p5; B first: p1 p3 p5
    assert m["pairs"] == 6 and m["decisive_pairs"] == 5
    assert scores.consistency.value == pytest.approx(3 / 6)
    assert m["flip_rate"].value == pytest.approx(2 / 5)
    assert m["first_position_rate"].value == pytest.approx(5 / 11)
    assert m["accuracy_ab"].value == pytest.approx(4 / 6)
    assert m["accuracy_ba"].value == pytest.approx(3 / 6)
    assert m["accuracy_order_averaged"].value == pytest.approx(7 / 12)
    assert scores.pass_rate == m["accuracy_order_averaged"]

    # independently, from the sheet, with the pair as the resampling unit
    ab = {i: SHEET[i][0] for i in SHEET}
    ba = {i: SHEET[i][1] for i in SHEET}
    pid = {i: f"p{i}" for i in SHEET}
    flips = [(float(ab[i] != ba[i]), pid[i]) for i in SHEET if {ab[i], ba[i]} <= {"A", "B"}]
    firsts = [(float(ab[i] == "A"), pid[i]) for i in SHEET if ab[i] != "tie"]
    firsts += [(float(ba[i] == "B"), pid[i]) for i in SHEET if ba[i] != "tie"]
    avg = [((ab[i] == REF[i]) + (ba[i] == REF[i])) / 2 for i in SHEET]
    for key, rows in (("flip_rate", flips), ("first_position_rate", firsts)):
        vals, ids = [r[0] for r in rows], [r[1] for r in rows]
        assert m[key].value == pytest.approx(np.mean(vals))
        lo, hi = cluster_ci(vals, ids)
        assert (m[key].ci_low, m[key].ci_high) == pytest.approx((lo, hi))
    lo, hi = cluster_ci(avg, [pid[i] for i in SHEET])
    assert (scores.pass_rate.ci_low, scores.pass_rate.ci_high) == pytest.approx((lo, hi))

    # the judgments record the order shown; the probe is the source in the other order, the
    # placebo the source in its own
    probes = [json.loads(x) for x in (res.run_dir / "probes.jsonl").read_text().splitlines()]
    assert len(probes) == 12
    placebos = {p["source_id"]: p for p in probes if p["meta"].get("placebo")}
    swapped = [p for p in probes if not p["meta"].get("placebo")]
    assert all(
        placebos[p["source_id"]]["meta"]["order"] == p["meta"]["source_order"] for p in swapped
    )
    # against the placebo, by hand (the sheet's judge is deterministic, so its placebo never
    # moves): over every pair, the swap's moves toward the answer it shows first minus those
    # toward the one it shows second (a tie halfway between)
    base = {i: SHEET[i][0 if swapped[i]["meta"]["source_order"] == "AB" else 1] for i in SHEET}
    cue = {i: SHEET[i][0 if swapped[i]["meta"]["order"] == "AB" else 1] for i in SHEET}
    first = {i: "A" if swapped[i]["meta"]["order"] == "AB" else "B" for i in SHEET}
    place = {i: {first[i]: 1.0, "tie": 0.5}.get(cue[i], 0.0) for i in SHEET}
    start = {i: {first[i]: 1.0, "tie": 0.5}.get(base[i], 0.0) for i in SHEET}
    up = [i for i in SHEET if place[i] > start[i]]
    down = [i for i in SHEET if place[i] < start[i]]
    (e,) = scores.placebo.effects.values()
    assert (e.n, e.cue_only, e.placebo_only, e.placebo_flips) == (
        6,
        *sorted((len(up), len(down)), reverse=True),
        0,
    )
    assert e.effect == pytest.approx((len(up) - len(down)) / 6)
    report = (res.run_dir / "report.md").read_text()
    assert "position_bias" in report and "first-position" in report


LEANING = (
    10  # pairs where the leaning judge picks by position; two more it answers "A" in either order
)


@pytest.fixture
def leaning_judge(request):
    """A pairwise judge that picks the answer shown ``first`` or ``second`` (the test's
    parameter) on pairs 0–9 and answers the right one, X, on pairs 10 and 11."""

    def respond(call):
        shown_a = call.field("response_a") or ""
        if int(shown_a[1:]) >= LEANING:
            return {"verdict": "A" if shown_a.startswith("X") else "B"}
        return {"verdict": "A" if request.param == "first" else "B"}

    engine = ScriptedEngine(respond=respond)
    register_script("pos-lean", lambda: engine)
    return request.param


@pytest.mark.parametrize("leaning_judge", ["first", "second"], indirect=True)
def test_a_judge_preferring_either_position_is_flagged_with_the_position_it_favours(
    tmp_path, leaning_judge
):
    """Both a primacy and a recency preference are a position bias: the swap's effect against
    the placebo is signed, tested two-sided (statsmodels' exact McNemar test on the table
    counted from the probes), flagged, and names the favoured position."""
    from statsmodels.stats.contingency_tables import mcnemar

    pairs = tmp_path / "pairs.csv"
    rows = [f"p{i},Which is better ({i})?,X{i},Y{i},A" for i in range(LEANING + 2)]
    pairs.write_text("\n".join(["id,request,response,response_b,expected", *rows]) + "\n")
    judge = {"name": "pj", "task": "pairwise", "model": "scripted:pos-lean", "rubric": "r"}
    res = run_harness(
        harness(tmp_path, pairs, {"position_bias": {}}, [judge]), workdir=tmp_path, progress=False
    )
    placebo = res.summary.judges["pj"].tests["position_bias"].placebo
    e = placebo.effects["swapped"]

    # by hand from the probes: where the swap moved the verdict (the judge is deterministic,
    # so its placebo never moves)
    probes = [json.loads(x) for x in (res.run_dir / "probes.jsonl").read_text().splitlines()]
    up = down = 0
    for p in probes:
        if p["meta"].get("placebo") or int(p["source_id"][1:]) >= LEANING:
            continue  # the two pairs answered on content never move
        # the leaning judge picks the answer the swap shows first (or second): it moved there
        up, down = (up + 1, down) if leaning_judge == "first" else (up, down + 1)
    n = LEANING + 2
    assert (up + down, e.n) == (LEANING, n)
    assert e.effect == pytest.approx((up - down) / n)
    assert e.favoured == leaning_judge and e.placebo_flips == 0
    table = [[0, up], [down, n - up - down]]
    assert e.p_value == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-12)
    assert (e.ci_low > 0) if leaning_judge == "first" else (e.ci_high < 0)
    assert e.flagged and placebo.flagged
    report = (res.run_dir / "report.md").read_text()
    assert f"({leaning_judge} favoured)" in report


def test_position_bias_reaches_the_mlflow_child_run_of_its_judge(tmp_path, sheet_judge):
    import mlflow

    judge = {"name": "pj", "task": "pairwise", "model": "scripted:pos-sheet", "rubric": "r"}
    cfg = harness(tmp_path, pair_table(tmp_path), {"position_bias": {}}, [judge])
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    cfg.tracking.enabled = True
    res = run_harness(cfg, workdir=tmp_path, progress=False, tracking_uri=uri)
    client = mlflow.MlflowClient(tracking_uri=uri)
    parent = client.get_run(res.mlflow_run_id)
    assert parent.data.metrics["probes.position_bias"] == 12  # 6 swapped pairs, 6 placebos
    (child,) = client.search_runs(
        [parent.info.experiment_id],
        filter_string=f"tags.mlflow.parentRunId = '{res.mlflow_run_id}'",
    )
    got = child.data.metrics
    assert got["position_bias.flip_rate"] == pytest.approx(2 / 5)
    assert got["position_bias.first_position_rate"] == pytest.approx(5 / 11)
    assert "position_bias.accuracy_order_averaged_ci_low" in got
    assert got["position_bias.pass_rate"] == pytest.approx(7 / 12)
    effect = res.summary.judges["pj"].tests["position_bias"].placebo.effects["swapped"]
    assert got["position_bias.placebo.swapped.effect"] == pytest.approx(effect.effect)


def exact_curve(samples: list[int], m: int) -> float:
    """Brute force over every m-subset (by position): the share whose majority is the majority
    of the other samples, a tie on either side broken fairly (each tied verdict 1/(tied))."""
    total = 0.0
    for idx in combinations(range(len(samples)), m):
        drawn = Counter(samples[i] for i in idx)
        rest = Counter(samples[i] for i in range(len(samples)) if i not in idx)
        tops = [[v for v, n in c.items() if n == max(c.values())] for c in (drawn, rest)]
        total += sum((v in tops[1]) / (len(tops[0]) * len(tops[1])) for v in tops[0])
    return total / comb(len(samples), m)


STABILITY = {
    "i0": [1, 1, 1, 1, 1],
    "i1": [1, 1, 1, 0, 0],
    "i2": [0, 0, 0, 0, 1],
    "i3": [1, 0, 1, 0, 1],
}


def test_held_out_majority_agreement_equals_brute_force():
    for samples in (*STABILITY.values(), [2, 2, 1, 0, 1, 2, 0], [1, 0, 2, 2, 1, 1, 0, 0, 0]):
        for m in range(1, len(samples)):
            got = held_out_majority_agreement(samples, m)
            assert got == pytest.approx(exact_curve(samples, m))
            # the split is symmetric: m drawn against k - m is k - m drawn against m
            assert got == pytest.approx(held_out_majority_agreement(samples, len(samples) - m))
    assert held_out_majority_agreement([1, 1, 0, 0], 2) == pytest.approx(
        (1 * 0 + 4 * 0.5 + 1 * 0) / 6  # 1100|..: 1 vs 0; 1010 (4 ways): tie vs tie → 1/2
    )
    for m in (0, 3, 4):  # m = k leaves nothing held out: the in-sample estimate that cannot fail
        with pytest.raises(ValueError):
            held_out_majority_agreement([1, 0, 1], m)


def stability_config(tmp_path: Path, model: str, k: int, items: list[str]) -> HarnessConfig:
    tmp_path.mkdir(parents=True, exist_ok=True)
    data = tmp_path / "items.csv"
    data.write_text(
        "id,request,response,expected\n" + "".join(f"{i},Q {i}?,R {i},1\n" for i in items)
    )
    return HarnessConfig.model_validate(
        {
            "name": "s",
            "data": {"path": str(data), "columns": {"id": "id"}},
            "scale": "binary",
            "judges": [{"name": "j", "model": model}],
            "tests": {"stochastic_stability": {"k": k, "temperature": 1.0}},
            "concurrency": 1,
            "retries": 0,
            "tracking": {"enabled": False},
            "output_dir": str(tmp_path / "runs"),
        }
    )


def sampled(res) -> dict[str, list[int]]:
    """Each source's sampled verdicts, as the run recorded them."""
    probes = {
        p["id"]: p["source_id"]
        for p in map(json.loads, (res.run_dir / "probes.jsonl").read_text().splitlines())
    }
    out: dict[str, list[int]] = {}
    for f in (res.run_dir / "judgments").glob("*.jsonl"):
        for j in map(json.loads, f.read_text().splitlines()):
            if j["item_id"] in probes:
                out.setdefault(probes[j["item_id"]], []).append(j["score"])
    return out


def test_samples_needed_on_a_scripted_sheet_equals_a_hand_computation(tmp_path):
    served: Counter = Counter()

    def respond(call):
        item = (call.field("response") or "").split()[-1]
        if not call.temperature:
            return {"verdict": "1"}  # the source, judged once at temperature 0
        k = served[item]
        served[item] += 1
        return {"verdict": str(STABILITY[item][k])}

    register_script("samples-sheet", lambda: ScriptedEngine(respond=respond))
    cfg = stability_config(tmp_path, "scripted:samples-sheet", 5, list(STABILITY))
    res = run_harness(cfg, workdir=tmp_path, progress=False)
    m = res.summary.judges["j"].tests["stochastic_stability"].scoring_metrics
    curve = m["samples_needed"]
    # by hand, against the held-out rest: i0 1, 1; i1 (1 1 1 0 0) m=1 → 3/5 · 1/2 (the rest
    # 1 1 0 0 ties), m=3 → 6/10 · 1/2 (drawn 1 1 0, rest 1 0 ties); i2 m=1 → 4/5, m=3 → 6/10
    # + 4/10 · 1/2; i3 as i1
    assert curve["m1"].value == pytest.approx((1 + 0.3 + 0.8 + 0.3) / 4)
    assert curve["m3"].value == pytest.approx((1 + 0.3 + 0.8 + 0.3) / 4)
    assert set(curve) == {"m1", "m3"}  # m = k = 5 would agree with itself
    assert m["samples_needed_95"] is None and m["samples_k"] == 5
    # the item is the resampling unit: an independent bootstrap of the per-item values
    for key in ("m1", "m3"):
        per_item = [exact_curve(s, int(key[1:])) for s in STABILITY.values()]
        ids = sorted(STABILITY)  # the harness orders sources as seeded: same sorted order here
        lo, hi = cluster_ci(per_item, ids)
        assert curve[key].n == 4
        assert (curve[key].ci_low, curve[key].ci_high) == pytest.approx((lo, hi))
    report = (res.run_dir / "report.md").read_text()
    assert "Samples needed" in report and (res.run_dir / "samples_needed.png").is_file()
    assert "not reached within k = 5" in report
    # report.html shows the curve too, as the PNG the run wrote
    page = (res.run_dir / "report.html").read_text()
    png = base64.b64encode((res.run_dir / "samples_needed.png").read_bytes()).decode()
    assert "Samples needed for a stable majority" in page and png in page


TIES = {"t0": [1, 1], "t1": [1, 1], "t2": [0, 1], "t3": [1, 0], "t4": [0, 0], "t5": [0, 1]}


def test_an_item_whose_samples_tie_has_no_majority_and_counts_as_not_right(tmp_path):
    """k = 2, every reference 1: two items right, one wrong, three split 1–1. The tied items
    have no majority verdict: majority accuracy is 2 of 6 (they were left out: 2 of 3, and the
    more a judge's samples split, the better it looked), with the exact interval over 6 and the
    ties counted in the reports."""
    served: Counter = Counter()

    def respond(call):
        item = (call.field("response") or "").split()[-1]
        if not call.temperature:
            return {"verdict": "1"}
        k = served[item]
        served[item] += 1
        return {"verdict": str(TIES[item][k])}

    register_script("ties-sheet", lambda: ScriptedEngine(respond=respond))
    res = run_harness(
        stability_config(tmp_path, "scripted:ties-sheet", 2, list(TIES)),
        workdir=tmp_path,
        progress=False,
    )
    assert {i: sorted(v) for i, v in sampled(res).items()} == {
        i: sorted(v) for i, v in TIES.items()
    }
    m = res.summary.judges["j"].tests["stochastic_stability"].scoring_metrics
    acc = m["majority_accuracy"]
    assert (acc.value, acc.n, m["majority_ties"]) == (pytest.approx(2 / 6), 6, 3)
    low, high = scipy.stats.beta.ppf(0.025, 2, 5), scipy.stats.beta.ppf(0.975, 3, 4)
    assert (acc.ci_low, acc.ci_high) == pytest.approx((low, high))
    for page in ("report.md", "report.html"):
        assert "majority_ties 3" in (res.run_dir / page).read_text()


def test_a_coin_flip_judge_never_reaches_the_target_and_a_steady_one_needs_one_sample(tmp_path):
    """A judge answering at random (seeded) through the harness: no m below k reaches 95%, in
    the metrics, the report and report.html; every point of its curve equals a brute force over
    the samples the run recorded. A judge that always answers the same needs one sample."""
    rng = random.Random(7)

    def coin(call):
        if not call.temperature:
            return {"verdict": "1"}
        return {"verdict": str(rng.randint(0, 1))}

    register_script("coin-flip", lambda: ScriptedEngine(respond=coin))
    items = [f"c{i:02d}" for i in range(12)]
    res = run_harness(
        stability_config(tmp_path / "coin", "scripted:coin-flip", 9, items),
        workdir=tmp_path,
        progress=False,
    )
    m = res.summary.judges["j"].tests["stochastic_stability"].scoring_metrics
    samples = sampled(res)
    assert sorted(samples) == items and {len(s) for s in samples.values()} == {9}
    assert set(m["samples_needed"]) == {"m1", "m3", "m5", "m7"}
    for key, mv in m["samples_needed"].items():
        brute = [exact_curve(samples[i], int(key[1:])) for i in items]
        assert mv.value == pytest.approx(float(np.mean(brute)))
        assert mv.value < 0.8 and mv.ci_low < 0.95
    assert m["samples_needed_95"] is None and m["samples_needed_95_ci_low"] is None
    for page in ("report.md", "report.html"):
        assert "not reached within k = 9" in (res.run_dir / page).read_text()

    register_script("steady", lambda: ScriptedEngine(respond=lambda c: {"verdict": "1"}))
    res = run_harness(
        stability_config(tmp_path / "steady", "scripted:steady", 9, items),
        workdir=tmp_path,
        progress=False,
    )
    m = res.summary.judges["j"].tests["stochastic_stability"].scoring_metrics
    assert m["samples_needed_95"] == 1
    assert all(mv.value == 1.0 for mv in m["samples_needed"].values())
    # every item agreeing at every m: the exact interval over the 12 items, not a bootstrap's
    # [1, 1]; its lower bound (0.735) does not reach 95% (it decided "1" when it was [1, 1])
    low = float(scipy.stats.beta.ppf(0.025, 12, 1))
    for mv in m["samples_needed"].values():
        assert (mv.ci_low, mv.ci_high) == pytest.approx((low, 1.0))
    assert m["samples_needed_95_ci_low"] is None
    assert "not reached within k = 9" in (res.run_dir / "report.md").read_text()


def test_a_run_without_a_generator_does_not_name_one(tmp_path, sheet_judge, capsys):
    """A position-bias run (no probe made by a model) said "generator
    `local`" — the config's default — and warned about the embedded model's poor probes. Both
    reports now say there was no generator or validator."""
    import json

    from assay.cli import main

    config = {
        "name": "pos-no-generator",
        "data": {"path": str(pair_table(tmp_path)), "columns": {"id": "id"}},
        "scale": {"kind": "categorical", "labels": ["A", "B", "tie"]},
        "judges": [
            {"name": "pj", "task": "pairwise", "model": "scripted:pos-sheet", "rubric": "r"}
        ],
        "tests": {"position_bias": {}},  # no generator or validator in the config: the defaults
        "tracking": {"enabled": False},
        "output_dir": str(tmp_path / "runs"),
    }
    (tmp_path / "config.yaml").write_text(json.dumps(config), encoding="utf-8")
    assert main(["harness", str(tmp_path / "config.yaml"), "--quiet"]) == 0
    capsys.readouterr()
    (run_dir,) = (tmp_path / "runs").iterdir()
    md = (run_dir / "report.md").read_text()
    html = (run_dir / "report.html").read_text()
    assert "no generator or validator" in md and "no generator or validator" in html
    assert "local" not in md, [line for line in md.splitlines() if "local" in line]
    assert "generator `" not in md and "embedded local model" not in md


def test_the_position_note_does_not_promise_flip_rate_0_of_a_judge_that_samples(tmp_path):
    """A fair judge answering a coin on 30% of calls flips pairs by chance with no position
    bias (its placebo-corrected effect covers 0): the report's note says flip rate 0 holds for
    a deterministic position-blind judge, and points a sampling one to the effect."""
    import hashlib

    seen: Counter = Counter()

    def respond(call):
        shown_a = call.field("response_a") or ""
        seen[call.prompt] += 1
        key = f"{call.prompt}{seen[call.prompt]}".encode()
        u, coin = (b / 256 for b in hashlib.sha256(key).digest()[:2])
        if u < 0.3:
            return {"verdict": "A" if coin < 0.5 else "B"}
        return {"verdict": "A" if shown_a.startswith("X") else "B"}  # X is the better

    register_script("pos-fair-sampler", lambda: ScriptedEngine(respond=respond))
    pairs = tmp_path / "pairs.csv"
    rows = [f"p{i},Which is better ({i})?,X{i},Y{i},A" for i in range(80)]
    pairs.write_text("\n".join(["id,request,response,response_b,expected", *rows]) + "\n")
    judge = {"name": "pj", "task": "pairwise", "model": "scripted:pos-fair-sampler"}
    res = run_harness(
        harness(tmp_path, pairs, {"position_bias": {}}, [judge]), workdir=tmp_path, progress=False
    )
    m = res.summary.judges["pj"].tests["position_bias"]
    effect = m.placebo.effects["swapped"]
    assert m.scoring_metrics["flip_rate"].value > 0.1  # it flips, by chance
    assert effect.ci_low < 0 < effect.ci_high and not effect.flagged
    report = (res.run_dir / "report.md").read_text()
    assert "A position-blind judge has first-position preference 0.5 and flip rate 0." not in report
    assert "A deterministic judge that is blind to position" in report
    assert "the placebo-corrected effect against its own flips" in report
