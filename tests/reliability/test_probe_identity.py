"""A probe is reused only while everything it was generated from is unchanged:
edit the rubric text a test's generation read — a transcript criterion (same id), or a rubric
file the config names — and exactly the probes that read it are made again, under new ids (no
judgment of the old text is reused), ``config.yaml`` holds the new text, and the run says how
many probes it reused. The harness's shared stage calls are a memo keyed on everything that can
change an answer (item 2, the harness's part)."""

from __future__ import annotations

import json
from pathlib import Path

import dspy
import pytest
import yaml

from assay import api
from assay.cli import main
from assay.lm import GeneratorSpec, ScriptedEngine, register_script
from assay.reliability._registry import CallMemo, GenerationContext
from assay.reliability.selftest import _selftest as rewrite
from assay.reliability.selftest._selftest_agent import (
    CRITERION,
    generator,
    judge_responder,
    validator,
    write_data,
)
from assay.scale import Scale

POLITE = "The agent is polite and thanks the user."
POLITE_EDITED = "The agent never uses an exclamation mark."


def _engines(prefix: str, gen, val, judges: dict) -> dict[str, ScriptedEngine]:
    e = {"gen": ScriptedEngine(respond=gen), "val": ScriptedEngine(respond=val)}
    e.update({name: ScriptedEngine(respond=r) for name, r in judges.items()})
    for k in e:
        register_script(f"{prefix}-{k}", lambda k=k: e[k])
    return e


def _run(path: Path) -> tuple[dict, str]:
    """``assay.api.harness(CONFIG)``, as a user calls it (``@file`` texts read from the
    config's folder): the summary and what was reused, and the run directory."""
    res = api.harness(path, workdir=path.parent, progress=False)
    return {**res.summary.model_dump(mode="json"), "probes_reused": res.probes_reused}, str(
        res.run_dir
    )


def _probe_ids(run_dir: str) -> dict[str, str]:
    """criterion or test + source → probe id, from ``probes.jsonl``."""
    out = {}
    for line in (Path(run_dir) / "probes.jsonl").read_text().splitlines():
        p = json.loads(line)
        out[f"{p['meta'].get('criterion', p['test'])}:{p['source_id']}"] = p["id"]
    return out


def test_editing_a_criterion_regenerates_exactly_its_probes(tmp_path, monkeypatch):
    engines = _engines("pi-a", generator, validator, {"judge": judge_responder("clean")})
    monkeypatch.chdir(tmp_path)
    write_data(tmp_path / "data", n=3)
    rubric = tmp_path / "criteria.json"
    rubric.write_text(json.dumps([CRITERION, {"id": "polite", "instructions": POLITE}]))
    config = {
        "name": "pi",
        "data": {"path": "data/agent_trajectories.jsonl", "format": "toolemu"},
        "scale": {"kind": "binary", "labels": ["fails", "passes"]},
        "generator": {"model": "scripted:pi-a-gen"},
        "validator": {"model": "scripted:pi-a-val"},
        "judges": [
            {
                "name": "j",
                "task": "transcript",
                "model": "scripted:pi-a-judge",
                "criteria": "@criteria.json",
            }
        ],
        "tests": {"agent_perturbation": {}},
        "retries": 0,
        "tracking": {"enabled": False},
    }
    path = tmp_path / "h.yaml"
    path.write_text(yaml.safe_dump(config))
    first, run_dir = _run(path)
    assert first["probes"] == {"agent_perturbation": 6}
    assert first["probes_reused"] == {"agent_perturbation": 0}
    before = len(engines["gen"].calls)
    ids = _probe_ids(run_dir)

    # the same criterion id, another text: its 3 units are planned, edited and verified anew
    rubric.write_text(json.dumps([CRITERION, {"id": "polite", "instructions": POLITE_EDITED}]))
    second, again_dir = _run(path)
    assert again_dir == run_dir  # the judges are not part of the probes' directory
    plans = [c for c in engines["gen"].calls[before:] if "steps" in c.fields]
    assert len(plans) == 3
    assert all(POLITE_EDITED in c.prompt and POLITE not in c.prompt for c in plans)
    assert not any(CRITERION["instructions"] in c.prompt for c in engines["gen"].calls[before:])
    assert second["probes_reused"] == {"agent_perturbation": 3}  # the unchanged criterion's
    new_ids = _probe_ids(run_dir)
    for key, pid in ids.items():  # the edited criterion's probes have new ids, the rest not
        assert (new_ids[key] == pid) == key.startswith(CRITERION["id"])
    written = (Path(run_dir) / "config.yaml").read_text()
    assert POLITE_EDITED in written and POLITE not in written

    # (c) unchanged: a re-run makes no call at all
    calls = {k: e.n_calls for k, e in engines.items()}
    third, _ = _run(path)
    assert {k: e.n_calls for k, e in engines.items()} == calls
    assert third.pop("probes_reused") == {"agent_perturbation": 6}  # re-read: all reused
    assert third == {k: v for k, v in second.items() if k != "probes_reused"}


def _rubric_reader(call):
    """The self-test generator, writing what the rubric asks for when it asks for words."""
    out = rewrite.generator(call)
    if "in words" in call.prompt:
        out = {**out, "rewritten": out["rewritten"] + " (Sum written in words.)"}
    return out


def _rewrite_config(folder: Path, prefix: str, judges: list[dict]) -> Path:
    """``folder/h.yaml``: label_flip and paraphrase on the self-test's arithmetic items, by the
    scripted generator and validator ``<prefix>-gen`` and ``<prefix>-val``."""
    config = {
        "name": prefix,
        "data": {"path": "data/arithmetic.csv"},
        "scale": {"kind": "binary", "labels": ["incorrect", "correct"]},
        "generator": {"model": f"scripted:{prefix}-gen"},
        "validator": {"model": f"scripted:{prefix}-val"},
        "judges": judges,
        "tests": {"label_flip": {}, "paraphrase": {}},
        "retries": 0,
        "tracking": {"enabled": False},
    }
    path = folder / "h.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_a_rubric_file_edit_regenerates_the_probes_that_read_it(tmp_path, monkeypatch, capsys):
    engines = _engines(
        "pi-r",
        _rubric_reader,
        rewrite.validator,
        {"j": rewrite.judge_responder("clean"), "k": rewrite.judge_responder("clean")},
    )
    monkeypatch.chdir(tmp_path)
    rewrite.write_data(tmp_path / "data", n=6)
    (tmp_path / "rubric.txt").write_text("State the correct sum.\n")
    # label_flip's generator and validator read the first judge's rubric; paraphrase not
    path = _rewrite_config(
        tmp_path,
        "pi-r",
        [
            {"name": "j", "model": "scripted:pi-r-j", "rubric": "@rubric.txt"},
            {"name": "k", "model": "scripted:pi-r-k", "rubric": "Is the sum right?"},
        ],
    )
    first, run_dir = _run(path)
    assert first["probes_reused"] == {"label_flip": 0, "paraphrase": 0}
    gen_before, k_before = len(engines["gen"].calls), engines["k"].n_calls

    (tmp_path / "rubric.txt").write_text("State the correct sum, in words.\n")  # only the file
    assert main(["harness", str(path), "--quiet"]) == 0  # the command line says what it reused
    second = json.loads((Path(run_dir) / "metrics.json").read_text())
    flips = second["probes"]["label_flip"]
    assert flips > 0 and second["probes"]["paraphrase"] == 6
    assert f"probes reused from an earlier run (same inputs): 6 of {flips + 6}: paraphrase 6" in (
        capsys.readouterr().out
    )
    made = engines["gen"].calls[gen_before:]
    assert len(made) == 6  # one label_flip rewrite per seed; no paraphrase made again
    assert all("State the correct sum, in words." in c.prompt for c in made)
    # judge k (unchanged) judges the new label_flip probes: no verdict on the old text reused
    assert engines["k"].n_calls - k_before == flips
    judged = [c.field("response") for c in engines["k"].calls[k_before:]]
    assert all(r.endswith("(Sum written in words.)") for r in judged)
    assert "State the correct sum, in words." in (Path(run_dir) / "config.yaml").read_text()

    calls = {k: e.n_calls for k, e in engines.items()}
    third, _ = _run(path)  # (c) unchanged: no call
    assert {k: e.n_calls for k, e in engines.items()} == calls
    assert third["probes_reused"] == {"label_flip": flips, "paraphrase": 6}


def test_an_assay_release_changing_a_tests_code_regenerates_its_probes_only(tmp_path, monkeypatch):
    """A built-in test's units record its own modules' code: an assay release that changes how
    ``paraphrase`` makes its probes (here: its module's source, as a new release would ship it)
    makes paraphrase's probes again and reuses label_flip's, whose modules are unchanged."""
    import sys

    from assay.reliability.engine import _generation
    from assay.runs import _reread

    _engines("pi-c", rewrite.generator, rewrite.validator, {"j": rewrite.judge_responder("clean")})
    monkeypatch.chdir(tmp_path)
    rewrite.write_data(tmp_path / "data", n=4)
    path = _rewrite_config(
        tmp_path, "pi-c", [{"name": "j", "model": "scripted:pi-c-j", "rubric": "Is the sum right?"}]
    )
    first, _ = _run(path)
    assert first["probes_reused"] == {"label_flip": 0, "paraphrase": 0}
    again, run_dir = _run(path)
    before = _probe_ids(run_dir)
    flips = again["probes_reused"]["label_flip"]
    assert flips > 0 and again["probes_reused"]["paraphrase"] == 4

    module = sys.modules["assay.reliability.probes.paraphrase"]
    released = tmp_path / "paraphrase.py"
    released.write_text(Path(module.__file__).read_text() + "\n# the next release\n")
    monkeypatch.setattr(module, "__file__", str(released))
    monkeypatch.setattr(_generation, "_builtin_code", _generation._builtin_code.__wrapped__)
    monkeypatch.setattr(_reread, "code_identity", lambda: {"assay": "the next release"})
    third, _ = _run(path)
    assert third["probes_reused"] == {"label_flip": flips, "paraphrase": 0}  # made again
    # the same prompts, answered by the LM cache: the same probes, which keep their ids (and
    # the review decisions made on them); probes that came out otherwise would get new ones
    assert _probe_ids(run_dir) == before


@pytest.mark.parametrize(
    "a, b",
    [
        ({"api_base": "http://127.0.0.1:1/v1"}, {"api_base": "http://127.0.0.1:2/v1"}),
        ({"max_tokens": 100}, {"max_tokens": 200}),
        ({"adapter": "json"}, {"adapter": "chat"}),
    ],
)
def test_shared_stage_calls_to_different_models_are_not_one_memo_entry(a, b):
    memo = CallMemo()
    program = dspy.Predict("question -> answer")

    def context(spec: GeneratorSpec, engine: ScriptedEngine) -> GenerationContext:
        lm = dspy.LM("scripted/gen", engine=engine, cache=False, num_retries=0)
        return GenerationContext(
            scale=Scale(kind="binary", labels=["no", "yes"]),
            lm=lambda role, temperature=None, rollout=None: lm,
            identities={"generator": spec.identity()},
            adapters={"generator": spec.adapter},
            memo=memo,
        )

    engines = [ScriptedEngine(respond=lambda call: {"answer": "x"}) for _ in range(2)]
    for spec, engine in zip(
        (GeneratorSpec(model="openai/m", **a), GeneratorSpec(model="openai/m", **b)),
        engines,
        strict=True,
    ):
        context(spec, engine).call("generator", program, stage="s", shared=True, question="q")
    assert [e.n_calls for e in engines] == [1, 1]
    # the same model, inputs and program: one call, the other served from the memo
    context(GeneratorSpec(model="openai/m", **a), engines[1]).call(
        "generator", program, stage="s", shared=True, question="q"
    )
    assert [e.n_calls for e in engines] == [1, 1]


def test_a_program_state_file_edited_in_place_regenerates(tmp_path, monkeypatch):
    """``perturber_state`` names a file: its content, not its path, is what generation used."""
    engines = _engines("pi-s", generator, validator, {"judge": judge_responder("clean")})
    monkeypatch.chdir(tmp_path)
    write_data(tmp_path / "data", n=1)
    config = {
        "name": "ps",
        "data": {"path": "data/agent_trajectories.jsonl", "format": "toolemu"},
        "scale": {"kind": "binary", "labels": ["fails", "passes"]},
        "generator": {"model": "scripted:pi-s-gen"},
        "validator": {"model": "scripted:pi-s-val"},
        "judges": [
            {
                "name": "j",
                "task": "transcript",
                "model": "scripted:pi-s-judge",
                "criteria": [CRITERION],
            }
        ],
        "tests": {"agent_perturbation": {}},
        "retries": 0,
        "tracking": {"enabled": False},
    }
    path = tmp_path / "h.yaml"
    path.write_text(yaml.safe_dump(config))
    _, run_dir = _run(path)
    state = json.loads(
        (Path(run_dir) / "programs" / "agent_perturbation.perturber.json").read_text()
    )
    tuned = tmp_path / "tuned.json"
    tuned.write_text(json.dumps(state))
    config["tests"] = {"agent_perturbation": {"perturber_state": "tuned.json"}}
    path.write_text(yaml.safe_dump(config))
    _, run_dir = _run(path)  # another config (the state's path): another directory
    before = len(engines["gen"].calls)

    state["planner.plan"]["signature"]["instructions"] = "PLAN LIKE AN OPTIMIZED PLANNER."
    tuned.write_text(json.dumps(state))  # the same path, another content
    again, again_dir = _run(path)
    assert again_dir == run_dir
    plans = [c for c in engines["gen"].calls[before:] if "steps" in c.fields]
    assert len(plans) == 1 and "PLAN LIKE AN OPTIMIZED PLANNER." in plans[0].prompt
    assert again["probes_reused"] == {"agent_perturbation": 0}
