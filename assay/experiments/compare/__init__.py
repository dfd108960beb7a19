"""``assay compare``: judge configs side by side, read back from MLflow (store, selection,
tables, plots, report, run — one module each); two runs item by item: ``compare --paired``
(two judge configs) and ``drift`` (one judge config at two times)."""

from assay.experiments.compare._drift import drift
from assay.experiments.compare._html_report import build_report
from assay.experiments.compare._paired import paired
from assay.experiments.compare._paired_report import build_paired_report, render_console
from assay.experiments.compare._report import render_markdown
from assay.experiments.compare._results import (
    Comparison,
    Differences,
    DriftResult,
    Group,
    LeaderboardRow,
    LeftOut,
    PairedResult,
)
from assay.experiments.compare._run import compare
from assay.experiments.compare._select import DEFAULT_EXPERIMENT, JUDGE_COMMANDS, kind_of
from assay.experiments.compare._store import open_store
from assay.experiments.compare._tables import (
    differences,
    direction,
    goodness,
    higher_is_better,
    leaderboard,
    pareto_front,
    short_sha,
    worst_test,
)

__all__ = [
    "Comparison",
    "Differences",
    "Group",
    "LeaderboardRow",
    "LeftOut",
    "DriftResult",
    "PairedResult",
    "build_paired_report",
    "drift",
    "paired",
    "render_console",
    "DEFAULT_EXPERIMENT",
    "JUDGE_COMMANDS",
    "build_report",
    "compare",
    "differences",
    "direction",
    "goodness",
    "higher_is_better",
    "kind_of",
    "leaderboard",
    "open_store",
    "pareto_front",
    "render_markdown",
    "short_sha",
    "worst_test",
]
