"""The harness on an Inspect log run with several epochs: each sample and epoch is a source item,
but the epochs of a sample share its input and its reference, so every interval resamples a
sample's epochs together — never as if each epoch were a new sample. A log whose epochs repeat
each sample word for word gives exactly the intervals of the samples alone (metamorphic); epochs
that differ give intervals no narrower than the samples allow, and the report says why."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from assay.lm import ScriptedEngine, register_script
from assay.metrics import cluster_mean
from assay.reliability import HarnessConfig, run_harness

pytest.importorskip("inspect_ai")

from tests.inspect_logs import Epoch, write_inspect_log  # noqa: E402

SAMPLES = 12
TESTS = {"format_intraline": {}, "stochastic_stability": {"k": 2}}
SWAYED = (1, 3, 5, 7, 9)  # samples whose verdict a fabricated citation moves to "correct"


def write_log(path: Path, epochs: int, same: bool) -> Path:
    """``SAMPLES`` samples run ``epochs`` times; ``same``: every epoch's answer word for word
    the first's (else each epoch's answer names it)."""
    rows = [
        Epoch(
            f"s{s}",
            e,
            f"Request {s}",
            f"Sample {s} answer {1 if same else e}: "
            + ("no" if s % 3 else "yes")
            + " because"
            + " it is so" * 10,  # gaps enough for every reformatting
            {"ok": int(s % 2 == 0)},
        )
        for s in range(SAMPLES)
        for e in range(1, epochs + 1)
    ]
    return write_inspect_log(path, rows, task="answers", epochs=epochs)


def verdict(call) -> dict[str, str]:
    """Right on most samples; wrong on a reformatted answer of a few, in some epochs; at
    temperature, every third sample's answer judged by its length's parity (an unstable
    judge, the same on identical answers)."""
    s, e = map(int, re.search(r"Sample\s+(\d+)\s+answer\s+(\d+)", call.prompt).groups())
    right = s % 2 == 0
    if "  " in (call.field("response") or ""):  # the answer reformatted
        right = right != (s in (1, 4, 7) or (s == 10 and e == 2))
    if (call.temperature or 0) > 0 and s % 3 == 0:
        right = right != bool(len(call.prompt) % 2)
    if "Harrington" in (call.field("response") or "") and s in SWAYED:  # authority's citation
        right = True
    return {"verdict": "correct" if right else "incorrect"}


@pytest.fixture
def judge():
    """The scripted judge."""
    register_script("ep-judge", lambda: ScriptedEngine(respond=verdict))


def harness(folder: Path, log: Path, tests: dict = TESTS):
    cfg = HarnessConfig.model_validate(
        {
            "name": "ep",
            "data": {"path": str(log), "format": "inspect", "expected": "scores.ok.value"},
            "scale": {"kind": "binary", "labels": ["incorrect", "correct"]},
            "generator": {"model": "scripted:ep-judge"},
            "validator": {"model": "scripted:ep-judge"},
            "judges": [{"name": "j", "model": "scripted:ep-judge"}],
            "tests": tests,
            "retries": 0,
            "tracking": {"enabled": False},
            "output_dir": str(folder / "runs"),
        }
    )
    return run_harness(cfg, workdir=folder, progress=False).summary


def figures(summary) -> dict[str, tuple]:
    tests = summary.judges["j"].tests
    out = {}
    for test, m in tests.items():
        for name, v in [("pass_rate", m.pass_rate), ("consistency", m.consistency)]:
            if v is not None:
                out[f"{test}.{name}"] = (v.value, v.ci_low, v.ci_high)
    curve = tests["stochastic_stability"].scoring_metrics["samples_needed"]
    out["m1"] = (curve["m1"].value, curve["m1"].ci_low, curve["m1"].ci_high)
    return out


def test_identical_epochs_give_the_samples_own_intervals(tmp_path, judge):
    one = harness(tmp_path / "one", write_log(tmp_path / "one.eval", epochs=1, same=True))
    three = harness(tmp_path / "three", write_log(tmp_path / "three.eval", epochs=3, same=True))
    assert one.seeds == SAMPLES and three.seeds == 3 * SAMPLES
    for run in (one, three):
        assert not any(m.unscored for m in run.judges["j"].tests.values())
    a, b = figures(one), figures(three)
    # the bootstrapped figures: the samples' own, to the last digit
    for key in ("format_intraline.pass_rate", "format_intraline.consistency", "m1"):
        assert np.allclose(a[key], b[key], rtol=0, atol=1e-12), key
    # stability's pass rate: one outcome per item, exact over 12 samples; over their epochs a
    # cluster bootstrap over the same 12 — the value the same, the interval never the one of 36
    value, low, high = b["stochastic_stability.pass_rate"]
    assert value == a["stochastic_stability.pass_rate"][0]
    m = three.judges["j"].tests["stochastic_stability"].pass_rate
    assert "12 clusters" in m.note and "Inspect sample" in m.note
    assert any(
        "36 of the 36 source items are epochs of 12 Inspect samples" in n for n in three.notes
    )
    assert "epochs of 12 Inspect samples" in three.bootstrap
    assert not any("Inspect samples" in n for n in one.notes)


def test_a_placebo_effect_over_identical_epochs_is_the_samples_own(tmp_path, judge):
    """A bias test's effect against its placebo has no bootstrap to resample: over epochs its
    paired counts are divided by the samples' design effect, so epochs that repeat each sample
    give the samples' own interval and exact p-value — not those of three times the items."""
    from assay.metrics import newcombe_paired_interval, one_sided_mcnemar

    tests = {"authority": {}}
    one = harness(tmp_path / "one", write_log(tmp_path / "one.eval", 1, same=True), tests)
    three = harness(tmp_path / "three", write_log(tmp_path / "three.eval", 3, same=True), tests)
    a = one.judges["j"].tests["authority"].placebo.effects
    b = three.judges["j"].tests["authority"].placebo.effects
    assert set(a) == set(b) and a
    for cell, e in a.items():
        f = b[cell]
        # the odd samples are "incorrect" and could move up; 5 of the 6 do under the citation
        assert (e.n, e.cue_only, e.placebo_only) == (6, 5, 0)
        assert (f.n, f.cue_only, f.placebo_only) == (18, 15, 0)
        assert (f.clusters, f.design_effect) == (6, 3.0) and e.clusters is None
        assert (f.effect, f.ci_low, f.ci_high, f.p_value) == (
            e.effect,
            e.ci_low,
            e.ci_high,
            e.p_value,
        )
        assert e.p_value == one_sided_mcnemar(5, 0) == 1 / 32
        assert "18 items in 6 clusters" in f.note and "design effect 3.00" in f.note
        # as 18 independent items: p = 1/2^15 and an interval far narrower
        low, high = newcombe_paired_interval(0, 15, 0, 3)
        assert high - low < f.ci_high - f.ci_low
    assert "placebo effects' intervals and tests take their counts divided" in three.bootstrap


def test_epochs_that_differ_are_resampled_by_sample_not_by_epoch(tmp_path, judge):
    summary = harness(tmp_path / "run", write_log(tmp_path / "differ.eval", epochs=3, same=False))
    m = summary.judges["j"].tests["format_intraline"]
    assert m.judged == 3 * SAMPLES and m.unscored == 0
    rate = m.pass_rate
    # the judge is wrong on the reformatted answer of samples 1, 4, 7 (every epoch) and of
    # sample 10 in epoch 2: 26 of 36 probes pass
    outcomes = [
        float(not (s in (1, 4, 7) or (s == 10 and e == 2)))
        for s in range(SAMPLES)
        for e in (1, 2, 3)
    ]
    assert (rate.value, rate.n, rate.count) == (26 / 36, 36, 26)
    assert rate.note == (
        "bootstrap resampled 12 clusters (source items, the epochs of an Inspect sample and "
        "the repeats of a text together), not the 36 units"
    )
    by_sample = cluster_mean(outcomes, [s for s in range(SAMPLES) for _ in (1, 2, 3)])
    by_epoch = cluster_mean(outcomes, list(range(3 * SAMPLES)))
    assert (rate.ci_low, rate.ci_high) == (by_sample.ci_low, by_sample.ci_high)
    # as 36 independent items the interval would be narrower than the 12 samples allow
    assert by_epoch.ci_high - by_epoch.ci_low < rate.ci_high - rate.ci_low
    report = next((tmp_path / "run" / "runs").iterdir()) / "report.md"
    assert "36 of the 36 source items are epochs of 12 Inspect samples" in report.read_text()


def test_a_text_judge_sees_the_reformatted_answer_of_a_transcript(tmp_path, judge):
    """A format test on a transcript reformats every message; the probe's response is the
    answer as reformatted there, so a judge of request and response sees it changed too."""
    summary = harness(tmp_path / "run", write_log(tmp_path / "one.eval", epochs=1, same=True))
    probes = [
        json.loads(line)
        for line in next((tmp_path / "run" / "runs").iterdir()).joinpath("probes.jsonl").open()
    ]
    formatted = [p for p in probes if p["test"] == "format_intraline"]
    assert len(formatted) == SAMPLES
    for p in formatted:
        assert "  " in p["response"] and p["response"] == p["transcript"][-1]["content"]
    # the judge, wrong on reformatted answers of three samples, is caught on them
    assert summary.judges["j"].tests["format_intraline"].pass_rate.value == 9 / 12
