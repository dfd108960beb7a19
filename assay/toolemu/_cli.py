"""``assay toolemu ...`` sub-commands. ``add_parser(sub)`` creates the ``toolemu`` group with
its ``run`` command and returns the group's sub-parsers, so more commands can join it."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(subparsers: argparse._SubParsersAction) -> argparse._SubParsersAction:
    """Add ``toolemu`` (with ``run``) to the top-level sub-parsers; return the group's own."""
    group = subparsers.add_parser(
        "toolemu", help="ToolEmu: agents in an LM-emulated tool sandbox, judged for safety"
    )
    sub = group.add_subparsers(dest="toolemu_command", required=True)
    r = sub.add_parser(
        "run", help="cases → agent with emulated tools → trajectories → evaluators → metrics"
    )
    r.add_argument("config", help="YAML config (see examples/toolemu_run.yaml)")
    r.add_argument("--cases", help="case indices, e.g. 0-14 or 0,3,7-9 (overrides 'select')")
    r.add_argument("--limit", type=int, help="keep only the first N selected cases")
    r.add_argument("--tracking-uri", help="MLflow tracking URI")
    r.add_argument("--json", action="store_true", help="print the metrics as one JSON object")
    r.add_argument("--quiet", action="store_true", help="no progress bars")
    r.set_defaults(func=run)
    return sub


def run(args: argparse.Namespace) -> int:
    """``assay toolemu run CONFIG``."""
    from assay.cli import print_run_json
    from assay.lm import configure_cache
    from assay.toolemu._config import load_toolemu_config
    from assay.toolemu._run import run_toolemu

    config, base = load_toolemu_config(args.config)
    workdir = Path.cwd()
    configure_cache(workdir)
    res = run_toolemu(
        config,
        workdir=workdir,
        config_dir=base,
        select=args.cases,
        limit=args.limit,
        tracking_uri=args.tracking_uri,
        progress=not args.quiet,
    )
    m = res.metrics
    if args.json:
        print_run_json(res, m)
        return 0 if not res.crashed else 1
    t = m["trajectories"]
    state = (
        "re-read (finished before; no LM call)"
        if res.reread
        else f"{res.new_trajectories} new trajectories, {res.new_judgments} new judgments"
    )
    print(f"\n{config.name}: {state}")
    print(
        f"trajectories {t['n']}/{t['cases_selected']} · step limit {t['stopped_at_step_limit']} · "
        f"tool calls {t['tool_calls']} (unknown tool {t['unknown_tool_calls']}, invalid input {t['invalid_tool_inputs']})"
    )
    for name, ev in m["evaluators"].items():
        parts = []
        for key in ("safety", "helpfulness"):
            if key in ev and ev[key]["mean"]:
                mv = ev[key]["mean"]
                parts.append(f"{key} {mv['value']:.2f} [{mv['ci_low']:.2f}, {mv['ci_high']:.2f}]")
        fi = ev.get("failure_incidence")
        if fi:
            parts.append(
                f"failure incidence {fi['value']:.1%} [{fi['ci_low']:.1%}, {fi['ci_high']:.1%}]"
            )
        print(f"evaluator {name}: " + (" · ".join(parts) or "nothing scored"))
    u = m["usage"]
    print(
        "LM calls: " + " · ".join(f"{k} {v['calls']} (${v['cost_usd']:.6f})" for k, v in u.items())
    )
    for c in res.crashed:
        print(f"crashed: case {c['case_idx']} ({c['case']}): {c['error']} — re-run to retry")
    print(f"report: {res.run_dir / 'report.md'}")
    if res.mlflow_run_id:
        print(f"MLflow run: {res.mlflow_run_id}")
    if "local" in {config.agent.model, config.emulator.model}:
        print(
            "note: the embedded model is a poor agent and emulator; the pipeline is what is shown."
        )
    return 0 if not res.crashed else 1
