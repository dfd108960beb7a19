"""``assay harness CONFIG``: generate reliability probes from a benchmark and score judges."""

from __future__ import annotations

import argparse

from assay.cli._common import (
    add_ray,
    add_run,
    freeze_imports,
    mlflow_line,
    overrides,
    print_run_json,
    split_names,
    workdir,
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "harness", help="generate reliability probes from a benchmark and score judges on them"
    )
    p.add_argument("config", help="YAML harness config (see examples/*_harness.yaml)")
    add_run(p, limit="seed items")
    p.add_argument("--tests", help="comma-separated tests to run (default: all in the config)")
    p.add_argument("--judges", help="comma-separated judges to run (default: all in the config)")
    add_ray(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from assay.experiments import load_config
    from assay.experiments.reliability import HarnessConfig, ci, headline, run_harness
    from assay.types import spend_line

    config, base = load_config(args.config, overrides(args), model=HarnessConfig)
    here = workdir()
    freeze_imports()
    res = run_harness(
        config,
        workdir=here,
        config_dir=base,
        limit=args.limit,
        tests=split_names(args.tests),
        judges=split_names(args.judges),
        tracking_uri=args.tracking_uri,
        progress=not args.quiet,
    )
    s = res.summary
    if args.json:
        print_run_json(res, s.model_dump(mode="json"))
        return 0
    print(
        f"\n{config.name}: {s.seeds} seeds · probes "
        + ", ".join(f"{k} {v}" for k, v in s.probes.items())
    )
    reused = sum(res.probes_reused.values())
    if reused:  # the rest were made in this run (from inputs that changed, or new ones)
        print(
            f"probes reused from an earlier run (same inputs): {reused} of "
            f"{sum(s.probes.values())}: "
            + ", ".join(f"{k} {v}" for k, v in res.probes_reused.items() if v)
        )
    for name, r in s.judges.items():
        print(f"\njudge {name} ({r.model})")
        for t, tm in r.tests.items():
            print(
                f"  {t:22s} pass {ci(tm.pass_rate):24s} "
                f"consistency {ci(tm.consistency):24s} unscored {tm.unscored}" + headline(tm)
            )
    if s.dropped:
        print(
            "\ndropped (never judged): "
            + "; ".join(
                f"{t}: " + ", ".join(f"{why} {n}" for why, n in d.items())
                for t, d in s.dropped.items()
            )
        )
    stages: dict[str, int] = {}
    for key, n in s.lm_calls.items():
        stage = key.split(":", 1)[0]
        stages[stage] = stages.get(stage, 0) + n
    print("LM calls by stage: " + ", ".join(f"{k} {v}" for k, v in stages.items()))
    print(spend_line(s.spend))
    for note in s.notes:
        print(f"note: {note}")
    if s.review.required:
        print(f"\nreview: {s.review.model_dump()}")
    print(f"\nreport: {res.run_dir / 'report.md'}")
    line = mlflow_line(res.mlflow_run_id, args.tracking_uri)
    if line:
        print(line)
    return 0
