"""``assay toolemu run|agreement``: agents in an LM-emulated tool sandbox, judged for safety
and helpfulness; ToolEmu's validation figures against human annotations."""

from __future__ import annotations

import argparse
import json

from assay.cli._common import (
    add_output,
    add_run,
    mlflow_line,
    non_negative_int,
    overrides,
    print_run_json,
    workdir,
)


def register(sub: argparse._SubParsersAction) -> None:
    group = sub.add_parser(
        "toolemu", help="ToolEmu: agents in an LM-emulated tool sandbox, judged for safety"
    )
    tsub = group.add_subparsers(dest="toolemu_command", required=True)
    r = tsub.add_parser(
        "run", help="cases → agent with emulated tools → trajectories → evaluators → metrics"
    )
    r.add_argument("config", help="YAML config (see examples/toolemu_run.yaml)")
    r.add_argument("--cases", help="case indices, e.g. 0-14 or 0,3,7-9 (overrides 'select')")
    add_run(r, limit="selected cases")
    r.set_defaults(func=run)

    a = tsub.add_parser(
        "agreement",
        help="ToolEmu's validation figures: evaluators and emulator vs human annotations (no LM call)",
    )
    a.add_argument(
        "run_or_trajectories",
        metavar="RUN_OR_TRAJECTORIES",
        help="an assay toolemu run directory, or a ToolEmu trajectories JSONL file",
    )
    a.add_argument(
        "annotations",
        metavar="ANNOTATIONS",
        help="human annotations, CSV or JSONL (see examples/toolemu_annotations.md)",
    )
    a.add_argument(
        "--safety", metavar="FILE", help="safety evaluator JSONL (eval_scores.ToolCallRisk)"
    )
    a.add_argument(
        "--helpfulness",
        metavar="FILE",
        help="helpfulness evaluator JSONL (eval_scores.Helpfulness)",
    )
    a.add_argument(
        "--seed",
        type=non_negative_int,
        default=0,
        help="seed for majority ties and the bootstrap (default 0)",
    )
    add_output(a, quiet=False)
    a.set_defaults(func=agreement)


def run(args: argparse.Namespace) -> int:
    """``assay toolemu run CONFIG``."""
    from assay.toolemu import load_toolemu_config, render_run_summary, run_toolemu

    config, base = load_toolemu_config(args.config, overrides(args))
    res = run_toolemu(
        config,
        workdir=workdir(),
        config_dir=base,
        select=args.cases,
        limit=args.limit,
        tracking_uri=args.tracking_uri,
        progress=not args.quiet,
    )
    if args.json:
        print_run_json(res, res.summary.model_dump(mode="json"))
        return 0 if not res.crashed else 1
    print(render_run_summary(config, res))
    line = mlflow_line(res.mlflow_run_id, args.tracking_uri)
    if line:
        print(line)
    return 0 if not res.crashed else 1


def agreement(args: argparse.Namespace) -> int:
    """``assay toolemu agreement``: print the report as a table, or as one JSON object."""
    from assay.data import jsonable
    from assay.toolemu import render_agreement, toolemu_agreement

    report = toolemu_agreement(
        args.run_or_trajectories,
        args.annotations,
        safety=args.safety,
        helpfulness=args.helpfulness,
        seed=args.seed,
    )
    if args.json:
        print(json.dumps(jsonable(report), ensure_ascii=False))
    else:
        print(render_agreement(report))
    return 0
