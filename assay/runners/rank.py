"""``assay rank SOURCE...``: systems ranked from pairwise verdicts — Bradley–Terry strengths with
intervals, each judge's first-position effect, cyclic triads, each judge's agreement with the
others' ranking — from pairwise evaluate runs or tables of pairs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BeforeValidator, Field

from assay.errors import ConfigError
from assay.runners._runner import Options as BaseOptions
from assay.runners._runner import (
    Runner,
    argument,
    mlflow_line,
    option,
    runner,
    split_names,
    stored_runs_uri,
)
from assay.types import FiniteReal, PlainName, Share

if TYPE_CHECKING:
    from assay.ranking import RankSummary


@runner("rank")
class Rank(Runner):
    """rank systems from pairwise verdicts: Bradley–Terry strengths, order effect, cycles"""

    class Options(BaseOptions):
        json_output = "print the ranking as one JSON object"
        cli_order = (
            "systems",
            "prior",
            "order_effect",
            "confidence",
            "name",
            "output_dir",
            "tracking_uri",
            "log",
            "json",
        )

        sources: list[str] = argument(
            help="pairwise evaluate runs (run directories or MLflow run ids) or tables of pairs "
            "(.csv/.tsv/.jsonl: columns a, b, winner, and optionally first, judge), one or more",
            nargs="+",
        )
        systems: Annotated[list[str] | None, BeforeValidator(split_names)] = option(
            help="runs: the item columns naming the systems of responses A and B (default: the "
            "rows data.pairs paired)",
            metavar="A_COLUMN,B_COLUMN",
        )
        prior: Annotated[FiniteReal, Field(ge=0)] = option(
            0.0,
            help="the penalty PRIOR · Σ strength² (a Gaussian prior): finite strengths for a "
            "system that won or lost every vote (default 0: maximum likelihood)",
            type="float",
        )
        order_effect: bool = option(
            True,
            help="fit no first-position effect (default: one per judge, from the votes whose "
            "order is known)",
            flags=("--no-order-effect",),
            action="store_false",
        )
        confidence: Share = option(0.95, help="the intervals' level", type="float")
        name: PlainName = option("rank", help="the run's name: runs/NAME-HASH")
        output_dir: str = option("runs", help="the runs folder", metavar="DIR")
        tracking_uri: str | None = option(
            help="MLflow tracking URI: where run ids are read and the ranking is logged "
            "(default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db here)"
        )
        log: bool = option(
            True,
            help="do not log the ranking to MLflow",
            flags=("--no-log",),
            action="store_false",
        )

    config = "assay.ranking:RankConfig"
    summary = "assay.ranking:RankSummary"
    progress_option = False

    def run(self, options: Options, *, workdir: Path, progress: bool) -> RankSummary:
        from assay.ranking import rank

        systems = options.systems
        if systems is not None and len(systems) != 2:
            raise ConfigError(
                f"--systems {','.join(systems)}: two columns, response A's system and response "
                "B's (e.g. model_a,model_b)"
            )
        return rank(
            list(options.sources),
            workdir=workdir,
            tracking_uri=stored_runs_uri(options.tracking_uri, workdir),
            name=options.name,
            systems=(systems[0], systems[1]) if systems else None,
            order_effect=options.order_effect,
            prior=options.prior,
            confidence=options.confidence,
            output_dir=options.output_dir,
            log=options.log,
        )

    def report(self, run_dir: Path, **options: Any) -> Any:
        from assay.ranking import build_rank_report

        return build_rank_report(run_dir)

    def print(self, result: RankSummary, options: Options, *, json: bool) -> int:
        from assay.ranking import rank_console

        if json:
            print(result.model_dump_json())
            return 0
        print(rank_console(result), end="")
        line = mlflow_line(result.mlflow_run_id, options.tracking_uri)
        if line:
            print(line)
        return 0
