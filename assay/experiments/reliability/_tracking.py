"""MLflow for a harness run: a parent run (test settings, probe counts, generation cost,
artifacts) and a child run per judge (judge config, per-test metrics with CI bounds)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.experiments._tracking import _key, default_tracking_uri


def _experiment(client, name: str, workdir: Path, uri: str) -> str:
    exp = client.get_experiment_by_name(name)
    if exp is not None:
        return exp.experiment_id
    location = (workdir / "mlartifacts").resolve().as_uri() if uri.startswith("sqlite:") else None
    return client.create_experiment(name, artifact_location=location)


def judge_metrics(r: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for test, m in r["tests"].items():
        for key in (
            "pass_rate",
            "consistency",
            "majority_accuracy",
            "ccc",
            "pearson",
            "spearman",
            "mae",
        ):
            v = m.get(key)
            if isinstance(v, dict):
                for part, suffix in (("value", ""), ("ci_low", "_ci_low"), ("ci_high", "_ci_high")):
                    x = v.get(part)
                    if isinstance(x, int | float) and x == x:
                        out[f"{test}.{key}{suffix}"] = float(x)
            elif isinstance(v, int | float) and v == v:
                out[f"{test}.{key}"] = float(v)
        out[f"{test}.unscored"] = float(m["unscored"])
    for k in ("calls", "prompt_tokens", "completion_tokens", "cost_usd"):
        out[f"usage_{k}"] = float(r["usage"][k])
    if r.get("mean_pass_rate") is not None:
        out["mean_pass_rate"] = float(r["mean_pass_rate"])
    return out


def log_harness(
    run_dir: Path,
    config,
    judge_cfgs,
    metrics: dict[str, Any],
    *,
    workdir: Path,
    tracking_uri: str | None,
) -> str:
    import mlflow

    uri = tracking_uri or config.tracking.uri or default_tracking_uri(workdir)
    mlflow.set_tracking_uri(uri)
    client = mlflow.MlflowClient()
    exp_id = _experiment(client, config.tracking.experiment, workdir, uri)
    tags = {
        "assay.command": "harness",
        "assay.data": metrics.get("data_fingerprint", "")[:16],
        "assay.probes": run_dir.name,
        "assay.scale": config.scale.describe(),
    }
    params = {
        "data.path": config.data.path,
        "scale": config.scale.describe(),
        "seeds": str(metrics["seeds"]),
        "generator.model": config.generator.model,
        "generator.temperature": str(config.generator.temperature),
        "validator.model": config.validator.model,
        "review.required": str(config.review.required),
    }
    for test, settings in config.tests.items():
        params[f"test.{test}"] = str(settings or {})
    with mlflow.start_run(
        experiment_id=exp_id, run_name=config.name, tags={**tags, "assay.role": "parent"}
    ) as parent:
        mlflow.log_params({_key(k): v[:6000] for k, v in params.items()})
        parent_metrics = {f"probes.{t}": float(n) for t, n in metrics["probes"].items()}
        for t, d in metrics["dropped"].items():
            parent_metrics[f"dropped.{t}"] = float(sum(d.values()))
        for k, u in metrics["generation_usage"].items():
            parent_metrics[_key(f"usage.{k}.cost_usd")] = float(u["cost_usd"])
            parent_metrics[_key(f"usage.{k}.calls")] = float(u["calls"])
        mlflow.log_metrics({_key(k): v for k, v in parent_metrics.items()})
        for f in (
            "report.md",
            "report.html",
            "metrics.json",
            "probes.jsonl",
            "heatmap.png",
            "cost_accuracy.png",
            "config.yaml",
        ):
            if (run_dir / f).exists():
                mlflow.log_artifact(str(run_dir / f))
        for cfg in judge_cfgs:
            r = metrics["judges"][cfg.name]
            with mlflow.start_run(
                experiment_id=exp_id,
                run_name=f"{config.name}/{cfg.name}",
                nested=True,
                tags={**tags, "assay.role": "judge", "assay.judge": cfg.name},
            ):
                jp = cfg.flat_params()
                jp.update(
                    {
                        k: v
                        for k, v in params.items()
                        if k.startswith("test.") or k in ("data.path", "scale")
                    }
                )
                mlflow.log_params({_key(k): v[:6000] for k, v in jp.items()})
                mlflow.log_metrics({_key(k): v for k, v in judge_metrics(r).items()})
                jf = run_dir / "judgments" / f"{cfg.name}-{cfg.config_hash()[:8]}.jsonl"
                if jf.exists():
                    mlflow.log_artifact(str(jf), artifact_path="judgments")
        return parent.info.run_id
