"""Relations a harness run's per-judge figures hold: the order the judges are listed in, the
order of the tests in the config and the rows' order of the data file do not change any judge's
figure on any test (scripted judges; the generator and validator of the self-test)."""

from __future__ import annotations

import csv
import random
from pathlib import Path

import pytest

from assay.lm import ScriptedEngine, register_script
from assay.reliability import HarnessConfig, run_harness
from assay.reliability.selftest._selftest import generator, judge_responder, validator, write_data

TESTS = {
    "label_flip": {},
    "format_vertical": {},
    "format_indent": {},
    "paraphrase": {},
    "verbosity_long": {},
}
JUDGES = [
    {"name": "clean", "model": "scripted:rel-clean"},
    {"name": "format", "model": "scripted:rel-format"},
    {"name": "length", "model": "scripted:rel-length"},
]


@pytest.fixture(scope="module", autouse=True)
def engines():
    for name, respond in {
        "rel-gen": generator,
        "rel-val": validator,
        "rel-clean": judge_responder("clean"),
        "rel-format": judge_responder("format_sensitive"),
        "rel-length": judge_responder("length_loving"),
    }.items():
        register_script(name, lambda r=respond: ScriptedEngine(respond=r))


def harness(folder: Path, data: Path, judges: list[dict], tests: dict) -> HarnessConfig:
    return HarnessConfig.model_validate(
        {
            "name": "rel",
            "data": {"path": str(data), "columns": {"id": "id"}},
            "scale": {"kind": "binary", "labels": ["incorrect", "correct"]},
            "generator": {"model": "scripted:rel-gen", "temperature": 0.7},
            "validator": {"model": "scripted:rel-val", "temperature": 0.0},
            "judges": [{**j, "rubric": "The answer must state the correct sum."} for j in judges],
            "tests": tests,
            "retries": 0,
            "tracking": {"enabled": False},
            "output_dir": str(folder / "runs"),
        }
    )


def figures(folder: Path, data: Path, judges: list[dict], tests: dict) -> dict:
    res = run_harness(harness(folder, data, judges, tests), workdir=folder, progress=False)
    return {
        name: {test: s.model_dump(mode="json") for test, s in sorted(j.tests.items())}
        for name, j in sorted(res.summary.judges.items())
    }


def shuffled_copy(data: Path, to: Path, seed: int) -> Path:
    with data.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    random.Random(seed).shuffle(rows)
    with to.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return to


@pytest.mark.parametrize("seed", [0, 1])
def test_judge_order_test_order_and_row_order_do_not_change_a_judge_s_figures(tmp_path, seed):
    data = write_data(tmp_path / "data", n=8)
    base = figures(tmp_path / "a", data, JUDGES, TESTS)
    rng = random.Random(seed)
    judges = rng.sample(JUDGES, len(JUDGES))
    tests = dict(rng.sample(list(TESTS.items()), len(TESTS)))
    other = figures(
        tmp_path / "b", shuffled_copy(data, tmp_path / "shuffled.csv", seed), judges, tests
    )
    assert other == base
    # the figures tell the judges apart (the relation is not met by figures that say nothing)
    assert base["clean"] != base["format"] and base["clean"] != base["length"]
