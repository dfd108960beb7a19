"""The items and the judge config the stub-server tests share (faults, accounting, early
refusals, cache scope):
four items, a binary judge on ``openai/stub-model`` at the stub's address; and the stub's
personas with the evaluate runs made through the command line that the paired and rate tests
compare."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

from assay.cli import main
from assay.lm import StubServer
from assay.lm._stub_server import default_respond

N_ITEMS = 4
N_PERSONA_ITEMS = 40


def write_items(folder: Path, n: int = N_ITEMS) -> Path:
    path = folder / "items.csv"
    rows = ["id,request,response,expected"]
    rows += [f"i{k},What colour is item {k}?,Item {k} is blue.,{k % 2}" for k in range(n)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def stub_config(
    folder: Path,
    csv: Path,
    api_base: str,
    *,
    name: str,
    file: str = "config.yaml",
    **extra: object,
) -> Path:
    """``folder/file``: a config judging ``csv`` with ``openai/stub-model`` at ``api_base``;
    ``judge`` entries are added to the judge, the rest to the config."""
    judge = {
        "name": "stub-judge",
        "model": "openai/stub-model",
        "api_base": api_base,
        "rubric": "A good response names a colour.",
        "scale": {"kind": "binary", "labels": ["False", "True"]},
        **extra.pop("judge", {}),  # type: ignore[dict-item]
    }
    config = {
        "name": name,
        "data": {"path": str(csv), "columns": {"id": "id"}},
        "judge": judge,
        "concurrency": N_ITEMS,
        "tracking": {"enabled": False},
        **extra,
    }
    path = folder / file
    path.write_text(json.dumps(config), encoding="utf-8")  # JSON is YAML
    return path


class Personas:
    """The stub's answers: per served model name, the items it gets wrong (answers 'garbage'
    for the ``garbled`` ones), or the one verdict it gives on every item (``constant``);
    ``noisy`` items alternate their verdict call by call."""

    def __init__(self) -> None:
        self.wrong: dict[str, set[int]] = {}
        self.garbled: dict[str, set[int]] = {}
        self.constant: dict[str, str] = {}
        self.noisy: set[int] = set()
        self.calls = 0

    def __call__(self, body: dict) -> str:
        text = json.dumps(body.get("messages"))
        k = int(re.search(r"Item (\d+) is blue", text).group(1))
        model = body["model"]
        if k in self.garbled.get(model, ()):
            return "garbage"
        self.calls += 1
        right = k % 2 == 1
        wrong = k in self.wrong.get(model, ()) or (k in self.noisy and self.calls % 2 == 0)
        out = json.loads(default_respond(body))
        out["verdict"] = self.constant.get(model, str(right != wrong))
        return json.dumps(out)


def personas_stub() -> Iterator[StubServer]:
    """The stub server answering as :class:`Personas` (``server.personas``); a test module
    makes it a fixture: ``stub = pytest.fixture(personas_stub)``."""
    personas = Personas()
    with StubServer(respond=personas) as server:
        server.personas = personas  # type: ignore[attr-defined]
        yield server


def evaluate_cli(
    folder: Path,
    stub: StubServer,
    model: str,
    *,
    n: int = N_PERSONA_ITEMS,
    items: Path | None = None,
    **extra: object,
) -> Path:
    """An evaluate run through the command line in ``folder`` (its own LM cache) of the first
    ``n`` stub items (or ``items``); its directory."""
    folder.mkdir(parents=True, exist_ok=True)
    csv = items or write_items(folder, n)
    judge = {"model": f"openai/{model}", **extra.pop("judge", {})}  # type: ignore[dict-item]
    argv = list(extra.pop("argv", []))  # type: ignore[call-overload]
    cfg = stub_config(folder, csv, stub.base_url, name=model, judge=judge, **extra)
    cwd = Path.cwd()
    try:
        os.chdir(folder)
        assert main(["evaluate", str(cfg), "--quiet", *argv]) in (0, 1)
    finally:
        os.chdir(cwd)
    (run_dir,) = (folder / "runs").iterdir()
    return run_dir
