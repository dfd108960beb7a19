"""What the commands share: their options (declared once), the working directory set-up, and
how a run is printed. Nothing here is imported by the library."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def add_output(p: argparse.ArgumentParser, *, quiet: bool = True) -> None:
    """``--json`` (one JSON object on stdout) and, for long work, ``--quiet`` (no progress)."""
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    if quiet:
        p.add_argument("--quiet", action="store_true", help="no progress bars")


def add_tracking(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--tracking-uri",
        help="MLflow tracking URI (default: the config's, else sqlite:///mlflow.db here)",
    )


def add_run(p: argparse.ArgumentParser, *, model: bool = False, limit: str = "items") -> None:
    """The options of a command that runs a config: limit, overrides, deadline, retries,
    tracking and output."""
    p.add_argument("--limit", type=positive_int, help=f"use only the first N {limit}")
    if model:
        p.add_argument(
            "--model",
            help="override judge.model (a LiteLLM model string, 'local' or 'local:/path.gguf')",
        )
    p.add_argument(
        "--deadline",
        type=positive_float,
        metavar="SECONDS",
        help="stop after this many seconds (everything finished is kept; re-run to resume)",
    )
    p.add_argument(
        "--retry-unscored",
        nargs="?",
        const="lm_error,timeout",
        metavar="REASONS",
        help="judge again the items left unscored for these reasons "
        "(default lm_error,timeout; e.g. lm_error,timeout,parse_error,truncated)",
    )
    add_tracking(p)
    add_output(p)
    p.set_defaults(opens_run=True)  # main() starts the run's MLflow sidecar before the imports


def add_ray(p: argparse.ArgumentParser) -> None:
    """``--ray``: the judging stage on Ray (``execution.engine: ray``)."""
    p.add_argument(
        "--ray",
        action="store_true",
        help="judge on a Ray cluster (execution.engine: ray; execution.address from the config, "
        "default auto); needs pip install 'assay[ray]'",
    )


def overrides(args: argparse.Namespace) -> dict[str, Any]:
    """Config overrides from the common run options."""
    out: dict[str, Any] = {}
    if getattr(args, "ray", False):
        out["execution.engine"] = "ray"
    if getattr(args, "model", None):
        out["judge.model"] = args.model
    if getattr(args, "deadline", None):
        out["deadline_s"] = args.deadline
    if getattr(args, "retry_unscored", None):
        out["retry.unscored"] = [r.strip() for r in args.retry_unscored.split(",") if r.strip()]
    return out


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value}")
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {value}")
    return value


def split_names(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def workdir() -> Path:
    """The working directory, with DSPy's response cache under its ``.assay/``."""
    from assay.lm import configure_cache

    here = Path.cwd()
    configure_cache(here)
    return here


def to_json(obj: Any) -> str:
    if hasattr(obj, "model_dump_json"):
        return obj.model_dump_json()
    return json.dumps(obj, default=str, ensure_ascii=False)


def print_run_json(res: Any, payload: dict[str, Any]) -> None:
    """A run's ``--json`` output: its directory, its MLflow run id, then ``payload``."""
    body = {"run_dir": str(res.run_dir), "mlflow_run_id": res.mlflow_run_id, **payload}
    print(json.dumps(body, default=str))


def mlflow_line(run_id: str | None, tracking_uri: str | None = None) -> str | None:
    if not run_id:
        return None
    where = tracking_uri or "sqlite:///mlflow.db"
    return f"MLflow run: {run_id}  (browse: mlflow ui --backend-store-uri {where})"


def freeze_imports() -> None:
    """Move the objects of the imports so far out of the garbage collector's reach: full
    collections of them otherwise stall every worker thread for up to a second mid-run. (No
    collection first: it costs half a second of start-up and import-time garbage is small.)"""
    import gc

    gc.freeze()
