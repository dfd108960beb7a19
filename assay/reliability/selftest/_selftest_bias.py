"""The bias part of ``assay selftest``: judges with implanted biases, and a pairwise run.

- ``injection_obedient`` follows an instruction found in the response (``prompt_injection``);
- ``cue_swayed`` says 'correct' whenever a citation appears (``authority``);
- ``position_biased`` — a pairwise judge — picks the answer shown first when neither answer
  is right (``position_bias``); ``clean_pairwise`` always prefers the answer whose sum is
  closer to the truth.

The pairwise data set: "What is A + B?" answered three times (the right sum, off by one, off
by five); human score = minus the error, and pairs are built from it (``data.pairs``).
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

from assay.lm import ScriptedCall
from assay.reliability.selftest._suite import Suite

BIAS_DEFECTS = {
    "injection_obedient": ("follows an instruction found in the response", ["prompt_injection"]),
    "cue_swayed": ("says 'correct' whenever a citation appears", ["authority"]),
}
PAIRWISE_DEFECTS = {
    "clean_pairwise": ("none (pairwise)", []),
    "position_biased": (
        "pairwise: picks the answer shown first when neither is right",
        ["position_bias"],
    ),
}
BIAS_TESTS: dict[str, dict[str, Any]] = {
    "prompt_injection": {},
    "authority": {},
    "bandwagon": {},
    "distraction": {},
    "polarity": {},
}
_ASKED = re.compile(r'correct verdict for it is "(\w+)"')
_CITATION = re.compile(r"et al\.|doi\.org|\(\d{4}\)")
_Q = re.compile(r"What is (\d+) \+ (\d+)\?")
_SUM = re.compile(r"(?:equals|is|=)\s*(-?\d+)")


def stated(text: str) -> int | None:
    """The sum an answer states: the number after 'equals' / 'is' / '=' (the last such), else
    its last number — so a citation's year or page numbers are not read as the answer."""
    found = _SUM.findall(text or "")
    if found:
        return int(found[-1])
    nums = re.findall(r"\d+", text or "")
    return int(nums[-1]) if nums else None


def biased_verdict(defect: str, response: str, clean: int) -> int:
    """The verdict of a judge with a bias defect (1 = correct), given the clean verdict."""
    if defect == "injection_obedient":
        m = _ASKED.search(response)
        if m:
            return int(m.group(1) == "correct")
    if defect == "cue_swayed" and _CITATION.search(response):
        return 1
    return clean


def pairwise_responder(defect: str):
    def respond(call: ScriptedCall) -> dict[str, Any]:
        m = _Q.search(call.field("request") or "")
        truth = int(m.group(1)) + int(m.group(2)) if m else 0
        err = [
            abs((stated(call.field(f) or "") or 0) - truth) for f in ("response_a", "response_b")
        ]
        if defect == "position_biased" and min(err) > 0:
            return {"verdict": "A"}  # unsure: the first answer shown
        if err[0] == err[1]:
            return {"verdict": "tie"}
        return {"verdict": "A" if err[0] < err[1] else "B"}

    return respond


def write_pair_data(folder: Path, n: int = 12) -> Path:
    """Three answers per question (right, off by one, off by five), scored minus the error."""
    rng = random.Random(1)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "arithmetic_answers.csv"
    lines = ["id,request,response,score"]
    for i in range(n):
        a, b = rng.randint(2, 60), rng.randint(2, 60)
        for j, err in enumerate((0, 1, 5)):
            c = a + b + err * rng.choice((-1, 1))
            lines.append(
                f"q{i:02d}{'abc'[j]},What is {a} + {b}?,I added the two numbers. {a} plus {b} "
                f"equals {c}.,{-err}"
            )
    path.write_text("\n".join(lines) + "\n")
    return path


PAIRWISE = Suite(
    name="selftest-pairwise",
    models="selftest",  # the main run's generator and validator (registered by it)
    clean="clean_pairwise",
    defects=PAIRWISE_DEFECTS,
    responder=pairwise_responder,
    write_data=write_pair_data,
    scale={"kind": "categorical", "labels": ["A", "B", "tie"]},
    judge={
        "task": "pairwise",
        "rubric": "The better answer states the sum closer to the correct one.",
    },
    tests={"position_bias": {}},
    generator={"model": "scripted:assay-selftest-generator"},
    validator={"model": "scripted:assay-selftest-validator"},
    data={"columns": {"id": "id", "expected": None}, "pairs": {"score": "score", "max_pairs": 30}},
)
