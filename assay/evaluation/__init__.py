"""Judging items and measuring the verdicts against references: ``assay evaluate`` (judge, score,
report, MLflow), ``assay agreement`` (two sets of verdicts, or a judge against several
annotators), and the agreement figures both write.

Names load on first use (PEP 562): ``assay evaluate`` does not load the agreement command."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay._lazy import lazy_names

_WHERE = {
    "evaluate": "_evaluate",
    "evaluate_metrics": "_evaluate",
    "run_items": "_evaluate",
    "Agreement": "_results",
    "AgreementResult": "_results",
    "AltTestOutcome": "_results",
    "AnnotatorsReport": "_results",
    "ConfusionMatrix": "_results",
    "Counts": "_results",
    "DisagreementRecord": "_results",
    "EvaluateResult": "_results",
    "EvaluateSummary": "_results",
    "RunUsage": "_results",
    "agreement_summary": "_scoring",
    "metric_kind": "_scoring",
    "summarize_run": "_scoring",
    "verdict_names": "_scoring",
    "evaluate_tables": "_report",
    "build_report": "_html_report",
    "agreement": "_agreement",
    "read_verdicts": "_agreement",
    "alt_test_left_out": "_annotators",
    "annotators_report": "_annotators",
    "DawidSkeneReport": "_results",
    "JudgeFigures": "_results",
    "PairExcess": "_results",
    "PanelReport": "_results",
    "dawid_skene_console": "_no_labels",
    "dawid_skene_report": "_no_labels",
    "panel_over_run": "_no_labels",
    "panel_lead": "_no_labels",
    "RaterModelReport": "_results",
    "ScaleUseReport": "_results",
    "SelfPreferenceReport": "_results",
    "scale_use_console": "_scale_use",
    "scale_use_report": "_scale_use",
    "self_preference_console": "_self_preference",
    "self_preference_report": "_self_preference",
}

if TYPE_CHECKING:  # for type checkers and editors: the same names, imported eagerly
    from assay.evaluation._agreement import agreement, read_verdicts
    from assay.evaluation._annotators import alt_test_left_out, annotators_report
    from assay.evaluation._evaluate import evaluate, evaluate_metrics, run_items
    from assay.evaluation._html_report import build_report
    from assay.evaluation._no_labels import (
        dawid_skene_console,
        dawid_skene_report,
        panel_lead,
        panel_over_run,
    )
    from assay.evaluation._report import evaluate_tables
    from assay.evaluation._results import (
        Agreement,
        AgreementResult,
        AltTestOutcome,
        AnnotatorsReport,
        ConfusionMatrix,
        Counts,
        DawidSkeneReport,
        DisagreementRecord,
        EvaluateResult,
        EvaluateSummary,
        JudgeFigures,
        PairExcess,
        PanelReport,
        RaterModelReport,
        RunUsage,
        ScaleUseReport,
        SelfPreferenceReport,
    )
    from assay.evaluation._scale_use import scale_use_console, scale_use_report
    from assay.evaluation._scoring import (
        agreement_summary,
        metric_kind,
        summarize_run,
        verdict_names,
    )
    from assay.evaluation._self_preference import (
        self_preference_console,
        self_preference_report,
    )

__all__ = [
    "Agreement",
    "AgreementResult",
    "AltTestOutcome",
    "AnnotatorsReport",
    "ConfusionMatrix",
    "Counts",
    "DawidSkeneReport",
    "DisagreementRecord",
    "EvaluateResult",
    "EvaluateSummary",
    "JudgeFigures",
    "PairExcess",
    "PanelReport",
    "RaterModelReport",
    "RunUsage",
    "ScaleUseReport",
    "SelfPreferenceReport",
    "agreement",
    "agreement_summary",
    "alt_test_left_out",
    "annotators_report",
    "build_report",
    "dawid_skene_console",
    "dawid_skene_report",
    "evaluate",
    "evaluate_metrics",
    "evaluate_tables",
    "metric_kind",
    "panel_lead",
    "panel_over_run",
    "read_verdicts",
    "run_items",
    "scale_use_console",
    "scale_use_report",
    "self_preference_console",
    "self_preference_report",
    "summarize_run",
    "verdict_names",
]
assert sorted(__all__) == sorted(_WHERE)


__getattr__, __dir__ = lazy_names(__name__, _WHERE)
