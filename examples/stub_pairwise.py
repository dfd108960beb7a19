"""Three stand-in pairwise judges for trying ``assay rank`` without a key or a network.

It serves the OpenAI chat-completions wire on 127.0.0.1 (assay's loopback ``StubServer``) and
answers PERSUADE essay pairs *from the human holistic scores* of
``examples/data/jrh/persuade/persuade_sample.csv``: each served model name is a persona that
prefers the essay with the higher score, with its own errors (drawn from a hash of the pair and
the persona, so every run answers alike):

- ``careful``: wrong on one pair in ten;
- ``hasty``: wrong on one pair in four;
- ``first``: picks the essay shown first on one pair in two, else answers as ``careful`` — a
  judge with a first-position bias.

They are personas for the mechanics, not judges: the ranking's figures say how they were made.

    python examples/stub_pairwise.py --port 8783     # then: assay evaluate examples/persuade_rank.yaml
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import re
import time
from pathlib import Path

from assay.lm import StubServer

DATA = Path(__file__).parent / "data" / "jrh" / "persuade" / "persuade_sample.csv"
SNIPPET = 160  # characters of an essay's opening that find it in a prompt


def _draw(key: str, persona: str, n: int) -> bool:
    """True on one pair in ``n`` for this persona (a hash of the pair and the persona)."""
    return int(hashlib.sha256(f"{persona}:{key}".encode()).hexdigest(), 16) % n == 0


def choose(persona: str, first: dict[str, str], second: dict[str, str]) -> str:
    """``"A"`` (the essay shown first) or ``"B"``: the persona's verdict on the pair."""
    key = "~".join(sorted((first["essay_id"], second["essay_id"])))
    better_first = float(first["holistic_essay_score"]) > float(second["holistic_essay_score"])
    if persona == "first":
        if _draw(key, "first", 2):
            return "A"
        persona = "careful"
    wrong = {"careful": 10, "hasty": 4}.get(persona)
    if wrong is None:
        raise ValueError(f"unknown persona {persona!r}: careful, hasty or first")
    return "A" if better_first != _draw(key, persona, wrong) else "B"


def persona(rows: list[dict[str, str]]):
    """``respond(request)``: the verdict of the persona the request's model names, for the two
    essays the prompt holds (the one whose text comes first was shown first)."""
    openings = [(" ".join(r["full_text"].split())[:SNIPPET], r) for r in rows]

    def respond(request: dict) -> str:
        messages = request.get("messages", [])
        text = " ".join(" ".join(str(m.get("content")).split()) for m in messages[-1:])
        found = sorted((text.find(o), r["essay_id"], r) for o, r in openings if o in text)
        if len(found) != 2:  # no verdict made up: the judgment is left unscored
            return "the stub found no pair of PERSUADE essays in this prompt"
        name = re.sub(r"^.*/", "", str(request.get("model", "")))
        return json.dumps({"verdict": choose(name, found[0][2], found[1][2])})

    return respond


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8783)
    parser.add_argument("--data", type=Path, default=DATA, help="PERSUADE CSV with scores")
    args = parser.parse_args()
    with args.data.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    stub = StubServer(respond=persona(rows), port=args.port)
    stub.start()
    print(
        f"pairwise personas (careful, hasty, first): {stub.base_url} ({len(rows)} essays); "
        "Ctrl+C stops it",
        flush=True,
    )
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        stub.stop()


if __name__ == "__main__":
    main()
