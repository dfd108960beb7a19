"""``assay evaluate CONFIG``: run a judge over a labelled data set and measure its agreement."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.runners._runner import (
    CERTIFICATE_OPTION,
    MODEL_OPTION,
    RAY_OPTION,
    Runner,
    RunOptions,
    lm_cache,
    measured_nothing,
    mlflow_line,
    option,
    print_run_json,
    runner,
)
from assay.types import all_unscored

if TYPE_CHECKING:
    from assay.evaluation import Counts, EvaluateResult
    from assay.inputs import EvaluateConfig, ItemStream
    from assay.programs import JudgeConfig
    from assay.runs import FinishedRun


@runner("evaluate")
class Evaluate(Runner):
    """run a judge over a labelled data set and measure its agreement"""

    class Options(RunOptions):
        model: str | None = MODEL_OPTION
        ray: bool = RAY_OPTION
        require_certificate: list[str] | None = CERTIFICATE_OPTION
        write_back: bool = option(
            False,
            help="data.format mlflow: write each verdict back on its trace as a Feedback named "
            "after the judge, once the run is finished (data.write_back: true)",
            action="store_true",
            override="data.write_back",
        )

    config = "assay.inputs:EvaluateConfig"
    summary = "assay.evaluation:EvaluateSummary"
    opens_run = True
    watched = ()  # its judgments are sealed, and nothing else is scored

    def run(self, options: Options, *, workdir: Path, progress: bool) -> EvaluateResult:
        from assay.evaluation import evaluate
        from assay.inputs import EvaluateConfig

        config, base = options.load(EvaluateConfig)
        if options.require_certificate:  # before any LM call
            from assay.decisions import ledger_of, require_certificates

            ledger = ledger_of(workdir, config.output_dir)
            require_certificates(
                options.require_certificate,
                [config.judge],
                ledger=ledger,
                threshold=config.threshold,
            )
        return evaluate(
            config,
            workdir=lm_cache(workdir),
            config_dir=base,
            limit=options.limit,
            tracking_uri=options.tracking_uri,
            progress=progress,
        )

    def reread(
        self, found: FinishedRun, options: Options, *, workdir: Path
    ) -> EvaluateResult | None:
        from pydantic import ValidationError

        from assay.evaluation import EvaluateResult

        def items() -> ItemStream:  # read from the config only if the caller asks for them
            from assay.evaluation import run_items
            from assay.inputs import EvaluateConfig

            config, _ = options.load(EvaluateConfig)
            return run_items(config, workdir=workdir, limit=options.limit)

        run_id = found.state.get("mlflow_run_id")
        try:
            return EvaluateResult.reread(found.dir, run_id, items=items)
        except ValidationError:  # a metrics.json of another version: the run says what it is
            return None

    def shown(self, config: EvaluateConfig) -> dict[str, object]:
        return {
            "name": config.name,
            "confidence": config.bootstrap.confidence,
            "embedded_model": config.judge.uses_embedded_model,
            "traces_uri": config.data.tracking_uri,
            "kind_plugins": kind_plugins(config.judge),
        }

    def report(self, run_dir: Path, **options: Any) -> Any:
        from assay.evaluation import build_report

        return build_report(run_dir, options.get("items"))

    def print(self, result: EvaluateResult, options: Options, *, json: bool) -> int:
        from assay.metrics import metrics_table
        from assay.types import cost_lines

        res, s, shown = result, result.summary, options.shown
        c = s.counts
        if json:
            extra = {} if res.feedback is None else {"feedback": res.feedback}
            print_run_json(
                res, {"new_judgments": res.new_judgments, **extra, **s.model_dump(mode="json")}
            )
            return exit_code(c)
        if res.read_back:
            state = "re-read (finished before; no LM call)"
        elif res.new_judgments == 0 and res.resumed:
            state = "scored from its judgments (no LM call)"
        elif res.resumed:
            state = f"resumed, {res.new_judgments} new judgments"
        else:
            state = f"{res.new_judgments} judgments"
        if res.retried:
            state += f" ({res.retried} unscored items judged again)"
        print(f"\n{shown['name']}: {state}")
        print(
            f"items {c.items} · scored {c.scored} · unscored {c.unscored} "
            f"{c.unscored_reasons or ''} · paired with reference {c.paired}"
        )
        if s.left_out:
            from assay.inputs import left_out_line

            print(left_out_line(s.left_out, s.errored_samples))
        if s.metrics:
            print(metrics_table(s.model_dump()["metrics"], shown["confidence"]))
        if s.note:
            print(f"note: {s.note}")
        if s.panel is not None:
            from assay.evaluation import dawid_skene_console, panel_lead

            print(f"\n{panel_lead(s.panel)}")
            if s.panel.dawid_skene is not None:
                print(dawid_skene_console(s.panel.dawid_skene, shown["confidence"]))
        if s.self_preference is not None:
            from assay.evaluation import self_preference_console

            print(self_preference_console(s.self_preference, shown["confidence"]))
        if s.scale_use is not None:
            from assay.evaluation import scale_use_console

            print(scale_use_console(s.scale_use))
        print("\n".join(cost_lines(s.usage, s.spend)))
        print(f"run directory: {res.run_dir}")
        line = mlflow_line(res.mlflow_run_id, options.tracking_uri)
        if line:
            print(line)
        if res.feedback is not None:
            f = res.feedback
            print(
                f"verdicts on the traces ({shown['traces_uri']}): {f['written']} feedback "
                f"written · {f['updated']} updated · {f['skipped']} already there"
            )
        transient = sum(c.unscored_reasons.get(r, 0) for r in ("lm_error", "timeout"))
        if transient:
            print(
                f"note: {transient} items are unscored by LM errors or timeouts; once the cause "
                "is fixed, re-run with --retry-unscored to judge them again."
            )
        failed = c.unscored_reasons.get("plugin_error", 0)
        if failed:
            named = ", ".join(shown.get("kind_plugins") or []) or "the judge kind's plug-in"
            print(
                f"note: {failed} items are unscored by errors of {named} (plugin_error: each "
                "error in judgments.jsonl); --retry-unscored judges them again."
            )
        if shown["embedded_model"]:
            print("note: the embedded model is for trying assay, not for trustworthy verdicts.")
        return exit_code(c)


def kind_plugins(judge: JudgeConfig) -> list[str]:
    """The plug-ins of the judge kinds a judge (a panel: its members) runs, as the plug-in's
    errors name them (``plugin FILE`` and its kind)."""
    from assay._registry import plugin_where
    from assay.programs.kinds import get_kind

    out: dict[str, None] = {}
    for config in (judge, *judge.members):
        kind = get_kind(config.task)
        where = plugin_where(kind)
        if where is not None:
            out[f"plugin {where} (judge kind '{kind.name}')"] = None
    return list(out)


def exit_code(counts: Counts) -> int:
    """1 (with the reasons on stderr) when every judgment of the run is unscored, else 0."""
    return measured_nothing(all_unscored(counts.judged, counts.unscored_reasons))
