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

from assay.experiments._config import DataConfig, TrackingConfig
from assay.experiments.reliability._config import HarnessConfig
from assay.experiments.reliability._results import HarnessSummary
from assay.experiments.reliability._selftest_bias import (
    BIAS_DEFECTS,
    BIAS_TESTS,
    PAIRWISE_DEFECTS,
    biased_verdict,
    pairwise_config,
    register_pairwise,
    stated,
    write_pair_data,
)
from assay.lm import GeneratorSpec, ScriptedCall, ScriptedEngine, ValidatorSpec, register_script

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


_stated = stated


def _correct(request: str, response: str) -> bool:
    m = _Q.search(request or "")
    return bool(m) and _stated(response) == int(m.group(1)) + int(m.group(2))


def _clean(call: ScriptedCall) -> int:
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
        v = _clean(call)
        if defect == "format_sensitive" and _format_noise(response):
            v = 1 - v
        elif defect == "length_loving" and len(response.split()) > 12:
            v = 1
        elif defect == "unstable" and (call.temperature or 0) > 0:
            with lock:
                v = noise.randint(0, 1)
        elif defect == "label_blind":
            v = 1
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


def register() -> None:
    """Register the scripted models the self-test config names."""
    register_script(
        "assay-selftest-generator",
        lambda: ScriptedEngine(respond=generator, name="selftest-generator"),
    )
    register_script(
        "assay-selftest-validator",
        lambda: ScriptedEngine(respond=validator, name="selftest-validator"),
    )
    register_pairwise()
    responders = {name: judge_responder(name) for name in DEFECTS}
    for name in DEFECTS:
        register_script(
            f"assay-selftest-{name}",
            lambda n=name: ScriptedEngine(respond=responders[n], name=n),
        )


def write_data(folder: Path, n: int = 16) -> Path:
    """The fixed arithmetic data set: half correct, half off by a small amount."""
    rng = random.Random(0)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "arithmetic.csv"
    lines = ["id,request,response,expected"]
    for i in range(n):
        a, b = rng.randint(2, 60), rng.randint(2, 60)
        ok = i % 2 == 0
        c = a + b if ok else a + b + rng.choice([-3, -2, -1, 1, 2, 3])
        lines.append(
            f"a{i:02d},What is {a} + {b}?,I added the two numbers. {a} plus {b} equals {c}.,{int(ok)}"
        )
    path.write_text("\n".join(lines) + "\n")
    return path


def selftest_config(data_path: Path, *, tracking: bool = False) -> HarnessConfig:
    judges = [
        {
            "name": name,
            "model": f"scripted:assay-selftest-{name}",
            "rubric": "The answer must state the correct sum.",
        }
        for name in DEFECTS
    ]
    return HarnessConfig(
        name="selftest",
        data=DataConfig(path=str(data_path), columns={"id": "id"}),
        scale={"kind": "binary", "labels": ["incorrect", "correct"]},
        generator=GeneratorSpec(model="scripted:assay-selftest-generator", temperature=0.7),
        validator=ValidatorSpec(model="scripted:assay-selftest-validator", temperature=0.0),
        judges=judges,
        tests=TESTS,
        concurrency=4,
        retries=0,
        tracking=TrackingConfig(enabled=tracking),
    )


def flags(
    summary: HarnessSummary, clean_name: str = "clean", defects: dict | None = None
) -> dict[str, Any]:
    """Which tests flag which judge: a pass or consistency CI entirely below the clean judge's."""
    defects = defects or DEFECTS
    clean = summary.judges[clean_name].tests
    out: dict[str, Any] = {}
    for name, r in summary.judges.items():
        flagged, tests = [], {}
        for t, m in r.tests.items():
            row = {}
            below = False
            for key in ("pass_rate", "consistency"):
                mine, ref = getattr(m, key), getattr(clean[t], key)
                row[key] = None if mine is None else mine.value
                if mine and ref and mine.ci_high is not None and ref.ci_low is not None:
                    if name == clean_name:
                        below |= mine.ci_high < 0.9  # the clean judge is held to an absolute floor
                    else:
                        below |= mine.ci_high < ref.ci_low
            pr = m.pass_rate
            tests[t] = {
                "pass_rate": row["pass_rate"],
                "consistency": row["consistency"],
                "ci_low": pr.ci_low if pr else None,
                "ci_high": pr.ci_high if pr else None,
            }
            if below:
                flagged.append(t)
        out[name] = {
            "defect": defects[name][0] if name != clean_name else "none",
            "meant_for": defects[name][1],
            "flagged": flagged,
            "tests": tests,
        }
    return out


def run_selftest(
    workdir: Path, *, progress: bool = False, tracking: bool = False
) -> dict[str, Any]:
    from assay.experiments.reliability import _selftest_agent as agent
    from assay.experiments.reliability._harness import run_harness

    register()
    agent.register()
    folder = workdir / ".assay" / "selftest"
    config = selftest_config(write_data(folder), tracking=tracking)
    config.output_dir = str(folder / "runs")
    res = run_harness(config, workdir=workdir, progress=progress)
    judges = flags(res.summary)
    pairwise = pairwise_config(write_pair_data(workdir / ".assay" / "selftest"), tracking=tracking)
    pairwise.output_dir = config.output_dir
    pair_res = run_harness(pairwise, workdir=workdir, progress=progress)
    judges.update(flags(pair_res.summary, "clean_pairwise", PAIRWISE_DEFECTS))
    # the agent tests: transcript judges on agent transcripts, a run of their own
    agent_config = agent.selftest_config(agent.write_data(folder), tracking=tracking)
    agent_config.output_dir = str(folder / "runs")
    agent_res = run_harness(agent_config, workdir=workdir, progress=progress)
    for name, j in flags(agent_res.summary, defects=agent.DEFECTS).items():
        if name in judges:  # the clean judge: one row for both runs
            judges[name]["flagged"] += j["flagged"]
            judges[name]["tests"].update(j["tests"])
        else:
            judges[name] = j
    clean = ("clean", "clean_pairwise")
    ok = not any(judges[c]["flagged"] for c in clean) and all(
        set(j["meant_for"]) <= set(j["flagged"]) for n, j in judges.items() if n not in clean
    )
    return {
        "ok": ok,
        "run_dir": str(res.run_dir),
        "pairwise_run_dir": str(pair_res.run_dir),
        "agent_run_dir": str(agent_res.run_dir),
        "judges": judges,
    }
