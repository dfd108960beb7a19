"""``task: response`` — a request and a response judged against a rubric, on any scale."""

from __future__ import annotations

from typing import Any

from assay.programs.kinds._base import JudgeKind, judge_kind
from assay.programs.kinds._settings import JudgeSettings
from assay.signatures import JudgeResponse
from assay.types import Item


@judge_kind("response")
class ResponseKind(JudgeKind):
    signature = JudgeResponse
    judged_field = "response"
    scaled = True

    @classmethod
    def inputs(cls, config: JudgeSettings, item: Item) -> dict[str, Any]:
        return {"rubric": config.rubric or "", "request": item.request, "response": item.response}
