"""``assay estimate RUN --validation RUN``: the real rate of a verdict (e.g. failures) in an
unlabelled run, corrected for the judge's own errors as measured on a labelled run of the same
judge config (Rogan–Gladen), with a CI that carries the uncertainty of both runs.

A judge's flagged rate is biased by its false positives and negatives: "our agent fails 12% of
the time" from an LLM judge needs this correction. No LM is called: both runs are read back.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from assay.decisions._finished import judged_items, read_evaluate_run
from assay.errors import ConfigError, RunError
from assay.metrics import MetricValue, corrected_prevalence
from assay.scale import Scale


class PrevalenceResult(BaseModel):
    """The corrected rate of ``event`` in the unlabelled run next to its raw flagged rate."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    run: str
    validation: str
    event: str
    corrected: MetricValue
    raw: MetricValue
    sensitivity: float
    specificity: float
    defined: bool
    clipped: bool
    n_unlabelled: int
    n_validation: int
    unscored: dict[str, int]
    resampled: str


def _event(scale: Scale, positive: str | None, threshold: int | None) -> tuple[str, set[int]]:
    """Which scores count as the event: a label (binary/categorical) or ``score < threshold``."""
    if threshold is not None:
        if threshold not in scale.values:
            raise ConfigError(f"--threshold {threshold} is not on the {scale.describe()} scale")
        return f"score < {threshold}", {v for v in scale.values if v < threshold}
    if scale.kind == "binary":
        if positive is None:
            return f"verdict {scale.label_of(1) or 1}", {1}
        try:
            value = scale.coerce(positive)
        except ValueError:
            raise ConfigError(
                f"--positive {positive}: not a label of the {scale.describe()} scale"
            ) from None
        return f"verdict {positive}", {value}
    if positive is None:
        raise ConfigError(
            f"the {scale.describe()} scale has no single positive verdict: give --positive or --threshold"
        )
    try:
        return f"verdict {positive}", {scale.coerce(positive)}
    except ValueError:
        raise ConfigError(f"--positive {positive}: not on the {scale.describe()} scale") from None


def estimate(
    run: str | Path,
    validation: str | Path,
    *,
    positive: str | None = None,
    threshold: int | None = None,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    require_certificate: list[str] | None = None,
    workdir: Path | None = None,
) -> PrevalenceResult:
    """The prevalence of the event in ``run``, corrected with the judge's TPR / TNR on
    ``validation`` (a labelled run of the same judge config and scale); both runs must be
    finished and sealed, and the validation run's data the items it judged. With
    ``require_certificate``, only for a judge config with an admitted certificate in the ledger
    of ``workdir``'s runs folder (default: the current directory's)."""
    config, judged, _ = read_evaluate_run(Path(run), where=run)
    if require_certificate:
        from assay.decisions._certify import ledger_of, require_certificates

        ledger = ledger_of(workdir or Path.cwd(), config.output_dir)
        require_certificates(require_certificate, [config.judge], ledger=ledger)
    v_config, v_judged, v_state = read_evaluate_run(Path(validation), where=validation)
    if config.judge.config_hash() != v_config.judge.config_hash():
        raise RunError(
            f"{validation}: a run of another judge config (hash {v_config.judge.config_hash()[:10]} "
            f"vs {config.judge.config_hash()[:10]}): TPR / TNR only transfer to the same judge"
        )
    scale = config.judge.scale
    assert scale is not None
    name, event = _event(scale, positive, threshold if threshold is not None else config.threshold)
    scored = [j for j in judged.values() if j.score is not None]
    flags = [int(j.score in event) for j in scored]
    items = judged_items(validation, v_config, v_judged, v_state.get("run_hash"))
    pairs = [
        (int(it.expected in event), int(v_judged[it.id].score in event))
        for it in items
        if it.expected is not None and it.id in v_judged and v_judged[it.id].score is not None
    ]
    if not flags:
        raise RunError(f"{run}: no scored judgment to estimate from")
    if not pairs:
        raise RunError(f"{validation}: no item with both a reference and a scored judgment")
    est = corrected_prevalence(
        flags,
        [t for t, _ in pairs],
        [p for _, p in pairs],
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
    )
    return PrevalenceResult(
        run=str(run),
        validation=str(validation),
        event=name,
        corrected=est.corrected,
        raw=est.raw,
        sensitivity=est.sensitivity,
        specificity=est.specificity,
        defined=est.defined,
        clipped=est.clipped,
        n_unlabelled=len(flags),
        n_validation=len(pairs),
        unscored={
            "run": len(judged) - len(scored),
            "validation": sum(j.score is None for j in v_judged.values()),
        },
        resampled=est.resampled,
    )
