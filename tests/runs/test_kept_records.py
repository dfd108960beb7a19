"""A judgment is built from what the judge said: the results it left out (None) and the zero
counts of its usage are not given to pydantic, which keeps in every model the set of the
fields it was given. A run holds each judgment until it scores (the harness: with its probes,
units and their usages, about 1.5 usages an LM call), and those sets were the larger part of
what it held per call: a judgment given its 19 fields took a 2 KB table (Python grows a set's
table fourfold), a usage given its sixteen 512 bytes besides the set's own 200."""

from __future__ import annotations

from assay.lm import AssayLM, ScriptedEngine
from assay.programs import JudgeConfig, build_judge
from assay.runs import judge_one
from assay.types import Item, Judgment, Usage

ITEM = Item(id="i1", request="What is 2 + 2?", response="4")


def _judgment(answer: object) -> Judgment:
    engine = ScriptedEngine(respond=lambda call: answer)
    cfg = JudgeConfig(model="scripted:x", scale="binary", rubric="r")
    lm = AssayLM("scripted/t", engine=engine, num_retries=0, cache=False)
    return judge_one(build_judge(cfg, lambda _c: lm), ITEM, cfg)


def test_a_judgment_is_given_only_the_results_the_judge_set():
    j = _judgment({"verdict": 1})
    assert j.score == 1
    assert {f for f in j.model_fields_set if getattr(j, f) is None} == set()
    assert {"reasoning", "probabilities", "members", "criteria"}.isdisjoint(j.model_fields_set)
    # the same judgment as one given every field
    assert Judgment(**j.model_dump()) == j
    assert Judgment(**j.model_dump()).model_dump_json() == j.model_dump_json()


def test_an_unscored_judgment_keeps_its_reason_and_error():
    j = _judgment("no JSON here")
    assert (j.score, j.unscored) == (None, "parse_error")
    assert {"unscored", "error"} <= j.model_fields_set
    assert "score" not in j.model_fields_set


def test_a_judgments_usage_is_given_only_its_nonzero_counts():
    usage = _judgment({"verdict": 0}).usage
    assert usage.calls == 1 and usage.prompt_tokens > 0
    assert usage.model_fields_set == {k for k, v in usage.model_dump().items() if v}
    assert Usage(**usage.model_dump()) == usage
