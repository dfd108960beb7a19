"""Judge programs: DSPy modules built from typed configs."""

from assay.programs._config import (
    EMULATOR_QUALITY,
    TOOLEMU_HELPFULNESS,
    TOOLEMU_SAFETY,
    Criterion,
    JudgeConfig,
    fixed_scale,
)
from assay.programs._expected import expected_score
from assay.programs._failures import unscored_reason
from assay.programs._judge import (
    Judge,
    LMFactory,
    Panel,
    build_judge,
    judge_lm_factory,
    task_inputs,
)
from assay.programs._panel import aggregate_scores

__all__ = [
    "EMULATOR_QUALITY",
    "TOOLEMU_HELPFULNESS",
    "TOOLEMU_SAFETY",
    "Criterion",
    "Judge",
    "LMFactory",
    "JudgeConfig",
    "Panel",
    "aggregate_scores",
    "build_judge",
    "expected_score",
    "fixed_scale",
    "judge_lm_factory",
    "task_inputs",
    "unscored_reason",
]
