"""``assay selective calibrate CONFIG`` and ``assay selective apply CONFIG --calibration FILE``:
a cascade of judges that keeps an item only where a judge's confidence has earned it, with a
stated guarantee of agreement with humans, and escalates or abstains on the rest."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.runners._runner import (
    Runner,
    RunOptions,
    lm_cache,
    measured_nothing,
    mlflow_line,
    option,
    print_run_json,
    runner,
)

if TYPE_CHECKING:
    from assay.decisions.selective import SelectiveResult


class _Selective(Runner):
    """What both selective commands share: their config and summary, report and console."""

    group_help = "trust a judge only where it has earned it: calibrate a cascade, apply it"
    config = "assay.decisions.selective:SelectiveConfig"
    summary = "assay.decisions.selective:SelectiveSummary"
    opens_run = True

    def report(self, run_dir: Path, **options: Any) -> Any:
        from assay.decisions.selective import build_report

        return build_report(run_dir)

    def print(self, result: SelectiveResult, options: RunOptions, *, json: bool) -> int:
        return print_selective(result, options, json=json)


@runner("selective_calibrate")
class SelectiveCalibrate(_Selective):
    """judge labelled items down a cascade and calibrate each judge's confidence threshold"""

    class Options(RunOptions):
        pass

    command = ("selective", "calibrate")

    def run(self, options: Options, *, workdir: Path, progress: bool) -> SelectiveResult:
        from assay.decisions.selective import calibrate, load_selective

        config, base = options.load(None, load_selective)  # type: ignore[arg-type]
        return calibrate(
            config,
            workdir=lm_cache(workdir),
            config_dir=base,
            limit=options.limit,
            tracking_uri=options.tracking_uri,
            progress=progress,
        )


@runner("selective_apply")
class SelectiveApply(_Selective):
    """run a calibrated cascade on unlabelled items: kept, escalated or abstained"""

    class Options(RunOptions):
        calibration: str | Path = option(
            ...,
            help="calibration.json of a `selective calibrate` run (or its run directory)",
            api_positional=True,
        )

    command = ("selective", "apply")

    def run(self, options: Options, *, workdir: Path, progress: bool) -> SelectiveResult:
        from assay.decisions.selective import apply, load_selective

        config, base = options.load(None, load_selective)  # type: ignore[arg-type]
        return apply(
            config,
            options.calibration,
            workdir=lm_cache(workdir),
            config_dir=base,
            limit=options.limit,
            tracking_uri=options.tracking_uri,
            progress=progress,
        )


def print_selective(result: SelectiveResult, options: RunOptions, *, json: bool) -> int:
    """The console: thresholds, each part through the cascade, the guarantee. Exit code 0;
    1 when no stage could be certified (the cascade keeps nothing), or when every judgment is
    unscored (then that, with the reasons, is the error: no threshold could be calibrated)."""
    from assay.types import cost_lines, usd

    s = result.summary
    certified = any(t.threshold is not None for t in s.thresholds)
    nothing = s.measured_nothing()
    if json:
        extra = {"new_judgments": result.new_judgments, "human_verdicts": result.human_verdicts}
        print_run_json(result, {**extra, **s.model_dump(mode="json")})
        return measured_nothing(nothing) or (0 if certified else 1)
    print(f"\n{options.loaded.name} ({s.mode}): {result.new_judgments} new judgments")
    print(f"guarantee: {s.guarantee}")
    for k, t in enumerate(s.thresholds):
        lam = "none" if t.threshold is None else f"{t.threshold:.4f}"
        line = f"stage {k + 1} {t.judge} ({t.confidence_source}): λ̂ = {lam} at δ = {t.delta:.3g}"
        line += f" · calibrated on {t.n}, kept {t.kept}"
        print(line + (f" — {t.note}" if t.note else ""))
    for part in s.parts:
        stages = " · ".join(
            f"{c.judge}: kept {c.kept}, escalated {c.escalated}, "
            f"{usd(c.usage.work(), '$')} (the work)"
            for c in part.stages
        )
        cov = "" if part.coverage is None else f" (coverage {part.coverage:.3f})"
        print(
            f"{part.part}: {part.items} items · kept {part.kept}{cov} · abstained "
            f"{part.abstained} · {stages}"
        )
        if part.agreement_kept is not None and part.agreement_ci is not None:
            lo, hi = part.agreement_ci
            print(
                f"  agreement on kept items {part.agreement_kept:.3f} [{lo:.3f}, {hi:.3f}] "
                f"(exact 95%; {_agreed(part)} of {_over(part)} kept items with a reference; "
                f"{part.labelled} labelled in all)"
            )
    print("\n".join(cost_lines(s.usage, s.spend)))
    if result.calibration_file is not None:
        print(f"calibration: {result.calibration_file}")
    if result.human_verdicts is not None:
        abstained = sum(part.abstained for part in s.parts)
        print(
            f"human verdicts: {result.human_verdicts} of {abstained} abstained items "
            f"(review them: assay review serve {result.run_dir})"
        )
        print(f"final verdicts: {result.run_dir / 'verdicts.jsonl'}")
    print(f"run directory: {result.run_dir}")
    line = mlflow_line(result.mlflow_run_id, options.tracking_uri)
    if line:
        print(line)
    if nothing:
        return measured_nothing(nothing)
    if not certified:
        print(
            "note: no stage certified the guarantee: every item abstains (more labelled "
            "items, a larger α or δ, or a better-calibrated confidence)"
        )
    return 0 if certified else 1


def _over(part: Any) -> int:
    """The kept items with a reference the agreement is over (a run written before it kept
    the count: all its kept items were labelled)."""
    return part.labelled_kept if part.labelled_kept is not None else part.kept


def _agreed(part: Any) -> int:
    return round(part.agreement_kept * _over(part))
