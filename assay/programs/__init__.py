"""Judge programs: DSPy modules built from typed configs."""

from assay._files import read_text_field
from assay.programs._agent_perturb import (
    AgentPerturber,
    CriterionVerifier,
    EditMeta,
    EditRecord,
    MessageEditor,
    Outcome,
    StageRunner,
    TranscriptPlanner,
    TranscriptSummarizer,
)
from assay.programs._agent_plan import Objective, objective, sanitize_plan
from assay.programs._config import (
    Criterion,
    JudgeConfig,
    ScoreLevel,
    fixed_scale,
    state_file_digest,
)
from assay.programs._expected import expected_score, verdict_distribution
from assay.programs._failures import unscored_reason
from assay.programs._invert import TaskInverter, TaskParaphraser
from assay.programs._judge import (
    Judge,
    LMFactory,
    Panel,
    build_judge,
    judge_lm_factory,
    task_inputs,
)
from assay.programs._panel import (
    RUN_LEVEL_AGGREGATES,
    RUN_LEVEL_MAX_CLASSES,
    aggregate_scores,
)
from assay.programs._perturb import Perturber, ProbeValidator
from assay.programs._state import (
    is_mlflow_uri,
    load_program_state,
    resolve_program_state,
    save_program,
)
from assay.programs._synthetic import ScoreGenerator, ScoreValidator
from assay.programs.kinds import (
    EMULATOR_QUALITY,
    PAIRWISE,
    PAIRWISE_NO_TIE,
    TOOLEMU_HELPFULNESS,
    TOOLEMU_SAFETY,
    JudgeKind,
    get_kind,
    is_pairwise,
    judge_kind,
    known_kinds,
    mirror_preference,
    presentation_order,
    swap_pair,
)

__all__ = [
    "AgentPerturber",
    "CriterionVerifier",
    "EditMeta",
    "EditRecord",
    "MessageEditor",
    "Objective",
    "Outcome",
    "StageRunner",
    "TranscriptPlanner",
    "TranscriptSummarizer",
    "objective",
    "sanitize_plan",
    "EMULATOR_QUALITY",
    "PAIRWISE",
    "PAIRWISE_NO_TIE",
    "TOOLEMU_HELPFULNESS",
    "TOOLEMU_SAFETY",
    "Criterion",
    "Judge",
    "JudgeKind",
    "LMFactory",
    "JudgeConfig",
    "Panel",
    "Perturber",
    "ProbeValidator",
    "ScoreGenerator",
    "ScoreLevel",
    "state_file_digest",
    "ScoreValidator",
    "TaskInverter",
    "TaskParaphraser",
    "RUN_LEVEL_AGGREGATES",
    "RUN_LEVEL_MAX_CLASSES",
    "aggregate_scores",
    "build_judge",
    "expected_score",
    "fixed_scale",
    "get_kind",
    "is_pairwise",
    "mirror_preference",
    "presentation_order",
    "swap_pair",
    "judge_kind",
    "known_kinds",
    "is_mlflow_uri",
    "load_program_state",
    "resolve_program_state",
    "read_text_field",
    "save_program",
    "judge_lm_factory",
    "task_inputs",
    "unscored_reason",
    "verdict_distribution",
]
