"""Typed DSPy signatures: what goes into a judge and what must come out."""

from assay.signatures._judge import JudgeResponse, JudgeTranscript, verdict_type, with_scale
from assay.signatures._toolemu import AgentHelpfulness, EmulationQuality, ToolCallRisk

__all__ = [
    "AgentHelpfulness",
    "EmulationQuality",
    "JudgeResponse",
    "JudgeTranscript",
    "ToolCallRisk",
    "verdict_type",
    "with_scale",
]
