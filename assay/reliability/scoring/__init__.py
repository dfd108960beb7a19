"""Scoring kinds: how one judge's verdicts on one test's probes become metrics. One
file per kind — its scorer, its typed metrics model, its report section — registered by name
with ``@scoring_kind("name")``; a reliability test names its kind in ``scoring``.

Add a kind: copy ``polarity.py``, declare its ``Metrics`` fields, write ``score`` (and, if it
has one, ``section``), register it — nothing else changes.
"""

from assay.reliability.scoring._kind import (
    ScoringInput,
    ScoringKind,
    ScoringMetrics,
    SectionRow,
    cell,
    get_scoring,
    kind_of,
    known_scorings,
    ordered,
    score_test,
    scorer_notes,
    scoring_kind,
    scoring_kinds,
    section_rows,
    toward,
)
from assay.reliability.scoring._placebo import flag_placebo_effects

__all__ = [
    "ScoringInput",
    "ScoringKind",
    "ScoringMetrics",
    "SectionRow",
    "cell",
    "flag_placebo_effects",
    "get_scoring",
    "kind_of",
    "known_scorings",
    "ordered",
    "score_test",
    "scorer_notes",
    "scoring_kind",
    "scoring_kinds",
    "section_rows",
    "toward",
]
