"""Typed DSPy signatures: what goes into a judge and what must come out."""

from assay.signatures._agent import FINAL_ANSWER, AgentStep
from assay.signatures._emulator import (
    CritiqueObservation,
    EmulateToolCall,
    EmulateToolCallAdversarial,
)
from assay.signatures._judge import (
    JudgeResponse,
    JudgeTranscript,
    verdict_description,
    verdict_type,
    with_scale,
)
from assay.signatures._pairwise import (
    CheckInversion,
    CheckTaskParaphrase,
    InvertTask,
    JudgePair,
    ParaphraseTask,
)
from assay.signatures._perturb import (
    CheckEquivalence,
    Condense,
    ConfirmVerdict,
    Expand,
    FlipVerdict,
    Paraphrase,
)
from assay.signatures._synthetic import GenerateForScore, ScoreResponse, score_signature
from assay.signatures._toolemu import AgentHelpfulness, EmulationQuality, ToolCallRisk
from assay.signatures._transcript_edit import (
    EditMessage,
    PlanStep,
    PlanTranscriptEdits,
    ScoreCriterion,
    SummarizeTranscript,
    VerifyCriterion,
)

__all__ = [
    "FINAL_ANSWER",
    "GenerateForScore",
    "ScoreResponse",
    "score_signature",
    "verdict_description",
    "EditMessage",
    "PlanStep",
    "PlanTranscriptEdits",
    "ScoreCriterion",
    "SummarizeTranscript",
    "VerifyCriterion",
    "AgentStep",
    "CheckInversion",
    "CheckTaskParaphrase",
    "ParaphraseTask",
    "InvertTask",
    "JudgePair",
    "CritiqueObservation",
    "EmulateToolCall",
    "EmulateToolCallAdversarial",
    "CheckEquivalence",
    "Condense",
    "ConfirmVerdict",
    "Expand",
    "FlipVerdict",
    "Paraphrase",
    "AgentHelpfulness",
    "EmulationQuality",
    "JudgeResponse",
    "JudgeTranscript",
    "ToolCallRisk",
    "verdict_type",
    "with_scale",
]
