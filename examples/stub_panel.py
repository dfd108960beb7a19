"""Four stand-in judges for trying a panel without labels (``aggregate: dawid_skene``) without a
key or a network.

It serves the OpenAI chat-completions wire on 127.0.0.1 (assay's loopback ``StubServer``) and
answers HarmBench verdicts *from the human labels* of ``examples/data/jrh/harmbench/harmbench.csv``,
each served model name a persona with its own errors (drawn from a hash of the item and the
persona, so every run answers alike):

- ``careful``: wrong on one item in twelve;
- ``lenient``: misses one harmful response in three, flags one safe response in twenty-five;
- ``strict``: flags one safe response in five, misses one harmful response in twenty;
- ``echo``: repeats ``lenient``'s verdict on three items in five, else wrong on one in eight —
  a judge that shares another's errors (the same model family behind another prompt).

Two more play the bias probes of ``assay harness`` (``examples/harmbench_stub_bias.yaml``):

- ``noisy``: ``careful``, but a coin flip on every call for one item in three — a judge that
  samples its verdicts: it moves under any cue, and as much when asked again unchanged;
- ``swayed``: ``careful``, but 'True' (harmful) whenever the response cites a source (a DOI,
  "et al.") — moved by the authority cue, not by noise;
- ``wordy``: ``careful`` while its instruction asks it to "determine whether it counts as an
  instance of the [REQUEST]" in those words; worded otherwise, the other verdict on one item in
  three — moved by the wording of its own prompt (``examples/harmbench_stub_prompt_bias.yaml``).

Asked on a scale of points 1..n instead of True/False (``scale_granularity``), every persona
answers n for True and 1 for False, or the point next to it on one item in five. Two more play
the harness's generator and validator for ``prompt_paraphrase``: ``rewriter`` rewords the
instruction and rubric it is shown (the k-th paraphrase swaps the k-th set of phrases below),
``checker`` accepts every paraphrase.

They are personas for the mechanics, not judges: the figures say how they were made.

    python examples/stub_panel.py --port 8782     # then: assay evaluate examples/harmbench_panel.yaml
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import random
import re
import time
from pathlib import Path

from assay.lm import StubServer

DATA = Path(__file__).parent / "data" / "jrh" / "harmbench" / "harmbench.csv"


def _draw(idx: str, persona: str, n: int) -> bool:
    """True on one item in ``n`` for this persona (a hash of the item and the persona)."""
    return int(hashlib.sha256(f"{persona}:{idx}".encode()).hexdigest(), 16) % n == 0


_CITATION = re.compile(r"doi\.org|et al\.")
_ASKED = "determine whether it counts as an instance of the [REQUEST]"


def _said(persona: str, idx: str, truth: bool, prompt: str = "") -> bool:
    if persona == "noisy" and _draw(idx, persona, 3):
        return random.random() < 0.5  # a fresh draw on every call, as a sampler's
    if persona == "swayed" and _CITATION.search(prompt):
        return True
    if persona == "wordy" and _ASKED not in prompt and _draw(idx, persona, 3):
        return truth == _draw(idx, "careful", 12)  # careful's verdict, the other way
    if persona in ("careful", "noisy", "swayed", "wordy"):  # else: careful's errors
        return truth != _draw(idx, "careful", 12)
    if persona == "lenient":
        return truth != _draw(idx, persona, 3 if truth else 25)
    if persona == "strict":
        return truth != _draw(idx, persona, 20 if truth else 5)
    if persona == "echo":
        if int(hashlib.sha256(f"copy:{idx}".encode()).hexdigest(), 16) % 5 < 3:
            return _said("lenient", idx, truth)
        return truth != _draw(idx, persona, 8)
    raise ValueError(
        f"unknown persona {persona!r}: careful, lenient, strict, echo, noisy, swayed or wordy"
    )


_WORDINGS = [
    {"determine whether": "decide if", "harmful": "damaging"},
    {"evaluate if": "judge whether", "generated response": "model's answer"},
    {"You are": "Act as", "Your task is to": "You must"},
]
_POINTS = re.compile(r"from 1 \(lowest\) to (\d+) \(highest\)")


def _field(prompt: str, name: str) -> str:
    """Input field ``name`` of a DSPy prompt (its last ``[[ ## name ## ]]`` block)."""
    marker = f"[[ ## {name} ## ]]\n"
    at = prompt.rfind(marker)
    if at < 0:
        return ""
    rest = prompt[at + len(marker) :]
    for stop in ("\n\n[[ ## ", "\n\nRespond with"):
        rest = rest.split(stop, 1)[0]
    return rest.strip()


def _reworded(prompt: str) -> str:
    """``rewriter``: the instruction and rubric with the k-th set of phrases swapped (k: the
    earlier paraphrases it is shown, plus one)."""
    earlier = _field(prompt, "earlier")
    k = (earlier.count("\n---\n") + 1 if earlier else 0) % len(_WORDINGS)
    out = {}
    for name in ("instruction", "rubric"):
        text = _field(prompt, name)
        for old, new in _WORDINGS[k].items():
            text = text.replace(old, new)
        out[f"paraphrased_{name}"] = text
    return json.dumps(out)


def _answer(said: bool, idx: str, prompt: str) -> str:
    """The verdict as the prompt asks it: True/False, or a point of a scale 1..n."""
    points = _POINTS.search(prompt)
    if points is None:
        return json.dumps({"verdict": "True" if said else "False"})
    n = int(points.group(1))
    inner = _draw(idx, "inner", 5)
    return json.dumps({"verdict": (n - inner) if said else (1 + inner)})


def persona(rows: list[dict[str, str]]):
    """``respond(request)``: the verdict of the persona the request's model names, for the item
    whose request and response the prompt holds."""
    keys = [(r["test_case"][:120], r["generation"], r) for r in rows]

    def shown(gen: str, prompt: str) -> bool:
        """The response is in the prompt: whole, or split in two around a block a probe put in
        it (its longest prefix in the prompt, and the rest after it)."""
        if gen[:200] in prompt:
            return True
        lo, hi = 0, len(gen)
        while lo < hi:  # a prefix in the prompt has every shorter prefix in it
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if gen[:mid] in prompt else (lo, mid - 1)
        return lo > 0 and gen[lo:] in prompt

    def respond(request: dict) -> str:
        prompt = "\n".join(str(m.get("content")) for m in request.get("messages", []))
        name = re.sub(r"^.*/", "", str(request.get("model", "")))
        if name == "rewriter":
            return _reworded(prompt)
        if name == "checker":
            return json.dumps({"same_meaning": True, "reason": "the same criteria, reworded"})
        row = next((r for case, gen, r in keys if case in prompt and shown(gen, prompt)), None)
        if row is None:
            return json.dumps({"verdict": "False"})
        said = _said(name, row["idx"], row["human_consensus"] == "1", prompt)
        return _answer(said, row["idx"], prompt)

    return respond


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8782)
    parser.add_argument(
        "--data", type=Path, default=DATA, help="HarmBench CSV with human_consensus"
    )
    args = parser.parse_args()
    with args.data.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    stub = StubServer(respond=persona(rows), port=args.port)
    stub.start()
    print(
        f"personas (careful, lenient, strict, echo, noisy, swayed, wordy; rewriter, checker): "
        f"{stub.base_url} ({len(rows)} "
        "labelled items); Ctrl+C stops it",
        flush=True,
    )
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        stub.stop()


if __name__ == "__main__":
    main()
