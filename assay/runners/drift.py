"""``assay drift OLD NEW``: the same judge config on the same anchor items at two times — are
its verdict changes beyond what its measured stochastic stability explains? Exit code 1 when
they are (a CI job gates on it)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.runners._runner import Options as BaseOptions
from assay.runners._runner import Runner, argument, option, runner, stored_runs_uri
from assay.types import Share

if TYPE_CHECKING:
    from assay.decisions import DriftResult


@runner("drift")
class Drift(Runner):
    """flag verdict changes of one judge config on frozen anchors beyond its stability"""

    class Options(BaseOptions):
        json_output = "print one JSON object"

        old: str = argument(help="the earlier evaluate run (a run directory or MLflow run id)")
        new: str = argument(help="the later evaluate run of the same judge config and items")
        stability: str | None = option(
            help="a harness run directory with stochastic_stability for this judge config: the "
            "change rate it predicts (default: none measured, any change is flagged)",
            metavar="HARNESS_RUN",
        )
        level: Share = option(0.05, help="the test's level", type="float")
        confidence: Share = option(
            0.95, help="the change rate's Clopper–Pearson interval", type="float"
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

    summary = "assay.decisions:DriftResult"
    summary_file = "drift.json"
    progress_option = False

    def run(self, options: Options, *, workdir: Path, progress: bool) -> DriftResult:
        from assay.decisions import drift

        uri = stored_runs_uri(options.tracking_uri, workdir)
        out_dir = options.out_dir
        return drift(
            options.old,
            options.new,
            tracking_uri=uri,
            stability=options.stability,
            level=options.level,
            confidence=options.confidence,
            out_dir=(workdir / out_dir).resolve() if out_dir is not None else None,
            log=options.log,
            workdir=workdir,
        )

    def report(self, run_dir: Path, **options: Any) -> Any:
        from assay.decisions import build_paired_report

        return build_paired_report(run_dir)

    def print(self, result: DriftResult, options: Options, *, json: bool) -> int:
        from assay.decisions import render_paired_console

        print(result.model_dump_json() if json else render_paired_console(result), end="")
        return 1 if result.test.drifted else 0
