"""``assay estimate RUN``: a rate or a mean score over a finished evaluate run's items, from the
judge's verdict on every item and a human label on a few (prediction-powered inference; no LM
call)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from assay.metrics import Resamples
from assay.runners._runner import CERTIFICATE_OPTION, Runner, argument, option, runner
from assay.runners._runner import Options as BaseOptions
from assay.types import PositiveInt, PositiveReal, Seed, Share

if TYPE_CHECKING:
    from assay.decisions import EstimateSummary


@runner("estimate")
class Estimate(Runner):
    """your system's rate or mean score from a judge and a few human labels (PPI++)"""

    class Options(BaseOptions):
        cli_order = (
            "validation",
            "positive",
            "threshold",
            "prediction",
            "strata",
            "weights",
            "check_columns",
            "accept_shift",
            "alpha",
            "target_half_width",
            "budget",
            "suggest",
            "queue",
            "seed",
            "require_certificate",
            "output_dir",
            "tracking_uri",
            "json",
        )

        run: str | Path = argument(
            help="a finished evaluate run: every item judged, the labelled ones with a reference "
            "(data.missing_expected: keep)"
        )
        validation: str | Path | None = option(
            help="the labelled items come from this evaluate run of the same judge config "
            "(RUN's items are the unlabelled ones)",
            api_positional=True,
            metavar="LABELLED_RUN",
        )
        positive: str | None = option(
            help="estimate the rate of this verdict (binary: default the positive label; "
            "categorical: required)",
            metavar="LABEL",
        )
        threshold: int | None = option(
            help="estimate the rate of scores below this one (default: the run's threshold; "
            "with neither on an ordinal scale: the mean score)",
            type="int",
            metavar="N",
        )
        prediction: Literal["probability", "verdict"] | None = option(
            help="the judge's prediction PPI uses: its probability of the class, or its 0/1 "
            "verdict (default: the probability when the judgments carry one)",
            choices=("probability", "verdict"),
        )
        strata: str | None = option(
            help="also stratified PPI++ over this data column (e.g. a task category)",
            metavar="COLUMN",
        )
        weights: str | None = option(
            help="positive observation weights from this data column", metavar="COLUMN"
        )
        check_columns: list[str] = option(
            [],
            help="also compare the labelled items with the others on this data column (repeatable)",
            flags=("--check-column",),
            action="append",
            metavar="COLUMN",
        )
        accept_shift: bool = option(
            False,
            help="estimate even when the labelled items clearly differ from the others "
            "(a warning instead of a refusal)",
            action="store_true",
        )
        alpha: Share = option(
            0.05, help="error level: intervals at 1 − α (default 0.05)", type="float"
        )
        target_half_width: PositiveReal | None = option(
            help="plan: the human labels each estimator needs for this half-width",
            type="float",
            metavar="W",
        )
        budget: PositiveInt | None = option(
            help="plan: the half-width this many human labels buy", type="int"
        )
        suggest: PositiveInt | None = option(
            help="active labelling: draw about N items to label next (a review queue in this "
            "run's directory: assay review serve|export|import)",
            type="int",
            metavar="N",
        )
        queue: str | Path | None = option(
            help="active labelling: read the verdicts of an earlier --suggest run's queue",
            metavar="ESTIMATE_RUN",
        )
        seed: Seed = option(
            0, help="seed of --suggest's draw and Rogan–Gladen's bootstrap", type="int"
        )
        require_certificate: list[str] | None = CERTIFICATE_OPTION
        output_dir: str | None = option(
            help="the runs folder, here, whose ledger --require-certificate reads (default: "
            "runs; never the one the run's config names — a run made for another needs it); "
            "the estimate is written there too (default: the run's runs folder)",
            metavar="DIR",
        )
        tracking_uri: str | None = option(
            help="MLflow tracking URI (default: the run's config, else sqlite:///mlflow.db here)"
        )
        n_resamples: Resamples = 1000

    config = "assay.decisions:EstimateConfig"
    summary = "assay.decisions:EstimateSummary"
    progress_option = False

    def run(self, options: Options, *, workdir: Path, progress: bool) -> EstimateSummary:
        from assay.decisions import estimate

        return estimate(
            options.run,
            options.validation,
            workdir=workdir,
            # its plug-ins are imported already (Runner.execute)
            **options.model_dump(exclude={"run", "validation", "plugins"}),
        )

    def report(self, run_dir: Path, **options: Any) -> Any:
        from assay.decisions import build_estimate_report

        return build_estimate_report(run_dir)

    def print(self, result: EstimateSummary, options: Options, *, json: bool) -> int:
        from assay.decisions import estimate_console
        from assay.runners._runner import mlflow_line

        if json:
            print(result.model_dump_json())
            return 0
        print("\n".join(estimate_console(result)))
        line = mlflow_line(result.mlflow_run_id, options.tracking_uri)
        if line:
            print(line)
        return 0
