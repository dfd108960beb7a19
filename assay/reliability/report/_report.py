"""The harness report: Markdown with a tests × judges heatmap and a plot of each judge's cost of
the work against its accuracy (PNG)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from assay.metrics import MetricValue, fmt, fmt_ci
from assay.reliability._results import (
    CriterionScores,
    HarnessSummary,
    JudgeReliability,
    ReliabilityScores,
    TargetScores,
)
from assay.reliability.report._bias_report import bias_tables, samples_plot
from assay.report import Report, Table, cost_table, markdown
from assay.types import Usage, cost_per_point, spend_line, usd, work_line

OTHER_METRICS = (
    "items",
    "items_incomplete",
    "flip_rate",
    "majority_accuracy",
    "majority_ties",
    "ccc",
    "pearson",
    "spearman",
    "mae",
)
JUDGE_COLUMNS = (
    "test",
    "pass rate [CI]",
    "consistency with own source verdict [CI]",
    "unscored",
    "other",
)


def ci(m: MetricValue | dict | None) -> str:
    """A metric with its interval, two decimals (the harness report and the CLI); † marks
    the exact interval over source items that stands for a bootstrap of a constant outcome, ‡
    a bootstrap interval of no width that is none (every item's outcome one value between the
    ends — a pair right in one order of two: 0.50 [0.50, 0.50] — or a single item)."""
    from assay.reliability.scoring import cell

    return cell(m) if m else fmt_ci(m, 2)


def pass_rates(summary: HarnessSummary) -> dict[str, dict[str, float | None]]:
    """Each judge's pass rate per test (None where the test has none)."""
    return {
        name: {t: s.pass_rate.value if s.pass_rate else None for t, s in j.tests.items()}
        for name, j in summary.judges.items()
    }


def preload_plotting() -> None:
    """Import matplotlib (headless) and render a throw-away figure ahead of time (fonts, the
    Agg canvas, the PNG writer load on first use), and import what :func:`write_reports`
    needs; the reports then start at once."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # the plots are made through it (~0.15 s to import)

    fig, ax = plt.subplots(figsize=(1, 1))
    ax.imshow([[0.0, 1.0]], cmap="RdYlGn")
    ax.set_title("warm-up")
    ax.text(0, 0, "0.00")
    ax.plot([0, 1], [0, 1], marker="o")
    ax.fill_between([0, 1], [0, 0], [1, 1], alpha=0.15)
    fig.colorbar(ax.images[0], ax=ax, label="x")
    fig.tight_layout()
    fig.savefig(io.BytesIO(), format="png", dpi=20, bbox_inches="tight")
    plt.close(fig)
    from assay.report import preload_page

    preload_page()  # and report.html's template
    # and what write_reports reads the run with: the config model imports DSPy (~0.5 s)
    import assay.reliability._config  # noqa: F401
    import assay.reliability.report._html_report  # noqa: F401
    from assay.programs import known_kinds
    from assay.reliability.scoring import scoring_kinds

    # and the registries it reads: every judge kind (the config's validation) and every scoring
    # kind (the report's sections) — their modules and the installed plug-ins' entry points,
    # otherwise loaded after the last answer (a third of what write_reports does besides the
    # plots: docs/performance.md)
    known_kinds()
    scoring_kinds()


def heatmap(rates: dict[str, dict[str, float | None]], tests: list[str], path: Path) -> Path:
    """The tests × judges grid of pass rates (``rates``: judge -> test -> pass rate; a test a
    judge has no rate for shows n/a)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    judges = list(rates)
    grid = np.full((len(tests), len(judges)), np.nan)
    for j, name in enumerate(judges):
        for i, t in enumerate(tests):
            value = rates[name].get(t)
            if value is not None:
                grid[i, j] = value
    fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(judges), 0.9 + 0.5 * len(tests)))
    im = ax.imshow(grid, vmin=0, vmax=1, cmap="RdYlGn", aspect="auto")
    ax.set_xticks(range(len(judges)), judges, rotation=30, ha="right")
    ax.set_yticks(range(len(tests)), tests)
    for i in range(len(tests)):
        for j in range(len(judges)):
            ax.text(
                j,
                i,
                "n/a" if np.isnan(grid[i, j]) else f"{grid[i, j]:.2f}",
                ha="center",
                va="center",
                fontsize=8,
            )
    fig.colorbar(im, ax=ax, label="pass rate")
    ax.set_title("Reliability: pass rate per test and judge")
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")  # no label cut at the edge
    plt.close(fig)
    return path


def cost_axis(summary: HarnessSummary) -> tuple[str, dict[str, float]]:
    """What the cost-vs-accuracy plot puts on x, and each plotted judge's value: the cost of
    its work (every answer its judgments used, those from the LM cache priced as the server
    first answered them — a judge whose answers a warm cache gave is not cheaper for it). In
    USD when every judge's answers had a price; otherwise in tokens (local or unpriced models
    cost 0 USD, which would draw every judge at x = 0), or in answers where no tokens were
    counted or some answers' tokens were never reported (their cost unknown: a judge would
    look cheap)."""
    work = {n: r.work for n, r in summary.judges.items() if r.mean_pass_rate is not None}
    what = "all probes and sources; cached answers priced as first answered"
    untallied = any(u.untallied_calls for u in work.values())
    if (
        any(u.cost_usd > 0 for u in work.values())
        and not any(u.unpriced_calls for u in work.values())
        and not untallied
    ):
        return f"judge cost of the work (USD, {what})", {n: u.cost_usd for n, u in work.items()}
    tokens = {n: float(u.prompt_tokens + u.completion_tokens) for n, u in work.items()}
    if any(tokens.values()) and not untallied:
        return (
            f"judge cost of the work in tokens (prompt + completion, {what}; no USD price)",
            tokens,
        )
    return f"judge cost of the work in LM answers ({what}; no USD price or token count)", {
        n: float(u.calls) for n, u in work.items()
    }


def cost_plot(summary: HarnessSummary, path: Path) -> Path:
    """Each judge's mean pass rate against the cost of its work (:func:`cost_axis`); the
    x-axis label is also the PNG's ``Description``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    label, cost = cost_axis(summary)
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for name, x in cost.items():
        y = summary.judges[name].mean_pass_rate
        ax.scatter(x, y)
        ax.annotate(name, (x, y), fontsize=8, xytext=(4, 4), textcoords="offset points")
    ax.set_xlabel(label)
    ax.set_ylabel("mean pass rate over tests")
    ax.set_ylim(0, 1.05)
    ax.set_title("Cost of the work vs accuracy per judge")
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Description": label}, bbox_inches="tight")
    plt.close(fig)
    return path


def other_metrics(m: ReliabilityScores) -> str:
    """The flip rate, majority accuracy and ordinal agreement a test reports, on one line."""
    other = []
    for key in OTHER_METRICS:
        v = m.scoring_metrics.get(key)
        if v is not None:
            other.append(f"{key} {ci(v) if isinstance(v, MetricValue) else fmt(v, 2)}")
    return "; ".join(other)


def generation_models(summary: HarnessSummary, generator: dict, validator: dict) -> str:
    """Which models made and checked the probes (``generator``/``validator``: their configs as
    dicts) — or, for a run whose tests generate nothing with a model (``position_bias``,
    format and whitespace tests, stability), that there was no generator: the config's default
    roles did nothing and the report must not name them."""
    if not summary.generation_usage:
        return "no generator or validator (no probe of this run was made or checked by a model)"
    return (
        f"generator `{generator.get('model')}` (temperature {generator.get('temperature')}) · "
        f"validator `{validator.get('model')}`"
    )


def render(config, summary: HarnessSummary) -> str:
    review = summary.review.model_dump()
    lines = [
        f"# assay harness — {config.name}",
        "",
        f"- seeds: {summary.seeds} · scale {config.scale.describe()} · "
        + generation_models(summary, config.generator.model_dump(), config.validator.model_dump()),
        f"- probes per test: {', '.join(f'{k} {v}' for k, v in summary.probes.items())}",
        "- dropped (never judged): "
        + (
            ", ".join(
                f"{t}: " + ", ".join(f"{r} {n}" for r, n in d.items())
                for t, d in summary.dropped.items()
            )
            or "none"
        ),
        f"- review: {review}",
        *[f"- note: {n}" for n in summary.notes],
        "",
        "![pass rate per test and judge](heatmap.png)",
        "",
    ]
    lines += markdown(report_tables(summary))
    lines += [
        "![cost of the work vs accuracy](cost_accuracy.png)",
        "",
        f"Intervals: {summary.bootstrap}.",
    ]
    if any(str(j.model).startswith("local") for j in config.judges) or (
        summary.generation_usage and str(config.generator.model).startswith("local")
    ):
        lines += [
            "",
            "> The embedded local model makes poor probes and poor verdicts: this run shows the pipeline, not a trustworthy measurement.",
        ]
    return "\n".join(lines) + "\n"


def report_tables(summary: HarnessSummary) -> list[Table]:
    """Everything the run measured, as tables: each judge's tests (and, for agent tests, per
    criterion and target score), the bias tests, the cost of the work of each judge and
    generation stage and what the run paid. report.md and report.html both show these."""
    out: list[Table] = []
    for name, r in summary.judges.items():
        w, u = r.work, r.usage
        out.append(
            Table(
                f"Judge {name} — {r.model} (config {r.config_hash[:10]})",
                list(JUDGE_COLUMNS),
                [
                    [t, ci(m.pass_rate), ci(m.consistency), _unscored(m), other_metrics(m)]
                    for t, m in r.tests.items()
                ],
                note=f"Judge cost of the work: {w.calls} answers, {w.prompt_tokens}+"
                f"{w.completion_tokens} tokens, {usd(w, '$')} ({u.calls} answered by the "
                f"server, {u.cached_calls} from the LM cache); cost per accuracy point "
                f"{cost_per_point(r.cost_per_accuracy_point_usd, w, _no_point(r))}; sources unscored "
                f"{r.source_unscored}; waiting on rate limits {u.limit_wait_s:.1f} s, HTTP 429 "
                f"answers {u.rate_limited}.",
            )
        )
        out += _criterion_tables(name, r.tests)
    out += bias_tables(summary)
    parts = {f"judge {n}": r.usage for n, r in summary.judges.items()}
    parts |= summary.generation_usage
    all_calls = Usage.total(parts.values())
    out.append(
        cost_table(
            parts,
            title="Cost of the work and what was paid",
            note=f"{work_line(all_calls)}. All calls of the run: {spend_line(summary.spend)}.",
        )
    )
    return out


def _no_point(r: JudgeReliability) -> str:
    """Why a judge has no cost per accuracy point, when its cost is known."""
    if r.mean_pass_rate is None:
        return "undefined (no test has a defined pass rate)"
    return "undefined (a mean pass rate of 0)" if r.mean_pass_rate == 0 else "—"


def _unscored(m: ReliabilityScores) -> str:
    """How many probe verdicts are unscored, and why; how many probes' sources are."""
    reasons = m.unscored_reasons
    why = f" ({', '.join(f'{r} {n}' for r, n in reasons.items())})" if reasons else ""
    sources = m.scoring_metrics.get("source_unscored")
    return f"{m.unscored} of {m.judged}{why}" + (
        f"; {sources} with an unscored source" if sources else ""
    )


def _criterion_tables(judge: str, tests: dict[str, ReliabilityScores]) -> list[Table]:
    """Agent tests: pass rate and consistency per rubric criterion; exact / within one / MAE
    per target score of an ordinal criterion."""
    rows, targets = [], []
    for t, m in tests.items():
        criteria: dict[str, CriterionScores] = m.scoring_metrics.get("criteria") or {}
        for c, cm in criteria.items():
            rows.append(
                [t, c, cm.probes, ci(cm.pass_rate)]
                + [
                    f"{ci(cm.consistency)} ({cm.consistency_undefined} undefined: already at "
                    "the target, or untouched)"
                ]
            )
        by_target: dict[str, TargetScores] = m.scoring_metrics.get("by_target") or {}
        for target, tm in by_target.items():
            targets.append([t, target, tm.probes, ci(tm.exact), ci(tm.within_one), ci(tm.mae)])
    out: list[Table] = []
    if rows:
        out.append(
            Table(
                f"Judge {judge}: per rubric criterion",
                ["test", "criterion", "probes", "pass rate [CI]"]
                + ["verdict moved toward the target [CI]"],
                rows,
            )
        )
    if targets:
        out.append(
            Table(
                f"Judge {judge}: per target score",
                ["test", "target score", "probes", "exact [CI]", "within one [CI]", "MAE [CI]"],
                targets,
            )
        )
    return out


def write_reports(run_dir: str) -> None:
    """``report.md`` with its plots and ``report.html`` of a run directory whose
    ``config.yaml`` and ``metrics.json`` are written (the run's sidecar does this)."""
    import json

    from assay._yaml import load as load_yaml
    from assay.reliability._config import HarnessConfig
    from assay.reliability.report._html_report import report_but_plots, with_plots
    from assay.report import write_html

    folder = Path(run_dir)
    config = HarnessConfig.model_validate(
        load_yaml((folder / "config.yaml").read_text(encoding="utf-8"))
    )
    summary = HarnessSummary.model_validate(
        json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    )
    pages: list[Report] = []

    def text() -> None:  # while the plots are drawn: report.md, and report.html but its plots
        _report_md(folder, config, summary)
        pages.append(report_but_plots(folder))  # the probes listed read back, the tables

    _side_by_side(_plots(folder, summary), here=text)
    write_html(with_plots(pages[0], folder), folder)


def write_report(run_dir: Path, config, summary: HarnessSummary) -> None:
    """``report.md`` and its plots."""
    _side_by_side(_plots(run_dir, summary), here=lambda: _report_md(run_dir, config, summary))


def _plots(run_dir: Path, summary: HarnessSummary) -> list[Callable[[], Path]]:
    return [
        lambda: heatmap(pass_rates(summary), list(summary.probes), run_dir / "heatmap.png"),
        lambda: cost_plot(summary, run_dir / "cost_accuracy.png"),
        lambda: samples_plot(summary, run_dir / "samples_needed.png"),
    ]


def _report_md(run_dir: Path, config, summary: HarnessSummary) -> None:
    (run_dir / "report.md").write_text(render(config, summary), encoding="utf-8")


def _side_by_side(jobs: list[Callable[[], Any]], here: Callable[[], Any]) -> None:
    """Run ``jobs`` (each writes its own file) and ``here``: in a process with no other thread
    (the run's sidecar) each job in a forked copy of it — matplotlib loaded and warm, a plot
    takes ~0.1 s, after the last LM answer — while ``here`` runs in this process, which then
    waits for the copies; elsewhere one after another. A copy that fails is run again here,
    which raises its error."""
    if not hasattr(os, "fork") or threading.active_count() > 1:
        for job in jobs:
            job()
        here()
        return
    children = {}
    for job in jobs:
        pid = os.fork()
        if pid == 0:  # the copy: do the job and leave without any of the parent's clean-up
            code = 1
            try:
                job()
                code = 0
            finally:
                os._exit(code)
        children[pid] = job
    try:
        here()
    finally:  # the copies waited for, whatever ``here`` did
        failed = [job for pid, job in children.items() if not _exited_well(pid)]
    for job in failed:
        job()


def _exited_well(pid: int) -> bool:
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
