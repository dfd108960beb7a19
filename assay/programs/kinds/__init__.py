"""Judge kinds: one file per kind (``task:`` in a judge config), registered by name.

Add a kind: copy ``response.py``, set its signature, verdict / judged fields and ``inputs``,
and register it with ``@judge_kind("name")`` — nothing else changes. A kind reads its judge
config as a :class:`JudgeSettings` and the judge it runs in as a :class:`JudgeProgram`.
"""

from assay.programs.kinds._base import (
    JudgeCallFailed,
    JudgeKind,
    PluginFailed,
    get_kind,
    judge_kind,
    known_kinds,
)
from assay.programs.kinds._settings import (
    CriterionSettings,
    JudgeProgram,
    JudgeSettings,
    MlflowSettings,
)
from assay.programs.kinds.emulator_quality import EMULATOR_QUALITY
from assay.programs.kinds.pairwise import (
    PAIRWISE,
    PAIRWISE_NO_TIE,
    is_pairwise,
    mirror_preference,
    presentation_order,
    swap_pair,
)
from assay.programs.kinds.toolemu_helpfulness import TOOLEMU_HELPFULNESS
from assay.programs.kinds.toolemu_safety import TOOLEMU_SAFETY

__all__ = [
    "EMULATOR_QUALITY",
    "PAIRWISE",
    "PAIRWISE_NO_TIE",
    "TOOLEMU_HELPFULNESS",
    "TOOLEMU_SAFETY",
    "CriterionSettings",
    "JudgeCallFailed",
    "JudgeKind",
    "JudgeProgram",
    "JudgeSettings",
    "MlflowSettings",
    "PluginFailed",
    "get_kind",
    "is_pairwise",
    "mirror_preference",
    "presentation_order",
    "swap_pair",
    "judge_kind",
    "known_kinds",
]
