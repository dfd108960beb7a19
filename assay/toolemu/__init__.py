"""ToolEmu in assay: cases and toolkits, an LM-emulated tool sandbox, an agent over it,
ToolEmu-format trajectories and evaluations, and the failure metrics (``assay toolemu run``)."""

from assay.toolemu._agent import STEP_LIMIT_OUTPUT, AgentRun, StepRecord, ToolAgent
from assay.toolemu._agreement import agreement_report, human_majorities, toolemu_agreement
from assay.toolemu._agreement_report import render_agreement
from assay.toolemu._config import (
    AgentConfig,
    EmulatorConfig,
    EvaluatorConfig,
    ToolEmuRunConfig,
    load_toolemu_config,
)
from assay.toolemu._emulator import Emulator, Observation, Sandbox
from assay.toolemu._html_report import build_report
from assay.toolemu._models import (
    Case,
    Tool,
    Toolkit,
    load_cases,
    load_toolkits,
    parse_selection,
)
from assay.toolemu._render import (
    agent_tool_descriptions,
    emulator_tool_spec,
    evaluator_tool_descriptions,
)
from assay.toolemu._report import render_run_summary
from assay.toolemu._results import (
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
from assay.toolemu._run import CaseRecord, build_agent, run_toolemu
from assay.toolemu._trajectory import toolemu_record

__all__ = [
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
