"""``assay selftest``: the harness run on judges with implanted defects (scripted LMs).

Each defective judge must be flagged by the test meant to catch it — its pass-rate or
consistency CI entirely below the clean judge's — and the clean judge by none. This is the
evidence of what the harness detects; it runs in CI.

The data set is arithmetic: "What is A + B?" answered "A plus B equals C.", correct when C is
the sum. Scripted generators rewrite answers the way a good LLM would (same number when the
meaning must be kept, another number for a label flip), so every probe is valid by
construction and differences between judges come from their defects alone.
"""

from __future__ import annotations

import random
import re
import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from assay.lm import ScriptedCall
from assay.reliability._config import HarnessConfig
from assay.reliability.selftest._selftest_bias import (
    BIAS_DEFECTS,
    BIAS_TESTS,
    PAIRWISE,
    biased_verdict,
    stated,
)
from assay.reliability.selftest._suite import JudgeFlags, Suite

DEFECTS = {
    "clean": ("none", []),
    "format_sensitive": (
        "changes its verdict when blank lines, space runs or indentation appear",
        ["format_vertical", "format_intraline", "format_indent"],
    ),
    "length_loving": ("says 'correct' for any long answer", ["verbosity_long"]),
    "unstable": ("random verdict when temperature > 0", ["stochastic_stability"]),
    "label_blind": ("same verdict whatever the content", ["label_flip"]),
    **BIAS_DEFECTS,
    "noisy": (
        "a coin flip on every call for a quarter of the items, cue or no cue (noisy, not "
        "biased: no bias test may flag it)",
        [],
    ),
}
TESTS = {
    "label_flip": {},
    "format_vertical": {},
    "format_intraline": {},
    "format_indent": {},
    "paraphrase": {},
    "verbosity_long": {},
    "verbosity_short": {},
    "stochastic_stability": {"k": 5, "temperature": 1.0},
    **BIAS_TESTS,
}
_Q = re.compile(r"What is (\d+) \+ (\d+)\?")
RUBRIC = "The answer must state the correct sum."
SCALE = {"kind": "binary", "labels": ["incorrect", "correct"]}


_stated = stated


def _correct(request: str, response: str) -> bool:
    m = _Q.search(request or "")
    return bool(m) and _stated(response) == int(m.group(1)) + int(m.group(2))


def clean_verdict(call: ScriptedCall) -> int:
    """The verdict of a judge without a defect: 1 when the answer states the right sum."""
    return int(_correct(call.field("request") or "", call.field("response") or ""))


def _verdict(v: int) -> dict[str, str]:
    return {"verdict": "correct" if v else "incorrect"}


def _format_noise(text: str) -> bool:
    return (
        "\n\n" in text or "  " in text or any(line[:1] in (" ", "\t") for line in text.splitlines())
    )


def judge_responder(defect: str):
    # Sampling noise for the unstable judge: one seeded stream per judge, shared by its
    # rollouts (as a server's sampler would be), so repeated samples of an item differ.
    noise = random.Random(f"selftest:{defect}")
    lock = threading.Lock()

    def respond(call: ScriptedCall) -> dict[str, Any]:
        response = call.field("response") or ""
        v = clean_verdict(call)
        if defect == "format_sensitive" and _format_noise(response):
            v = 1 - v
        elif defect == "length_loving" and len(response.split()) > 12:
            v = 1
        elif defect == "unstable" and (call.temperature or 0) > 0:
            with lock:
                v = noise.randint(0, 1)
        elif defect == "label_blind":
            v = 1
        elif defect == "noisy" and _Q.search(call.field("request") or "").group(0) in NOISY:
            with lock:
                v = noise.randint(0, 1)
        elif defect in BIAS_DEFECTS:
            v = biased_verdict(defect, response, v)
        return _verdict(v)

    return respond


def generator(call: ScriptedCall) -> dict[str, Any]:
    if "inverted_rubric" in call.fields:  # polarity: the rubric's question inverted
        return {"inverted_instruction": "", "inverted_rubric": "Flag answers whose sum is wrong."}
    request, response = call.field("request") or "", call.field("response") or ""
    m = _Q.search(request)
    a, b = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    c = _stated(response)
    if "target_verdict" in call.prompt and call.field("target_verdict") is not None:
        target_correct = (call.field("target_verdict") or "").startswith("correct")
        c = a + b if target_correct else a + b + 1
        return {"rewritten": f"{a} plus {b} equals {c}."}
    if "twice as long" in call.prompt:
        return {
            "rewritten": f"Let us add the two numbers. We start from {a} and count up {b} more. "
            f"Counting carefully, step by step, the total we reach is {c}."
        }
    if "half as long" in call.prompt:
        return {"rewritten": f"{a}+{b}={c}."}
    return {"rewritten": f"The sum of {a} and {b} is {c}."}


def validator(call: ScriptedCall) -> dict[str, Any]:
    if "inverted_ok" in call.fields:
        return {"inverted_ok": True, "reason": "the question is reversed, criteria kept"}
    if "confirmed" in call.fields:
        verdict = (call.field("verdict") or "").startswith("correct")
        ok = _correct(call.field("request") or "", call.field("response") or "") == verdict
        return {"confirmed": ok, "reason": "checked the arithmetic"}
    same = _stated(call.field("original") or "") == _stated(call.field("rewritten") or "")
    return {"equivalent": same, "reason": "same number stated" if same else "different number"}


def questions(n: int = 16) -> list[tuple[int, int, int, bool]]:
    """The fixed arithmetic questions: ``(a, b, the stated sum, whether it is right)``, half
    correct, half off by a small amount."""
    rng = random.Random(0)
    out = []
    for i in range(n):
        a, b = rng.randint(2, 60), rng.randint(2, 60)
        ok = i % 2 == 0
        out.append((a, b, a + b if ok else a + b + rng.choice([-3, -2, -1, 1, 2, 3]), ok))
    return out


# The noisy judge's items: a quarter of the data set (4 of 16). Its verdict there is a coin
# flip on every call, so a cue cell of one probe per source moves at most 4 verdicts toward the
# cue beyond the placebo: the exact one-sided p-value, and so its adjusted one, is at least
# 1/16, above the run's false discovery rate of 0.05 — the judge cannot be flagged whatever
# order its calls take (its noise is one stream shared by its calls, as a server's sampler is).
NOISY = {f"What is {a} + {b}?" for a, b, _, _ in questions()[:4]}


def write_data(folder: Path, n: int = 16) -> Path:
    """The fixed arithmetic data set (:func:`questions`)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "arithmetic.csv"
    lines = ["id,request,response,expected"]
    for i, (a, b, c, ok) in enumerate(questions(n)):
        lines.append(
            f"a{i:02d},What is {a} + {b}?,I added the two numbers. {a} plus {b} equals {c}.,{int(ok)}"
        )
    path.write_text("\n".join(lines) + "\n")
    return path


SUITE = Suite(
    name="selftest",
    models="selftest",
    clean="clean",
    defects=DEFECTS,
    responder=judge_responder,
    write_data=write_data,
    scale=SCALE,
    judge={"rubric": RUBRIC},
    tests=TESTS,
    generator={"model": "scripted:assay-selftest-generator", "temperature": 0.7},
    validator={"model": "scripted:assay-selftest-validator", "temperature": 0.0},
    data={"columns": {"id": "id"}},
    scripts={"generator": generator, "validator": validator},
    unbiased=("noisy",),
)


def register() -> None:
    """Register the scripted models the self-test's configs name (this run's and the
    pairwise run's, which shares its generator and validator)."""
    SUITE.register()
    PAIRWISE.register()


def selftest_config(data_path: Path, *, tracking: bool = False) -> HarnessConfig:
    return SUITE.config(data_path, tracking=tracking)


class SelftestResult(BaseModel):
    """What ``assay selftest`` found: whether every implanted defect was flagged by the test
    meant for it and the clean judges by none, each judge's flags, and the runs it made."""

    model_config = ConfigDict(extra="forbid")

    ok: bool
    run_dir: str
    pairwise_run_dir: str
    prompt_run_dir: str
    agent_run_dir: str
    judges: dict[str, JudgeFlags]


def run_selftest(
    workdir: Path, *, progress: bool = False, tracking: bool = False
) -> SelftestResult:
    """Run every suite (the response judges, the pairwise judges, the judges asked their task
    another way, the transcript judges) and say whether each defect was flagged by the test
    meant for it and the clean judges by none."""
    from assay.reliability.engine import run_harness
    from assay.reliability.selftest._selftest_agent import AGENT
    from assay.reliability.selftest._selftest_prompt import PROMPT  # reads this module's names

    suites = {
        "run_dir": SUITE,
        "pairwise_run_dir": PAIRWISE,
        "prompt_run_dir": PROMPT,
        "agent_run_dir": AGENT,
    }
    for suite in suites.values():
        suite.register()
    folder = workdir / ".assay" / "selftest"
    judges: dict[str, JudgeFlags] = {}
    run_dirs: dict[str, str] = {}
    for key, suite in suites.items():
        config = suite.config(suite.write_data(folder), tracking=tracking)
        config.output_dir = str(folder / "runs")
        res = run_harness(config, workdir=workdir, progress=progress)
        run_dirs[key] = str(res.run_dir)
        for name, j in suite.flags(res.summary).items():
            if name in judges:  # the clean judge of several runs: one row
                judges[name].flagged += j.flagged
                judges[name].tests.update(j.tests)
            else:
                judges[name] = j
    clean = {suite.clean for suite in suites.values()}
    ok = (
        not any(judges[c].flagged for c in clean)
        and all(set(j.meant_for) <= set(j.flagged) for n, j in judges.items() if n not in clean)
        and not any(set(j.must_not_flag) & set(j.flagged) for j in judges.values())
    )
    return SelftestResult(ok=ok, **run_dirs, judges=judges)
