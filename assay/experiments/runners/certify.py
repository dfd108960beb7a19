"""``assay certify RUN --policy POLICY``: admit or refuse a judge config for a use, from one-sided
confidence bounds of its metrics on a finished labelled evaluate run (no LM call)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.experiments._runners import Options as BaseOptions
from assay.experiments._runners import Runner, argument, option, runner


@runner("certify")
class Certify(Runner):
    """admit or refuse a judge config: one-sided bounds of a labelled run against a policy"""

    class Options(BaseOptions):
        run: str | Path = argument(help="a finished evaluate run directory (items with references)")
        policy: Any = option(
            ...,
            help="YAML policy: bars (metric: value), confidence, positive (see examples/)",
            api_positional=True,
        )
        out: str | Path | None = option(help="also write the certificate (JSON) to this file")
        tracking_uri: str | None = option(
            help="MLflow tracking URI (default: the run config's, else sqlite:///mlflow.db here)"
        )

    summary = "assay.experiments._certify:Certificate"
    summary_file = None  # the certificate lives in the ledger (and --out), not in a run
    progress_option = False

    def run(self, options: Options, *, workdir: Path, progress: bool) -> Any:
        from assay.experiments._certify import certify_run

        return certify_run(
            options.run,
            options.policy,
            out=options.out,
            workdir=workdir,
            tracking_uri=options.tracking_uri,
        )

    def print(self, result: Any, options: Options, *, json: bool) -> int:
        from assay.metrics import fmt

        c = result
        code = 0 if c.admitted else 1
        if json:
            print(c.model_dump_json())
            return code
        print(
            f"\n{c.judge} (config {c.config_hash}, model {c.model}) on {c.n_items} labelled items "
            f"(fingerprint {c.data_fingerprint[:16]})"
        )
        unscored = sum(c.unscored.values())
        if unscored:
            print(f"unscored: {unscored} {c.unscored}, each counted as the worst verdict")
        print(
            f"one-sided bounds at {c.confidence:.0%} jointly (each at "
            f"{1 - c.delta_per_bar:.2%}: Bonferroni over {len(c.results)} bars)"
            + (f"; positive = {c.event}" if c.event else "")
        )
        rows = ["| metric | value | bound | bar | n | method | passed |"]
        rows.append("|---|---|---|---|---|---|---|")
        for r in c.results:
            n = f"{r.successes}/{r.n}" if r.successes is not None else str(r.n)
            sign = "≥" if r.side == "at_least" else "≤"
            kind = "lower" if r.side == "at_least" else "upper"
            rows.append(
                f"| {r.metric} | {fmt(r.point)} | {kind} {fmt(r.bound)} | {sign} {r.bar:g} | {n} "
                f"| {r.method} | {'yes' if r.passed else 'NO'} |"
            )
        print("\n".join(rows))
        print(f"\n{c.decision.upper()}: certificate {c.certificate}")
        print(f"certificate: {c.ledger}" + (f" (and {options.out})" if options.out else ""))
        if c.mlflow_run_id:
            print(f"logged on the evaluate run's MLflow run {c.mlflow_run_id}")
        return code
