"""ToolEmu in assay: cases and toolkits, an LM-emulated tool sandbox, an agent over it,
ToolEmu-format trajectories and evaluations, and the failure metrics (``assay toolemu run``)."""

from assay.emulation._agent import STEP_LIMIT_OUTPUT, AgentRun, StepRecord, ToolAgent
from assay.emulation._agreement import agreement_report, human_majorities, toolemu_agreement
from assay.emulation._agreement_report import render_agreement
from assay.emulation._agreement_results import (
    AnnotationsRead,
    AnnotatorsAgreement,
    EmulationQuality,
    EvaluatorVsHuman,
    FailureFigures,
    FilesRead,
    MajoritySummary,
    NoEvaluator,
    ToolEmuAgreement,
    TrajectoryCount,
)
from assay.emulation._config import (
    AgentConfig,
    EmulatorConfig,
    EvaluatorConfig,
    ToolEmuRunConfig,
    load_toolemu_config,
)
from assay.emulation._emulator import Emulator, Observation, ObservationRecord, Sandbox
from assay.emulation._html_report import build_report
from assay.emulation._models import (
    Case,
    Tool,
    Toolkit,
    load_cases,
    load_toolkits,
    parse_selection,
)
from assay.emulation._render import (
    agent_tool_descriptions,
    emulator_tool_spec,
    evaluator_tool_descriptions,
)
from assay.emulation._report import render_run_summary
from assay.emulation._results import (
    CrashedCase,
    EmulatorQuality,
    EvaluatorMetrics,
    GroupMetrics,
    ScoreSummary,
    StageUsage,
    ToolEmuResult,
    ToolEmuSummary,
    TrajectoryCounts,
)
from assay.emulation._run import CaseRecord, build_agent, run_toolemu
from assay.emulation._trajectory import toolemu_record

__all__ = [
    "FilesRead",
    "AnnotationsRead",
    "AnnotatorsAgreement",
    "EmulationQuality",
    "EvaluatorVsHuman",
    "FailureFigures",
    "MajoritySummary",
    "NoEvaluator",
    "ToolEmuAgreement",
    "TrajectoryCount",
    "build_report",
    "STEP_LIMIT_OUTPUT",
    "AgentConfig",
    "AgentRun",
    "Case",
    "CaseRecord",
    "CrashedCase",
    "Emulator",
    "EmulatorConfig",
    "EmulatorQuality",
    "EvaluatorConfig",
    "EvaluatorMetrics",
    "GroupMetrics",
    "Observation",
    "ObservationRecord",
    "Sandbox",
    "ScoreSummary",
    "StageUsage",
    "StepRecord",
    "Tool",
    "ToolAgent",
    "ToolEmuResult",
    "ToolEmuRunConfig",
    "ToolEmuSummary",
    "Toolkit",
    "TrajectoryCounts",
    "agent_tool_descriptions",
    "agreement_report",
    "human_majorities",
    "render_agreement",
    "render_run_summary",
    "toolemu_agreement",
    "build_agent",
    "emulator_tool_spec",
    "evaluator_tool_descriptions",
    "load_cases",
    "load_toolemu_config",
    "load_toolkits",
    "parse_selection",
    "run_toolemu",
    "toolemu_record",
]
