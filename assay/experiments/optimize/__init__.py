"""``assay optimize``: compile a judge with a DSPy optimizer on a train split and measure it
before and after on held-out splits (config, splits, objective, optimizers, measuring, run,
report — one module each)."""

from assay.experiments.optimize._config import (
    OPTIMIZERS,
    InvarianceConfig,
    OptimizeConfig,
    OptimizerConfig,
    SplitConfig,
)
from assay.experiments.optimize._measure import measure, objective_parts
from assay.experiments.optimize._objective import (
    InvariantJudge,
    consistency,
    examples,
    format_variants,
    make_metric,
)
from assay.experiments.optimize._optimizers import (
    SharedUsageTracker,
    make_optimizer,
    usage_by_model,
)
from assay.experiments.optimize._report import render_result
from assay.experiments.optimize._results import (
    Measurement,
    ObjectiveParts,
    OptimizeResult,
    OptimizeUsage,
)
from assay.experiments.optimize._run import optimize
from assay.experiments.optimize._splits import (
    MIN_PER_LABEL,
    SPLITS,
    check_splittable,
    label_counts,
    min_items_per_label,
    split_three,
)

__all__ = [
    "Measurement",
    "ObjectiveParts",
    "OptimizeResult",
    "OptimizeUsage",
    "MIN_PER_LABEL",
    "OPTIMIZERS",
    "SPLITS",
    "InvarianceConfig",
    "InvariantJudge",
    "OptimizeConfig",
    "OptimizerConfig",
    "SharedUsageTracker",
    "SplitConfig",
    "check_splittable",
    "consistency",
    "examples",
    "format_variants",
    "label_counts",
    "make_metric",
    "make_optimizer",
    "measure",
    "min_items_per_label",
    "objective_parts",
    "optimize",
    "render_result",
    "split_three",
    "usage_by_model",
]
