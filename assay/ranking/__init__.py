"""``assay rank``: systems ranked from pairwise verdicts — the votes read back from pairwise
evaluate runs or tables of pairs (``_comparisons``), the Bradley–Terry fit written as a run of its
own (``_rank``), its report and console (``_report``). The statistics are
:func:`assay.metrics.bradley_terry`'s.

Names load on first use (PEP 562)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay._lazy import lazy_names

_WHERE = {
    "RankSource": "_comparisons",
    "Vote": "_comparisons",
    "read_source": "_comparisons",
    "RankConfig": "_rank",
    "RankSummary": "_rank",
    "rank": "_rank",
    "build_rank_report": "_report",
    "rank_console": "_report",
    "rank_headline": "_report",
}

if TYPE_CHECKING:  # for type checkers and editors: the same names, imported eagerly
    from assay.ranking._comparisons import RankSource, Vote, read_source
    from assay.ranking._rank import RankConfig, RankSummary, rank
    from assay.ranking._report import build_rank_report, rank_console, rank_headline

__all__ = [
    "RankConfig",
    "RankSource",
    "RankSummary",
    "Vote",
    "build_rank_report",
    "rank",
    "rank_console",
    "rank_headline",
    "read_source",
]
assert sorted(__all__) == sorted(_WHERE)


__getattr__, __dir__ = lazy_names(__name__, _WHERE)
