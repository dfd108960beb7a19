"""The prompt part of ``assay selftest``: judges whose verdict depends on how their task is
worded or on the scale it is asked on, through ``prompt_paraphrase`` and ``scale_granularity``.

- ``prompt_sensitive`` reads its rubric word for word: worded any other way, it gives the
  opposite verdict (``prompt_paraphrase``);
- ``scale_bound`` judges well on its own scale and answers the top point of any other
  (``scale_granularity``);
- ``clean`` judges the sum whatever the wording, on whichever scale it is asked.

They run on the arithmetic data set in a run of their own: both tests ask every judge of a run
its task in other words or on other scales, which the main run's judges are not written to
read. The paraphrases are written by a scripted generator, one after the other (each call is
shown the ones before it, and writes the next of :data:`PARAPHRASES`), and checked by a
scripted validator — the path of a config that gives no ``paraphrases``.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from assay.lm import ScriptedCall
from assay.reliability.selftest._selftest import RUBRIC, SCALE, clean_verdict, write_data
from assay.reliability.selftest._suite import Suite

DEFECTS = {
    "clean": ("none", []),
    "prompt_sensitive": (
        "reads its rubric word for word: reworded, it gives the opposite verdict",
        ["prompt_paraphrase"],
    ),
    "scale_bound": (
        "asked on a scale other than its own, answers the top point",
        ["scale_granularity"],
    ),
}
TESTS: dict[str, dict[str, Any]] = {"prompt_paraphrase": {}, "scale_granularity": {}}
PARAPHRASES = (
    "A correct answer gives the right sum of the two numbers.",
    "Check that the sum the answer states is the true sum.",
    "The response is correct only if the number it gives as the sum is right.",
)
"""The generator's rewrites of :data:`RUBRIC`, in the order it writes them."""

# The verdict field's options as the prompt lists them: "`verdict` (Literal['incorrect',
# 'correct'])", or "(Literal[1, 2, 3, 4])" on a 1-4 scale.
_OPTIONS = re.compile(r"`verdict` \(Literal\[(.*?)\]\)")


def asked_options(call: ScriptedCall) -> list[str | int]:
    """What a judge's call may answer, low to high: the scale's labels, or its scores."""
    m = _OPTIONS.search(call.prompt)
    if m is None:
        raise ValueError("a judge call whose prompt lists no verdict options")
    return list(ast.literal_eval(f"[{m.group(1)}]"))


def on_scale(options: list[str | int], verdict: int) -> str | int:
    """A verdict (1 = correct) on the asked scale: its label, or an end of a scale of scores
    (whose ends the rubric names 'incorrect' and 'correct')."""
    if all(isinstance(o, str) for o in options):
        return SCALE["labels"][verdict]
    return options[-1] if verdict else options[0]


def judge_responder(defect: str):
    own = set(SCALE["labels"])

    def respond(call: ScriptedCall) -> dict[str, Any]:
        options = asked_options(call)
        if defect == "scale_bound" and set(options) != own:
            return {"verdict": options[-1]}
        v = clean_verdict(call)
        if defect == "prompt_sensitive" and call.field("rubric") != RUBRIC:
            v = 1 - v
        return {"verdict": on_scale(options, v)}

    return respond


def generator(call: ScriptedCall) -> dict[str, Any]:
    """The task's paraphraser: the next of :data:`PARAPHRASES` after those it is shown."""
    if "paraphrased_rubric" not in call.fields:
        raise ValueError(f"unexpected generator call for fields {call.fields}")
    earlier = (call.field("earlier") or "").strip()
    written = earlier.count("\n---\n") + 1 if earlier else 0
    return {"paraphrased_instruction": "", "paraphrased_rubric": PARAPHRASES[written]}


def validator(call: ScriptedCall) -> dict[str, Any]:
    """The paraphrase checker: a rewrite keeps the meaning when it still asks for the sum."""
    if "same_meaning" not in call.fields:
        raise ValueError(f"unexpected validator call for fields {call.fields}")
    same = "sum" in (call.field("paraphrase") or "")
    return {"same_meaning": same, "reason": "asks for the same sum" if same else "no sum asked"}


PROMPT = Suite(
    name="selftest-prompt",
    models="selftest-prompt",
    clean="clean",
    defects=DEFECTS,
    responder=judge_responder,
    write_data=write_data,
    scale=SCALE,
    judge={"rubric": RUBRIC},
    tests=TESTS,
    generator={"model": "scripted:assay-selftest-prompt-generator", "temperature": 0.7},
    validator={"model": "scripted:assay-selftest-prompt-validator", "temperature": 0.0},
    data={"columns": {"id": "id"}},
    scripts={"generator": generator, "validator": validator},
    engine_prefix="prompt-",
)
