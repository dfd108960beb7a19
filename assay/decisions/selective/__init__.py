"""``assay selective calibrate|apply``: trust a judge only where it has earned it, escalate the
rest (Jung, Brahman & Choi, "Trust or Escalate", ICLR 2025).

A cascade is a list of judge configs, cheapest first, each with a confidence per judgment
(``judge.confidence``). ``calibrate`` judges labelled items stage by stage — stage k only the
items no earlier stage kept — and picks each stage's threshold by fixed-sequence testing
(:mod:`assay.metrics._selective`), at δ/m per stage, so that on the items the cascade keeps the
judges agree with humans at rate ≥ 1 − α with probability ≥ 1 − δ. With ``holdout`` a seeded
part of the labelled items is kept aside and run through the calibrated cascade: the agreement
there is measured, not assumed. The thresholds go to ``calibration.json``, bound to each
stage's config hash. ``apply`` runs the cascade on other items: each is kept by the first stage
whose confidence reaches its threshold, escalated (judged by the next stage only), or abstains
— written to ``abstained.jsonl`` for human review.

Both are resumable like ``evaluate``: each stage's judgments are appended to
``judgments.<judge>.jsonl`` as they finish; a re-run judges only what is missing.

The package, by concept: ``_config`` the config, ``_results`` what a run writes, ``_stages`` a
stage and the pass through the cascade, ``_calibrate`` and ``_apply`` the two commands,
``_report`` the end of a run (summary, MLflow, report), ``review`` the public read side the
review app and the review files use (the abstained items as a queue, people's verdicts).
"""

from assay.decisions.selective._apply import apply, read_calibration
from assay.decisions.selective._calibrate import calibrate, split_holdout
from assay.decisions.selective._config import CALIBRATION, SelectiveConfig, load_selective
from assay.decisions.selective._report import build_report, selective_metrics
from assay.decisions.selective._results import (
    Calibration,
    PartSummary,
    SelectiveResult,
    SelectiveSummary,
    StageCount,
    StageThreshold,
    guarantee,
)
from assay.decisions.selective.review import AbstentionQueue, VerdictConflict, is_abstention_run

__all__ = [
    "CALIBRATION",
    "AbstentionQueue",
    "Calibration",
    "PartSummary",
    "SelectiveConfig",
    "SelectiveResult",
    "SelectiveSummary",
    "StageCount",
    "StageThreshold",
    "VerdictConflict",
    "apply",
    "build_report",
    "calibrate",
    "guarantee",
    "is_abstention_run",
    "load_selective",
    "read_calibration",
    "selective_metrics",
    "split_holdout",
]
