"""``assay review export|import|serve RUN``: review generated probes, in a YAML file or in a
browser; on a ``selective apply`` run, its abstained items."""

from __future__ import annotations

import argparse
from pathlib import Path

from assay.runners import cli_type
from assay.types import Port


def register(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("review", help="review generated probes without a browser")
    rsub = r.add_subparsers(dest="action", required=True)
    rex = rsub.add_parser(
        "export", help="write the pending probes (or abstained items) to a YAML file to edit"
    )
    rex.add_argument("run", help="a harness run directory, or a `selective apply` run directory")
    rex.add_argument("-o", "--output", help="file to write (default: RUN/review.yaml)")
    rex.add_argument("--all", action="store_true", help="include what was already reviewed")
    rim = rsub.add_parser("import", help="apply the decisions of an edited review file")
    rim.add_argument("run", help="a harness run directory, or a `selective apply` run directory")
    rim.add_argument("file", help="the edited review file")
    rim.add_argument("--reviewer", help="reviewer name for entries that have none")
    r.set_defaults(func=run)
    rsv = rsub.add_parser(
        "serve", help="review a harness run's probes, or a selective run's abstained items"
    )
    rsv.add_argument("run", help="a harness run directory, or a `selective apply` run directory")
    rsv.add_argument(
        "--port", type=cli_type("int", Port), default=0, help="port (default 0: a free one)"
    )
    rsv.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1)")
    rsv.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host")
    rsv.set_defaults(func=serve)


def run(args: argparse.Namespace) -> int:
    from assay.decisions.selective.review import is_abstention_run
    from assay.reliability import export_review, import_review, run_scale

    run_dir = Path(args.run)
    if is_abstention_run(run_dir):
        return _abstained(args, run_dir)
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


def _abstained(args: argparse.Namespace, run_dir: Path) -> int:
    """export / import on a ``selective apply`` run: its abstained items."""
    from assay.decisions.selective import export_abstained, import_abstained

    if args.action == "export":
        out = Path(args.output or run_dir / "review.yaml")
        n = export_abstained(run_dir, out, include_decided=args.all)
        print(f"{n} abstained items written to {out}: fill in 'verdict' and 'reviewer',")
        print(f"then: assay review import {run_dir} {out}")
    else:
        counts = import_abstained(run_dir, Path(args.file), reviewer=args.reviewer)
        print(
            f"recorded {counts['recorded']} verdicts ({counts['skipped']} entries left blank); "
            "re-run `assay selective apply` to merge them into verdicts.jsonl"
        )
    return 0


def serve(args: argparse.Namespace) -> int:
    from assay.web import serve as serve_app

    serve_app(Path(args.run), host=args.host, port=args.port, allow_remote=args.allow_remote)
    return 0
