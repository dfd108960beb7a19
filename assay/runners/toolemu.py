"""``assay toolemu run|agreement``: agents in an LM-emulated tool sandbox, judged for safety
and helpfulness; ToolEmu's validation figures against human annotations."""

from __future__ import annotations

import json as _json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.metrics import Resamples
from assay.runners._runner import Options as BaseOptions
from assay.runners._runner import (
    Runner,
    RunOptions,
    argument,
    lm_cache,
    measured_nothing,
    mlflow_line,
    option,
    print_run_json,
    runner,
)
from assay.types import PositiveInt, Seed, Share

if TYPE_CHECKING:
    from assay.emulation import ToolEmuAgreement, ToolEmuResult

GROUP_HELP = "ToolEmu: agents in an LM-emulated tool sandbox, judged for safety"


@runner("toolemu")
class ToolEmu(Runner):
    """cases → agent with emulated tools → trajectories → evaluators → metrics"""

    class Options(RunOptions):
        cli_order = ("cases", *RunOptions.cli_order)

        config: Any = argument(help="YAML config (see examples/toolemu_run.yaml)")
        cases: str | list[int] | None = option(
            help="case indices, e.g. 0-14 or 0,3,7-9 (overrides 'select')"
        )
        limit: PositiveInt | None = option(help="use only the first N selected cases", type="int")

    command = ("toolemu", "run")
    group_help = GROUP_HELP
    config = "assay.emulation:ToolEmuRunConfig"
    summary = "assay.emulation:ToolEmuSummary"
    opens_run = True

    def run(self, options: Options, *, workdir: Path, progress: bool) -> ToolEmuResult:
        from assay.emulation import ToolEmuRunConfig, load_toolemu_config, run_toolemu

        config, base = options.load(ToolEmuRunConfig, loader=load_toolemu_config)
        return run_toolemu(
            config,
            workdir=lm_cache(workdir),
            config_dir=base,
            select=options.cases,
            limit=options.limit,
            tracking_uri=options.tracking_uri,
            progress=progress,
        )

    def report(self, run_dir: Path, **options: Any) -> Any:
        from assay.emulation import build_report

        return build_report(run_dir)

    def print(self, result: ToolEmuResult, options: Options, *, json: bool) -> int:
        from assay.emulation import render_run_summary

        res = result
        if json:
            print_run_json(res, res.summary.model_dump(mode="json"))
        else:
            print(render_run_summary(options.loaded, res))
            line = mlflow_line(res.mlflow_run_id, options.tracking_uri)
            if line:
                print(line)
        return measured_nothing(res.summary.measured_nothing()) or (1 if res.crashed else 0)


@runner("toolemu_agreement")
class ToolEmuAgreement(Runner):
    """ToolEmu's validation figures: evaluators and emulator vs human annotations (no LM call)"""

    class Options(BaseOptions):
        run_or_trajectories: str | Path = argument(
            help="an assay toolemu run directory, or a ToolEmu trajectories JSONL file",
            metavar="RUN_OR_TRAJECTORIES",
        )
        annotations: str | Path = argument(
            help="human annotations, CSV or JSONL (see examples/toolemu_annotations.md)",
            metavar="ANNOTATIONS",
        )
        safety: str | Path | None = option(
            help="safety evaluator JSONL (eval_scores.ToolCallRisk)", metavar="FILE"
        )
        helpfulness: str | Path | None = option(
            help="helpfulness evaluator JSONL (eval_scores.Helpfulness)", metavar="FILE"
        )
        seed: Seed = option(
            0, help="seed for majority ties and the bootstrap (default 0)", type="int"
        )
        n_resamples: Resamples = 1000
        confidence: Share = 0.95

    command = ("toolemu", "agreement")
    group_help = GROUP_HELP
    progress_option = False

    def run(self, options: Options, *, workdir: Path, progress: bool) -> ToolEmuAgreement:
        from assay.emulation import toolemu_agreement

        values = dict(options)
        del values["plugins"]  # imported already (Runner.execute)
        return toolemu_agreement(
            values.pop("run_or_trajectories"), values.pop("annotations"), **values
        )

    def print(self, result: ToolEmuAgreement, options: Options, *, json: bool) -> int:
        from assay.data import jsonable
        from assay.emulation import render_agreement

        if json:
            print(_json.dumps(jsonable(result.model_dump()), ensure_ascii=False))
        else:
            print(render_agreement(result))
        return 0
