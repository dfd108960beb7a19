"""The end of a selective run: its summary in ``metrics.json`` and MLflow, re-read on a
finished run, and its report (report.md, report.html)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.decisions.selective._config import CALIBRATION, SelectiveConfig
from assay.decisions.selective._results import SelectiveResult, SelectiveSummary
from assay.decisions.selective.review import VERDICTS
from assay.inputs import item_set_tags
from assay.runs import SEALED, Run, TrackedRun, flatten_metrics
from assay.types import PAID_FIELDS, Item, cost_lines, usd

STAGE_JUDGMENTS = "judgments.*.jsonl"  # each stage's judgments file
SEALED_FILES = (*SEALED, CALIBRATION, STAGE_JUDGMENTS, "abstained.jsonl")
"""What a selective run's seal covers: the stages' judgments, the calibration, an apply run's
abstained items (the queue people review: an item added to it by hand is refused) — not the
final verdicts, which take in the human verdicts given after the run."""


def _reread(
    run: Run, config: SelectiveConfig, items: list[Item], calibration_file: Path | None = None
) -> SelectiveResult:
    """A finished run read back; logged now if an earlier call left it out (tracking off) and
    this one logs."""
    summary = SelectiveSummary.model_validate(run.store.read_json("metrics.json"))
    return SelectiveResult(
        run_dir=run.dir,
        summary=summary,
        new_judgments=0,
        mlflow_run_id=run.log_finished(lambda: _tracked(config, summary, items)),
        calibration_file=calibration_file,
    )


def _tracked(config: SelectiveConfig, summary: SelectiveSummary, items: list[Item]) -> TrackedRun:
    """The MLflow run: the mode, the risk settings and every stage's judge as params, the
    cascade's figures as metrics."""
    mode = summary.mode
    params = {"mode": mode, "alpha": str(config.alpha), "delta": str(config.delta)}
    for k, judge in enumerate(config.judges, start=1):  # stage 1 first, as the reports count
        params.update({f"stage{k}.{key}": v for key, v in judge.flat_params().items()})
    params["holdout"] = str(config.holdout)
    return TrackedRun(
        name=config.name,
        params=params,
        metrics=selective_metrics(summary),
        tags={"assay.selective": mode, **item_set_tags(items, split="all")},
    )


def _finish(
    run: Run,
    config: SelectiveConfig,
    summary: SelectiveSummary,
    items: list[Item],
    new_judgments: int,
    **result: Any,
) -> SelectiveResult:
    """metrics.json (with what the run paid: its call ledger), report.md and report.html,
    then MLflow; the run marked finished; what it returns (``result``: the fields only one
    command has)."""
    summary = summary.model_copy(update={"spend": run.spend(summary.usage)})
    run.store.write_json("metrics.json", summary.model_dump(mode="json"))
    _write_report(run)
    run_id = run.finish(_tracked(config, summary, items), sealed=SEALED_FILES)
    return SelectiveResult(
        run_dir=run.dir,
        summary=summary,
        new_judgments=new_judgments,
        mlflow_run_id=run_id,
        **result,
    )


def _write_report(run: Run) -> None:
    """report.md and report.html from metrics.json (and, for apply, verdicts.jsonl)."""
    from assay.report import markdown, write_html

    report = build_report(run.dir)
    lines = [f"# {report.title}", ""]
    lines += [f"- {k}: {v}" for k, v in report.facts] + [""]
    lines += markdown(report.tables)
    run.store.write_text("report.md", "\n".join(lines) + "\n")
    write_html(report, run.dir)


def selective_metrics(summary: SelectiveSummary) -> dict[str, float]:
    """The summary as MLflow metrics: per part its coverage, counts and agreement on kept
    items, per stage its threshold and counts, and the usage."""
    out: dict[str, float] = {}
    for part in summary.parts:
        p = part.part
        out.update(
            flatten_metrics(
                {
                    "items": part.items,
                    "kept": part.kept,
                    "abstained": part.abstained,
                    "coverage": part.coverage,
                    "agreement_kept": part.agreement_kept,
                },
                f"{p}_",
            )
        )
        for s in part.stages:
            out.update(
                flatten_metrics(
                    {"kept": s.kept, "escalated": s.escalated, "cost_usd": s.usage.cost_usd},
                    f"{p}_{s.judge}_",
                )
            )
    for t in summary.thresholds:
        if t.threshold is not None:
            out[f"threshold_{t.judge}"] = t.threshold
    out.update(flatten_metrics(summary.usage, "usage_"))
    out.update(flatten_metrics(summary.work.model_dump(include=set(PAID_FIELDS)), "work_"))
    out.update(flatten_metrics(summary.spend, "spend_"))
    return out


def build_report(run_dir: Path) -> Any:
    """The run's :class:`~assay.report.Report`: the guarantee, the thresholds, and each part
    through the cascade (report.md shows the same tables)."""
    from assay.report import Report, Table, load_json

    s = SelectiveSummary.model_validate(load_json(Path(run_dir) / "metrics.json"))
    facts = [("guarantee", s.guarantee), ("α", f"{s.alpha:g}"), ("δ", f"{s.delta:g}")]
    if s.without_reference:
        facts.append(("left out", f"{s.without_reference} items without a reference label"))
    facts += [("cost", line) for line in cost_lines(s.usage, s.spend)]
    tables = [
        Table(
            title="Thresholds",
            columns=[
                "stage",
                "judge",
                "confidence",
                "threshold λ̂",
                "δ",
                "n",
                "kept",
                "risk",
                "note",
            ],
            rows=[
                [
                    k + 1,
                    t.judge,
                    t.confidence_source,
                    "none" if t.threshold is None else f"{t.threshold:.4f}",
                    f"{t.delta:.3g}",
                    t.n,
                    t.kept,
                    "" if not t.kept else f"{t.disagreements / t.kept:.3f}",
                    t.note,
                ]
                for k, t in enumerate(s.thresholds)
            ],
            lead="Each stage keeps an item when its confidence is ≥ λ̂, picked by fixed-sequence "
            "testing on the calibration items that reached it (exact binomial p-values).",
        )
    ]
    titles = {
        "calibration": "Calibration items",
        "holdout": "Held-out labelled items (the calibrated cascade, measured)",
        "items": "Items",
    }
    for part in s.parts:
        rows = [
            [
                k + 1,
                c.judge,
                c.reached,
                c.judged,
                c.unscored,
                c.kept,
                c.escalated if k + 1 < len(part.stages) else f"{c.escalated} (abstain)",
                f"{c.kept / part.items:.3f}" if part.items else "",
                ""
                if c.disagreements_kept is None or not c.kept
                else f"{1 - c.disagreements_kept / c.kept:.3f}",
                f"{usd(c.usage.work(), '$')} ({c.usage.work().calls} answers, "
                f"{c.usage.cached_calls} from the LM cache)",
            ]
            for k, c in enumerate(part.stages)
        ]
        note = (
            f"{part.items} items · kept {part.kept} (coverage "
            f"{'' if part.coverage is None else f'{part.coverage:.3f}'}) · abstained "
            f"{part.abstained}"
        )
        if part.agreement_kept is not None and part.agreement_ci is not None:
            lo, hi = part.agreement_ci
            note += (
                f" · agreement with the reference on kept items {part.agreement_kept:.3f} "
                f"[{lo:.3f}, {hi:.3f}] (exact 95% interval over the "
                f"{part.labelled_kept if part.labelled_kept is not None else part.kept} kept "
                f"items with a reference; the guarantee: ≥ {1 - s.alpha:g} "
                f"with probability ≥ {1 - s.delta:g})"
            )
        tables.append(
            Table(
                title=titles[part.part],
                columns=[
                    "stage",
                    "judge",
                    "reached",
                    "judged",
                    "unscored",
                    "kept",
                    "escalated",
                    "share kept",
                    "agreement (kept)",
                    "cost of the work",
                ],
                rows=rows,
                note=note,
            )
        )
    verdicts = Path(run_dir) / VERDICTS
    if s.mode == "apply" and verdicts.is_file():
        tables.append(_final_verdicts_table(verdicts))
    title = f"Selective evaluation ({s.mode})"
    return Report(kind=f"selective_{s.mode}", title=title, facts=facts, tables=tables)


def _final_verdicts_table(path: Path) -> Any:
    """The final verdicts by where they came from: each stage's kept items, the abstained
    items a person gave a verdict (``human``), and those still waiting for one."""
    from collections import Counter

    from assay.report import Table, read_jsonl

    rows = read_jsonl(path)
    counts = Counter(
        (r["source"] or "abstained, no verdict yet", r["label"] or r["score"]) for r in rows
    )
    waiting = sum(r["source"] is None for r in rows)
    return Table(
        title="Final verdicts",
        columns=["source", "verdict", "items"],
        rows=[[src, "—" if v is None else v, n] for (src, v), n in counts.items()],
        lead="verdicts.jsonl: each kept item's verdict from the stage that kept it, each "
        "abstained item's from a person (`assay review serve` on this run directory).",
        note=f"{len(rows)} items · {waiting} abstained without a human verdict yet",
    )
