"""The text of a user's plug-in file the tests write where a user would (``tmp_path``)."""

from __future__ import annotations


def first_sentence_kind(name: str) -> str:
    """A judge kind registered as ``name`` that shows the judge only the response's first
    sentence (what comes before the first ``.``, ``!`` or ``?`` and the whitespace after it)."""
    return f'''
"""``task: {name}``: only the response's first sentence is judged."""

import re

from assay.programs import JudgeKind, judge_kind
from assay.signatures import JudgeResponse


@judge_kind("{name}")
class FirstSentence(JudgeKind):
    signature = JudgeResponse  # rubric, request, response -> verdict
    judged_field = "response"
    scaled = True  # its verdicts are the judge's scale's

    @classmethod
    def inputs(cls, config, item):
        first = re.split(r"(?<=[.!?])\\s+", item.response.strip())[0]
        return {{"rubric": config.rubric or "", "request": item.request, "response": first}}
'''
