"""``assay estimate RUN --validation RUN``: a verdict's rate in an unlabelled run, corrected for
the judge's errors measured on a labelled run of the same judge (no LM call)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.metrics import Resamples
from assay.runners._runner import CERTIFICATE_OPTION, Runner, argument, option, runner
from assay.runners._runner import Options as BaseOptions
from assay.types import Seed, Share


@runner("estimate")
class Estimate(Runner):
    """prevalence-corrected rate of a verdict in an unlabelled run (Rogan–Gladen)"""

    class Options(BaseOptions):
        run: str | Path = argument(
            help="an evaluate run directory (its judgments; labels not needed)"
        )
        validation: str | Path = option(
            ...,
            help="an evaluate run of the same judge config on labelled items",
            api_positional=True,
        )
        positive: str | None = option(
            help="the verdict whose rate is estimated (binary: the second label)"
        )
        threshold: int | None = option(
            help="estimate the rate of scores below this one", type="int"
        )
        seed: Seed = option(0, help="bootstrap seed", type="int")
        require_certificate: list[str] | None = CERTIFICATE_OPTION
        n_resamples: Resamples = 1000
        confidence: Share = 0.95

    summary = "assay.decisions:PrevalenceResult"
    summary_file = None  # no run directory
    progress_option = False

    def run(self, options: Options, *, workdir: Path, progress: bool) -> Any:
        from assay.decisions import estimate

        return estimate(
            options.run,
            options.validation,
            workdir=workdir,
            # its plug-ins are imported already (Runner.execute)
            **options.model_dump(exclude={"run", "validation", "plugins"}),
        )

    def print(self, result: Any, options: Options, *, json: bool) -> int:
        from assay.metrics import fmt_ci

        out = result
        if json:
            print(out.model_dump_json())
            return 0
        print(
            f"{out.event}: raw flagged rate {fmt_ci(out.raw.to_dict())} over "
            f"{out.n_unlabelled} items"
        )
        print(
            f"judge on the validation run ({out.n_validation} labelled items): "
            f"TPR {out.sensitivity:.3f}, TNR {out.specificity:.3f}"
        )
        if out.defined:
            print(f"corrected rate: {fmt_ci(out.corrected.to_dict())}")
        else:
            print("corrected rate: undefined")
        if out.corrected.note:
            print(f"note: {out.corrected.note}")
        print(f"CI: bootstrap over {out.resampled}")
        return 0
