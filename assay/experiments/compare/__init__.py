"""``assay compare``: judge configs side by side, read back from MLflow (store, selection,
tables, plots, report, run — one module each)."""

from assay.experiments.compare._html_report import build_report
from assay.experiments.compare._report import render_markdown
from assay.experiments.compare._results import (
    Comparison,
    Differences,
    Group,
    LeaderboardRow,
    LeftOut,
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
