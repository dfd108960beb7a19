"""``assay agreement REFERENCE CANDIDATE``: agreement between two existing sets of verdicts."""

from __future__ import annotations

import argparse

from assay.cli._common import add_output, non_negative_int


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "agreement", help="agreement between two existing sets of verdicts (no LM call)"
    )
    p.add_argument(
        "reference", help="reference verdicts: judgments.jsonl, ToolEmu evaluator JSONL, or a table"
    )
    p.add_argument("candidate", help="candidate verdicts, same formats")
    p.add_argument("--scale", help="'binary', 'MIN-MAX' (default: the range of observed scores)")
    p.add_argument("--threshold", type=int, help="scores below it are failures (ToolEmu: 2)")
    p.add_argument("--id-column", help="tables: the id column (default: pair by row)")
    p.add_argument("--score-column", help="tables: the score column")
    p.add_argument("--key", help="ToolEmu files: the eval_scores key (default: the only one)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="bootstrap seed")
    p.add_argument(
        "--disagreements",
        type=non_negative_int,
        default=10,
        metavar="N",
        help="list the N pairs that differ most on the scale (default 10)",
    )
    add_output(p, quiet=False)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from assay.experiments import agreement
    from assay.metrics import metrics_table
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
        disagreements=args.disagreements,
    )
    if args.json:
        print(out.model_dump_json())
        return 0
    print(
        f"pairs scored on both sides: {out.n} (paired by {out.paired_by}; scale {out.scale}"
        + (f"; failure = score < {out.threshold}" if out.threshold is not None else "")
        + ")"
    )
    print(
        f"unscored: reference {out.unscored['reference']}, candidate {out.unscored['candidate']}"
        f" · only in reference {out.unpaired['reference']}, "
        f"only in candidate {out.unpaired['candidate']}"
    )
    print(metrics_table(out.model_dump()["metrics"]))
    if out.disagreements:
        print(f"\nwhere they disagree most ({len(out.disagreements)} shown):")
        print("| id | reference | candidate | distance |\n|---|---|---|---|")
        for d in out.disagreements:
            print(
                f"| {d.id} | {d.reference_label or d.reference} | {d.judge_label or d.judge} "
                f"| {d.distance:g} |"
            )
    return 0
