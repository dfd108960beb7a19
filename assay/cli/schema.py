"""``assay schema [KIND]``: the JSON schema of a config (the same pydantic models the API uses)."""

from __future__ import annotations

import argparse
import json

KINDS = ("evaluate", "harness", "optimize", "toolemu")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("schema", help="print the JSON schema of a config")
    p.add_argument("kind", nargs="?", default="evaluate", choices=KINDS, help="which config")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from assay.experiments import EvaluateConfig, OptimizeConfig
    from assay.experiments.reliability import HarnessConfig
    from assay.toolemu import ToolEmuRunConfig

    model = {
        "evaluate": EvaluateConfig,
        "harness": HarnessConfig,
        "optimize": OptimizeConfig,
        "toolemu": ToolEmuRunConfig,
    }[args.kind]
    print(json.dumps(model.model_json_schema(), indent=2))
    return 0
