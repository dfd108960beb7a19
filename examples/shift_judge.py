"""Two versions of a stand-in essay judge, for trying ``assay drift --anchors`` and ``--series``
without a key or a network.

It serves the OpenAI chat-completions wire on 127.0.0.1 (assay's loopback ``StubServer``) and
scores PERSUADE 2.0 essays (``examples/data/jrh/persuade/persuade_sample.csv``) from their human
holistic score, by the model name asked for:

- ``essay-judge-v1``: the human score;
- ``essay-judge-v2``: the human score + 1 (at most 6) — a judge version that grades more kindly.

An essay the prompt does not hold gets 1. It is a persona with a known offset, for seeing a
judge's shift told from a change in the essays, not a judge: point a config at a real model for
verdicts worth trusting.

    python examples/shift_judge.py --port 8792     # then: assay evaluate with model openai/essay-judge-v1
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path

from assay.lm import StubServer

DATA = Path(__file__).parent / "data" / "jrh" / "persuade" / "persuade_sample.csv"
OFFSET = {"essay-judge-v1": 0, "essay-judge-v2": 1}


def persona(rows: list[dict[str, str]]):
    """``respond``: the score of the essay whose opening the prompt holds, by judge version."""
    openings = [(r["full_text"].strip()[:200], int(r["holistic_essay_score"])) for r in rows]

    def respond(request: dict) -> str:
        prompt = "\n".join(str(m.get("content")) for m in request.get("messages", []))
        human = next((score for opening, score in openings if opening in prompt), None)
        score = 1 if human is None else min(6, human + OFFSET.get(request.get("model"), 0))
        return json.dumps({"verdict": str(score)})

    return respond


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8792)
    parser.add_argument("--data", type=Path, default=DATA, help="PERSUADE CSV with human scores")
    args = parser.parse_args()
    with args.data.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    stub = StubServer(respond=persona(rows), model="essay-judge-v1", port=args.port)
    stub.start()
    print(f"essay judge stub: {stub.base_url} ({len(rows)} essays); Ctrl+C stops it", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        stub.stop()


if __name__ == "__main__":
    main()
