"""``assay compare``: judge configs side by side, read back from MLflow (selection, tables,
plots, report, run — one module each). Two runs item by item (``compare --paired``, ``drift``)
are decisions: :mod:`assay.decisions`."""

from assay.comparison._html_report import build_report
from assay.comparison._report import render_markdown
from assay.comparison._results import (
    Comparison,
    Differences,
    Group,
    LeaderboardRow,
    LeftOut,
)
from assay.comparison._run import compare
from assay.comparison._select import DEFAULT_EXPERIMENT, JUDGE_COMMANDS, kind_of
from assay.comparison._tables import (
    differences,
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
    "kind_of",
    "leaderboard",
    "pareto_front",
    "render_markdown",
    "short_sha",
    "worst_test",
]
