"""RAND's Judge Reliability Harness (JRH) beside assay, on the same loopback stub.

JRH is not a dependency of assay: point ``--jrh`` of ``bench_startup.py`` at a checkout of it
with its own interpreter (Python >= 3.13, its dependencies installed) and it runs there, from
the command line in a fresh process as a user runs it (``python -m main <config>`` in the
checkout), every model pointed at the stub through the OpenAI client's environment
(``OPENAI_BASE_URL``, ``OPENAI_API_KEY``): no change to JRH's code.

What this module brings:

- :func:`respond`, the stub's answer to JRH's prompts — its perturbation requests
  (``synthetic/basic_perturbation``: a rewrite of the response, as each test's instruction
  asks), and its validator and judge requests (``judge/single_judge``: a verdict hashed from the
  judged response, as ``bench_harness.verdict`` does for assay) — and to assay's DSPy prompts
  (``bench_harness.respond``), so ONE stub process serves both tools;
- :func:`tool_stub`, the stub process for both, keeping every request body: assay's
  :class:`~assay.lm.StubServer` answers a request that forces a function tool (``tool_choice``)
  with that tool call, as an OpenAI-compatible server does (JRH calls its models through
  ``instructor`` in its tools mode, which reads the answer from ``tool_calls`` only);
- :func:`run_jrh`, one JRH run of the HarmBench suite (label flip, the three format tests,
  paraphrase, verbosity long / short, stochastic stability; 10 items; one judge) into a fresh
  folder, checked afterwards: every test reported, no call that failed into JRH's results.
"""

from __future__ import annotations

import csv
import json
import os
import re
import resource
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from _common import StubProcess
from bench_harness import respond as _harness_respond
from bench_harness import verdict as _verdict

from assay.lm._stub_server import forced_tool

# The JRH comparison suite, in JRH's names: seven LLM perturbations (each item generated, then
# validated), and stochastic stability (each item judged again, no generation).
JRH_TESTS = (
    "label_flip",
    "format_invariance_1",
    "format_invariance_2",
    "format_invariance_3",
    "semantic_paraphrase",
    "verbosity_bias_long",
    "verbosity_bias_short",
    "stochastic_stability",
)
ITEMS = 10
MODEL = "openai/stub"  # JRH's provider/model form; the OpenAI client goes to OPENAI_BASE_URL


# -- the stub's answers ----------------------------------------------------------------------


def _user_text(request: dict[str, Any]) -> str:
    users = [m for m in request.get("messages") or [] if m.get("role") == "user"]
    content = users[-1].get("content") if users else ""
    return content if isinstance(content, str) else ""


def _between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[-1].rsplit(end, 1)[0]


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def _shorter(text: str) -> str:
    sentences = _sentences(text)
    return " ".join(sentences[: max(1, len(sentences) // 2)]) + " That is all."


# JRH's perturbation instructions (prompts/synthetic_generation_prompts/
# basic_perturbation_instructions.json), told apart by a phrase of each, and what a compliant
# generator writes for it (always different from the response it was given).
_REWRITES: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("logically contradicts", lambda t: f"Sure, here is exactly what you asked for. {t}"),
    ("additional blank lines", lambda t: re.sub(r"(?<=[.!?])\s+", "\n\n\n", t) + "\n\n"),
    ("extra spaces", lambda t: t.replace(" ", "   ")),
    ("leading tabs", lambda t: "\n".join("\t" + line for line in t.splitlines())),
    ("Rephrase the following", lambda t: t.replace("I cannot", "I can't") + " In short: no."),
    ("expand on the ideas", lambda t: f"{t}\n\nTo put the same answer another way: {t}"),
    ("shorter, clearer form", _shorter),
)


def _perturb(prompt: str) -> str:
    """A rewrite of the EXAMPLE RESPONSE of a ``synthetic/basic_perturbation`` prompt."""
    instruction = prompt.split("\n\nEXAMPLE REQUEST:", 1)[0]
    response = _between(prompt, "EXAMPLE RESPONSE:\n", "\n\nYOUR RESPONSE:")
    for phrase, rewrite in _REWRITES:
        if phrase in instruction:
            return rewrite(response)
    raise ValueError(f"unknown JRH perturbation instruction: {instruction[:80]!r}")


def respond(request: dict[str, Any]) -> str:
    """The stub's answer to one request, JRH's or assay's.

    JRH's (a forced tool call) get the tool's JSON arguments: ``BasicLLMResponseStr`` with the
    perturbed response as ``score`` for a generation; ``BasicLLMResponseBool`` with a hashed
    verdict of the judged response for a validation or a judgment. DSPy's go to
    ``bench_harness.respond``. A module-level function: the stub's child process unpickles it.
    """
    tool = forced_tool(request)
    if tool is None:
        return _harness_respond(request)
    prompt = _user_text(request)
    if tool == "BasicLLMResponseStr" and "EXAMPLE RESPONSE:" in prompt:
        answer: dict[str, Any] = {
            "score": _perturb(prompt),
            "reasoning": "Rewritten as the instruction asks.",
        }
    elif tool == "BasicLLMResponseBool" and "<response>" in prompt:
        judged = _between(prompt, "<response>", "</response>")
        answer = {
            "score": _verdict(judged) == "True",
            "reasoning": "I read the response against the rubric.",
        }
    else:
        raise ValueError(f"unexpected JRH request: tool {tool}, prompt {prompt[:80]!r}")
    return json.dumps(answer)


# -- the stub process ------------------------------------------------------------------------


def tool_stub(latency_s: float, keep_bodies: bool = True) -> StubProcess:
    """The stub process for both tools: :func:`respond` (the stub answers JRH's forced tool
    calls as tool calls)."""
    return StubProcess(latency_s, respond, keep_bodies=keep_bodies)


# -- one JRH run -----------------------------------------------------------------------------


def jrh_config(folder: Path, stamp: str, workers: int) -> Path:
    """JRH's config for the suite (its ``config_binary_harmbench.yml`` with the tests of issue
    14 and 10 items; HITL review off), every model ``openai/stub``; written into ``folder``.
    JRH writes its outputs to ``outputs/harmbench_binary_<stamp>`` in its checkout."""
    tests = list(JRH_TESTS)
    raw: dict[str, Any] = {
        "admin": {
            "module_name": "harmbench_binary",
            "time_stamp": stamp,
            "test_debug_mode": False,
            "output_file_format": "csv",
            "dataset_config": {
                "dataset_name": "harmbench.csv",
                "default_params_path": {
                    "instruction": "harmbench_binary_instruction.txt",
                    "rubric": "harmbench_binary_rubric.txt",
                },
                "use_original_data_as_expected": False,
                "default_params": {"min_score": "1", "max_score": "6"},
            },
            "perturbation_config": {
                "use_HITL_process": False,
                "tests_to_run": tests,
                "preprocess_columns_map": {
                    "request": "test_case",
                    "response": "generation",
                    "expected": "human_consensus",
                },
            },
            "evaluation_config": {
                "template": "single_judge",
                "autograder_model_name": MODEL,
                "overwrite_results": False,
                "max_workers": workers,
                "tests_to_evaluate": tests,
                "metric": "accuracy_score",
                "bootstrap_size": 0.1,
                "bootstrap_repetitions": 10,
                "get_cost_curves": False,
            },
        },
        "test_stochastic_stability_config": {
            "sample_num_from_orig": ITEMS,
            "number_of_seeds": 1,
            "repetitions": 1,
            "seed": 87,
        },
        "synthetic_data_params": {
            "generation_model_name": MODEL,
            "validation_model_name": MODEL,
            "max_tokens_generation": 1200,
            "max_tokens_validation": 1200,
            "max_workers": workers,
            "use_similarity_filter": False,
            "sample_num_from_orig": ITEMS,
            "target_num_per_bucket": ITEMS,
            "similarity_threshold": 0.9,
            "rescore_sample_size": 2,
            "initial_temp": 1.0,
            "num_seed_examples_per_generation": 1,
            "temp_increment": 0.1,
            "max_temp_cap": 1.3,
            "max_consecutive_failures": 3,
            "seed": 87,
        },
    }
    path = folder / "jrh_harmbench.yml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path


_REASONING = ("generation_reasoning", "validation_reasoning", "autograder_reasoning")


def check_outputs(out: Path) -> dict[str, int]:
    """Rows JRH judged per test, from its results; exits if a test is missing, short or has a
    call that failed (JRH records a failed call as a judgment with an error as its reasoning)."""
    rows: dict[str, int] = {}
    for test in JRH_TESTS:
        path = out / f"{test}_results_{MODEL.replace('/', '_')}.csv"
        if not path.is_file():
            raise SystemExit(f"JRH wrote no results for {test} in {out}")
        with path.open(encoding="utf-8", newline="") as f:
            records = list(csv.DictReader(f))
        failed = [
            r
            for r in records
            if any(
                mark in (r.get(column) or "")
                for column in _REASONING
                for mark in ("Error during LLM call", "ERROR:")
            )
        ]
        if len(records) != ITEMS or failed:
            raise SystemExit(f"JRH {test}: {len(records)} rows, {len(failed)} failed calls")
        rows[test] = len(records)
    report = out / f"{MODEL.replace('/', '_')}_report.json"
    reported = json.loads(report.read_text(encoding="utf-8"))["all_metrics"]
    if sorted(reported) != sorted(JRH_TESTS):
        raise SystemExit(f"JRH reported {sorted(reported)}")
    return rows


def run_jrh(
    checkout: Path, python: Path, base_url: str, folder: Path, workers: int = 8
) -> tuple[float, float, float]:
    """Run JRH on the suite from its command line (``python -m main <config>`` in ``checkout``)
    with every model on ``base_url``; (start time, wall seconds, CPU seconds of the command).
    JRH's outputs are moved into ``folder`` afterwards (``folder/jrh_outputs``) and checked."""
    stamp = f"assay_bench_{folder.name}"
    config = jrh_config(folder, stamp, workers)
    env = {
        **os.environ,
        "OPENAI_API_KEY": "stub",
        "OPENAI_BASE_URL": base_url,
        # litellm (imported by JRH) would fetch its model cost map from the web at import;
        # assay sets the same for itself
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime
    start = time.time()
    proc = subprocess.run(
        [str(python), "-m", "main", str(config)],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    wall = time.time() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime - cpu
    (folder / "jrh_stdout.txt").write_text(proc.stdout + proc.stderr, encoding="utf-8")
    out = checkout / "outputs" / f"harmbench_binary_{stamp}"
    if proc.returncode != 0:
        raise SystemExit(f"JRH failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr}")
    kept = folder / "jrh_outputs"
    shutil.move(str(out), kept)
    check_outputs(kept)
    return start, wall, cpu


def calls_by_kind(bodies: list[dict[str, Any]], checkout: Path) -> dict[str, int]:
    """JRH's requests by kind: ``generation`` and ``validation`` (the validator has the
    generator's system prompt), and the judge's ``probes`` and ``stability`` judgments (those
    of an unperturbed response of the data set); ``other`` for any request not JRH's."""
    data = checkout / "inputs" / "data" / "harmbench_binary" / "harmbench.csv"
    with data.open(encoding="utf-8", newline="") as f:
        originals = {row["generation"] for row in csv.DictReader(f)}
    kinds = dict.fromkeys(("generation", "validation", "probes", "stability", "other"), 0)
    for body in bodies:
        tool = forced_tool(body)
        system = any(m.get("role") == "system" for m in body.get("messages") or [])
        if tool == "BasicLLMResponseStr":
            kinds["generation"] += 1
        elif tool == "BasicLLMResponseBool" and system:
            kinds["validation"] += 1
        elif tool == "BasicLLMResponseBool":
            judged = _between(_user_text(body), "<response>", "</response>")
            kinds["stability" if judged in originals else "probes"] += 1
        else:
            kinds["other"] += 1
    return kinds
