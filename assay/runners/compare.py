"""``assay compare [RUN|EXPERIMENT ...]``: judge configs side by side, read from MLflow."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BeforeValidator

from assay.errors import ConfigError
from assay.runners._runner import Options as BaseOptions
from assay.runners._runner import (
    Runner,
    argument,
    option,
    runner,
    split_names,
    stored_runs_uri,
)
from assay.types import PositiveReal, Seed, Share

if TYPE_CHECKING:
    from assay.comparison import Comparison
    from assay.decisions import PairedResult


def _tags(value: Any) -> Any:
    """``["KEY=VALUE", ...]`` (the command line's ``--tag``) → ``{KEY: VALUE}``; dicts pass."""
    if not isinstance(value, list):
        return value
    tags = {}
    for item in value:
        k, sep, v = item.partition("=")
        if not sep or not k:
            raise ConfigError(f"--tag {item}: expected KEY=VALUE")
        tags[k] = v
    return tags


@runner("compare")
class Compare(Runner):
    """compare judge configs across MLflow runs: leaderboard, differences, plots"""

    class Options(BaseOptions):
        json_output = "print one JSON object"
        cli_order = ("metric", "json")

        selectors: list[str] = argument(
            name="runs",
            help="run ids or experiment names (default: every run of the experiment 'assay'); "
            "with --paired: two evaluate runs A B (run directories or MLflow run ids)",
            nargs="*",
        )
        paired: bool = option(
            False,
            help="is B better than A? two runs of different judge configs on the same items: "
            "differences with CIs, McNemar / paired bootstrap, Holm, a verdict, items needed",
            action="store_true",
        )
        level: Share = option(
            0.05, help="--paired: the family-wise level of the verdicts", type="float"
        )
        delta: PositiveReal = option(
            0.05,
            help="--paired: the difference Δ whose items needed are shown (metric units)",
            type="float",
        )
        power: Share = option(
            0.8, help="--paired: the power the items needed are for", type="float"
        )
        metrics: Annotated[list[str] | None, BeforeValidator(split_names)] = option(
            help="--paired: the metrics compared, comma-separated (default: every metric of "
            "the scale; fewer metrics, a milder Holm correction)"
        )
        seed: Seed = option(0, help="--paired: bootstrap seed", type="int")
        metric: str | None = option(
            help="metric to rank by (default: kappa_categorical, else accuracy; harness: "
            "worst_test_rate, the lowest pass rate or consistency over its tests)"
        )
        force: bool = option(
            False, help="also rank runs measured on other items or scales", action="store_true"
        )
        tracking_uri: str | None = option(
            help="MLflow tracking URI (default: the config's, else sqlite:///mlflow.db here)"
        )
        experiment: str | None = option(
            help="experiment to read when no runs are named; with named runs, keep only its runs"
        )
        tags: Annotated[dict[str, str], BeforeValidator(_tags)] = option(
            {},
            help="keep only runs with this tag (repeatable), e.g. assay.items=<fingerprint>",
            flags=("--tag",),
            action="append",
            metavar="KEY=VALUE",
        )
        out_dir: str | Path | None = option(
            help="folder for the plots and comparison.json (default: ./compare)",
            flags=("--out",),
            metavar="OUT",
            cli_default="compare",  # the command line writes them here; the API when asked
        )
        log: bool = option(
            True,
            help="do not log a comparison run to MLflow",
            flags=("--no-log",),
            action="store_false",
        )

    summary = "assay.comparison:Comparison"
    summary_file = "comparison.json"
    progress_option = False

    def run(self, options: Options, *, workdir: Path, progress: bool) -> Comparison | PairedResult:
        from assay.comparison import compare

        uri = stored_runs_uri(options.tracking_uri, workdir)
        out_dir = options.out_dir
        if options.paired:
            return self._paired(options, uri, workdir)
        return compare(
            options.selectors,
            tracking_uri=uri,
            metric=options.metric,
            force=options.force,
            experiment=options.experiment,
            tags=options.tags,
            out_dir=(workdir / out_dir).resolve() if out_dir is not None else None,
            log=options.log,
        )

    def _paired(self, options: Options, uri: str, workdir: Path) -> PairedResult:
        from assay.decisions import paired

        if len(options.selectors) != 2:
            raise ConfigError(
                f"--paired compares two runs, A and B; got {len(options.selectors)}: "
                f"{' '.join(options.selectors) or '(none)'}"
            )
        out_dir = options.out_dir
        return paired(
            *options.selectors,
            tracking_uri=uri,
            level=options.level,
            delta=options.delta,
            power=options.power,
            metrics=options.metrics,
            seed=options.seed,
            out_dir=(workdir / out_dir / "paired").resolve() if out_dir is not None else None,
            log=options.log,
            workdir=workdir,
        )

    def report(self, run_dir: Path, **options: Any) -> Any:
        from assay.comparison import build_report
        from assay.decisions import build_paired_report

        if (Path(run_dir) / "comparison.json").is_file():
            return build_report(run_dir)
        return build_paired_report(run_dir)  # compare --paired, drift

    def print(self, result: Comparison | PairedResult, options: Options, *, json: bool) -> int:
        from assay.comparison import render_markdown
        from assay.decisions import render_paired_console

        if json:
            print(result.model_dump_json())
        elif options.paired:
            print(render_paired_console(result), end="")
        else:
            print(render_markdown(result), end="\n")
        return 0
