"""``assay conformal RUN --alpha A [--apply OTHER | --holdout F]``: split conformal prediction
sets for a judge's verdicts, calibrated on a labelled evaluate run judged with
``score_mode: expected`` (no LM call)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from assay.runners._runner import Options as BaseOptions
from assay.runners._runner import Runner, argument, option, runner
from assay.types import Seed, Share

if TYPE_CHECKING:
    from assay.decisions import ConformalSummary


@runner("conformal")
class Conformal(Runner):
    """conformal prediction sets with coverage 1 − α, from a labelled run's verdict probabilities"""

    class Options(BaseOptions):
        cli_order = ("alpha", "method", "apply", "holdout", "seed", "out", "tracking_uri", "json")

        run: str | Path = argument(
            help="a labelled evaluate run judged with score_mode: expected (calibrates q̂)"
        )
        alpha: Share = option(
            0.1,
            help="miscoverage α: each set holds the reference with probability ≥ 1 − α "
            "(default 0.1)",
            type="float",
        )
        method: Literal["lac", "aps", "ordinal"] | None = option(
            help="nonconformity score: lac (1 − p), aps (adaptive sets) or ordinal (contiguous "
            "sets; the default on an ordinal scale, lac otherwise)",
            choices=("lac", "aps", "ordinal"),
        )
        apply: str | Path | None = option(
            help="an evaluate run of the same judge config: the items that get sets",
            metavar="RUN_DIR",
        )
        holdout: Share | None = option(
            help="instead of --apply: hold out this share of RUN's labelled items (seeded), "
            "calibrate on the rest, and measure coverage on them",
            type="float",
            metavar="FRACTION",
        )
        seed: Seed = option(0, help="seed of the --holdout split", type="int")
        out: str | Path | None = option(
            help="also write the calibration and every item's set to this JSON file",
            metavar="FILE",
        )
        tracking_uri: str | None = option(
            help="MLflow tracking URI (default: the calibration run's config, else "
            "sqlite:///mlflow.db here)"
        )

    config = "assay.decisions:ConformalConfig"
    summary = "assay.decisions:ConformalSummary"
    progress_option = False

    def run(self, options: Options, *, workdir: Path, progress: bool) -> ConformalSummary:
        from assay.decisions import conformal

        return conformal(
            options.run,
            alpha=options.alpha,
            workdir=workdir,
            method=options.method,
            apply=options.apply,
            holdout=options.holdout,
            seed=options.seed,
            out=None if options.out is None else workdir / options.out,
            tracking_uri=options.tracking_uri,
        )

    def report(self, run_dir: Path, **options: Any) -> Any:
        from assay.decisions import build_conformal_report

        return build_conformal_report(run_dir)

    def print(self, result: ConformalSummary, options: Options, *, json: bool) -> int:
        from assay.decisions import conformal_headline
        from assay.runners._runner import mlflow_line

        if json:
            print(result.model_dump_json())
            return 0
        print("\n".join(conformal_headline(result)))
        if result.per_class:
            print("| reference | items | coverage | mean set size |")
            print("|---|---|---|---|")
            for c in result.per_class:
                print(f"| {c.label or c.score} | {c.n} | {c.coverage:.3f} | {c.mean_size:.2f} |")
        sizes = ", ".join(f"{k}: {n}" for k, n in enumerate(result.size_counts))
        print(f"set sizes (size: items): {sizes}")
        for reason, n in result.no_set.items():
            print(f"no set: {n} items ({reason})")
        print(f"sets: {result.run_dir}/{result.sets_file}")
        line = mlflow_line(result.mlflow_run_id, options.tracking_uri)
        if line:
            print(line)
        return 0
