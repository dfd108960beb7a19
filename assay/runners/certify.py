"""``assay certify RUN --policy POLICY``: admit or refuse a judge config for a use, from one-sided
confidence bounds of its metrics on a finished labelled evaluate run (no LM call)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.runners._runner import Options as BaseOptions
from assay.runners._runner import Runner, argument, option, runner

if TYPE_CHECKING:
    from assay.decisions import Certificate


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
        output_dir: str | None = option(
            help="the runs folder, here, whose ledger counts the certificate (default: runs; "
            "never the one the run's config names — a run made for another needs it)",
            metavar="DIR",
        )
        tracking_uri: str | None = option(
            help="MLflow tracking URI (default: the run config's, else sqlite:///mlflow.db here)"
        )

    config = "assay.metrics:Policy"  # assay schema certify: the policy file
    summary = "assay.decisions:Certificate"
    summary_file = None  # the certificate lives in the ledger (and --out), not in a run
    progress_option = False

    def run(self, options: Options, *, workdir: Path, progress: bool) -> Certificate:
        from assay.decisions import certify_run

        return certify_run(
            options.run,
            options.policy,
            out=options.out,
            workdir=workdir,
            tracking_uri=options.tracking_uri,
            output_dir=options.output_dir,
        )

    def report(self, run_dir: Path, **options: Any) -> Any:
        """The report of the certificate in ``run_dir`` (its folder in the ledger)."""
        from assay.decisions import CERTIFICATE, certificate_report, read_certificate

        return certificate_report(read_certificate(Path(run_dir) / CERTIFICATE))

    def print(self, result: Certificate, options: Options, *, json: bool) -> int:
        from assay.decisions import bounds_table
        from assay.report import markdown_table

        c = result
        code = 0 if c.admitted else 1
        if json:
            print(c.model_dump_json())
            return code
        table = bounds_table(c)
        print(
            f"\n{c.judge} (config {c.config_hash}, model {c.model}) on {c.n_items} labelled items "
            f"(fingerprint {c.data_fingerprint[:16]})"
        )
        print(table.lead)
        print("\n".join(markdown_table(table)))
        if table.note:
            print(table.note)
        print(f"\n{c.decision.upper()}: certificate {c.certificate}")
        where = _shown(Path(c.ledger))
        print(f"certificate: {where}/certificate.json, report.md, report.html")
        if options.out:
            print(f"copy: {options.out}")
        if c.mlflow_run_id:
            print(f"logged on the evaluate run's MLflow run {c.mlflow_run_id}")
        return code


def _shown(path: Path) -> Path:
    """``path`` relative to the current directory when it is under it."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path
