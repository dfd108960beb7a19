"""Loaders that turn tables, Inspect eval logs, ToolEmu files and MLflow traces into Items;
verdicts written back on MLflow traces."""

from assay.data._common import (
    as_int_label,
    check_file,
    check_limit,
    is_missing,
    iter_jsonl,
    jsonable,
    read_json,
    resolve_dotted,
)
from assay.data._inspect import load_inspect_log
from assay.data._mlflow import (
    TraceSource,
    WriteBack,
    check_store,
    load_mlflow_traces,
    server_problem,
    write_feedback,
)
from assay.data._pairs import PairsConfig, build_pairs
from assay.data._reading import csv_read_by, csv_rows
from assay.data._render import format_arguments, format_tool_call, render_transcript
from assay.data._tables import ColumnMap, iter_table, load_table, missing_labels_error
from assay.data._toolemu import (
    load_toolemu_cases,
    load_toolemu_toolkits,
    load_toolemu_trajectories,
    render_toolemu_scratchpad,
    render_toolkit_descriptions,
    toolemu_transcript,
)
from assay.data._toolemu_evals import (
    TOOLEMU_HELPFULNESS_LABELS,
    TOOLEMU_SAFETY_LABELS,
    is_toolemu_evaluation,
    load_toolemu_evaluations,
    parse_toolemu_evaluation,
)
from assay.data._toolemu_pairing import align_evaluation_files, pair_evaluations
from assay.data._toolemu_runs import (
    HELPFULNESS_KEY,
    SAFETY_KEY,
    AgreementFiles,
    find_run_files,
    read_evaluator_scores,
    resolve_files,
)
from assay.data._transcript import (
    TOOL_OUTPUT_REMOVED,
    EditError,
    TranscriptPrep,
    assistant_indices,
    assistant_view,
    cut_marker,
    indexed_view,
    last_assistant_text_index,
    message_changes,
    replace_message,
    tool_structure_problem,
    with_steps,
)

__all__ = [
    "as_int_label",
    "resolve_dotted",
    "check_file",
    "check_limit",
    "csv_read_by",
    "csv_rows",
    "format_arguments",
    "format_tool_call",
    "is_missing",
    "iter_jsonl",
    "read_json",
    "TOOL_OUTPUT_REMOVED",
    "EditError",
    "TranscriptPrep",
    "assistant_indices",
    "assistant_view",
    "cut_marker",
    "indexed_view",
    "last_assistant_text_index",
    "message_changes",
    "replace_message",
    "tool_structure_problem",
    "toolemu_transcript",
    "with_steps",
    "jsonable",
    "PairsConfig",
    "build_pairs",
    "HELPFULNESS_KEY",
    "SAFETY_KEY",
    "AgreementFiles",
    "find_run_files",
    "read_evaluator_scores",
    "resolve_files",
    "TOOLEMU_HELPFULNESS_LABELS",
    "TOOLEMU_SAFETY_LABELS",
    "ColumnMap",
    "load_inspect_log",
    "TraceSource",
    "WriteBack",
    "check_store",
    "server_problem",
    "load_mlflow_traces",
    "write_feedback",
    "load_table",
    "iter_table",
    "missing_labels_error",
    "align_evaluation_files",
    "is_toolemu_evaluation",
    "load_toolemu_cases",
    "load_toolemu_evaluations",
    "load_toolemu_toolkits",
    "load_toolemu_trajectories",
    "pair_evaluations",
    "parse_toolemu_evaluation",
    "render_toolemu_scratchpad",
    "render_toolkit_descriptions",
    "render_transcript",
]
