"""Decisions with guarantees, made on finished runs read back through their seal: ``assay
certify`` (a judge admitted by one-sided bounds against a policy), ``assay estimate`` (a rate or a
mean score from a judge and a few human labels: prediction-powered inference; its review queue
of items to label next in ``review_queue``), ``assay calibrate`` (a threshold or map fitted on one split, measured on
another), ``assay conformal`` (prediction sets), ``assay selective`` (trust or escalate, in
``selective/``), ``compare --paired`` (two judges on the same items) and ``drift`` (one judge at
two times).

Names load on first use (PEP 562)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay._lazy import lazy_names

_WHERE = {
    "calibrate": "_calibrate",
    "split_ids": "_calibrate",
    "CalibrationEvaluation": "_calibration_results",
    "CalibrationFit": "_calibration_results",
    "CalibrationResult": "_calibration_results",
    "MapOutcome": "_calibration_results",
    "CERTIFICATE": "_certify",
    "Certificate": "_certify",
    "bounds_table": "_certify",
    "certificate_report": "_certify",
    "certify_run": "_certify",
    "ledger_of": "_certify",
    "read_certificate": "_certify",
    "require_certificates": "_certify",
    "TunedItemsError": "_tuning",
    "TuningRecord": "_tuning",
    "record_tuning": "_tuning",
    "refuse_tuned_items": "_tuning",
    "ConformalConfig": "_conformal",
    "ConformalSummary": "_conformal",
    "build_conformal_report": "_conformal",
    "conformal": "_conformal",
    "conformal_headline": "_conformal",
    "EstimateConfig": "_estimate",
    "EstimateSummary": "_estimate",
    "SampleCheck": "_estimate",
    "estimate": "_estimate",
    "estimate_items": "_estimate",
    "Target": "_estimate_pool",
    "build_estimate_report": "_estimate_report",
    "estimate_console": "_estimate_report",
    "estimate_words": "_estimate_report",
    "estimate_headline": "_estimate_report",
    "estimate_tables": "_estimate_report",
    "export_queue": "_review_files",
    "import_queue": "_review_files",
    "LabelQueue": "assay.decisions.review_queue",
    "ReviewQueue": "assay.decisions.review_queue",
    "is_label_queue": "assay.decisions.review_queue",
    "JudgeRun": "_finished",
    "judged_items": "_finished",
    "read_evaluate_run": "_finished",
    "read_judge_run": "_finished",
    "paired": "_paired",
    "drift": "_drift",
    "anchor_shift": "_shift",
    "score_series": "_shift",
    "DriftSummary": "_paired_results",
    "SeriesPoint": "_paired_results",
    "SeriesResult": "_paired_results",
    "ShiftResult": "_paired_results",
    "build_paired_report": "_paired_report",
    "render_paired_console": "_paired_report",
    "DriftResult": "_paired_results",
    "ItemChange": "_paired_results",
    "LeftOutItem": "_paired_results",
    "PairedResult": "_paired_results",
    "PairedSide": "_paired_results",
}

if TYPE_CHECKING:  # for type checkers and editors: the same names, imported eagerly
    from assay.decisions._calibrate import calibrate, split_ids
    from assay.decisions._calibration_results import (
        CalibrationEvaluation,
        CalibrationFit,
        CalibrationResult,
        MapOutcome,
    )
    from assay.decisions._certify import (
        CERTIFICATE,
        Certificate,
        bounds_table,
        certificate_report,
        certify_run,
        ledger_of,
        read_certificate,
        require_certificates,
    )
    from assay.decisions._conformal import (
        ConformalConfig,
        ConformalSummary,
        build_conformal_report,
        conformal,
        conformal_headline,
    )
    from assay.decisions._drift import drift
    from assay.decisions._estimate import (
        EstimateConfig,
        EstimateSummary,
        SampleCheck,
        estimate,
        estimate_items,
    )
    from assay.decisions._estimate_pool import Target
    from assay.decisions._estimate_report import (
        build_estimate_report,
        estimate_console,
        estimate_headline,
        estimate_tables,
        estimate_words,
    )
    from assay.decisions._finished import JudgeRun, judged_items, read_evaluate_run, read_judge_run
    from assay.decisions._paired import paired
    from assay.decisions._paired_report import build_paired_report, render_paired_console
    from assay.decisions._paired_results import (
        DriftResult,
        DriftSummary,
        ItemChange,
        LeftOutItem,
        PairedResult,
        PairedSide,
        SeriesPoint,
        SeriesResult,
        ShiftResult,
    )
    from assay.decisions._review_files import export_queue, import_queue
    from assay.decisions._shift import anchor_shift, score_series
    from assay.decisions._tuning import (
        TunedItemsError,
        TuningRecord,
        record_tuning,
        refuse_tuned_items,
    )
    from assay.decisions.review_queue import LabelQueue, ReviewQueue, is_label_queue

__all__ = [
    "CERTIFICATE",
    "CalibrationEvaluation",
    "CalibrationFit",
    "CalibrationResult",
    "Certificate",
    "ConformalConfig",
    "ConformalSummary",
    "DriftResult",
    "DriftSummary",
    "SeriesPoint",
    "SeriesResult",
    "ShiftResult",
    "anchor_shift",
    "score_series",
    "ItemChange",
    "JudgeRun",
    "LeftOutItem",
    "MapOutcome",
    "PairedResult",
    "PairedSide",
    "EstimateConfig",
    "EstimateSummary",
    "LabelQueue",
    "ReviewQueue",
    "SampleCheck",
    "bounds_table",
    "build_conformal_report",
    "build_paired_report",
    "calibrate",
    "certificate_report",
    "certify_run",
    "conformal",
    "conformal_headline",
    "drift",
    "estimate",
    "estimate_items",
    "Target",
    "build_estimate_report",
    "estimate_console",
    "estimate_headline",
    "estimate_tables",
    "estimate_words",
    "export_queue",
    "import_queue",
    "is_label_queue",
    "judged_items",
    "ledger_of",
    "paired",
    "read_certificate",
    "read_evaluate_run",
    "read_judge_run",
    "render_paired_console",
    "record_tuning",
    "refuse_tuned_items",
    "require_certificates",
    "split_ids",
    "TunedItemsError",
    "TuningRecord",
]
assert sorted(__all__) == sorted(_WHERE)


__getattr__, __dir__ = lazy_names(__name__, _WHERE)
