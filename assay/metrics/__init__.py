"""Agreement, failure, ordinal, classification, interval and cost metrics, estimates of a
mean from few human labels and many judge predictions (prediction-powered inference), and the
statistics of a judge's biases (a cue against a placebo, self-preference, scale compression,
raters' severity and discrimination), and systems ranked from pairwise verdicts (Bradley–Terry).

Pure functions in scikit-learn style, ``metric(y_true, y_pred, **options)``, on 0-based integer
category indices unless stated; :func:`agreement_metrics` gathers them with bootstrap CIs for a
report, and the DSPy adapters score one example at a time.

Names are loaded on first use: a command that only reads a config or a result (a judge's
``CalibrationMap``, a ``MetricValue``) does not import NumPy, SciPy or scikit-learn on its way
to the first LM call; the statistics load when they are computed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay._lazy import lazy_names

_NAMES = {
    "_alt_test": ("AltTestResult", "AnnotatorComparison", "alt_test"),
    "_annotators": (
        "AlphaLevel",
        "AnnotationMatrix",
        "annotator_agreement",
        "count_table",
        "fleiss_kappa",
        "krippendorff_alpha",
    ),
    "_bradley_terry": (
        "BradleyTerry",
        "CyclicTriads",
        "JudgeAgreement",
        "OrderEffect",
        "Strength",
        "bradley_terry",
    ),
    "_calibration": (
        "BinStrategy",
        "ReliabilityBin",
        "brier_score",
        "calibration_metrics",
        "expected_calibration_error",
        "log_loss",
        "plot_reliability_diagram",
        "reliability_bins",
        "to_unit_interval",
    ),
    "_calibration_maps": (
        "CalibrationKind",
        "CalibrationMap",
        "IsotonicMap",
        "PlattMap",
        "ThresholdMap",
        "fit_calibration",
        "load_calibration",
    ),
    "_classification": (
        "accuracy",
        "balanced_accuracy",
        "confusion_matrix",
        "error_rate",
        "false_negative_rate",
        "false_positive_rate",
    ),
    "_certify": (
        "Bar",
        "Certification",
        "MetricBound",
        "Policy",
        "bootstrap_bound",
        "certify",
        "clopper_pearson_lower",
        "clopper_pearson_upper",
        "inconsistency",
    ),
    "_cluster": (
        "WeightedStatistic",
        "cluster_bootstrap_ci",
        "cluster_mean",
        "effective_trials",
        "paired_design_effect",
        "weighted_mean",
    ),
    "_bias_records": (
        "ItemQuality",
        "RaterModel",
        "RaterParameters",
        "ScaleCompression",
        "SelfPreference",
    ),
    "_compression": ("scale_compression",),
    "_conformal": (
        "ClassCoverage",
        "ConformalCalibration",
        "ConformalMethod",
        "SetSummary",
        "calibrate_conformal",
        "conformal_quantile",
        "conformal_rank",
        "is_contiguous",
        "label_scores",
        "prediction_sets",
        "probability_matrix",
        "set_coverage",
        "true_label_scores",
    ),
    "_cost": ("cost_per_accuracy_point",),
    "_dawid_skene": (
        "EXCESS_THRESHOLD",
        "DawidSkeneResult",
        "JudgeReliability",
        "PairDependence",
        "dawid_skene",
    ),
    "_direction": ("best_at", "direction", "goodness", "higher_is_better"),
    "_disagreements": ("Disagreement", "DisagreementDict", "disagreements"),
    "_active": ("active_ppi_mean", "active_sampling_probabilities", "draw_active_sample"),
    "_drift": ("DriftTest", "Stability", "drift_test", "item_change_rates", "stability"),
    "_dspy": (
        "DSPyMetric",
        "absolute_error_score",
        "exact_match",
        "log_loss_score",
        "quadratic_agreement",
        "within_one",
    ),
    "_estimates": (
        "METHOD_NAMES",
        "EstimateMethod",
        "MeanEstimate",
        "StratumEstimate",
        "effective_labels",
        "estimates_table",
    ),
    "_failure": (
        "FailureRates",
        "failure_incidence",
        "failure_incidence_batched",
        "failure_precision",
        "failure_precision_batched",
        "failure_rates",
    ),
    "_format": ("fmt", "fmt_ci", "metric_table", "metrics_table"),
    "_intervals": (
        "bootstrap_ci",
        "clopper_pearson_interval",
        "effective_clopper_pearson_interval",
        "mean_of_two_rates_interval",
        "newcombe_paired_interval",
        "wilson_interval",
    ),
    "_irt": ("rater_model",),
    "_kappa": (
        "KappaWeights",
        "binarize",
        "cohen_kappa",
        "kappa_binary",
        "kappa_from_joint",
        "weight_matrix",
    ),
    "_majority": ("Majority", "Tie", "majority_vote"),
    "_multitest": ("benjamini_hochberg", "holm"),
    "_ordinal": ("ccc", "mae", "pearson", "spearman"),
    "_paired": (
        "PAIRED_CLUSTER_BOOTSTRAP",
        "PairedComparison",
        "PairedDifference",
        "bootstrap_p_value",
        "items_needed_mcnemar",
        "items_needed_se",
        "mcnemar_exact",
        "paired_comparison",
    ),
    "_pairwise": (
        "KAPPAS",
        "InterAnnotatorKappa",
        "PairKappas",
        "inter_annotator_kappa",
        "ordinal_kappas",
    ),
    "_placebo": (
        "flips_toward",
        "one_sided_mcnemar",
        "placebo_effect",
        "two_sided_mcnemar",
        "two_sided_placebo_effect",
        "with_fdr",
    ),
    "_ppi": (
        "FEW_LABELLED",
        "FLOAT_ROUNDING",
        "PredictionKind",
        "few_labels",
        "human_only_mean",
        "mean_estimates",
        "ppi_mean",
        "rogan_gladen_mean",
        "rough_note",
        "strata_labels_worth",
        "stratified_ppi_mean",
    ),
    "_ppi_plan": (
        "LabelPlan",
        "PilotMoments",
        "half_width_for_labels",
        "labels_needed",
        "pilot_moments",
    ),
    "_prevalence": ("PrevalenceEstimate", "corrected_prevalence", "rogan_gladen"),
    "_rates": ("balanced_rate", "binomial_rate", "mean_ci", "rate"),
    "_robust_vote": ("capped_weights", "reliability_weights", "trimmed_mean", "weighted_vote"),
    "_report": ("TRADE_OFFS", "MetricKind", "agreement_confusion", "agreement_metrics"),
    "_sample_shift": ("FeatureKind", "SampleComparison", "compare_samples"),
    "_samples": ("held_out_majority_agreement",),
    "_self_preference": ("self_preference",),
    "_shift": ("EwmaChart", "ShiftDecomposition", "ewma_chart", "shift_decomposition"),
    "_selective": (
        "SelectiveThreshold",
        "calibrate_cascade",
        "cascade_assignment",
        "keeps",
        "risk_p_value",
        "selective_threshold",
    ),
    "_threshold": ("fit_threshold",),
    "_validate": ("category_ranks",),
    "_value": (
        "BOOTSTRAP",
        "BootstrapCI",
        "CLOPPER_PEARSON",
        "CLOPPER_PEARSON_CLUSTERS",
        "CLUSTER_BOOTSTRAP",
        "MAX_RESAMPLES",
        "MIN_RESAMPLES",
        "NARROWER_THAN_SHOWN",
        "MetricDict",
        "MetricValue",
        "PlaceboEffect",
        "Undefinable",
        "Resamples",
        "WILSON",
    ),
}
_WHERE = {name: f"assay.metrics.{module}" for module, names in _NAMES.items() for name in names}
__all__ = [
    "best_at",
    "direction",
    "goodness",
    "higher_is_better",
    "failure_incidence_batched",
    "failure_precision_batched",
    "kappa_from_joint",
    "weight_matrix",
    "fit_threshold",
    "rate",
    "balanced_rate",
    "binomial_rate",
    "mean_ci",
    # agreement
    "KappaWeights",
    "cohen_kappa",
    "binarize",
    "kappa_binary",
    # failure detection
    "failure_precision",
    "failure_incidence",
    "failure_rates",
    "FailureRates",
    # ordinal
    "ccc",
    "pearson",
    "spearman",
    "mae",
    # classification
    "accuracy",
    "error_rate",
    "false_positive_rate",
    "false_negative_rate",
    "balanced_accuracy",
    "confusion_matrix",
    # intervals
    "BootstrapCI",
    "MAX_RESAMPLES",
    "MIN_RESAMPLES",
    "NARROWER_THAN_SHOWN",
    "Resamples",
    "bootstrap_ci",
    "clopper_pearson_interval",
    "effective_clopper_pearson_interval",
    "effective_trials",
    "mean_of_two_rates_interval",
    "wilson_interval",
    "cluster_bootstrap_ci",
    "cluster_mean",
    "paired_design_effect",
    "weighted_mean",
    "WeightedStatistic",
    # report
    "MetricKind",
    "MetricDict",
    "MetricValue",
    "Undefinable",
    "TRADE_OFFS",
    "BOOTSTRAP",
    "CLOPPER_PEARSON",
    "CLOPPER_PEARSON_CLUSTERS",
    "CLUSTER_BOOTSTRAP",
    "WILSON",
    "agreement_metrics",
    "agreement_confusion",
    # DSPy adapters
    "DSPyMetric",
    "exact_match",
    "absolute_error_score",
    "quadratic_agreement",
    "within_one",
    "log_loss_score",
    # cost
    "cost_per_accuracy_point",
    # several annotators
    "KAPPAS",
    "Majority",
    "Tie",
    "majority_vote",
    "category_ranks",
    "InterAnnotatorKappa",
    "PairKappas",
    "inter_annotator_kappa",
    "ordinal_kappas",
    # formatting
    "fmt",
    "fmt_ci",
    "metric_table",
    "metrics_table",
    # calibration
    "BinStrategy",
    "ReliabilityBin",
    "expected_calibration_error",
    "brier_score",
    "log_loss",
    "reliability_bins",
    "calibration_metrics",
    "plot_reliability_diagram",
    "to_unit_interval",
    "CalibrationKind",
    "CalibrationMap",
    "IsotonicMap",
    "PlattMap",
    "ThresholdMap",
    "fit_calibration",
    "load_calibration",
    # prevalence correction
    "PrevalenceEstimate",
    "corrected_prevalence",
    "rogan_gladen",
    # a mean from few human labels and many predictions (prediction-powered inference)
    "EstimateMethod",
    "METHOD_NAMES",
    "MeanEstimate",
    "StratumEstimate",
    "effective_labels",
    "estimates_table",
    "FEW_LABELLED",
    "FLOAT_ROUNDING",
    "PredictionKind",
    "few_labels",
    "human_only_mean",
    "mean_estimates",
    "ppi_mean",
    "rogan_gladen_mean",
    "rough_note",
    "strata_labels_worth",
    "stratified_ppi_mean",
    "LabelPlan",
    "PilotMoments",
    "half_width_for_labels",
    "labels_needed",
    "pilot_moments",
    "FeatureKind",
    "SampleComparison",
    "compare_samples",
    "active_ppi_mean",
    "active_sampling_probabilities",
    "draw_active_sample",
    # several annotators
    "AnnotationMatrix",
    "AlphaLevel",
    "count_table",
    "fleiss_kappa",
    "krippendorff_alpha",
    "annotator_agreement",
    "alt_test",
    "AltTestResult",
    "AnnotatorComparison",
    # samples a majority vote needs
    "held_out_majority_agreement",
    # where judge and reference disagree
    "Disagreement",
    "DisagreementDict",
    "disagreements",
    # certification: one-sided bounds against a policy's bars
    "Bar",
    "Certification",
    "MetricBound",
    "Policy",
    "bootstrap_bound",
    "certify",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "inconsistency",
    # selective evaluation and cascades (trust or escalate)
    "SelectiveThreshold",
    "calibrate_cascade",
    "cascade_assignment",
    "keeps",
    "risk_p_value",
    "selective_threshold",
    # two judges on the same items (paired comparison), one judge at two times (drift)
    "PAIRED_CLUSTER_BOOTSTRAP",
    "PairedComparison",
    "PairedDifference",
    "bootstrap_p_value",
    "items_needed_mcnemar",
    "items_needed_se",
    "mcnemar_exact",
    "paired_comparison",
    "DriftTest",
    "Stability",
    "drift_test",
    "item_change_rates",
    "stability",
    # a score change split into the judge's shift and the system's change; a control chart
    "EwmaChart",
    "ShiftDecomposition",
    "ewma_chart",
    "shift_decomposition",
    # conformal prediction sets
    "ClassCoverage",
    "ConformalCalibration",
    "ConformalMethod",
    "SetSummary",
    "calibrate_conformal",
    "conformal_quantile",
    "conformal_rank",
    "is_contiguous",
    "label_scores",
    "prediction_sets",
    "probability_matrix",
    "set_coverage",
    "true_label_scores",
    # bias against a placebo, self-preference, scale compression, raters' severity (IRT)
    "PlaceboEffect",
    "benjamini_hochberg",
    "holm",
    "flips_toward",
    "newcombe_paired_interval",
    "one_sided_mcnemar",
    "placebo_effect",
    "two_sided_mcnemar",
    "two_sided_placebo_effect",
    "with_fdr",
    "SelfPreference",
    "self_preference",
    "ScaleCompression",
    "scale_compression",
    "ItemQuality",
    "RaterModel",
    "RaterParameters",
    "rater_model",
    # judges combined without labels: Dawid–Skene, and votes one member cannot drag
    "EXCESS_THRESHOLD",
    "DawidSkeneResult",
    "JudgeReliability",
    "PairDependence",
    "dawid_skene",
    "capped_weights",
    "reliability_weights",
    "trimmed_mean",
    "weighted_vote",
    # systems ranked from pairwise verdicts (Bradley–Terry with a first-position effect)
    "BradleyTerry",
    "CyclicTriads",
    "JudgeAgreement",
    "OrderEffect",
    "Strength",
    "bradley_terry",
]
assert sorted(__all__) == sorted(_WHERE)


__getattr__, __dir__ = lazy_names(__name__, _WHERE)


if TYPE_CHECKING:  # for type checkers and editors: the same names, imported eagerly
    from assay.metrics._active import (
        active_ppi_mean,
        active_sampling_probabilities,
        draw_active_sample,
    )
    from assay.metrics._alt_test import AltTestResult, AnnotatorComparison, alt_test
    from assay.metrics._annotators import (
        AlphaLevel,
        AnnotationMatrix,
        annotator_agreement,
        count_table,
        fleiss_kappa,
        krippendorff_alpha,
    )
    from assay.metrics._bias_records import (
        ItemQuality,
        RaterModel,
        RaterParameters,
        ScaleCompression,
        SelfPreference,
    )
    from assay.metrics._bradley_terry import (
        BradleyTerry,
        CyclicTriads,
        JudgeAgreement,
        OrderEffect,
        Strength,
        bradley_terry,
    )
    from assay.metrics._calibration import (
        BinStrategy,
        ReliabilityBin,
        brier_score,
        calibration_metrics,
        expected_calibration_error,
        log_loss,
        plot_reliability_diagram,
        reliability_bins,
        to_unit_interval,
    )
    from assay.metrics._calibration_maps import (
        CalibrationKind,
        CalibrationMap,
        IsotonicMap,
        PlattMap,
        ThresholdMap,
        fit_calibration,
        load_calibration,
    )
    from assay.metrics._certify import (
        Bar,
        Certification,
        MetricBound,
        Policy,
        bootstrap_bound,
        certify,
        clopper_pearson_lower,
        clopper_pearson_upper,
        inconsistency,
    )
    from assay.metrics._classification import (
        accuracy,
        balanced_accuracy,
        confusion_matrix,
        error_rate,
        false_negative_rate,
        false_positive_rate,
    )
    from assay.metrics._cluster import (
        WeightedStatistic,
        cluster_bootstrap_ci,
        cluster_mean,
        effective_trials,
        paired_design_effect,
        weighted_mean,
    )
    from assay.metrics._compression import scale_compression
    from assay.metrics._conformal import (
        ClassCoverage,
        ConformalCalibration,
        ConformalMethod,
        SetSummary,
        calibrate_conformal,
        conformal_quantile,
        conformal_rank,
        is_contiguous,
        label_scores,
        prediction_sets,
        probability_matrix,
        set_coverage,
        true_label_scores,
    )
    from assay.metrics._cost import cost_per_accuracy_point
    from assay.metrics._dawid_skene import (
        EXCESS_THRESHOLD,
        DawidSkeneResult,
        JudgeReliability,
        PairDependence,
        dawid_skene,
    )
    from assay.metrics._direction import best_at, direction, goodness, higher_is_better
    from assay.metrics._disagreements import Disagreement, DisagreementDict, disagreements
    from assay.metrics._drift import DriftTest, Stability, drift_test, item_change_rates, stability
    from assay.metrics._dspy import (
        DSPyMetric,
        absolute_error_score,
        exact_match,
        log_loss_score,
        quadratic_agreement,
        within_one,
    )
    from assay.metrics._estimates import (
        METHOD_NAMES,
        EstimateMethod,
        MeanEstimate,
        StratumEstimate,
        effective_labels,
        estimates_table,
    )
    from assay.metrics._failure import (
        FailureRates,
        failure_incidence,
        failure_incidence_batched,
        failure_precision,
        failure_precision_batched,
        failure_rates,
    )
    from assay.metrics._format import fmt, fmt_ci, metric_table, metrics_table
    from assay.metrics._intervals import (
        bootstrap_ci,
        clopper_pearson_interval,
        effective_clopper_pearson_interval,
        mean_of_two_rates_interval,
        newcombe_paired_interval,
        wilson_interval,
    )
    from assay.metrics._irt import rater_model
    from assay.metrics._kappa import (
        KappaWeights,
        binarize,
        cohen_kappa,
        kappa_binary,
        kappa_from_joint,
        weight_matrix,
    )
    from assay.metrics._majority import Majority, Tie, majority_vote
    from assay.metrics._multitest import benjamini_hochberg, holm
    from assay.metrics._ordinal import ccc, mae, pearson, spearman
    from assay.metrics._paired import (
        PAIRED_CLUSTER_BOOTSTRAP,
        PairedComparison,
        PairedDifference,
        bootstrap_p_value,
        items_needed_mcnemar,
        items_needed_se,
        mcnemar_exact,
        paired_comparison,
    )
    from assay.metrics._pairwise import (
        KAPPAS,
        InterAnnotatorKappa,
        PairKappas,
        inter_annotator_kappa,
        ordinal_kappas,
    )
    from assay.metrics._placebo import (
        flips_toward,
        one_sided_mcnemar,
        placebo_effect,
        two_sided_mcnemar,
        two_sided_placebo_effect,
        with_fdr,
    )
    from assay.metrics._ppi import (
        FEW_LABELLED,
        FLOAT_ROUNDING,
        PredictionKind,
        few_labels,
        human_only_mean,
        mean_estimates,
        ppi_mean,
        rogan_gladen_mean,
        rough_note,
        strata_labels_worth,
        stratified_ppi_mean,
    )
    from assay.metrics._ppi_plan import (
        LabelPlan,
        PilotMoments,
        half_width_for_labels,
        labels_needed,
        pilot_moments,
    )
    from assay.metrics._prevalence import PrevalenceEstimate, corrected_prevalence, rogan_gladen
    from assay.metrics._rates import balanced_rate, binomial_rate, mean_ci, rate
    from assay.metrics._report import (
        TRADE_OFFS,
        MetricKind,
        agreement_confusion,
        agreement_metrics,
    )
    from assay.metrics._robust_vote import (
        capped_weights,
        reliability_weights,
        trimmed_mean,
        weighted_vote,
    )
    from assay.metrics._sample_shift import FeatureKind, SampleComparison, compare_samples
    from assay.metrics._samples import held_out_majority_agreement
    from assay.metrics._selective import (
        SelectiveThreshold,
        calibrate_cascade,
        cascade_assignment,
        keeps,
        risk_p_value,
        selective_threshold,
    )
    from assay.metrics._self_preference import self_preference
    from assay.metrics._shift import (
        EwmaChart,
        ShiftDecomposition,
        ewma_chart,
        shift_decomposition,
    )
    from assay.metrics._threshold import fit_threshold
    from assay.metrics._validate import category_ranks
    from assay.metrics._value import (
        BOOTSTRAP,
        CLOPPER_PEARSON,
        CLOPPER_PEARSON_CLUSTERS,
        CLUSTER_BOOTSTRAP,
        MAX_RESAMPLES,
        MIN_RESAMPLES,
        NARROWER_THAN_SHOWN,
        WILSON,
        BootstrapCI,
        MetricDict,
        MetricValue,
        PlaceboEffect,
        Resamples,
        Undefinable,
    )
