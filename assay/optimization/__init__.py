"""``assay optimize``: compile a judge with a DSPy optimizer on a train split and measure it
before and after on held-out splits (config, splits, objective, optimizers, measuring, run,
report — one module each)."""

from assay.optimization._config import (
    OPTIMIZERS,
    InvarianceConfig,
    OptimizeConfig,
    OptimizerConfig,
    SplitConfig,
)
from assay.optimization._measure import measure, objective_parts
from assay.optimization._objective import (
    InvariantJudge,
    consistency,
    examples,
    format_variants,
    make_metric,
)
from assay.optimization._optimizers import (
    SharedUsageTracker,
    make_optimizer,
    usage_by_model,
)
from assay.optimization._report import render_result
from assay.optimization._results import (
    Measurement,
    ObjectiveParts,
    OptimizeResult,
    OptimizeUsage,
)
from assay.optimization._run import optimize
from assay.optimization._splits import (
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
