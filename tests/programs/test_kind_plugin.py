"""A judge kind added from outside the package, in one file: registered with the shared
registry, it is a ``task:`` every judge config takes, and its inputs are what the judge sees."""

from __future__ import annotations

from typing import Any

from assay.lm import ScriptedEngine, register_script
from assay.programs import JudgeConfig, build_judge, get_kind, judge_kind, known_kinds
from assay.programs.kinds import JudgeKind
from assay.signatures import JudgeResponse
from assay.types import Item


@judge_kind("first_sentence")
class FirstSentence(JudgeKind):
    """The response's first sentence alone, judged against the rubric."""

    signature = JudgeResponse
    judged_field = "response"
    scaled = True

    @classmethod
    def inputs(cls, config: Any, item: Item) -> dict[str, Any]:
        first = item.response.split(". ")[0]
        return {"rubric": config.rubric or "", "request": item.request, "response": first}


def test_a_judge_kind_from_outside_the_package_is_a_task_judges_take():
    seen: list[str] = []

    def respond(call):
        seen.append(call.field("response"))
        return {"verdict": "correct" if "blue" in call.field("response") else "incorrect"}

    register_script("first-sentence-judge", lambda: ScriptedEngine(respond=respond))
    assert "first_sentence" in known_kinds() and get_kind("first_sentence") is FirstSentence
    cfg = JudgeConfig(
        task="first_sentence",
        model="scripted:first-sentence-judge",
        rubric="Names the sky's colour.",
        scale={"kind": "binary", "labels": ["incorrect", "correct"]},
    )
    judge = build_judge(cfg)
    item = Item(id="i", request="What colour is the sky?", response="It is blue. Not red.")
    pred = judge(**judge.inputs(item))
    assert seen == ["It is blue"] and pred.score == 1
