"""``assay agreement REFERENCE CANDIDATE``: agreement between two existing sets of verdicts."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from assay.metrics import Resamples
from assay.runners._runner import Options as BaseOptions
from assay.runners._runner import Runner, argument, measured_nothing, option, runner
from assay.types import NonNegativeInt, Seed

if TYPE_CHECKING:
    from assay.evaluation import AgreementResult


@runner("agreement")
class Agreement(Runner):
    """agreement between two existing sets of verdicts (no LM call)"""

    class Options(BaseOptions):
        reference: str | Path = argument(
            help="reference verdicts: judgments.jsonl, ToolEmu evaluator JSONL, or a table"
        )
        candidate: str | Path = argument(help="candidate verdicts, same formats")
        scale: Any = option(
            help="'binary', 'MIN-MAX' (ordinal) or unordered labels 'a,b,c' (nominal: α "
            "nominal, Alt-Test by accuracy; tables may give the label names; judgments are read "
            "by their labels); default: the scale of the run a judgments.jsonl is in (its "
            "config.yaml), else the range of observed scores"
        )
        threshold: int | None = option(help="scores below it are failures (ToolEmu: 2)", type="int")
        id_column: str | None = option(help="tables: the id column (default: pair by row)")
        score_column: str | None = option(help="tables: the score column")
        key: str | None = option(help="ToolEmu files: the eval_scores key (default: the only one)")
        annotator_column: str | None = option(
            help="the reference is a long table of several annotators per item (with "
            "--id-column and --score-column): compare with their majority, report their "
            "agreement and the Alt-Test"
        )
        epsilon: Annotated[float, Field(ge=0, lt=1)] = option(
            0.2,
            help="Alt-Test advantage allowed for the judge's lower cost, from 0 up to 1 "
            "(default 0.2)",
            type="float",
        )
        seed: Seed = option(0, help="bootstrap and tie seed", type="int")
        disagreements: NonNegativeInt = option(
            10,
            help="list the N pairs that differ most on the scale (default 10)",
            type="int",
            metavar="N",
        )
        n_resamples: Resamples = 1000

    summary = "assay.evaluation:AgreementResult"
    summary_file = None  # no run directory
    progress_option = False

    def run(self, options: Options, *, workdir: Path, progress: bool) -> AgreementResult:
        from assay.evaluation import agreement
        from assay.scale import Scale

        values = dict(options)
        del values["plugins"]  # imported already (Runner.execute)
        if isinstance(values["scale"], str):
            values["scale"] = Scale.parse(values["scale"])
        return agreement(values.pop("reference"), values.pop("candidate"), **values)

    def print(self, result: AgreementResult, options: Options, *, json: bool) -> int:
        from assay.metrics import metrics_table

        out = result
        if json:
            print(out.model_dump_json())
            return measured_nothing(_nothing_measured(out))
        print(
            f"pairs scored on both sides: {out.n} (paired by {out.paired_by}; scale {out.scale}"
            + (f", {out.scale_origin}" if out.scale_origin != "--scale" else "")
            + (f"; failure = score < {out.threshold}" if out.threshold is not None else "")
            + ")"
        )
        print(
            f"unscored: reference {out.unscored['reference']}, candidate "
            f"{out.unscored['candidate']} · only in reference {out.unpaired['reference']}, "
            f"only in candidate {out.unpaired['candidate']}"
        )
        if out.metrics:
            print(metrics_table(out.model_dump()["metrics"]))
        if out.note:
            print(f"note: {out.note}")
        if out.annotators is not None:
            _print_annotators(out.annotators)
        if out.scale_use is not None:
            from assay.evaluation import scale_use_console

            print(f"\n{scale_use_console(out.scale_use)}")
        if out.disagreements:
            print(f"\nwhere they disagree most ({len(out.disagreements)} shown):")
            print("| id | reference | candidate | distance |\n|---|---|---|---|")
            for d in out.disagreements:
                print(
                    f"| {d.id} | {d.reference_label or d.reference} | {d.judge_label or d.judge} "
                    f"| {d.distance:g} |"
                )
        return measured_nothing(_nothing_measured(out))


def _nothing_measured(out: AgreementResult) -> str | None:
    """Why the comparison measured nothing (None when it measured something): no item has a
    verdict on both sides, or no item has two annotators' labels."""
    if out.n == 0:
        return out.note
    if out.annotators is not None and not out.annotators.agreement:
        return out.annotators.note
    return None


def _print_annotators(a: Any) -> None:
    from assay.metrics import metrics_table

    print(
        f"\nannotators: {len(a.annotators)} ({', '.join(a.annotators)}), {a.items} items, "
        f"{a.labels} labels; {_reference(a)}"
    )
    if a.agreement:
        print(metrics_table(a.model_dump()["agreement"]))
    t = a.alt_test
    if t is not None:
        verdict = "passes" if t.passed else "does not pass"
        caveat = "" if t.note is None else (", but " if t.passed else "; ") + t.note
        print(
            f"Alt-Test (epsilon {t.epsilon}, {t.fdr.upper()} q={t.q}, {t.scoring}): winning rate "
            f"{t.winning_rate:.2f}, advantage probability {t.advantage_probability:.2f} — the "
            f"judge {verdict} (can stand in for an annotator when the winning rate >= 0.5)"
            f"{caveat}"
        )
        from assay.evaluation import alt_test_left_out

        for line in alt_test_left_out(t, a.items):
            print(line)
    ds = a.dawid_skene
    if ds is not None:
        from assay.evaluation import dawid_skene_console

        print(dawid_skene_console(ds))
    if a.note:
        print(f"note: {a.note}")


def _reference(a: Any) -> str:
    """What the judge was compared with: the annotators' majority, or on an item one annotator
    labelled, that label."""
    ties = f"({a.majority_ties} ties broken at random, seed {a.majority_seed})"
    lone = a.single_label_items
    if not lone:
        return f"the reference is their majority {ties}"
    which = (
        "1 item has one label, which is its"
        if lone == 1
        else f"{lone} items have one label, which is their"
    )
    return (
        f"the reference is the majority of the annotators who labelled the item {ties}; "
        f"{which} reference"
    )
