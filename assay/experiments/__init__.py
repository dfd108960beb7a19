"""Runs: configs, evaluation (resume, cache, concurrency), agreement, reports, MLflow logging,
and the runner protocol (:class:`Runner`, ``@runner``) every command is generated from.

Names are loaded on first use: a command imports only the runner it runs (``assay evaluate``
never loads the optimizer, the comparison or the agreement statistics before its first call).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay._lazy import lazy_names

_RESULTS = "assay.experiments._results"
_RUNNERS = "assay.experiments._runners"
_WHERE = {
    "agreement": "assay.experiments._agreement",
    "read_verdicts": "assay.experiments._agreement",
    "calibrate": "assay.experiments._calibrate",
    "BootstrapConfig": "assay.experiments._config",
    "ConfigOptions": _RUNNERS,
    "Options": _RUNNERS,
    "RunOptions": _RUNNERS,
    "Runner": _RUNNERS,
    "argument": _RUNNERS,
    "cli_type": _RUNNERS,
    "get_runner": _RUNNERS,
    "known_runners": _RUNNERS,
    "lm_cache": _RUNNERS,
    "option": _RUNNERS,
    "run_kind": _RUNNERS,
    "runner": _RUNNERS,
    "write_report": _RUNNERS,
    "DataConfig": "assay.experiments._config",
    "EvaluateConfig": "assay.experiments._config",
    "RetryConfig": "assay.experiments._config",
    "RunConfig": "assay.experiments._config",
    "TrackingConfig": "assay.experiments._config",
    "load_config": "assay.experiments._config",
    "PrevalenceResult": "assay.experiments._estimate",
    "estimate": "assay.experiments._estimate",
    "evaluate": "assay.experiments._evaluate",
    "load_items": "assay.experiments._items",
    "evaluate_tables": "assay.experiments._report",
    "build_report": "assay.experiments._html_report",
    "Agreement": _RESULTS,
    "AgreementResult": _RESULTS,
    "CalibrationResult": _RESULTS,
    "ConfusionMatrix": _RESULTS,
    "Counts": _RESULTS,
    "EvaluateResult": _RESULTS,
    "EvaluateSummary": _RESULTS,
    "RunUsage": _RESULTS,
    "compare": "assay.experiments.compare",
    "OptimizeConfig": "assay.experiments.optimize",
    "optimize": "assay.experiments.optimize",
    "Run": "assay.experiments.runs",
    "RunStore": "assay.experiments.runs",
    "judge_items": "assay.experiments.runs",
    "judge_one": "assay.experiments.runs",
    "save_program": "assay.programs",
}

__all__ = [
    "Agreement",
    "AgreementResult",
    "BootstrapConfig",
    "CalibrationResult",
    "ConfigOptions",
    "ConfusionMatrix",
    "Counts",
    "DataConfig",
    "EvaluateConfig",
    "EvaluateResult",
    "EvaluateSummary",
    "OptimizeConfig",
    "Options",
    "PrevalenceResult",
    "RetryConfig",
    "Run",
    "RunConfig",
    "RunOptions",
    "RunStore",
    "RunUsage",
    "Runner",
    "TrackingConfig",
    "agreement",
    "build_report",
    "argument",
    "calibrate",
    "compare",
    "estimate",
    "evaluate",
    "evaluate_tables",
    "cli_type",
    "get_runner",
    "judge_items",
    "judge_one",
    "known_runners",
    "lm_cache",
    "load_config",
    "load_items",
    "optimize",
    "option",
    "read_verdicts",
    "run_kind",
    "write_report",
    "runner",
    "save_program",
]
assert sorted(__all__) == sorted(_WHERE)


__getattr__, __dir__ = lazy_names(__name__, _WHERE)


if TYPE_CHECKING:  # for type checkers and editors: the same names, imported eagerly
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
    from assay.experiments._html_report import build_report
    from assay.experiments._items import load_items
    from assay.experiments._report import evaluate_tables
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
    from assay.experiments._runners import (
        ConfigOptions,
        Options,
        Runner,
        RunOptions,
        argument,
        cli_type,
        get_runner,
        known_runners,
        lm_cache,
        option,
        run_kind,
        runner,
        write_report,
    )
    from assay.experiments.compare import compare
    from assay.experiments.optimize import OptimizeConfig, optimize
    from assay.experiments.runs import Run, RunStore, judge_items, judge_one
    from assay.programs import save_program
