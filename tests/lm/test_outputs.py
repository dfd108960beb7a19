"""Verdicts off the scale are never scored, and a truncated answer says so.

Each answer goes through the real DSPy adapters (JSON and chat) of a judge, from a scripted
engine; what comes out is a score, or an unscored judgment with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from dspy.lm15 import Message, Response, TextPart, Usage

from assay.lm import AssayLM, ScriptedEngine
from assay.programs import JudgeConfig, build_judge
from assay.runs import judge_one
from assay.types import Item

ITEM = Item(
    id="i1",
    request="What is 2 + 2?",
    response="4",
    meta={"intermediate_steps": [[["Calculator", '{"expr": "2+2"}', "log"], ["4"]]]},
)
ORDINAL = "1-6"
BINARY = "binary"
LABELLED = {"kind": "binary", "labels": ["fail", "pass"]}
SAFETY = "toolemu_safety"


def judge(answer: Any, scale: Any = ORDINAL, *, adapter: str = "json", task: str = "response"):
    """The judgment of a judge on ``scale`` whose model answers ``{"verdict": answer}``."""
    field_name = "overall_qualitative_label" if task == SAFETY else "verdict"

    def respond(call):
        out = {field_name: answer}
        if task == SAFETY:
            out = {"evaluator_thought": "t", **out, "evaluator_log_summary": "s"}
        return out

    engine = ScriptedEngine(respond=respond)
    cfg = JudgeConfig(
        model="scripted:x",
        task=task,
        adapter=adapter,
        rubric="r",
        **({} if task == SAFETY else {"scale": scale}),
    )
    lm = AssayLM("scripted/t", engine=engine, num_retries=0, cache=False)
    return judge_one(build_judge(cfg, lambda _c: lm), ITEM, cfg), engine


@pytest.mark.parametrize("adapter", ["json", "chat"])
@pytest.mark.parametrize(
    "answer, scale, score",
    [
        (2, ORDINAL, 2),
        ("2", ORDINAL, 2),
        (" 6 ", ORDINAL, 6),
        (3.0, ORDINAL, 3),
        (1, BINARY, 1),
        ("0", BINARY, 0),
        ("pass", LABELLED, 1),
        ("Fail", LABELLED, 0),  # a label in another case is still that label
    ],
)
def test_answers_on_the_scale_are_scored(answer, scale, score, adapter):
    j, _ = judge(answer, scale, adapter=adapter)
    assert (j.score, j.unscored) == (score, None), j.error


@pytest.mark.parametrize("adapter", ["json", "chat"])
@pytest.mark.parametrize(
    "answer, scale",
    [
        ("True", ORDINAL),  # was scored 1: True == 1 in Python
        (True, ORDINAL),
        ("true", ORDINAL),
        (False, BINARY),  # a boolean is not 0/1 here: the prompt asks for the number
        ("yes", BINARY),
        ("True", LABELLED),
        (1, LABELLED),  # a labelled scale answers with its labels
        (7, ORDINAL),
        (0, ORDINAL),
        ("2.5", ORDINAL),
        ("2 or 3", ORDINAL),
        (None, ORDINAL),
    ],
)
def test_answers_off_the_scale_are_unscored_off_scale(answer, scale, adapter):
    j, engine = judge(answer, scale, adapter=adapter)
    assert j.score is None and j.unscored == "off_scale", (j.score, j.unscored, j.error)
    assert "is not one of the allowed values" in j.error
    assert engine.n_calls == 1  # no second call in JSON mode for an answer that was read


def test_a_toolemu_label_off_its_list_is_off_scale():
    j, _ = judge("Somewhat Risky", task=SAFETY)
    assert (j.score, j.unscored) == (None, "off_scale")
    j, _ = judge("likely severe risk", task=SAFETY)
    assert (j.score, j.label) == (0, "Likely Severe Risk")


def test_a_missing_verdict_is_still_a_parse_error():
    engine = ScriptedEngine(respond=lambda call: "no JSON here")
    cfg = JudgeConfig(model="scripted:x", scale=ORDINAL, rubric="r")
    lm = AssayLM("scripted/t", engine=engine, num_retries=0, cache=False)
    j = judge_one(build_judge(cfg, lambda _c: lm), ITEM, cfg)
    assert (j.score, j.unscored) == (None, "parse_error")


# -- truncation ----------------------------------------------------------------------------------
@dataclass
class CutEngine:
    """An engine whose answers stop at the token limit (``finish_reason="length"``)."""

    text: str
    finish_reason: str = "length"
    supports_response_schema: bool = True
    supported_params: tuple[str, ...] = ("response_format", "temperature", "max_tokens", "seed")
    calls: list[Any] = field(default_factory=list)

    def complete(self, request):
        self.calls.append(request)
        return Response(
            id=None,
            model="cut",
            message=Message.assistant([TextPart(self.text)]),
            finish_reason=self.finish_reason,
            usage=Usage(input_tokens=10, output_tokens=5),
        )

    def close(self) -> None:
        pass


@pytest.mark.parametrize("adapter", ["json", "chat"])
@pytest.mark.parametrize(
    "text",
    [
        '{"reasoning": "The response states the sum corr',  # cut inside the reasoning
        '{"reasoning": "fine", "verdict": "Possi',  # cut inside the verdict (off-scale text)
        "[[ ## reasoning ## ]]\nThe response states",
    ],
)
def test_an_answer_cut_at_the_token_limit_is_truncated_not_a_parse_error(text, adapter):
    engine = CutEngine(text)
    cfg = JudgeConfig(
        model="scripted:x", scale=LABELLED, rubric="r", program="chain_of_thought", adapter=adapter
    )
    lm = AssayLM("cut/model", engine=engine, num_retries=0, cache=False, max_tokens=12)
    j = judge_one(build_judge(cfg, lambda _c: lm), ITEM, cfg)
    assert (j.score, j.unscored) == (None, "truncated"), j.error
    assert "max_tokens=12" in j.error
    assert len(engine.calls) == 1  # no fallback call: a cut answer would be cut again
    assert j.usage.completion_tokens == 5  # the tokens it cost are counted


def test_a_truncated_answer_whose_fields_all_parse_is_kept():
    engine = CutEngine('{"reasoning": "short", "verdict": "pass"')
    cfg = JudgeConfig(model="scripted:x", scale=LABELLED, rubric="r", program="chain_of_thought")
    lm = AssayLM("cut/model", engine=engine, num_retries=0, cache=False)
    j = judge_one(build_judge(cfg, lambda _c: lm), ITEM, cfg)
    assert (j.score, j.unscored) == (1, None)


def test_the_same_unparseable_text_without_truncation_is_a_parse_error():
    engine = CutEngine('{"reasoning": "The response states the sum corr', finish_reason="stop")
    cfg = JudgeConfig(model="scripted:x", scale=LABELLED, rubric="r", program="chain_of_thought")
    lm = AssayLM("cut/model", engine=engine, num_retries=0, cache=False)
    j = judge_one(build_judge(cfg, lambda _c: lm), ITEM, cfg)
    assert (j.score, j.unscored) == (None, "parse_error")


def test_truncation_is_recognised_on_a_cache_hit(memory_cache):
    engine = CutEngine('{"reasoning": "cut')
    cfg = JudgeConfig(model="scripted:x", scale=LABELLED, rubric="r", program="chain_of_thought")
    lm = AssayLM("cut/model", engine=engine, num_retries=0, cache=True)
    program = build_judge(cfg, lambda _c: lm)
    first = judge_one(program, ITEM, cfg)
    again = judge_one(program, ITEM, cfg)
    assert len(engine.calls) == 1
    assert first.unscored == again.unscored == "truncated"


def test_reason_of_every_grading_failure():
    from dspy.utils.exceptions import AdapterParseError

    from assay.lm import OffScaleOutput, TruncatedOutput
    from assay.programs import unscored_reason
    from assay.signatures import JudgeResponse

    assert unscored_reason(TruncatedOutput("cut")) == "truncated"
    assert unscored_reason(OffScaleOutput("verdict", "True", (1, 2))) == "off_scale"
    parse = AdapterParseError(adapter_name="JSONAdapter", signature=JudgeResponse, lm_response="x")
    assert unscored_reason(parse) == "parse_error"
    assert unscored_reason(KeyError("a bug")) is None


# -- digits that are not ASCII, two answers in one ------------------------------
ANSWERS = {
    "fullwidth": "３",  # FULLWIDTH DIGIT THREE: int("３") == 3 in Python
    "arabic": "٣",  # ARABIC-INDIC DIGIT THREE
    "two": None,  # two answers: {"verdict": 1}{"verdict": 2}, or two [[ ## verdict ## ]] sections
    "plain": "3",
}
REASONS = {"fullwidth": "off_scale", "arabic": "off_scale", "two": "parse_error", "plain": None}


def _stub_answer(request) -> str:
    """The stub's answer for the item named in the user message (see ANSWERS), in the form the
    adapter asked for (JSON, or the chat adapter's ``[[ ## field ## ]]`` sections)."""
    import json

    from assay.lm._stub_server import prompt_output_fields

    asked = request["messages"][-1]["content"]
    item = next(name for name in ANSWERS if f"response of {name}" in asked)
    fields = prompt_output_fields(request)
    as_json = request.get("response_format") or "JSON" in json.dumps(request["messages"])

    def answer(verdict) -> str:
        out = {**fields, "verdict": verdict}
        if as_json:
            return json.dumps(out)
        return (
            "".join(f"[[ ## {k} ## ]]\n{v}\n\n" for k, v in out.items()) + "[[ ## completed ## ]]"
        )

    if ANSWERS[item] is None:  # two answers in one, in the form asked for
        return answer(1) + ("" if as_json else "\n") + answer(2)
    return answer(ANSWERS[item])


@pytest.mark.parametrize("adapter", ["json", "chat"])
def test_foreign_digits_and_two_answers_are_unscored_with_their_reason(
    tmp_path, monkeypatch, capsys, adapter
):
    """``assay evaluate`` against the loopback stub: a verdict written in full-width or
    Arabic-Indic digits is ``off_scale`` and an answer holding two JSON objects is a
    ``parse_error`` — neither is scored (they were scored 3 and 1)."""
    import json

    from assay.cli import main
    from assay.lm import StubServer

    rows = "".join(f"{name},question {name},response of {name}\n" for name in ANSWERS)
    (tmp_path / "items.csv").write_text("id,request,response\n" + rows, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with StubServer(respond=_stub_answer) as stub:
        config = {
            "name": "digits",
            "data": {"path": "items.csv", "columns": {"id": "id", "expected": None}},
            "judge": {
                "name": "j",
                "model": "openai/stub-model",
                "api_base": stub.base_url,
                "rubric": "Rate the response.",
                "scale": "1-6",
                "adapter": adapter,
            },
            "retries": 0,
            "tracking": {"enabled": False},
        }
        (tmp_path / "config.yaml").write_text(json.dumps(config), encoding="utf-8")
        code = main(["evaluate", "config.yaml", "--quiet"])
    err = capsys.readouterr().err
    assert code in (0, 1), err  # 1: some items unscored
    (judgments,) = (tmp_path / "runs").glob("*/judgments.jsonl")
    got = {
        j["item_id"]: (j["score"], j["unscored"])
        for j in map(json.loads, judgments.read_text().splitlines())
    }
    assert got == {
        name: (3 if reason is None else None, reason) for name, reason in REASONS.items()
    }, got
