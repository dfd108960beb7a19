"""``assay drift OLD NEW``: the same judge config on the same anchor items at two times — are
its verdict changes beyond what its measured stochastic stability explains? Exit code 1 when
they are (a CI job gates on it).

``--anchors FILE``: a system's score change between two judge versions split into the judge's
shift (on the anchors FILE names) and the system's change; exit code 1 when the judge moved.
``--series``: the score of every run given on an EWMA control chart; exit code 1 when a run is
out of control."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.errors import ConfigError
from assay.runners._runner import Options as BaseOptions
from assay.runners._runner import Runner, argument, option, runner, stored_runs_uri
from assay.types import FiniteReal, PositiveReal, Share

if TYPE_CHECKING:
    from assay.decisions import DriftResult, SeriesResult, ShiftResult


@runner("drift")
class Drift(Runner):
    """flag verdict changes of one judge config on frozen anchors beyond its stability"""

    class Options(BaseOptions):
        json_output = "print one JSON object"

        old: str = argument(help="the earlier evaluate run (a run directory or MLflow run id)")
        new: str = argument(
            help="the later evaluate run of the same judge config and items (--anchors: of the "
            "new system by the new judge)"
        )
        later: list[str] = argument(
            name="more",
            help="--series: the runs after NEW, in time order",
            nargs="*",
            metavar="RUN",
        )
        anchors: str | None = option(
            help="a file of anchor item ids, one a line, judged by both judge versions: split "
            "NEW's score change from OLD (two judge configs) into the judge's shift on them and "
            "the system's change on the other items",
            metavar="FILE",
        )
        series: bool = option(
            False,
            help="chart the score of every run given (OLD NEW RUN ...) on an EWMA control chart",
            action="store_true",
        )
        smoothing: PositiveReal = option(
            0.2, help="--series: the EWMA's λ (0 < λ <= 1)", type="float", metavar="LAMBDA"
        )
        width: PositiveReal = option(
            3.0, help="--series: the limits' width L, in σ of the EWMA", type="float", metavar="L"
        )
        center: FiniteReal | None = option(
            help="--series: the in-control score μ0 (default: the baseline runs' mean)",
            type="float",
            metavar="MU0",
        )
        sigma: PositiveReal | None = option(
            help="--series: σ of one run's score (default: the baseline runs' standard deviation)",
            type="float",
        )
        baseline: int = option(
            5,
            help="--series: how many first runs give μ0 and σ when not given",
            type="int",
            metavar="N",
        )
        stability: str | None = option(
            help="a harness run directory with stochastic_stability for this judge config: the "
            "change rate it predicts (default: none measured, any change is flagged)",
            metavar="HARNESS_RUN",
        )
        level: Share = option(0.05, help="the test's level", type="float")
        confidence: Share = option(
            0.95,
            help="the change rate's Clopper–Pearson interval (--anchors: the bootstrap intervals')",
            type="float",
        )
        tracking_uri: str | None = option(
            help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db here)"
        )
        out_dir: str | Path | None = option(
            help="folder for drift.json, report.md and report.html (default: ./drift)",
            flags=("--out",),
            metavar="OUT",
            cli_default="drift",
        )
        log: bool = option(
            True,
            help="do not log the check to MLflow",
            flags=("--no-log",),
            action="store_false",
        )

    summary = "assay.decisions:DriftSummary"
    summary_file = "drift.json"
    progress_option = False

    def run(
        self, options: Options, *, workdir: Path, progress: bool
    ) -> DriftResult | ShiftResult | SeriesResult:
        from assay.decisions import anchor_shift, drift, score_series

        uri = stored_runs_uri(options.tracking_uri, workdir)
        out_dir = (workdir / options.out_dir).resolve() if options.out_dir is not None else None
        where = {"out_dir": out_dir, "log": options.log, "workdir": workdir}
        _check_mode(options)
        if options.series:
            return score_series(
                [options.old, options.new, *options.later],
                tracking_uri=uri,
                smoothing=options.smoothing,
                width=options.width,
                center=options.center,
                sigma=options.sigma,
                baseline=options.baseline,
                **where,
            )
        if options.anchors is not None:
            return anchor_shift(
                options.old,
                options.new,
                options.anchors,
                tracking_uri=uri,
                confidence=options.confidence,
                **where,
            )
        return drift(
            options.old,
            options.new,
            tracking_uri=uri,
            stability=options.stability,
            level=options.level,
            confidence=options.confidence,
            **where,
        )

    def report(self, run_dir: Path, **options: Any) -> Any:
        from assay.decisions import build_paired_report

        return build_paired_report(run_dir)

    def print(
        self, result: DriftResult | ShiftResult | SeriesResult, options: Options, *, json: bool
    ) -> int:
        from assay.decisions import render_paired_console

        print(result.model_dump_json() if json else render_paired_console(result), end="")
        if result.mode == "anchors":
            d = result.decomposition
            failing = result.unscored is not None and result.unscored.moved
            return 0 if d.judge_shift_low <= 0 <= d.judge_shift_high and not failing else 1
        if result.mode == "series":
            return 0 if result.chart.first_out is None else 1
        failing = result.unscored is not None and result.unscored.moved
        return 1 if result.test.drifted or failing else 0


def _check_mode(options: Drift.Options) -> None:
    """Refuse options of one mode given to another (one line)."""
    if options.series and options.anchors is not None:
        raise ConfigError(
            "drift: --anchors splits one change between two runs, --series charts many: give one"
        )
    if options.later and not options.series:
        raise ConfigError(
            f"drift: {2 + len(options.later)} runs given: more than OLD and NEW is a --series"
        )
    if options.stability is not None and (options.series or options.anchors is not None):
        raise ConfigError(
            "drift: --stability tests one judge config's verdicts (no --anchors, no --series)"
        )
    if options.series and not 0 < options.smoothing <= 1:
        raise ConfigError(f"drift --smoothing {options.smoothing}: λ must be in (0, 1]")
