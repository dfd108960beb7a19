"""``assay optimize CONFIG``: compile a judge with a DSPy optimizer; measure before and after."""

from __future__ import annotations

import argparse

from assay.cli._common import add_output, add_tracking, workdir


def register(sub: argparse._SubParsersAction) -> None:
    o = sub.add_parser(
        "optimize",
        help="compile a judge with a DSPy optimizer on a train split; measure before and after",
    )
    o.add_argument("config", help="YAML optimize config (see examples/optimize_harmbench.yaml)")
    add_tracking(o)
    add_output(o)
    o.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from assay.experiments import load_config
    from assay.experiments.optimize import OptimizeConfig, optimize, render_result

    config, base = load_config(args.config, model=OptimizeConfig)
    out = optimize(
        config,
        workdir=workdir(),
        config_dir=base,
        progress=not (args.quiet or args.json),
        tracking_uri=args.tracking_uri,
    )
    if args.json:
        print(out.model_dump_json())
        return 0
    print(render_result(out, config.bootstrap.confidence))
    return 0
