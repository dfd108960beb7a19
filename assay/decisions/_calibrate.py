"""``assay calibrate``: fit a decision threshold on a binary judge's token probability of the
positive verdict, on a labelled calibration split, and measure it on a separate split.

Small local judges rarely *say* the minority label, yet their probability of it carries
signal; a threshold fitted on labelled data turns that signal into verdicts. The threshold is
never measured on the data it was fitted on — here, nor later: the fit is a tuning, recorded in
the runs folder's ledger (:mod:`._tuning`) with the items of the calibration split, so that
``certify`` and ``compare --paired`` of a judge deciding by a threshold or a map from these
probabilities refuse those items.
"""

from __future__ import annotations

import random
from collections import defaultdict
from pathlib import Path

import numpy as np

from assay.decisions._calibration_results import (
    CalibrationEvaluation,
    CalibrationFit,
    CalibrationResult,
    MapOutcome,
)
from assay.decisions._certify import ledger_of
from assay.decisions._tuning import RECORD, TUNING, record_tuning
from assay.errors import ConfigError
from assay.evaluation import agreement_summary, evaluate
from assay.inputs import EvaluateConfig, same_items
from assay.metrics import MetricValue, calibration_metrics, fit_calibration, fit_threshold
from assay.runs import default_tracking_uri, flatten_metrics, write_json
from assay.types import Judgment


def split_ids(
    labels: dict[str, int],
    fraction: float,
    seed: int,
    samples: dict[str, str] | None = None,
) -> tuple[list[str], list[str]]:
    """Stratified, seeded split of item ids into (calibration, evaluation). ``samples`` (item id
    → its cluster: :func:`~assay.inputs.same_items`) keeps the items that are one item on one
    side — the epochs of one Inspect sample, one text under several ids: a map fitted on one and
    measured on another of the same input and reference would be measured on what it was
    fitted on, in all but name. The samples are split as the items are
    (stratified by the label, which is the sample's), so items of no sample split as before."""
    members: dict[str, list[str]] = defaultdict(list)
    for i in sorted(labels):
        members[(samples or {}).get(i, f"item {i}")].append(i)
    by_label: dict[int, list[str]] = defaultdict(list)
    for key, ids in members.items():  # in the order of their first item
        by_label[labels[ids[0]]].append(key)
    rng = random.Random(seed)
    cal: list[str] = []
    ev: list[str] = []
    for y in sorted(by_label):
        keys = by_label[y]
        rng.shuffle(keys)
        n = round(len(keys) * fraction)
        cal += [i for key in keys[:n] for i in members[key]]
        ev += [i for key in keys[n:] for i in members[key]]
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
    method: str = "threshold",
) -> CalibrationResult:
    """Judge every item (cached, resumable, like ``evaluate``); fit the κ-optimal threshold and
    the isotonic and Platt maps on the calibration split; report argmax vs each map on the
    evaluation split. ``method`` is the one the result suggests using."""
    if method not in METHODS:
        raise ConfigError(f"unknown calibration method '{method}'; known: {', '.join(METHODS)}")
    scale = config.judge.scale
    if scale is None or scale.kind != "binary":
        raise ConfigError("calibrate needs a binary judge (scale: binary)")
    if not 0 < fraction < 1:
        raise ConfigError("--fraction must be between 0 and 1")
    # the judge's own P(positive): no threshold or map of an earlier calibration in the way
    judge = config.judge.model_copy(
        update={"score_mode": "expected", "decision_threshold": None, "calibration": None}
    )
    config = config.model_copy(update={"judge": judge})
    res = evaluate(
        config,
        workdir=workdir,
        config_dir=config_dir,
        limit=limit,
        tracking_uri=tracking_uri,
        progress=progress,
    )
    labels = {it.id: it.expected for it in res.items if it.expected is not None}
    by_id = {j.item_id: j for j in res.judgments}
    usable = {
        i: y for i, y in labels.items() if by_id.get(i) and by_id[i].expected_score is not None
    }
    # the items that are one item — an Inspect sample's epochs, one text under several ids —
    # go to one side and are resampled together (an item alone is its own: the split and the
    # intervals as for independent items)
    groups = same_items(res.items)
    samples = {it.id: g or f"item {it.id}" for it, g in zip(res.items, groups, strict=True)}
    cal, ev = split_ids(usable, fraction, seed, samples)
    if len({usable[i] for i in cal}) < 2 or len({usable[i] for i in ev}) < 2:
        raise ConfigError(
            "each split needs both labels: use more items (--limit) or another --fraction"
        )
    t, cal_kappa = fit_threshold([by_id[i].expected_score for i in cal], [usable[i] for i in cal])
    maps = {kind: _fit(kind, cal, ev, usable, by_id, config, samples) for kind in METHODS}
    chosen = maps[method].map
    use: dict[str, object] = (
        {"score_mode": "expected", "decision_threshold": round(t, 6)}
        if method == "threshold"
        else {"score_mode": "expected", "calibration": chosen.model_dump(mode="json")}
    )
    out = CalibrationResult(
        threshold=t,
        calibration=CalibrationFit(n=len(cal), kappa=cal_kappa),
        evaluation=_measure(config, ev, usable, by_id, t, samples),
        raw_probabilities=_probability_metrics(
            config,
            [usable[i] for i in ev],
            [by_id[i].expected_score for i in ev],
            _clusters(ev, samples),
        ),
        maps=maps,
        method=method,
        excluded={
            "no_reference": len(res.items) - len(labels),
            "no_probability": len(labels) - len(usable),
        },
        split={"fraction": fraction, "seed": seed, "calibration_ids": cal, "evaluation_ids": ev},
        run_dir=str(res.run_dir),
        use={"judge": use},
    )
    # the rule was fitted on the calibration split's labels: the judge using it is tuned there
    # (recorded before calibration.json, which tells how to use it, is written)
    rule = {"decision_threshold": round(t, 6)} if method == "threshold" else {"calibration": chosen}
    fitted_on = set(cal)
    ledger = ledger_of(workdir, config.output_dir)
    record = record_tuning(
        judge.model_copy(update=rule),
        judge,
        [it for it in res.items if it.id in fitted_on],
        source=f"assay calibrate ({method})",
        run=res.run_dir,
        ledger=ledger,
        decision_rule_of=judge,
    )
    out.tuning_record = str(ledger / TUNING / record.record / RECORD)
    write_json(res.run_dir / "calibration.json", out.model_dump(mode="json"))
    if config.tracking.enabled and res.mlflow_run_id:
        _log(
            out,
            res.mlflow_run_id,
            tracking_uri or config.tracking.uri or default_tracking_uri(workdir),
        )
    return out


def _measure(
    config: EvaluateConfig,
    ids: list[str],
    labels: dict[str, int],
    by_id: dict[str, Judgment],
    threshold: float,
    samples: dict[str, str] | None = None,
) -> CalibrationEvaluation:
    """Agreement on the evaluation split by argmax and by the threshold, and the AUC of P (the
    intervals over ``samples``' clusters, where one holds two items)."""
    from sklearn.metrics import roc_auc_score

    assert config.judge.scale is not None
    b = config.bootstrap
    boot = {"n_resamples": b.n_resamples, "confidence": b.confidence, "seed": b.seed}
    ref = [labels[i] for i in ids]
    scored = [i for i in ids if by_id[i].score is not None]
    argmax = agreement_summary(
        [labels[i] for i in scored],
        [by_id[i].score for i in scored],  # type: ignore[misc]
        config.judge.scale,
        threshold=None,
        clusters=_clusters(scored, samples),
        **boot,
    )
    thresholded = agreement_summary(
        ref,
        [int(by_id[i].expected_score >= threshold) for i in ids],  # type: ignore[operator]
        config.judge.scale,
        threshold=None,
        clusters=_clusters(ids, samples),
        **boot,
    )
    probs = np.array([by_id[i].expected_score for i in ids])
    return CalibrationEvaluation(
        n=len(ids),
        auc=float(roc_auc_score(ref, probs)),
        argmax=argmax.metrics,
        calibrated=thresholded.metrics,
    )


METHODS = ("threshold", "isotonic", "platt")


def _probability_metrics(
    config: EvaluateConfig,
    labels: list[int],
    probabilities: list[float | None],
    clusters: list[str] | None = None,
) -> dict[str, MetricValue]:
    b = config.bootstrap
    return calibration_metrics(
        labels,
        probabilities,
        n_resamples=b.n_resamples,
        confidence=b.confidence,
        seed=b.seed,
        clusters=clusters,
    )


def _clusters(ids: list[str], samples: dict[str, str] | None) -> list[str] | None:
    return None if samples is None else [samples[i] for i in ids]


def _fit(
    kind: str,
    cal: list[str],
    ev: list[str],
    labels: dict[str, int],
    by_id: dict[str, Judgment],
    config: EvaluateConfig,
    samples: dict[str, str] | None = None,
) -> MapOutcome:
    """One map fitted on ``cal`` and measured on ``ev`` (never on what it was fitted on; the
    intervals over ``samples``' clusters)."""
    assert config.judge.scale is not None
    fitted = fit_calibration(
        [labels[i] for i in cal],
        [by_id[i].expected_score for i in cal],
        kind,  # type: ignore[arg-type]
    )
    probs = [by_id[i].expected_score for i in ev]
    ref = [labels[i] for i in ev]
    b = config.bootstrap
    verdicts = agreement_summary(
        ref,
        [int(v) for v in fitted.predict(probs)],
        config.judge.scale,
        threshold=None,
        n_resamples=b.n_resamples,
        confidence=b.confidence,
        seed=b.seed,
        clusters=_clusters(ev, samples),
    ).metrics
    probabilities = (
        None
        if kind == "threshold"
        else _probability_metrics(
            config, ref, list(fitted.transform(probs)), _clusters(ev, samples)
        )
    )
    return MapOutcome(map=fitted, verdicts=verdicts, probabilities=probabilities)


def _log(out: CalibrationResult, run_id: str, tracking_uri: str) -> None:
    """The threshold and the held-out figures on the evaluate run it came from."""
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=tracking_uri)
    metrics = {"calibrated_threshold": out.threshold, "eval_auc": out.evaluation.auc}
    for side in ("argmax", "calibrated"):
        chosen = {
            k: v
            for k, v in getattr(out.evaluation, side).items()
            if k in ("kappa_categorical", "accuracy")
        }
        metrics.update(flatten_metrics(chosen, f"eval_{side}_"))
    for name, value in metrics.items():
        if not name.endswith(("_ci_low", "_ci_high")):
            client.log_metric(run_id, name, value)
    client.log_artifact(run_id, str(Path(out.run_dir) / "calibration.json"))
