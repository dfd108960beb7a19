"""``assay calibrate CONFIG``: fit a probability threshold for a binary judge on a labelled
split and measure it on a held-out split."""

from __future__ import annotations

import json as _json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from assay.runners._runner import (
    MODEL_OPTION,
    Runner,
    RunOptions,
    argument,
    lm_cache,
    option,
    runner,
)
from assay.types import Seed, Share

if TYPE_CHECKING:
    from assay.decisions import CalibrationResult


@runner("calibrate")
class Calibrate(Runner):
    """fit a probability threshold for a binary judge on a labelled split"""

    class Options(RunOptions):
        cli_order = ("fraction", "seed", "method", *RunOptions.cli_order)

        config: Any = argument(help="YAML evaluate config with a binary judge")
        fraction: Share = option(
            0.5,
            help="share of labelled items used to fit, between 0 and 1 (default 0.5)",
            type="float",
        )
        seed: Seed = option(0, help="seed of the stratified split", type="int")
        method: Literal["threshold", "isotonic", "platt"] = option(
            "threshold",
            help="which fitted map the printed 'use it' line suggests (all three are measured)",
            choices=("threshold", "isotonic", "platt"),
        )
        model: str | None = MODEL_OPTION

    config = "assay.inputs:EvaluateConfig"
    summary = "assay.decisions:CalibrationResult"
    summary_file = "calibration.json"  # in the evaluate run it measured
    opens_run = True

    def run(self, options: Options, *, workdir: Path, progress: bool) -> CalibrationResult:
        from assay.decisions import calibrate
        from assay.inputs import EvaluateConfig

        config, base = options.load(EvaluateConfig)
        return calibrate(
            config,
            workdir=lm_cache(workdir),
            config_dir=base,
            fraction=options.fraction,
            seed=options.seed,
            limit=options.limit,
            tracking_uri=options.tracking_uri,
            progress=progress,
            method=options.method,
        )

    def print(self, result: CalibrationResult, options: Options, *, json: bool) -> int:
        from assay.metrics import fmt_ci, metrics_table

        out = result
        if json:
            print(out.model_dump_json())
            return 0
        ev = out.model_dump()["evaluation"]
        print(
            f"\nthreshold on P(positive verdict): {out.threshold:.4f} "
            f"(fitted on {out.calibration.n} items, kappa there {out.calibration.kappa:.3f})"
        )
        print(f"evaluation split: {ev['n']} items, AUC {ev['auc']:.3f}")
        left_out = {
            "no_reference": "without a reference label",
            "no_probability": "without a token probability (a verdict, but none to threshold)",
        }
        for reason, n in out.excluded.items():
            if n:
                print(f"left out of both splits: {n} item(s) {left_out.get(reason, reason)}")
        shown = ("kappa_categorical", "accuracy", "false_positive_rate", "false_negative_rate")
        for side in ("argmax", "calibrated"):
            print(f"\n{side}:")
            print(metrics_table({k: v for k, v in ev[side].items() if k in shown}))
        print("\nheld-out, by map (fitted on the calibration split):")
        rows = [
            "| map | kappa | accuracy | ECE | ℓ2 error, debiased | Brier |",
            "|---|---|---|---|---|---|",
        ]

        def calibration(probs: dict) -> str:
            keys = ("ece", "l2_ce_debiased", "brier")
            return " | ".join(fmt_ci(probs.get(k)) for k in keys)

        raw = out.model_dump()["raw_probabilities"]
        rows.append(f"| none (raw P) | — | — | {calibration(raw)} |")
        for kind, m in out.model_dump()["maps"].items():
            rows.append(
                f"| {kind} | {fmt_ci(m['verdicts'].get('kappa_categorical'))} "
                f"| {fmt_ci(m['verdicts'].get('accuracy'))} | {calibration(m['probabilities'] or {})} |"
            )
        print("\n".join(rows))
        if out.method == "threshold":
            t = out.use["judge"]["decision_threshold"]
            print(
                f"\nuse it: add to the judge config  score_mode: expected, decision_threshold: {t}"
            )
        else:
            print(f"\nuse it: add to the judge config (the {out.method} map):")
            print(_json.dumps(out.use["judge"]))
        print(f"details: {out.run_dir}/calibration.json")
        if out.tuning_record:
            print(
                f"the fit is a tuning on the {out.calibration.n} items of the calibration split "
                f"({out.tuning_record}): a judge deciding by a threshold or a map from these "
                "probabilities is certified and compared on other items only"
            )
        return 0
