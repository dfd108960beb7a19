"""``assay review export|import|serve RUN``: review generated probes, in a YAML file or in a
browser; on a ``selective apply`` run, its abstained items; on an ``estimate --suggest`` run,
its items to label."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from assay.decisions import ReviewQueue


_RUN = (
    "a harness run directory, a `selective apply` run directory, or an `estimate --suggest` "
    "run directory"
)


def register(sub: argparse._SubParsersAction) -> None:
    from assay.runners import cli_type  # with the parser: after the tracking helper has started
    from assay.types import Port

    r = sub.add_parser("review", help="review generated probes without a browser")
    rsub = r.add_subparsers(dest="action", required=True)
    rex = rsub.add_parser(
        "export", help="write the pending probes (or queued items) to a YAML file to edit"
    )
    rex.add_argument("run", help=_RUN)
    rex.add_argument("-o", "--output", help="file to write (default: RUN/review.yaml)")
    rex.add_argument("--all", action="store_true", help="include what was already reviewed")
    rim = rsub.add_parser("import", help="apply the decisions of an edited review file")
    rim.add_argument("run", help=_RUN)
    rim.add_argument("file", help="the edited review file")
    rim.add_argument("--reviewer", help="reviewer name for entries that have none")
    r.set_defaults(func=run)
    rsv = rsub.add_parser(
        "serve",
        help="review a harness run's probes, a selective run's abstained items or an estimate "
        "run's items to label",
    )
    rsv.add_argument("run", help=_RUN)
    rsv.add_argument(
        "--port", type=cli_type("int", Port), default=0, help="port (default 0: a free one)"
    )
    rsv.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1)")
    rsv.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host")
    rsv.set_defaults(func=serve)


def run(args: argparse.Namespace) -> int:
    from assay.reliability import export_review, import_review, run_scale

    run_dir = Path(args.run)
    queue = _queue(run_dir)
    if queue is not None:
        return _review_queue(args, queue)
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


def _queue(run_dir: Path) -> ReviewQueue | None:
    """The review queue a run directory holds (a selective run's abstained items, an estimate
    run's items to label), or None (a harness run's probes)."""
    from assay.decisions import LabelQueue, is_label_queue
    from assay.decisions.selective import AbstentionQueue, is_abstention_run

    if is_abstention_run(run_dir):
        return AbstentionQueue(run_dir)
    if is_label_queue(run_dir):
        return LabelQueue(run_dir)
    return None


def _review_queue(args: argparse.Namespace, queue: ReviewQueue) -> int:
    """export / import on a run's review queue."""
    from assay.decisions import export_queue, import_queue

    run_dir = Path(args.run)
    if args.action == "export":
        out = Path(args.output or run_dir / "review.yaml")
        n = export_queue(queue, out, include_decided=args.all)
        print(f"{n} {queue.noun} written to {out}: fill in 'verdict' and 'reviewer',")
        print(f"then: assay review import {run_dir} {out}")
    else:
        counts = import_queue(queue, Path(args.file), reviewer=args.reviewer)
        print(
            f"recorded {counts['recorded']} verdicts ({counts['skipped']} entries left blank); "
            + queue.next_step()
        )
    return 0


def serve(args: argparse.Namespace) -> int:
    from assay.web import serve as serve_app

    serve_app(Path(args.run), host=args.host, port=args.port, allow_remote=args.allow_remote)
    return 0
