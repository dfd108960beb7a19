"""MLflow logging: params = judge config, metrics = every metric and its CI bounds, artifacts =
the run directory (including the saved judge program)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any


def default_tracking_uri(workdir: Path) -> str:
    return f"sqlite:///{(workdir / 'mlflow.db').resolve()}"


def flat_metrics(summary: dict[str, Any]) -> dict[str, float]:
    """``kappa_linear``, ``kappa_linear_ci_low``, ... plus counts and usage, as floats."""
    out: dict[str, float] = {}
    for name, m in summary.get("metrics", {}).items():
        for key, suffix in (("value", ""), ("ci_low", "_ci_low"), ("ci_high", "_ci_high")):
            v = m.get(key)
            if isinstance(v, int | float) and v == v:
                out[f"{name}{suffix}"] = float(v)
    for key in ("items", "scored", "unscored", "paired"):
        out[f"n_{key}"] = float(summary["counts"][key])
    u = summary["usage"]
    for key in ("calls", "prompt_tokens", "completion_tokens", "cost_usd"):
        out[f"usage_{key}"] = float(u[key])
    if u.get("cost_per_accuracy_point_usd") is not None:
        out["cost_per_accuracy_point_usd"] = float(u["cost_per_accuracy_point_usd"])
    return out


def log_run(
    *,
    tracking_uri: str,
    experiment: str,
    run_name: str,
    params: dict[str, str],
    metrics: dict[str, float],
    tags: dict[str, str],
    artifacts_dir: Path,
    artifact_root: Path,
) -> str:
    """Log one run; returns its MLflow run id."""
    import mlflow

    mlflow.set_tracking_uri(tracking_uri)
    client = mlflow.MlflowClient()
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        location = artifact_root.resolve().as_uri() if tracking_uri.startswith("sqlite:") else None
        exp_id = client.create_experiment(experiment, artifact_location=location)
    else:
        exp_id = exp.experiment_id
    with mlflow.start_run(experiment_id=exp_id, run_name=run_name, tags=tags) as run:
        mlflow.log_params({_key(k): v[:6000] for k, v in params.items()})
        mlflow.log_metrics({_key(k): v for k, v in metrics.items()})
        mlflow.log_artifacts(str(artifacts_dir))
        return run.info.run_id


def _key(name: str) -> str:
    """MLflow keys allow alphanumerics, _ - . space / only."""
    return re.sub(r"[^A-Za-z0-9_\-. /]", "_", name)[:250]
