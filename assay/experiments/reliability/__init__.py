"""Reliability harness: registered tests generate probes from seed items; judges are scored on
them against the probe target and against their own verdict on the source (SPEC §4)."""

from assay.experiments.reliability._bias_report import headline
from assay.experiments.reliability._config import HarnessConfig, ReviewConfig, SampleConfig
from assay.experiments.reliability._harness import run_harness
from assay.experiments.reliability._html_report import build_report
from assay.experiments.reliability._judging import judged_id
from assay.experiments.reliability._probe import Dropped, Generation, Probe, Review, Validation
from assay.experiments.reliability._registry import (
    GenerationContext,
    ProgramSettings,
    ReliabilityTest,
    TestSettings,
    Unit,
    get_test,
    known_tests,
    reliability_test,
)
from assay.experiments.reliability._report import (
    ci,
    generation_models,
    heatmap,
    other_metrics,
    pass_rates,
    report_tables,
)
from assay.experiments.reliability._results import (
    CriterionScores,
    HarnessResult,
    HarnessSummary,
    JudgeReliability,
    ReliabilityScores,
    ReviewCounts,
    ScoringValue,
    TargetScores,
)
from assay.experiments.reliability._review import (
    PROBES,
    REVIEWS,
    SEEDS,
    STATUSES,
    apply_reviews,
    read_probes,
    read_reviews,
    read_seeds,
    review_counts,
    run_scale,
)
from assay.experiments.reliability._review_decisions import (
    ReviewConflict,
    decision_history,
    record_decision,
    record_decisions,
    review_lock,
)
from assay.experiments.reliability._review_files import export_review, import_review
from assay.experiments.reliability._review_run import FLAGS, ProbeView, ReviewRun
from assay.experiments.reliability._selftest import run_selftest
from assay.experiments.reliability._whitespace import FormatTest, variant_rng

__all__ = [
    "build_report",
    "FLAGS",
    "PROBES",
    "REVIEWS",
    "SEEDS",
    "STATUSES",
    "ProbeView",
    "ReviewConflict",
    "ReviewRun",
    "decision_history",
    "read_probes",
    "read_seeds",
    "record_decision",
    "record_decisions",
    "review_counts",
    "review_lock",
    "judged_id",
    "CriterionScores",
    "Dropped",
    "FormatTest",
    "Generation",
    "GenerationContext",
    "HarnessConfig",
    "HarnessResult",
    "HarnessSummary",
    "JudgeReliability",
    "Probe",
    "ProgramSettings",
    "ReliabilityScores",
    "ReliabilityTest",
    "Review",
    "ReviewConfig",
    "ReviewCounts",
    "SampleConfig",
    "ScoringValue",
    "TargetScores",
    "TestSettings",
    "Unit",
    "Validation",
    "apply_reviews",
    "ci",
    "heatmap",
    "generation_models",
    "other_metrics",
    "pass_rates",
    "report_tables",
    "headline",
    "export_review",
    "get_test",
    "import_review",
    "known_tests",
    "read_reviews",
    "reliability_test",
    "run_harness",
    "run_scale",
    "run_selftest",
    "variant_rng",
]
