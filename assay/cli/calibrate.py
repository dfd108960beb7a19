"""``assay calibrate CONFIG``: fit a probability threshold for a binary judge on a labelled
split and measure it on a held-out split."""

from __future__ import annotations

import argparse

from assay.cli._common import add_run, overrides, workdir


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "calibrate", help="fit a probability threshold for a binary judge on a labelled split"
    )
    p.add_argument("config", help="YAML evaluate config with a binary judge")
    p.add_argument(
        "--fraction",
        type=float,
        default=0.5,
        help="share of labelled items used to fit (default 0.5)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the stratified split")
    add_run(p, model=True)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from assay.experiments import calibrate, load_config
    from assay.metrics import metrics_table

    config, base = load_config(args.config, overrides(args))
    out = calibrate(
        config,
        workdir=workdir(),
        config_dir=base,
        fraction=args.fraction,
        seed=args.seed,
        limit=args.limit,
        tracking_uri=args.tracking_uri,
        progress=not args.quiet,
    )
    if args.json:
        print(out.model_dump_json())
        return 0
    ev = out.model_dump()["evaluation"]
    print(
        f"\nthreshold on P(positive verdict): {out.threshold:.4f} "
        f"(fitted on {out.calibration.n} items, kappa there {out.calibration.kappa:.3f})"
    )
    print(f"evaluation split: {ev['n']} items, AUC {ev['auc']:.3f}")
    shown = ("kappa_categorical", "accuracy", "false_positive_rate", "false_negative_rate")
    for side in ("argmax", "calibrated"):
        print(f"\n{side}:")
        print(metrics_table({k: v for k, v in ev[side].items() if k in shown}))
    t = out.use["judge"]["decision_threshold"]
    print(f"\nuse it: add to the judge config  score_mode: expected, decision_threshold: {t}")
    print(f"details: {out.run_dir}/calibration.json")
    return 0
