"""report.html of a harness run, as a :class:`~assay.report.Report`: per judge and reliability
test, pass rate and consistency with the judge's own source verdict; the cost of generation;
each test's first probes beside their sources, with each judge's verdicts and the review."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.reliability._results import HarnessSummary
from assay.reliability.report._report import generation_models, report_tables
from assay.reliability.report._shown import keeper, rows_per_test
from assay.reliability.review import ProbeView, ReviewRun
from assay.report import (
    Block,
    Items,
    Report,
    Row,
    diff_texts,
    figures,
    images,
    load_summary,
    read_yaml,
    verdict,
)
from assay.types import Judgment, spend_line

PLOTS = (
    ("Pass rate per test and judge", "heatmap.png"),
    ("Cost of the work vs accuracy per judge", "cost_accuracy.png"),
    ("Samples needed for a stable majority", "samples_needed.png"),  # with stability only
)
PROBE_COLUMNS = (
    ("probe", "text"),
    ("test", "text"),
    ("source", "text"),
    ("target", "num"),
    ("review", "text"),
)


def build_report(run_dir: Path) -> Report:
    """The report of the harness run in ``run_dir``: read as the review app reads it."""
    run_dir = Path(run_dir)
    return with_plots(report_but_plots(run_dir), run_dir)


def report_but_plots(run_dir: Path) -> Report:
    """:func:`build_report` without the plots the run draws: what can be built while they are
    drawn (:func:`with_plots` adds them once they are written)."""
    run = ReviewRun(run_dir, read_now=False)  # the probes listed are read, not the others
    m = load_summary(run_dir / "metrics.json", HarnessSummary)
    config = read_yaml(run_dir / "config.yaml")
    r = Report("harness", f"assay harness — {run.name}")
    r.facts = _facts(run, m, config)
    r.notes = list(m.notes)  # what the tests say about how they treated the items
    r.tables = report_tables(m)  # the tables report.md shows, built once
    r.items = _probes(run, len(m.probes))
    return r


def with_plots(r: Report, run_dir: Path) -> Report:
    """``r`` with the run's plots (``PLOTS``) and its tables' figures, as written in
    ``run_dir``."""
    r.images += images(run_dir, PLOTS)
    r.figures = figures(run_dir, r.tables)
    return r


def _facts(run: ReviewRun, m: HarnessSummary, config: dict[str, Any]) -> list[tuple[str, str]]:
    gen, val = config.get("generator") or {}, config.get("validator") or {}
    dropped = ", ".join(
        f"{t}: " + ", ".join(f"{k} {n}" for k, n in d.items()) for t, d in m.dropped.items()
    )
    return [
        ("seeds", f"{m.seeds} · scale {run.scale.describe()}"),
        ("models", generation_models(m, gen, val).replace("`", "")),
        ("probes per test", ", ".join(f"{k} {v}" for k, v in m.probes.items())),
        ("dropped (never judged)", dropped or "none"),
        ("review", ", ".join(f"{k} {v}" for k, v in m.review.model_dump().items())),
        ("intervals", m.bootstrap),
        ("calls answered", spend_line(m.spend)),
    ]


def _probes(run: ReviewRun, tests: int) -> Items:
    """The probes' table: each test's first :func:`rows_per_test` probes (all of a run with
    up to :data:`PROBE_ROWS`), with a note saying how many of how many when it is not all.
    Only those are read into memory."""
    views, total = run.some_views(keeper(lambda p: p.test, tests))
    judges = sorted({v.judge for view in views for v in view.verdicts})
    note = ""
    if len(views) < total:
        note = (
            f"Each test's first {rows_per_test(tests):,} probes: {len(views):,} of {total:,}; "
            "every one is in probes.jsonl and in assay review."
        )
    return Items(
        "Probes",
        [*PROBE_COLUMNS] + [(f"{j} on probe", "num") for j in judges],
        [_probe_row(run, view, judges) for view in views],
        note,
    )


def _probe_row(run: ReviewRun, view: ProbeView, judges: list[str]) -> Row:
    """One probe: its target and review, each judge's verdict on it (``bad`` when one misses
    the target); expands to the texts, the validator, the review note and the reasoning."""
    p = view.probe
    cells = [
        (p.id, p.id),
        (p.test, p.test),
        (p.source_id, p.source_id),
        (run.label(p.target), p.target),
        (p.review.status, p.review.status),
    ]
    blocks = _probe_blocks(view)
    by_judge = {v.judge: v for v in view.verdicts}
    css = ""
    on = f" ({view.criterion})" if view.criterion else ""  # a probe of one rubric criterion
    for name in judges:
        v = by_judge.get(name)
        shown, score = _verdict(v.probe, v.probe_score, run) if v else verdict(None)
        if score is not None and p.target is not None and score != p.target:
            css = "bad"
        cells.append((shown, score))
        if v and v.source is not None:
            blocks.append(
                Block(
                    f"{name} on the source{on}: {_verdict(v.source, v.source_score, run)[0]}",
                    v.source.reasoning or "(no reasoning)",
                )
            )
        if v and v.probe is not None:
            blocks.append(
                Block(f"{name} on the probe{on}: {shown}", v.probe.reasoning or "(no reasoning)")
            )
    return Row(cells, [b for b in blocks if b.text or b.segments], css)


def _verdict(j: Judgment | None, score: int | None, run: ReviewRun) -> tuple[str, Any]:
    """``(shown, sort key)`` of a judgment's verdict ``score`` on what the probe tests (its
    criterion, for a probe made for one): as :func:`~assay.report.verdict` shows the overall
    score."""
    if j is None or j.score is None or score is None:
        return verdict(j, run.label)
    return run.label(score), score


def _probe_blocks(view: ProbeView) -> list[Block]:
    """The probe beside its source (a diff, or both transcripts), the planner's intent, the
    validator's reason and the review note."""
    p = view.probe
    blocks: list[Block] = []
    if p.request:
        blocks.append(Block("request", p.request))
    if p.transcript is None:
        src, prb = diff_texts(view.seed.response if view.seed else "", p.response)
        blocks += [Block("source", segments=src), Block("probe", segments=prb)]
    else:
        from assay.data import render_transcript

        blocks += [
            Block(
                "source transcript",
                render_transcript(view.seed.transcript or []) if view.seed else None,
            ),
            Block("probe transcript", render_transcript(p.transcript)),
        ]
    if view.intent:
        blocks.append(Block("planner's intent", view.intent))
    if p.validation and p.validation.reason:
        blocks.append(
            Block(
                f"validator ({'confirmed' if p.validation.verdict else 'not confirmed'})",
                p.validation.reason,
            )
        )
    if p.review.note:
        blocks.append(Block(f"review note ({p.review.reviewer})", p.review.note))
    return blocks
