"""``assay review export|import RUN``: review generated probes without a browser."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("review", help="review generated probes without a browser")
    rsub = r.add_subparsers(dest="action", required=True)
    rex = rsub.add_parser("export", help="write the pending probes to a YAML file to edit")
    rex.add_argument("run", help="the harness run directory")
    rex.add_argument("-o", "--output", help="file to write (default: RUN/review.yaml)")
    rex.add_argument("--all", action="store_true", help="include probes already reviewed")
    rim = rsub.add_parser("import", help="apply the decisions of an edited review file")
    rim.add_argument("run", help="the harness run directory")
    rim.add_argument("file", help="the edited review file")
    rim.add_argument("--reviewer", help="reviewer name for entries that have none")
    r.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from assay.experiments.reliability import export_review, import_review, run_scale

    run_dir = Path(args.run)
    scale = run_scale(run_dir)
    if args.action == "export":
        out = Path(args.output or run_dir / "review.yaml")
        n = export_review(run_dir, out, scale, include_reviewed=args.all)
        print(
            f"{n} probes to review written to {out}: fill in 'decision' (accept / edit / reject) "
            "and 'reviewer',"
        )
        print(f"then: assay review import {run_dir} {out}")
    else:
        counts = import_review(run_dir, Path(args.file), scale, reviewer=args.reviewer)
        print("imported: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return 0
