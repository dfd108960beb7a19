"""The run lifecycle shared by every runner: run directory, lock, store, worker pool, MLflow."""

from assay.experiments.runs._background import Background
from assay.experiments.runs._files import append_lines, jsonl_lines, write_atomic, write_json
from assay.experiments.runs._judging import (
    JudgeTask,
    ProgramsByAttempt,
    judge_items,
    judge_one,
    run_tasks,
    to_judge,
)
from assay.experiments.runs._lock import RunLock, file_lock
from assay.experiments.runs._pool import CallSlots, run_pool
from assay.experiments.runs._ray import ExecutionConfig, ProgramRecipe
from assay.experiments.runs._run import Run, run_directory, write_html
from assay.experiments.runs._store import JUDGMENTS, RunStore, now
from assay.experiments.runs._tracking import (
    TrackedRun,
    default_tracking_uri,
    flatten_metrics,
    log_tracked,
    mlflow_key,
)

__all__ = [
    "ExecutionConfig",
    "ProgramRecipe",
    "Background",
    "JudgeTask",
    "ProgramsByAttempt",
    "judge_items",
    "judge_one",
    "run_tasks",
    "to_judge",
    "CallSlots",
    "JUDGMENTS",
    "Run",
    "RunLock",
    "RunStore",
    "TrackedRun",
    "append_lines",
    "default_tracking_uri",
    "file_lock",
    "flatten_metrics",
    "jsonl_lines",
    "log_tracked",
    "mlflow_key",
    "now",
    "run_directory",
    "run_pool",
    "write_atomic",
    "write_html",
    "write_json",
]
