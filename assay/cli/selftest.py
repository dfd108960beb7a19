"""``assay selftest``: the harness on judges with implanted defects (scripted, offline)."""

from __future__ import annotations

import argparse
import json

from assay.cli._common import add_output, workdir


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "selftest", help="run the harness on judges with implanted defects (scripted, offline)"
    )
    p.add_argument("--tracking", action="store_true", help="also log the run to MLflow")
    add_output(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from assay.experiments.reliability import run_selftest

    res = run_selftest(workdir(), progress=not args.quiet and not args.json, tracking=args.tracking)
    if args.json:
        judges = {
            n: {k: j[k] for k in ("defect", "flagged", "tests")} for n, j in res["judges"].items()
        }
        print(json.dumps({"ok": res["ok"], "judges": judges}))
    else:
        print("| judge | implanted defect | meant to be caught by | flagged by |")
        print("|---|---|---|---|")
        for n, j in res["judges"].items():
            print(
                f"| {n} | {j['defect']} | {', '.join(j['meant_for']) or '—'} "
                f"| {', '.join(j['flagged']) or 'none'} |"
            )
        print("\nself-test " + ("passed" if res["ok"] else "FAILED") + f" (run: {res['run_dir']})")
    return 0 if res["ok"] else 1
