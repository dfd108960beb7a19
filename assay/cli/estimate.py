"""``assay estimate RUN --validation RUN``: a verdict's rate in an unlabelled run, corrected for
the judge's errors measured on a labelled run of the same judge (no LM call)."""

from __future__ import annotations

import argparse

from assay.cli._common import add_output, non_negative_int


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "estimate",
        help="prevalence-corrected rate of a verdict in an unlabelled run (Rogan–Gladen)",
    )
    p.add_argument("run", help="an evaluate run directory (its judgments; labels not needed)")
    p.add_argument(
        "--validation",
        required=True,
        help="an evaluate run of the same judge config on labelled items",
    )
    p.add_argument(
        "--positive", help="the verdict whose rate is estimated (binary: the second label)"
    )
    p.add_argument("--threshold", type=int, help="estimate the rate of scores below this one")
    p.add_argument("--seed", type=non_negative_int, default=0, help="bootstrap seed")
    add_output(p, quiet=False)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from assay.experiments import estimate
    from assay.metrics import fmt_ci

    out = estimate(
        args.run,
        args.validation,
        positive=args.positive,
        threshold=args.threshold,
        seed=args.seed,
    )
    if args.json:
        print(out.model_dump_json())
        return 0
    print(
        f"{out.event}: raw flagged rate {fmt_ci(out.raw.to_dict())} over {out.n_unlabelled} items"
    )
    print(
        f"judge on the validation run ({out.n_validation} labelled items): "
        f"TPR {out.sensitivity:.3f}, TNR {out.specificity:.3f}"
    )
    if out.defined:
        print(f"corrected rate: {fmt_ci(out.corrected.to_dict())}")
    else:
        print("corrected rate: undefined")
    if out.corrected.note:
        print(f"note: {out.corrected.note}")
    print(f"CI: bootstrap over {out.resampled}")
    return 0
