"""The harness holds no record per LM call: its judgments are in their files, its probes and
units too, and it scores a test at a time from them — with the very metrics that scoring every
judgment held in lists gives."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from assay.lm import ScriptedEngine, register_script
from assay.reliability import HarnessConfig, run_harness
from assay.reliability._probe import Probe, judged_id
from assay.reliability._registry import registered_test
from assay.reliability.engine._generation import UnitRecord
from assay.reliability.engine._judging import judgment_file
from assay.reliability.scoring import score_test
from assay.reliability.selftest._selftest import generator, judge_responder, validator, write_data
from assay.runs import RunStore
from assay.types import Judgment, Usage
from tests.live_objects import live_objects

TESTS = {
    "paraphrase": {},
    "label_flip": {},
    "verbosity_long": {},
    "stochastic_stability": {"k": 3, "temperature": 0.9},
}


@pytest.fixture
def two_judges(tmp_path: Path) -> HarnessConfig:
    engines = {
        "m-gen": ScriptedEngine(respond=generator),
        "m-val": ScriptedEngine(respond=validator),
        "m-clean": ScriptedEngine(respond=judge_responder("clean")),
        "m-long": ScriptedEngine(respond=judge_responder("length_loving")),
    }
    for name, engine in engines.items():
        register_script(name, lambda e=engine: e)
    data = write_data(tmp_path / "data", n=8)
    return HarnessConfig.model_validate(
        {
            "name": "mem",
            "data": {"path": str(data)},
            "scale": {"kind": "binary", "labels": ["incorrect", "correct"]},
            "generator": {"model": "scripted:m-gen", "temperature": 0.7},
            "validator": {"model": "scripted:m-val", "temperature": 0.0},
            "judges": [
                {"name": "clean", "model": "scripted:m-clean", "rubric": "the correct sum"},
                {"name": "long", "model": "scripted:m-long", "rubric": "the correct sum"},
            ],
            "tests": TESTS,
            "retries": 0,
            "tracking": {"enabled": False},
            "output_dir": str(tmp_path / "runs"),
        }
    )


def _live(*types: type) -> list[object]:
    """Every object of ``types`` alive in this process (the test's worker may hold some from
    the tests it ran before)."""
    return live_objects(*types)


def _alive(before: list[object], *types: type) -> dict[str, int]:
    """How many objects of each of ``types`` are alive that were not in ``before`` (which the
    caller keeps alive, so that none of their ids is taken by a new object)."""
    old = {id(obj) for obj in before}
    counts = dict.fromkeys((t.__name__ for t in types), 0)
    for obj in _live(*types):
        if id(obj) not in old:
            counts[type(obj).__name__] += 1
    return counts


def test_no_judgment_probe_or_unit_is_held_when_scoring_starts(two_judges, tmp_path, monkeypatch):
    """When the metrics start, every judgment, probe and unit record of the run is in its file
    and none in memory (the metrics then read one test's back at a time)."""
    import assay.reliability.engine._harness_metrics as metrics

    at_scoring: list[dict[str, int]] = []
    score = metrics.harness_metrics

    records = (Judgment, Probe, UnitRecord)
    before = _live(*records)

    def counted(*args, **kwargs):
        at_scoring.append(_alive(before, *records))
        return score(*args, **kwargs)

    monkeypatch.setattr(metrics, "harness_metrics", counted)
    res = run_harness(two_judges, workdir=tmp_path, progress=False)
    judged = sum(
        len((res.run_dir / judgment_file(j)).read_text().splitlines()) for j in two_judges.judges
    )
    assert sum(res.summary.probes.values()) > 30 and judged > 60
    assert at_scoring == [{"Judgment": 0, "Probe": 0, "UnitRecord": 0}]


def test_scoring_a_test_at_a_time_gives_the_metrics_of_every_judgment_held(two_judges, tmp_path):
    """Each judge's metrics on each test, and its usage, as scoring all of its judgments and
    the run's probes held in lists gives them (what the harness did before it read them back
    a test at a time)."""
    res = run_harness(two_judges, workdir=tmp_path, progress=False)
    written = json.loads((res.run_dir / "metrics.json").read_text())
    run_hash = json.loads((res.run_dir / "run.json").read_text())["run_hash"]
    store = RunStore(res.run_dir, run_hash=run_hash)
    probes = store.records("probes.jsonl", Probe, signed=False)
    seeds = [json.loads(x)["id"] for x in (res.run_dir / "seeds.jsonl").read_text().splitlines()]
    b = two_judges.bootstrap
    for cfg in two_judges.judges:
        js = store.judgments(judgment_file(cfg))
        sources = {s: js[f"source:{s}"].score if f"source:{s}" in js else None for s in seeds}
        criteria = {s: js[f"source:{s}"].criteria or {} for s in seeds if f"source:{s}" in js}
        verdicts = {p.id: js[judged_id(p)] for p in probes if judged_id(p) in js}
        listed = res.summary.judges[cfg.name]
        for name in TESTS:
            scores = score_test(
                registered_test(name).scoring,
                [p for p in probes if p.test == name],
                verdicts,
                sources,
                two_judges.scale,
                source_criteria=criteria,
                n_resamples=b.n_resamples,
                confidence=b.confidence,
                seed=b.seed,
            )
            # as JSON: a nan (a metric nothing defines) equals nothing
            assert listed.tests[name].model_dump_json() == scores.model_dump_json()
            assert written["judges"][cfg.name]["tests"][name]["probes"] == scores.probes
        assert listed.usage == Usage.total(j.usage for j in js.values())
        assert listed.source_unscored == sum(v is None for v in sources.values())


def _seeded(tmp_path: Path, n: int) -> HarnessConfig:
    for name, respond in {"s-gen": generator, "s-val": validator}.items():
        register_script(name, lambda r=respond: ScriptedEngine(respond=r))
    register_script("s-judge", lambda: ScriptedEngine(respond=judge_responder("clean")))
    return HarnessConfig.model_validate(
        {
            "name": f"seeds{n}",
            "data": {"path": str(write_data(tmp_path / f"data{n}", n=n)), "columns": {"id": "id"}},
            "scale": {"kind": "binary", "labels": ["incorrect", "correct"]},
            "generator": {"model": "scripted:s-gen", "temperature": 0.7},
            "validator": {"model": "scripted:s-val", "temperature": 0.0},
            "judges": [{"name": "j", "model": "scripted:s-judge", "rubric": "the correct sum"}],
            "tests": {"paraphrase": {}, "stochastic_stability": {"k": 2, "temperature": 0.9}},
            "concurrency": 2,
            "retries": 0,
            "tracking": {"enabled": False},
            "output_dir": str(tmp_path / "runs"),
        }
    )


@pytest.mark.parametrize("n", [40, 150])
def test_the_seeds_are_not_held_while_the_run_judges(tmp_path, monkeypatch, n):
    """The seeds are read from the items cache by position as the tasks need them (a seed's
    unit, its judging task, a probe's source meta): while the judges work, the items alive are
    those of the tasks in the pool's window, however many seeds the run has."""
    from assay.reliability.engine._judging import JudgePlan
    from assay.types import Item

    before = _live(Item)
    run = JudgePlan.run
    calls: list[str] = []
    alive: list[int] = []
    # one count at a time: a count's list of every object keeps alive, while it is read, the
    # items the other workers let go meanwhile, which a count beside it would see
    counting = threading.Lock()

    def counted(self, task):
        calls.append(task.item.id)
        # every 25th task, to the last ones (a count collects the whole heap: ~0.2 s); the
        # code that held the seeds grew with every seed, which any count past the first finds
        if len(calls) % 25 == 0:
            with counting:
                alive.append(_alive(before, Item)["Item"])
        return run(self, task)

    monkeypatch.setattr(JudgePlan, "run", counted)
    res = run_harness(_seeded(tmp_path, n), workdir=tmp_path, progress=False)
    assert sum(res.summary.probes.values()) >= 2 * n and len(calls) >= 3 * n
    assert sum(c.startswith("source:") for c in calls) == n
    # the generation pool's window (8 tasks: twice its 4 workers) and the judging tasks of the
    # probes of a batch of units that finished meanwhile (at most two each, queued ahead), a
    # few items each, however many seeds (15-29 seen, at load 1 to 10); the code that held
    # the seeds had more than two items a seed alive (314 at 150 seeds)
    assert max(alive) < 100, f"{max(alive)} items alive at once; {len(alive)} counts"


def test_the_finish_key_hashes_the_run_s_files_a_block_at_a_time(tmp_path):
    """A finished run's key digests its units and judgments (tens of MB at scale) without
    reading a file whole, and moves with a byte of them."""
    import tracemalloc
    from types import SimpleNamespace

    from assay.reliability.engine._rerun import finish_key

    (tmp_path / "judgments").mkdir()
    line = json.dumps({"item_id": "x" * 40, "score": 1, "text": "y" * 900}) + "\n"
    with open(tmp_path / "judgments" / "j.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(line for _ in range(30_000))  # ~28 MB
    (tmp_path / "units.jsonl").write_text(line * 10, encoding="utf-8")
    config = SimpleNamespace(model_dump=lambda mode: {"name": "c"})

    def key() -> str:
        return finish_key(config, tmp_path, tests=[], judges=["j"])

    tracemalloc.start()
    try:
        first = key()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 5e6, f"{peak / 1e6:.0f} MB"
    assert key() == first
    with open(tmp_path / "judgments" / "j.jsonl", "r+b") as fh:
        fh.seek(20_000_000)
        fh.write(b"Z")
    assert key() != first
