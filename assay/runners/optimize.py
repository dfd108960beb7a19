"""``assay optimize CONFIG``: compile a judge with a DSPy optimizer; measure before and after."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.runners._runner import (
    ConfigOptions,
    Runner,
    argument,
    lm_cache,
    measured_nothing,
    runner,
)

if TYPE_CHECKING:
    from assay.optimization import OptimizeResult


@runner("optimize")
class Optimize(Runner):
    """compile a judge with a DSPy optimizer on a train split; measure before and after"""

    class Options(ConfigOptions):
        config: Any = argument(help="YAML optimize config (see examples/optimize_harmbench.yaml)")

    config = "assay.optimization:OptimizeConfig"
    summary = "assay.optimization:OptimizeResult"
    summary_file = "result.json"
    quiet_json = True

    def run(self, options: Options, *, workdir: Path, progress: bool) -> OptimizeResult:
        from assay.optimization import OptimizeConfig, optimize

        config, base = options.load(OptimizeConfig)
        return optimize(
            config,
            workdir=lm_cache(workdir),
            config_dir=base,
            progress=progress,
            tracking_uri=options.tracking_uri,
        )

    def print(self, result: OptimizeResult, options: Options, *, json: bool) -> int:
        from assay.optimization import render_result

        if json:
            print(result.model_dump_json())
        else:
            print(render_result(result, options.loaded.bootstrap.confidence))
        return measured_nothing(result.measured_nothing())
