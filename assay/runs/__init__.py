"""The run lifecycle shared by every runner: run directory, lock, store, worker pool, MLflow,
the seal a finished run is checked against (``_seal.py``), a finished run found again by its
inputs (``_reread.py``), the signed chain of what people add to a finished run
(``_signed_history.py``: a queue's verdicts, a harness run's review decisions), and what may
overlap the LM calls (``_execution.py``: helper interpreters, warm-ups, preloads; a runner
reaches them through its :class:`Run` only).

Names load on first use (PEP 562): the command line starts the MLflow helper interpreter
before anything heavy is imported, and that helper itself needs none of DSPy to load MLflow."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay._lazy import lazy_names

_WHERE = {
    "append_lines": "_files",
    "write_atomic": "_files",
    "write_json": "_files",
    "Execution": "_execution",
    "command_started": "_execution",
    "JudgeTask": "_judging",
    "JudgedSoFar": "_judging",
    "Latest": "_judging",
    "LatestColumns": "_judging",
    "LatestJudgments": "_judging",
    "ProgramsByAttempt": "_judging",
    "judge_items": "_judging",
    "judge_one": "_judging",
    "run_tasks": "_judging",
    "to_judge": "_judging",
    "RunLock": "_lock",
    "FinishedRun": "_reread",
    "RunInputs": "_reread",
    "any_recorded": "_reread",
    "finished_run": "_reread",
    "inputs_digest": "_reread",
    "remember_inputs": "_reread",
    "file_lock": "_lock",
    "load_run_plugins": "_plugins",
    "run_identity": "_plugins",
    "CallSlots": "_pool",
    "run_pool": "_pool",
    "open_store": "_mlflow_store",
    "search_runs": "_mlflow_store",
    "ExecutionConfig": "_ray",
    "ProgramRecipe": "_ray",
    "RemoteWork": "_ray",
    "Worker": "_ray",
    "disconnect": "_ray",
    "driver_cache": "_ray",
    "run_remote": "_ray",
    "Run": "_run",
    "run_directory": "_run",
    "RunSettings": "_settings",
    "TrackingSettings": "_settings",
    "InputsRecord": "_seal",
    "RunState": "_seal",
    "Seal": "_seal",
    "SEAL_TAG": "_seal",
    "SEALED": "_seal",
    "check_redrawn": "_seal",
    "check_seal": "_seal",
    "finished_state": "_seal",
    "sealed_run": "_seal",
    "vouches_for": "_seal",
    "HistoryKind": "_signed_history",
    "SignedHistory": "_signed_history",
    "signed_run": "_signed",
    "JUDGMENTS": "_store",
    "RunStore": "_store",
    "now": "_store",
    "CONFIDENCE_TAG": "_tracking",
    "TrackedRun": "_tracking",
    "confidence_tag": "_tracking",
    "default_tracking_uri": "_tracking",
    "flatten_metrics": "_tracking",
    "log_tracked": "_tracking",
    "mlflow_key": "_tracking",
}

if TYPE_CHECKING:
    from assay.runs._execution import Execution, command_started
    from assay.runs._files import append_lines, write_atomic, write_json
    from assay.runs._judging import (
        JudgedSoFar,
        JudgeTask,
        Latest,
        LatestColumns,
        LatestJudgments,
        ProgramsByAttempt,
        judge_items,
        judge_one,
        run_tasks,
        to_judge,
    )
    from assay.runs._lock import RunLock, file_lock
    from assay.runs._mlflow_store import open_store, search_runs
    from assay.runs._plugins import load_run_plugins, run_identity
    from assay.runs._pool import CallSlots, run_pool
    from assay.runs._ray import (
        ExecutionConfig,
        ProgramRecipe,
        RemoteWork,
        Worker,
        disconnect,
        driver_cache,
        run_remote,
    )
    from assay.runs._reread import (
        FinishedRun,
        RunInputs,
        any_recorded,
        finished_run,
        inputs_digest,
        remember_inputs,
    )
    from assay.runs._run import Run, run_directory
    from assay.runs._seal import (
        SEAL_TAG,
        SEALED,
        InputsRecord,
        RunState,
        Seal,
        check_redrawn,
        check_seal,
        finished_state,
        sealed_run,
        vouches_for,
    )
    from assay.runs._settings import RunSettings, TrackingSettings
    from assay.runs._signed import signed_run
    from assay.runs._signed_history import HistoryKind, SignedHistory
    from assay.runs._store import JUDGMENTS, RunStore, now
    from assay.runs._tracking import (
        CONFIDENCE_TAG,
        TrackedRun,
        confidence_tag,
        default_tracking_uri,
        flatten_metrics,
        log_tracked,
        mlflow_key,
    )

__all__ = [
    "CONFIDENCE_TAG",
    "CallSlots",
    "Execution",
    "ExecutionConfig",
    "FinishedRun",
    "HistoryKind",
    "InputsRecord",
    "JUDGMENTS",
    "JudgeTask",
    "JudgedSoFar",
    "Latest",
    "LatestColumns",
    "LatestJudgments",
    "ProgramRecipe",
    "ProgramsByAttempt",
    "RemoteWork",
    "Run",
    "RunInputs",
    "RunLock",
    "RunSettings",
    "RunState",
    "RunStore",
    "SEAL_TAG",
    "SEALED",
    "Seal",
    "SignedHistory",
    "TrackedRun",
    "TrackingSettings",
    "Worker",
    "any_recorded",
    "append_lines",
    "check_redrawn",
    "check_seal",
    "command_started",
    "confidence_tag",
    "default_tracking_uri",
    "disconnect",
    "driver_cache",
    "file_lock",
    "finished_run",
    "finished_state",
    "flatten_metrics",
    "inputs_digest",
    "judge_items",
    "judge_one",
    "load_run_plugins",
    "log_tracked",
    "mlflow_key",
    "now",
    "open_store",
    "remember_inputs",
    "run_directory",
    "run_identity",
    "run_pool",
    "run_remote",
    "run_tasks",
    "search_runs",
    "sealed_run",
    "signed_run",
    "to_judge",
    "vouches_for",
    "write_atomic",
    "write_json",
]


__getattr__, __dir__ = lazy_names(__name__, _WHERE)
