"""Runs: configs, evaluation (resume, cache, concurrency), agreement, reports, MLflow logging."""

from assay.experiments._agreement import agreement, read_verdicts
from assay.experiments._calibrate import calibrate
from assay.experiments._config import (
    BootstrapConfig,
    DataConfig,
    EvaluateConfig,
    RetryConfig,
    RunConfig,
    TrackingConfig,
    load_config,
)
from assay.experiments._estimate import PrevalenceResult, estimate
from assay.experiments._evaluate import evaluate
from assay.experiments._items import load_items
from assay.experiments._results import (
    Agreement,
    AgreementResult,
    CalibrationResult,
    ConfusionMatrix,
    Counts,
    EvaluateResult,
    EvaluateSummary,
    RunUsage,
)
from assay.experiments.compare import compare
from assay.experiments.optimize import OptimizeConfig, optimize
from assay.experiments.runs import Run, RunStore, judge_items, judge_one
from assay.programs import save_program

__all__ = [
    "PrevalenceResult",
    "estimate",
    "Agreement",
    "AgreementResult",
    "CalibrationResult",
    "ConfusionMatrix",
    "Counts",
    "EvaluateSummary",
    "RunUsage",
    "OptimizeConfig",
    "calibrate",
    "compare",
    "optimize",
    "BootstrapConfig",
    "DataConfig",
    "EvaluateConfig",
    "EvaluateResult",
    "RetryConfig",
    "Run",
    "RunConfig",
    "RunStore",
    "TrackingConfig",
    "agreement",
    "evaluate",
    "judge_items",
    "judge_one",
    "load_config",
    "load_items",
    "read_verdicts",
    "save_program",
]
