"""``assay schema [KIND]``: the JSON schema of a config (the same pydantic models the API uses),
for every registered runner that reads one."""

from __future__ import annotations

import argparse
import json
from typing import Any

from assay.runners import get_runner, known_runners


def _kinds() -> dict[str, Any]:
    """``assay schema <kind>`` → the runner whose config model it prints: the first runner that
    reads that model (``calibrate`` reads evaluate's), named by its command's first word
    (``toolemu``)."""
    out: dict[str, Any] = {}
    for name in known_runners():
        runner = get_runner(name)
        if runner.config is not None and all(r.config != runner.config for r in out.values()):
            out.setdefault(runner.words()[0], runner)
    return out


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("schema", help="print the JSON schema of a config")
    p.add_argument(
        "kind", nargs="?", default="evaluate", choices=tuple(_kinds()), help="which config"
    )
    p.add_argument(  # imported before the parser was built (assay.cli): here for --help
        "--plugin",
        dest="plugins_after",
        action="append",
        default=[],
        metavar="FILE_OR_MODULE",
        help="import this plug-in first: its tests' settings, its runner's config (repeatable)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    model = _kinds()[args.kind].config_model()
    print(json.dumps(model.model_json_schema(), indent=2))
    return 0
