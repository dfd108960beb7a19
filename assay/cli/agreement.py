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
    p.add_argument(
        "--scale",
        help="'binary', 'MIN-MAX' (ordinal) or unordered labels 'a,b,c' (nominal: α nominal, "
        "Alt-Test by accuracy; tables may give the label names); default: the range of "
        "observed scores",
    )
    p.add_argument("--threshold", type=int, help="scores below it are failures (ToolEmu: 2)")
    p.add_argument("--id-column", help="tables: the id column (default: pair by row)")
    p.add_argument("--score-column", help="tables: the score column")
    p.add_argument("--key", help="ToolEmu files: the eval_scores key (default: the only one)")
    p.add_argument(
        "--annotator-column",
        help="the reference is a long table of several annotators per item (with --id-column "
        "and --score-column): compare with their majority, report their agreement and the Alt-Test",
    )
    p.add_argument(
        "--epsilon",
        type=float,
        default=0.2,
        help="Alt-Test advantage allowed for the judge's lower cost (default 0.2)",
    )
    p.add_argument("--seed", type=non_negative_int, default=0, help="bootstrap and tie seed")
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
        annotator_column=args.annotator_column,
        epsilon=args.epsilon,
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
    if out.annotators is not None:
        _print_annotators(out.annotators)
    if out.disagreements:
        print(f"\nwhere they disagree most ({len(out.disagreements)} shown):")
        print("| id | reference | candidate | distance |\n|---|---|---|---|")
        for d in out.disagreements:
            print(
                f"| {d.id} | {d.reference_label or d.reference} | {d.judge_label or d.judge} "
                f"| {d.distance:g} |"
            )
    return 0


def _print_annotators(a) -> None:
    from assay.metrics import metrics_table

    print(
        f"\nannotators: {len(a.annotators)} ({', '.join(a.annotators)}), {a.items} items, "
        f"{a.labels} labels; the reference is their majority ({a.majority_ties} ties broken "
        f"at random, seed {a.majority_seed})"
    )
    print(metrics_table(a.model_dump()["agreement"]))
    t = a.alt_test
    if t is not None:
        verdict = "passes" if t.passed else "does not pass"
        print(
            f"Alt-Test (epsilon {t.epsilon}, {t.fdr.upper()} q={t.q}, {t.scoring}): winning rate "
            f"{t.winning_rate:.2f}, advantage probability {t.advantage_probability:.2f} — the "
            f"judge {verdict} (can stand in for an annotator when the winning rate >= 0.5)"
        )
    if a.note:
        print(f"note: {a.note}")
