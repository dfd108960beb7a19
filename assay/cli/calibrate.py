"""``assay calibrate CONFIG``: fit a probability threshold for a binary judge on a labelled
split and measure it on a held-out split."""

from __future__ import annotations

import argparse
import json

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
    p.add_argument(
        "--method",
        choices=("threshold", "isotonic", "platt"),
        default="threshold",
        help="which fitted map the printed 'use it' line suggests (all three are measured)",
    )
    add_run(p, model=True)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from assay.experiments import calibrate, load_config
    from assay.metrics import fmt_ci, metrics_table

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
        method=args.method,
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
    print("\nheld-out, by map (fitted on the calibration split):")
    rows = ["| map | kappa | accuracy | ECE | Brier |", "|---|---|---|---|---|"]
    raw = out.model_dump()["raw_probabilities"]
    rows.append(f"| none (raw P) | — | — | {fmt_ci(raw.get('ece'))} | {fmt_ci(raw.get('brier'))} |")
    for kind, m in out.model_dump()["maps"].items():
        probs = m["probabilities"] or {}
        rows.append(
            f"| {kind} | {fmt_ci(m['verdicts'].get('kappa_categorical'))} "
            f"| {fmt_ci(m['verdicts'].get('accuracy'))} | {fmt_ci(probs.get('ece'))} "
            f"| {fmt_ci(probs.get('brier'))} |"
        )
    print("\n".join(rows))
    if out.method == "threshold":
        t = out.use["judge"]["decision_threshold"]
        print(f"\nuse it: add to the judge config  score_mode: expected, decision_threshold: {t}")
    else:
        print(f"\nuse it: add to the judge config (the {out.method} map):")
        print(json.dumps(out.use["judge"]))
    print(f"details: {out.run_dir}/calibration.json")
    return 0
