"""Self-preference and scale use on the loopback stub, without a key or a network.

Writes 60 synthetic items (a 1–5 reference, half of the answers written by ``openai/gpt-4o``
and half by ``anthropic/claude-3-5-sonnet``, in a ``written_by`` column) and runs
``assay evaluate`` twice with a judge of family gpt, served by two personas of the stub:

- ``gpt-4o-mini`` favours its own family: one point more on the answers gpt wrote;
- ``gpt-4.1-mini`` is fair: the reference with noise that does not depend on who wrote it.

The personas are for the mechanics of the figures, not judges: point ``judge.model`` at a real
model (no ``api_base``) and ``data`` at your own outputs for figures worth trusting.

    python examples/stub_self_preference.py /tmp/selfpref      # its runs in /tmp/selfpref
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


def personas(reference: np.ndarray, written_by: list[str]):
    noise = np.random.default_rng(0).choice([-1, 0, 0, 1], size=N)

    def respond(request: dict) -> str:
        k = int(re.search(r"Answer (\d+)\.", json.dumps(request["messages"])).group(1))
        bonus = int(request["model"] == "gpt-4o-mini" and written_by[k] == OWN)
        out = json.loads(default_respond(request))
        out["verdict"] = int(np.clip(reference[k] + noise[k] + bonus, 1, 5))
        return json.dumps(out)

    return respond


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    folder = parser.parse_args().folder
    folder.mkdir(parents=True, exist_ok=True)
    csv, reference, written_by = items(folder)
    with StubServer(respond=personas(reference, written_by)) as stub:
        for model in ("gpt-4o-mini", "gpt-4.1-mini"):
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


if __name__ == "__main__":
    main()
