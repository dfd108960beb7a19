"""A judge called without one of its inputs is refused, naming the field, before any call
: DSPy itself only logs "Missing" and judges the incomplete prompt."""

from __future__ import annotations

import pytest

from assay.lm import MissingInputs, StubServer
from assay.programs import JudgeConfig, build_judge

RUBRIC = "A good response names a colour."


def judge_config(api_base: str, **extra) -> JudgeConfig:
    return JudgeConfig(
        model="openai/stub-model", api_base=api_base, rubric=RUBRIC, scale="binary", **extra
    )


def test_a_judge_called_without_its_rubric_is_refused_before_any_call():
    with StubServer() as stub:
        judge = build_judge(judge_config(stub.base_url))
        with pytest.raises(MissingInputs, match=r"missing input field 'rubric'") as caught:
            judge(request="What colour is the sky?", response="Blue.")
        assert stub.n_requests == 0  # not judged with the rubric left out of the prompt
        assert caught.value.missing == ["rubric"]
        assert "rubric, request, response" in str(caught.value)  # what the signature takes

        # every input given (what judge.inputs(item) builds): judged
        pred = judge(rubric=RUBRIC, request="What colour is the sky?", response="Blue.")
        assert pred.score in (0, 1) and stub.n_requests == 1


def test_every_missing_input_is_named_and_a_panel_refuses_too():
    with StubServer() as stub:
        members = [judge_config(stub.base_url, name=n) for n in ("a", "b")]
        cfg = judge_config(stub.base_url, program="panel", members=members)
        panel = build_judge(cfg)
        with pytest.raises(MissingInputs, match=r"fields 'rubric', 'response'"):
            panel(request="What colour is the sky?")  # not an unscored member: a mistake
        cot = build_judge(judge_config(stub.base_url, program="chain_of_thought"))
        with pytest.raises(MissingInputs, match=r"field 'request'"):
            cot(rubric=RUBRIC, response="Blue.")
        assert stub.n_requests == 0
