"""``assay harness CONFIG``: generate reliability probes from a benchmark and score judges."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BeforeValidator

from assay.reliability import UNSEALED_READS
from assay.runners._runner import (
    CERTIFICATE_OPTION,
    RAY_OPTION,
    Runner,
    RunOptions,
    argument,
    freeze_imports,
    lm_cache,
    measured_nothing,
    mlflow_line,
    option,
    print_run_json,
    runner,
    split_names,
)
from assay.types import PositiveInt

if TYPE_CHECKING:
    from assay.reliability import HarnessConfig, HarnessResult
    from assay.runs import FinishedRun

Names = Annotated[list[str] | None, BeforeValidator(split_names)]


@runner("harness")
class Harness(Runner):
    """generate reliability probes from a benchmark and score judges on them"""

    class Options(RunOptions):
        config: Any = argument(help="YAML harness config (see examples/*_harness.yaml)")
        limit: PositiveInt | None = option(help="use only the first N seed items", type="int")
        tests: Names = option(help="comma-separated tests to run (default: all in the config)")
        judges: Names = option(help="comma-separated judges to run (default: all in the config)")
        ray: bool = RAY_OPTION
        require_certificate: list[str] | None = CERTIFICATE_OPTION

    config = "assay.reliability:HarnessConfig"
    summary = "assay.reliability:HarnessSummary"
    opens_run = True
    watched = UNSEALED_READS

    def run(self, options: Options, *, workdir: Path, progress: bool) -> HarnessResult:
        from assay.reliability import HarnessConfig, run_harness

        config, base = options.load(HarnessConfig)
        if options.require_certificate:  # every judge it runs, before any LM call
            from assay.decisions import ledger_of, require_certificates

            chosen = [j for j in config.judges if not options.judges or j.name in options.judges]
            ledger = ledger_of(workdir, config.output_dir)
            require_certificates(options.require_certificate, chosen, ledger=ledger)
        here = lm_cache(workdir)
        if self.cli:
            freeze_imports()
        return run_harness(
            config,
            workdir=here,
            config_dir=base,
            limit=options.limit,
            tests=options.tests,
            judges=options.judges,
            tracking_uri=options.tracking_uri,
            progress=progress,
        )

    def reread(
        self, found: FinishedRun, options: Options, *, workdir: Path
    ) -> HarnessResult | None:
        from assay.reliability import HarnessResult, HarnessSummary

        summary = HarnessSummary.stored(found.dir)
        if summary is None:
            return None
        return HarnessResult.reread(found.dir, summary, found.state.get("mlflow_run_id"))

    def shown(self, config: HarnessConfig) -> dict[str, object]:
        return {"name": config.name}

    def report(self, run_dir: Path, **options: Any) -> Any:
        from assay.reliability import build_report

        return build_report(run_dir)

    def print(self, result: HarnessResult, options: Options, *, json: bool) -> int:
        from assay.reliability import ci, headline
        from assay.types import Usage, cost_lines, work_line

        res, s = result, result.summary
        if json:
            print_run_json(res, s.model_dump(mode="json"))
            return measured_nothing(s.measured_nothing())
        print(
            f"\n{options.shown['name']}: {s.seeds} seeds · probes "
            + ", ".join(f"{k} {v}" for k, v in s.probes.items())
        )
        reused = sum(res.probes_reused.values())
        if reused:  # the rest were made in this run (from inputs that changed, or new ones)
            print(
                f"probes reused from an earlier run (same inputs): {reused} of "
                f"{sum(s.probes.values())}: "
                + ", ".join(f"{k} {v}" for k, v in res.probes_reused.items() if v)
            )
        for name, r in s.judges.items():
            print(f"\njudge {name} ({r.model}) · {work_line(r.usage)}")
            for t, tm in r.tests.items():
                print(
                    f"  {t:22s} pass {ci(tm.pass_rate):24s} "
                    f"consistency {ci(tm.consistency):24s} unscored {tm.unscored}" + headline(tm)
                )
        if s.dropped:
            print(
                "\ndropped (never judged): "
                + "; ".join(
                    f"{t}: " + ", ".join(f"{why} {n}" for why, n in d.items())
                    for t, d in s.dropped.items()
                )
            )
        stages: dict[str, int] = {}
        for key, n in s.lm_calls.items():
            stage = key.split(":", 1)[0]
            stages[stage] = stages.get(stage, 0) + n
        print(
            "LM calls by stage (answered by the server): "
            + ", ".join(f"{k} {v}" for k, v in stages.items())
        )
        used = [*s.generation_usage.values(), *(r.usage for r in s.judges.values())]
        print("\n".join(cost_lines(Usage.total(used), s.spend)))
        for note in s.notes:
            print(f"note: {note}")
        if s.review.required:
            print(f"\nreview: {s.review.model_dump()}")
        print(f"\nreport: {res.run_dir / 'report.md'}")
        line = mlflow_line(res.mlflow_run_id, options.tracking_uri)
        if line:
            print(line)
        return measured_nothing(s.measured_nothing())
