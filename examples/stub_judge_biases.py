"""Self-preference and scale use on the loopback stub, without a key or a network.

Writes 60 synthetic items (a 1–5 reference, half of the answers written by ``openai/gpt-4o``
and half by ``anthropic/claude-3-5-sonnet``, in a ``written_by`` column) and three simulated
annotators' labels of them (``annotations.csv``: the reference moved a category up or down on
some items), then runs ``assay evaluate`` with a judge of family gpt served by three personas of
the stub:

- ``gpt-4o-mini`` favours its own family: one point more on the answers gpt wrote;
- ``gpt-4.1-mini`` is fair: the reference with noise that does not depend on who wrote it;
- ``gpt-4.1-nano`` is strict: one category below the reference;

and ``assay agreement`` of the strict judge's verdicts against the three annotators (the rater
model, with each annotator a rater).

The personas are for the mechanics of the figures, not judges: point ``judge.model`` at a real
model (no ``api_base``) and ``data`` at your own outputs for figures worth trusting.

    python examples/stub_judge_biases.py /tmp/biases      # its runs in /tmp/biases
"""

from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path

import numpy as np

from assay.cli import main as assay
from assay.lm import StubServer
from assay.lm._stub_server import default_respond

N = 60
OWN, OTHER = "openai/gpt-4o", "anthropic/claude-3-5-sonnet"


def items(folder: Path) -> tuple[Path, np.ndarray, list[str]]:
    rng = np.random.default_rng(7)
    reference = rng.integers(2, 5, size=N)
    written_by = [OWN if k % 2 == 0 else OTHER for k in range(N)]
    rows = ["id,request,response,expected,written_by"]
    rows += [f"i{k},Question {k}?,Answer {k}.,{reference[k]},{written_by[k]}" for k in range(N)]
    path = folder / "items.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path, reference, written_by


def annotations(folder: Path, reference: np.ndarray) -> Path:
    """Three annotators: the reference, a category up or down on about a third of the items."""
    rng = np.random.default_rng(1)
    rows = ["item,annotator,label"]
    for a in ("ann_a", "ann_b", "ann_c"):
        labels = np.clip(reference + rng.choice([-1, 0, 0, 0, 0, 1], size=N), 1, 5)
        rows += [f"i{k},{a},{label}" for k, label in enumerate(labels)]
    path = folder / "annotations.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def personas(reference: np.ndarray, written_by: list[str]):
    noise = np.random.default_rng(0).choice([-1, 0, 0, 1], size=N)

    def respond(request: dict) -> str:
        k = int(re.search(r"Answer (\d+)\.", json.dumps(request["messages"])).group(1))
        out = json.loads(default_respond(request))
        if request["model"] == "gpt-4.1-nano":  # strict
            out["verdict"] = int(max(1, reference[k] - 1))
        else:
            bonus = int(request["model"] == "gpt-4o-mini" and written_by[k] == OWN)
            out["verdict"] = int(np.clip(reference[k] + noise[k] + bonus, 1, 5))
        return json.dumps(out)

    return respond


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    folder = parser.parse_args().folder
    folder.mkdir(parents=True, exist_ok=True)
    csv, reference, written_by = items(folder)
    labels = annotations(folder, reference)
    with StubServer(respond=personas(reference, written_by)) as stub:
        for model in ("gpt-4o-mini", "gpt-4.1-mini", "gpt-4.1-nano"):
            config = {
                "name": f"selfpref-{model.replace('.', '-')}",
                "data": {"path": str(csv), "columns": {"id": "id", "generator": "written_by"}},
                "judge": {
                    "model": f"openai/{model}",
                    "api_base": stub.base_url,
                    "rubric": "A good answer is correct and complete.",
                    "scale": "1-5",
                },
                "tracking": {"enabled": False},
            }
            path = folder / f"{model}.yaml"
            path.write_text(json.dumps(config), encoding="utf-8")  # JSON is YAML
            cwd = Path.cwd()
            os.chdir(folder)
            try:
                assay(["evaluate", path.name, "--quiet"])
            finally:
                os.chdir(cwd)
    (strict,) = (folder / "runs").glob("selfpref-gpt-4-1-nano-*")
    print(f"\n$ assay agreement annotations.csv {strict.name}/judgments.jsonl --scale 1-5 ...")
    assay(
        ["agreement", str(labels), str(strict / "judgments.jsonl"), "--scale", "1-5"]
        + ["--id-column", "item", "--score-column", "label", "--annotator-column", "annotator"]
    )


if __name__ == "__main__":
    main()
