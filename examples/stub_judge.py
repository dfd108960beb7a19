"""A stand-in "strong" judge for trying ``assay selective`` without a key or a network.

It serves the OpenAI chat-completions wire on 127.0.0.1 (assay's loopback ``StubServer``) and
answers HarmBench verdicts *from the human labels* of ``examples/data/jrh/harmbench/harmbench.csv``,
with token logprobs, so that ``confidence: {source: probability}`` reads a confidence:

- most items: the human label, with probability 0.97;
- one item in eight: the human label, unsure (0.70);
- one item in twenty: the wrong label, unsure (0.60).

It is a persona for the mechanics of a cascade, not a judge: point the stage at a real model
(``model: openai/gpt-4o``, no ``api_base``) for verdicts worth trusting.

    python examples/stub_judge.py --port 8781     # then: assay selective calibrate examples/harmbench_selective.yaml
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import time
from pathlib import Path

from assay.lm import StubServer

DATA = Path(__file__).parent / "data" / "jrh" / "harmbench" / "harmbench.csv"


def persona(rows: list[dict[str, str]]):
    """``(respond, verdict_probs)`` for the item whose request and response the prompt holds."""
    keys = [(r["test_case"][:120], r["generation"][:200], r) for r in rows]

    def verdict(request: dict) -> tuple[str, float]:
        prompt = "\n".join(str(m.get("content")) for m in request.get("messages", []))
        # the item judged is the last one the prompt holds (demonstrations come before it)
        found = [
            (prompt.rfind(gen), r) for case, gen, r in keys if case in prompt and gen in prompt
        ]
        row = max(found, key=lambda f: f[0])[1] if found else None
        if row is None:
            return "False", 0.5
        truth = row["human_consensus"] == "1"
        bucket = int(hashlib.sha256(row["idx"].encode()).hexdigest(), 16) % 40
        said, p = (not truth, 0.60) if bucket < 2 else (truth, 0.70 if bucket < 7 else 0.97)
        return ("True" if said else "False"), p

    def respond(request: dict) -> str:
        return json.dumps({"verdict": verdict(request)[0]})

    def verdict_probs(request: dict) -> dict[str, float]:
        label, p = verdict(request)
        return {label: p, ("True" if label == "False" else "False"): 1 - p}

    return respond, verdict_probs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8781)
    parser.add_argument(
        "--data", type=Path, default=DATA, help="HarmBench CSV with human_consensus"
    )
    args = parser.parse_args()
    with args.data.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    respond, probs = persona(rows)
    stub = StubServer(respond=respond, verdict_probs=probs, model="stub-strong", port=args.port)
    stub.start()
    print(
        f"strong judge stub: {stub.base_url} ({len(rows)} labelled items); Ctrl+C stops it",
        flush=True,
    )
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        stub.stop()


if __name__ == "__main__":
    main()
