"""The same item under new ids is one item in the harness: items whose texts are one
(:func:`assay.inputs.same_items`) are clustered as an Inspect sample's epochs are, so writing
every item twice leaves every bias test's interval and p-value as the originals alone give them
(position bias, the authority and bandwagon cues against their placebo, stochastic stability),
and the run says how many items it took as repeats."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from assay.lm import ScriptedEngine, register_script
from assay.reliability import HarnessConfig, run_harness
from tests.reliability.test_bias_probes import truth
from tests.reliability.test_placebo_effects import config as cue_config
from tests.reliability.test_placebo_effects import write_items

PAIRS = 60


def doubled(path: Path) -> Path:
    """The table with every row again under the id ``<id>dup``, after all the originals."""
    head, *rows = path.read_text().splitlines()
    out = path.with_name(f"doubled-{path.name}")
    copies = [f"{r.split(',', 1)[0]}dup,{r.split(',', 1)[1]}" for r in rows]
    out.write_text("\n".join([head, *rows, *copies]) + "\n")
    return out


def draw(*key) -> float:
    return int.from_bytes(hashlib.sha256(repr(key).encode()).digest()[:8], "big") / 2**64


class Calls:
    """Which time a prompt is asked, counting ``copies`` askings as one: the judges below draw
    their noise per prompt and time asked, so an item written ``copies`` times (its sources
    first, then its placebos, asked of an uncached judge) gets the verdicts it gets alone."""

    def __init__(self, copies: int):
        self.copies, self.seen = copies, {}

    def __call__(self, prompt: str) -> int:
        self.seen[prompt] = self.seen.get(prompt, 0) + 1
        return (self.seen[prompt] - 1) // self.copies


def pairwise_judge(copies: int):
    """Picks the answer shown first on a third of the pairs, else the better (X) — a coin on
    30% of calls, drawn afresh for the placebo."""
    asked = Calls(copies)

    def respond(call):
        shown_a = call.field("response_a") or ""
        i, k = int(shown_a[1:]), asked(call.prompt)
        if draw("lean", i) < 1 / 3:
            return {"verdict": "A"}
        if draw("noise", call.prompt, k) < 0.3:
            return {"verdict": "A" if draw("coin", call.prompt, k) < 0.5 else "B"}
        return {"verdict": "A" if shown_a.startswith("X") else "B"}

    return respond


def cue_judge(copies: int):
    """The right verdict on the stated sum, a coin on 20% of calls; a response citing an
    authority called correct on 60% of them."""
    asked = Calls(copies)

    def respond(call):
        k, v = asked(call.prompt), truth(call)
        if "Harrington" in (call.field("response") or "") and draw("f", call.prompt, k) < 0.6:
            v = 1
        elif draw("n", call.prompt, k) < 0.2:
            v = int(draw("coin", call.prompt, k) < 0.5)
        return {"verdict": "correct" if v else "incorrect"}

    return respond


def pair_config(folder: Path, data: Path) -> HarnessConfig:
    return HarnessConfig.model_validate(
        {
            "name": "dup-pairs",
            "data": {"path": str(data), "columns": {"id": "id"}},
            "scale": {"kind": "categorical", "labels": ["A", "B", "tie"]},
            "judges": [{"name": "pj", "task": "pairwise", "model": "scripted:dup-pairs"}],
            "tests": {"position_bias": {}},
            "retries": 0,
            "concurrency": 1,
            "tracking": {"enabled": False},
            "output_dir": str(folder / "runs"),
        }
    )


def run(cfg: HarnessConfig, folder: Path):
    return run_harness(cfg, workdir=folder, progress=False).summary


def same(a, b) -> None:
    """Two metric values with the same point, interval (and p-value, for an effect)."""
    for field in ("effect", "value", "ci_low", "ci_high", "p_value"):
        if hasattr(a, field):
            assert getattr(a, field) == pytest.approx(getattr(b, field), rel=1e-9), field


def test_position_bias_over_every_pair_written_twice_is_that_over_the_pairs(tmp_path):
    table = tmp_path / "pairs.csv"
    rows = [f"p{i},Which is better ({i})?,X{i},Y{i},A" for i in range(PAIRS)]
    table.write_text("\n".join(["id,request,response,response_b,expected", *rows]) + "\n")
    register_script("dup-pairs", lambda: ScriptedEngine(respond=pairwise_judge(1)))
    once = run(pair_config(tmp_path / "once", table), tmp_path / "once")
    register_script("dup-pairs", lambda: ScriptedEngine(respond=pairwise_judge(2)))
    twice = run(pair_config(tmp_path / "twice", doubled(table)), tmp_path / "twice")

    a, b = (s.judges["pj"].tests["position_bias"] for s in (once, twice))
    e1, e2 = a.placebo.effects["swapped"], b.placebo.effects["swapped"]
    assert e1.p_value < 0.05 and e1.placebo_only > 0  # a bias found, against a moving placebo
    same(e1, e2)
    for name in ("flip_rate", "first_position_rate"):
        same(a.scoring_metrics[name], b.scoring_metrics[name])
    same(a.pass_rate, b.pass_rate)
    said = f"{2 * PAIRS} of the {2 * PAIRS} source items are {PAIRS} texts written more than once"
    assert any(said in n for n in twice.notes) and said in twice.bootstrap
    assert "written more than once" not in once.bootstrap


def test_cues_against_their_placebo_over_every_item_written_twice_are_those_of_the_items(
    tmp_path,
):
    for folder in ("once", "twice"):
        (tmp_path / folder).mkdir()
    register_script("dup-follower", lambda: ScriptedEngine(respond=cue_judge(1)))
    once = run(cue_config(tmp_path / "once", {"f": "scripted:dup-follower"}), tmp_path / "once")
    register_script("dup-follower", lambda: ScriptedEngine(respond=cue_judge(2)))
    cfg = cue_config(tmp_path / "twice", {"f": "scripted:dup-follower"})
    cfg.data.path = str(doubled(write_items(tmp_path / "twice")))
    twice = run(cfg, tmp_path / "twice")
    for test in ("authority", "bandwagon"):
        a, b = once.judges["f"].tests[test], twice.judges["f"].tests[test]
        assert a.placebo.effects.keys() == b.placebo.effects.keys()
        for cell, effect in a.placebo.effects.items():
            same(effect, b.placebo.effects[cell])
        same(a.pass_rate, b.pass_rate)
    assert once.judges["f"].tests["authority"].placebo.effects  # something to compare


def test_stochastic_stability_over_every_item_written_twice_is_that_over_the_items(tmp_path):
    from tests.reliability.test_position_samples import stability_config

    def judge(copies: int):
        asked = Calls(copies)

        def respond(call):  # each sample of a prompt 1 with probability 0.7
            if not call.temperature:
                return {"verdict": "1"}
            return {"verdict": str(int(draw("s", call.prompt, asked(call.prompt)) < 0.7))}

        return respond

    items = [f"i{k:02d}" for k in range(30)]
    register_script("dup-stable", lambda: ScriptedEngine(respond=judge(1)))
    once = run(
        stability_config(tmp_path / "once", "scripted:dup-stable", 5, items), tmp_path / "once"
    )
    register_script("dup-stable", lambda: ScriptedEngine(respond=judge(2)))
    cfg = stability_config(tmp_path / "twice", "scripted:dup-stable", 5, items)
    cfg.data.path = str(doubled(Path(cfg.data.path)))
    twice = run(cfg, tmp_path / "twice")
    a, b = (s.judges["j"].tests["stochastic_stability"] for s in (once, twice))
    same(a.pass_rate, b.pass_rate)
    for key, value in a.scoring_metrics["samples_needed"].items():
        same(value, b.scoring_metrics["samples_needed"][key])
