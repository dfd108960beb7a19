"""``assay compare [RUN|EXPERIMENT ...]``: judge configs side by side, read from MLflow."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from assay.cli._common import add_tracking


def register(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser(
        "compare", help="compare judge configs across MLflow runs: leaderboard, differences, plots"
    )
    c.add_argument(
        "runs",
        nargs="*",
        help="run ids or experiment names (default: every run of the experiment 'assay')",
    )
    c.add_argument(
        "--metric",
        help="metric to rank by (default: kappa_categorical, else accuracy; harness: "
        "worst_test_rate, the lowest pass rate or consistency over its tests)",
    )
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.add_argument(
        "--force", action="store_true", help="also rank runs measured on other items or scales"
    )
    add_tracking(c)
    c.add_argument(
        "--experiment",
        help="experiment to read when no runs are named; with named runs, keep only its runs",
    )
    c.add_argument(
        "--tag",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="keep only runs with this tag (repeatable), e.g. assay.items=<fingerprint>",
    )
    c.add_argument("--out", help="folder for the plots and comparison.json (default: ./compare)")
    c.add_argument("--no-log", action="store_true", help="do not log a comparison run to MLflow")
    c.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from assay.errors import ConfigError
    from assay.experiments.compare import compare, render_markdown
    from assay.experiments.runs import default_tracking_uri

    uri = (
        args.tracking_uri
        or os.environ.get("MLFLOW_TRACKING_URI")
        or default_tracking_uri(Path.cwd())
    )
    tags = {}
    for item in args.tag:
        k, sep, v = item.partition("=")
        if not sep or not k:
            raise ConfigError(f"--tag {item}: expected KEY=VALUE")
        tags[k] = v
    result = compare(
        args.runs,
        tracking_uri=uri,
        metric=args.metric,
        force=args.force,
        experiment=args.experiment,
        tags=tags,
        out_dir=(Path(args.out) if args.out else Path.cwd() / "compare").resolve(),
        log=not args.no_log,
    )
    print(result.model_dump_json() if args.json else render_markdown(result), end="\n")
    return 0
