"""``assay calibrate``: fit a decision threshold on a binary judge's token probability of the
positive verdict, on a labelled calibration split, and measure it on a separate split.

Small local judges rarely *say* the minority label, yet their probability of it carries
signal; a threshold fitted on labelled data turns that signal into verdicts. The threshold is
never measured on the data it was fitted on.
"""

from __future__ import annotations

import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from assay.errors import ConfigError
from assay.experiments._config import EvaluateConfig
from assay.experiments._evaluate import evaluate
from assay.experiments._scoring import agreement_summary
from assay.metrics import fit_threshold


def split_ids(labels: dict[str, int], fraction: float, seed: int) -> tuple[list[str], list[str]]:
    """Stratified, seeded split of item ids into (calibration, evaluation)."""
    by_label: dict[int, list[str]] = defaultdict(list)
    for i, y in sorted(labels.items()):
        by_label[y].append(i)
    rng = random.Random(seed)
    cal: list[str] = []
    ev: list[str] = []
    for y in sorted(by_label):
        ids = by_label[y]
        rng.shuffle(ids)
        n = round(len(ids) * fraction)
        cal += ids[:n]
        ev += ids[n:]
    return sorted(cal), sorted(ev)


def calibrate(
    config: EvaluateConfig,
    *,
    workdir: Path,
    config_dir: Path | None = None,
    fraction: float = 0.5,
    seed: int = 0,
    limit: int | None = None,
    tracking_uri: str | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Judge every item (cached, resumable, like ``evaluate``), fit the threshold on the
    calibration split, and report argmax vs calibrated agreement on the evaluation split."""
    scale = config.judge.scale
    if scale is None or scale.kind != "binary":
        raise ConfigError("calibrate needs a binary judge (scale: binary)")
    if not 0 < fraction < 1:
        raise ConfigError("--fraction must be between 0 and 1")
    judge = config.judge.model_copy(update={"score_mode": "expected", "decision_threshold": None})
    config = config.model_copy(update={"judge": judge})
    res = evaluate(
        config,
        workdir=workdir,
        config_dir=config_dir,
        limit=limit,
        tracking_uri=tracking_uri,
        progress=progress,
    )
    items = res.items
    labels = {it.id: it.expected for it in items if it.expected is not None}
    by_id = {j.item_id: j for j in res.judgments}
    usable = {
        i: y for i, y in labels.items() if by_id.get(i) and by_id[i].expected_score is not None
    }
    cal, ev = split_ids(usable, fraction, seed)
    if len({usable[i] for i in cal}) < 2 or len({usable[i] for i in ev}) < 2:
        raise ConfigError(
            "each split needs both labels: use more items (--limit) or another --fraction"
        )
    t, cal_kappa = fit_threshold([by_id[i].expected_score for i in cal], [usable[i] for i in cal])
    b = config.bootstrap
    ref = [usable[i] for i in ev]
    argmax_scored = [i for i in ev if by_id[i].score is not None]
    argmax = agreement_summary(
        [usable[i] for i in argmax_scored],
        [by_id[i].score for i in argmax_scored],
        scale,
        threshold=None,
        n_resamples=b.n_resamples,
        confidence=b.confidence,
        seed=b.seed,
    )
    thresholded = agreement_summary(
        ref,
        [int(by_id[i].expected_score >= t) for i in ev],
        scale,
        threshold=None,
        n_resamples=b.n_resamples,
        confidence=b.confidence,
        seed=b.seed,
    )
    from sklearn.metrics import roc_auc_score

    probs = np.array([by_id[i].expected_score for i in ev])
    out = {
        "threshold": t,
        "calibration": {"n": len(cal), "kappa": cal_kappa},
        "evaluation": {
            "n": len(ev),
            "auc": float(roc_auc_score(ref, probs)),
            "argmax": argmax["metrics"],
            "calibrated": thresholded["metrics"],
        },
        "excluded": {
            "no_reference": len(items) - len(labels),
            "no_probability": len(labels) - len(usable),
        },
        "split": {"fraction": fraction, "seed": seed, "calibration_ids": cal, "evaluation_ids": ev},
        "run_dir": str(res.run_dir),
        "use": {"judge": {"score_mode": "expected", "decision_threshold": round(t, 6)}},
    }
    import json

    (res.run_dir / "calibration.json").write_text(json.dumps(out, indent=2))
    if config.tracking.enabled and res.mlflow_run_id:
        import mlflow

        from assay.experiments._tracking import default_tracking_uri

        mlflow.set_tracking_uri(
            tracking_uri or config.tracking.uri or default_tracking_uri(workdir)
        )
        client = mlflow.MlflowClient()
        client.log_metric(res.mlflow_run_id, "calibrated_threshold", t)
        client.log_metric(res.mlflow_run_id, "eval_auc", out["evaluation"]["auc"])
        for name in ("kappa_categorical", "accuracy"):
            for side in ("argmax", "calibrated"):
                m = out["evaluation"][side].get(name)
                if m and m["value"] == m["value"]:
                    client.log_metric(res.mlflow_run_id, f"eval_{side}_{name}", m["value"])
        client.log_artifact(res.mlflow_run_id, str(res.run_dir / "calibration.json"))
    return out
