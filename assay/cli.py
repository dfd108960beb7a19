"""The command line, thin over the Python API. User mistakes print one line and exit non-zero."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import assay  # noqa: F401  (sets offline-safe environment defaults first)
from assay.errors import AssayError


def _configure_cache(workdir: Path) -> None:
    import dspy

    dspy.configure_cache(
        enable_disk_cache=True, disk_cache_dir=str(workdir / ".assay" / "dspy_cache")
    )


def print_run_json(res: Any, payload: dict[str, Any]) -> None:
    """A run's ``--json`` output: its directory, its MLflow run id, then ``payload``."""
    body = {"run_dir": str(res.run_dir), "mlflow_run_id": res.mlflow_run_id, **payload}
    print(json.dumps(body, default=str))


def _freeze_imports() -> None:
    """Move the objects of the (large) imports out of the garbage collector's reach: full
    collections of them otherwise stall every worker thread for up to a second mid-run."""
    import gc

    import litellm  # noqa: F401  (loaded by the first LM call anyway)

    gc.collect()
    gc.freeze()


def _evaluate_setup(args: argparse.Namespace):
    """An evaluate config (with ``--model`` applied), its folder, and the working directory
    whose ``.assay/`` holds the LM cache."""
    from assay.experiments import load_config

    overrides = {"judge.model": args.model} if args.model else {}
    config, base = load_config(args.config, overrides)
    workdir = Path.cwd()
    _configure_cache(workdir)
    return config, base, workdir


def cmd_evaluate(args: argparse.Namespace) -> int:
    from assay.experiments import evaluate
    from assay.experiments._report import metrics_table

    config, base, workdir = _evaluate_setup(args)
    res = evaluate(
        config,
        workdir=workdir,
        config_dir=base,
        limit=args.limit,
        tracking_uri=args.tracking_uri,
        progress=not args.quiet,
    )
    s = res.summary
    c = s["counts"]
    if args.json:
        print_run_json(res, {"new_judgments": res.new_judgments, **s})
        return 0
    state = (
        "re-read (finished before; no LM call)"
        if res.new_judgments == 0 and res.resumed
        else (
            f"resumed, {res.new_judgments} new judgments"
            if res.resumed
            else f"{res.new_judgments} judgments"
        )
    )
    print(f"\n{config.name}: {state}")
    print(
        f"items {c['items']} · scored {c['scored']} · unscored {c['unscored']} {c['unscored_reasons'] or ''} · paired with reference {c['paired']}"
    )
    if s["metrics"]:
        print(metrics_table(s["metrics"], config.bootstrap.confidence))
    u = s["usage"]
    print(
        f"LM calls {u['calls']} · tokens {u['prompt_tokens']}+{u['completion_tokens']} · cost ${u['cost_usd']:.6f}"
    )
    print(f"run directory: {res.run_dir}")
    if res.mlflow_run_id:
        print(
            f"MLflow run: {res.mlflow_run_id}  (browse: mlflow ui --backend-store-uri sqlite:///mlflow.db)"
        )
    if config.judge.model.startswith("local"):
        print("note: the embedded model is for trying assay, not for trustworthy verdicts.")
    return 0


def cmd_agreement(args: argparse.Namespace) -> int:
    from assay.experiments import agreement
    from assay.experiments._report import metrics_table
    from assay.scale import Scale

    scale = Scale.parse(args.scale) if args.scale else None
    out = agreement(
        args.reference,
        args.candidate,
        scale=scale,
        threshold=args.threshold,
        id_column=args.id_column,
        score_column=args.score_column,
        key=args.key,
        seed=args.seed,
    )
    if args.json:
        print(json.dumps(out))
        return 0
    print(
        f"pairs scored on both sides: {out['n']} (paired by {out['paired_by']}; scale {out['scale']}"
        + (f"; failure = score < {out['threshold']}" if out["threshold"] is not None else "")
        + ")"
    )
    print(
        f"unscored: reference {out['unscored']['reference']}, candidate {out['unscored']['candidate']}"
    )
    print(metrics_table({k: {**v, "n": out["n"]} for k, v in out["metrics"].items()}))
    return 0


def _split(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def cmd_harness(args: argparse.Namespace) -> int:
    from assay.experiments import load_config
    from assay.experiments.reliability import HarnessConfig, run_harness
    from assay.experiments.reliability._report import _ci

    config, base = load_config(args.config, model=HarnessConfig)
    workdir = Path.cwd()
    _configure_cache(workdir)
    _freeze_imports()
    res = run_harness(
        config,
        workdir=workdir,
        config_dir=base,
        limit=args.limit,
        tests=_split(args.tests),
        judges=_split(args.judges),
        tracking_uri=args.tracking_uri,
        progress=not args.quiet,
    )
    m = res.metrics
    if args.json:
        print_run_json(res, m)
        return 0
    print(
        f"\n{config.name}: {m['seeds']} seeds · probes "
        + ", ".join(f"{k} {v}" for k, v in m["probes"].items())
    )
    for name, r in m["judges"].items():
        print(f"\njudge {name} ({r['model']})")
        for t, tm in r["tests"].items():
            print(
                f"  {t:22s} pass {_ci(tm.get('pass_rate')):24s} consistency {_ci(tm.get('consistency')):24s} unscored {tm['unscored']}"
            )
    if m["review"].get("required"):
        print(f"\nreview: {m['review']}")
    print(f"\nreport: {res.run_dir / 'report.md'}")
    if res.mlflow_run_id:
        print(f"MLflow run: {res.mlflow_run_id}")
    return 0


def cmd_review(args: argparse.Namespace) -> int:
    from assay.errors import RunError
    from assay.experiments.reliability import export_review, import_review
    from assay.scale import Scale

    run = Path(args.run)
    try:
        import yaml

        scale = Scale.parse(yaml.safe_load((run / "config.yaml").read_text())["scale"])
    except (OSError, KeyError, TypeError):
        raise RunError(
            f"{run}: not a harness run directory (no config.yaml with a scale)"
        ) from None
    if args.action == "export":
        out = Path(args.output or run / "review.yaml")
        n = export_review(run, out, scale, include_reviewed=args.all)
        print(
            f"{n} probes to review written to {out}: fill in 'decision' (accept / edit / reject) and 'reviewer',"
        )
        print(f"then: assay review import {run} {out}")
    else:
        counts = import_review(run, Path(args.file), scale, reviewer=args.reviewer)
        print("imported: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return 0


def cmd_review_serve(args: argparse.Namespace) -> int:
    from assay.web import serve

    serve(Path(args.run), host=args.host, port=args.port, allow_remote=args.allow_remote)
    return 0


def cmd_selftest(args: argparse.Namespace) -> int:
    from assay.experiments.reliability._selftest import run_selftest

    workdir = Path.cwd()
    _configure_cache(workdir)
    res = run_selftest(workdir, progress=not args.quiet and not args.json, tracking=args.tracking)
    if args.json:
        print(
            json.dumps(
                {
                    "ok": res["ok"],
                    "judges": {
                        n: {k: j[k] for k in ("defect", "flagged", "tests")}
                        for n, j in res["judges"].items()
                    },
                }
            )
        )
    else:
        print("| judge | implanted defect | meant to be caught by | flagged by |")
        print("|---|---|---|---|")
        for n, j in res["judges"].items():
            print(
                f"| {n} | {j['defect']} | {', '.join(j['meant_for']) or '—'} | {', '.join(j['flagged']) or 'none'} |"
            )
        print("\nself-test " + ("passed" if res["ok"] else "FAILED") + f" (run: {res['run_dir']})")
    return 0 if res["ok"] else 1


def cmd_calibrate(args: argparse.Namespace) -> int:
    from assay.experiments._calibrate import calibrate
    from assay.experiments._report import metrics_table

    config, base, workdir = _evaluate_setup(args)
    out = calibrate(
        config,
        workdir=workdir,
        config_dir=base,
        fraction=args.fraction,
        seed=args.seed,
        limit=args.limit,
        tracking_uri=args.tracking_uri,
        progress=not args.quiet,
    )
    if args.json:
        print(json.dumps(out))
        return 0
    ev = out["evaluation"]
    print(
        f"\nthreshold on P(positive verdict): {out['threshold']:.4f} "
        f"(fitted on {out['calibration']['n']} items, kappa there {out['calibration']['kappa']:.3f})"
    )
    print(f"evaluation split: {ev['n']} items, AUC {ev['auc']:.3f}")
    shown = ("kappa_categorical", "accuracy", "false_positive_rate", "false_negative_rate")
    for side in ("argmax", "calibrated"):
        print(f"\n{side}:")
        print(metrics_table({k: {**v, "n": ev["n"]} for k, v in ev[side].items() if k in shown}))
    t = out["use"]["judge"]["decision_threshold"]
    print(f"\nuse it: add to the judge config  score_mode: expected, decision_threshold: {t}")
    print(f"details: {out['run_dir']}/calibration.json")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from assay.experiments import EvaluateConfig

    print(json.dumps(EvaluateConfig.model_json_schema(), indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="assay", description="Measure LLM judges: agreement, reliability, cost."
    )
    sub = p.add_subparsers(dest="command", required=True)

    e = sub.add_parser(
        "evaluate", help="run a judge over a labelled data set and measure its agreement"
    )
    e.add_argument("config", help="YAML config (see examples/)")
    e.add_argument("--limit", type=int, help="judge only the first N items")
    e.add_argument(
        "--model",
        help="override judge.model (a LiteLLM model string, 'local' or 'local:/path.gguf')",
    )
    e.add_argument(
        "--tracking-uri",
        help="MLflow tracking URI (default: sqlite:///mlflow.db in the working directory)",
    )
    e.add_argument("--json", action="store_true", help="print the metrics as one JSON object")
    e.add_argument("--quiet", action="store_true", help="no progress bar")
    e.set_defaults(func=cmd_evaluate)

    a = sub.add_parser(
        "agreement", help="agreement between two existing sets of verdicts (no LM call)"
    )
    a.add_argument(
        "reference", help="reference verdicts: judgments.jsonl, ToolEmu evaluator JSONL, or a table"
    )
    a.add_argument("candidate", help="candidate verdicts, same formats")
    a.add_argument("--scale", help="'binary', 'MIN-MAX' (default: the range of observed scores)")
    a.add_argument("--threshold", type=int, help="scores below it are failures (ToolEmu: 2)")
    a.add_argument("--id-column", help="tables: the id column (default: pair by row)")
    a.add_argument("--score-column", help="tables: the score column")
    a.add_argument("--key", help="ToolEmu files: the eval_scores key (default: the only one)")
    a.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    a.add_argument("--json", action="store_true", help="print one JSON object")
    a.set_defaults(func=cmd_agreement)

    h = sub.add_parser(
        "harness", help="generate reliability probes from a benchmark and score judges on them"
    )
    h.add_argument("config", help="YAML harness config (see examples/*_harness.yaml)")
    h.add_argument("--limit", type=int, help="use only the first N seed items")
    h.add_argument("--tests", help="comma-separated tests to run (default: all in the config)")
    h.add_argument("--judges", help="comma-separated judges to run (default: all in the config)")
    h.add_argument("--tracking-uri", help="MLflow tracking URI")
    h.add_argument("--json", action="store_true", help="print the metrics as one JSON object")
    h.add_argument("--quiet", action="store_true", help="no progress bars")
    h.set_defaults(func=cmd_harness)

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
    r.set_defaults(func=cmd_review)
    rsv = rsub.add_parser("serve", help="review the probes in a browser (assay.web)")
    rsv.add_argument("run", help="the harness run directory")
    rsv.add_argument("--port", type=int, default=0, help="port (default 0: a free one)")
    rsv.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1)")
    rsv.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host")
    rsv.set_defaults(func=cmd_review_serve)

    c = sub.add_parser(
        "calibrate", help="fit a probability threshold for a binary judge on a labelled split"
    )
    c.add_argument("config", help="YAML evaluate config with a binary judge")
    c.add_argument(
        "--fraction",
        type=float,
        default=0.5,
        help="share of labelled items used to fit (default 0.5)",
    )
    c.add_argument("--seed", type=int, default=0, help="seed of the stratified split")
    c.add_argument("--limit", type=int, help="use only the first N items")
    c.add_argument("--model", help="override judge.model")
    c.add_argument("--tracking-uri", help="MLflow tracking URI")
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.add_argument("--quiet", action="store_true", help="no progress bar")
    c.set_defaults(func=cmd_calibrate)

    st = sub.add_parser(
        "selftest", help="run the harness on judges with implanted defects (scripted, offline)"
    )
    st.add_argument("--json", action="store_true", help="print one JSON object")
    st.add_argument("--tracking", action="store_true", help="also log the run to MLflow")
    st.add_argument("--quiet", action="store_true", help="no progress bars")
    st.set_defaults(func=cmd_selftest)

    from assay.experiments import _compare, _optimize
    from assay.toolemu._agreement import add_agreement_parser
    from assay.toolemu._cli import add_parser as add_toolemu_parser

    _compare.add_parser(sub)
    _optimize.add_parser(sub)
    add_agreement_parser(add_toolemu_parser(sub))

    s = sub.add_parser("schema", help="print the JSON schema of an evaluate config")
    s.set_defaults(func=cmd_schema)
    return p


def main(argv: list[str] | None = None) -> int:
    import logging

    logging.getLogger("mlflow").setLevel(logging.WARNING)  # not "creating database tables..."
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except AssayError as exc:
        print(f"assay: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("assay: interrupted; re-run the same command to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
