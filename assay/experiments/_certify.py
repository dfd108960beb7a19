"""``assay certify RUN --policy POLICY``: a certificate for a judge config from a finished,
labelled evaluate run — one-sided bounds of the metrics the policy names against its bars
(:func:`assay.metrics.certify`), bound to the judge config's hash and the items consumed.

A validation set is used once. Every certificate, admitted or refused, is kept in the ledger
next to the runs (``<runs>/certificates/<id>/certificate.json``, with its ``report.md`` and
``report.html``) with the fingerprints of the items it consumed; a later ``certify`` on any of those items is refused, whatever the judge config —
trying configs one after another on the same items until one passes is choosing on the test
set, and the stated confidence would no longer hold. An item's fingerprint is its judged text
(request, response, transcript), so renaming or relabelling it does not make it new.

``evaluate``, ``harness`` and ``estimate`` take ``--require-certificate PATH``:
:func:`require_certificates` checks, before any LM call, that the judge in use has an admitted
certificate for its exact config hash.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

import assay
from assay._files import check_writable
from assay._yaml import read_input
from assay.errors import ConfigError, RunError
from assay.experiments._config import first_error
from assay.experiments._estimate import _read
from assay.experiments._items import data_fingerprint, judged_items
from assay.experiments.runs import default_tracking_uri, file_lock, write_atomic, write_json
from assay.metrics import MetricBound, Policy, fmt, inconsistency
from assay.programs import JudgeConfig
from assay.report import Report, Table
from assay.scale import Scale
from assay.types import Item, stable_hash

LEDGER = "certificates"
"""The folder, next to the run directories, that holds every certificate issued from them."""
CERTIFICATE = "certificate.json"


class CertificateError(RunError):
    """A certificate that cannot be issued (items already consumed) or does not cover the
    judge in use (none, refused, stale): one line, exit code 2."""


class Certificate(BaseModel):
    """What ``assay certify`` issues: the decision, the bounds behind it, and what they are
    bound to — the judge config's hash, the items consumed and the policy."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    certificate: str  # its id, the file name in the ledger
    decision: Literal["admitted", "refused"]
    issued: str  # UTC, ISO 8601
    assay_version: str
    judge: str
    model: str
    config_hash: str
    run: str
    run_hash: str
    data_fingerprint: str  # the item set consumed (as MLflow's assay.items tag, in full)
    items: list[str]  # the ids of the items consumed (labelled and judged)
    item_fingerprints: list[str]  # the ledger's keys: each item's judged text
    event: str | None  # what TPR/TNR/precision count as positive
    policy: Policy
    confidence: float
    delta_per_bar: float
    results: list[MetricBound]
    n_items: int
    unscored: dict[str, int]  # reason -> items, among those consumed
    unscored_rule: str
    ledger: str  # the ledger's folder of this certificate (certificate.json, report.md/html)
    mlflow_run_id: str | None = None  # the evaluate run it was logged on

    @property
    def admitted(self) -> bool:
        return self.decision == "admitted"

    @model_validator(mode="after")
    def _consistent(self) -> Certificate:
        """A certificate whose decision, bounds and bars disagree was edited after it was
        issued (``assay certify`` writes them from one computation)."""
        wrong = inconsistency(self.results, self.policy.bars, self.admitted)
        if wrong is not None:
            raise ValueError(f"{wrong}: edited after it was issued?")
        return self


# -- reading the inputs ----------------------------------------------------------------------


def load_policy(policy: str | Path | Policy | dict[str, Any]) -> Policy:
    """A policy from a YAML file (or a dict, or a :class:`Policy`); a mistake is one line
    naming the file and the field."""
    if isinstance(policy, Policy):
        return policy
    where = "policy"
    if isinstance(policy, str | Path):
        where, policy = str(policy), read_input(policy, what="policy file")
    if not isinstance(policy, dict):
        raise ConfigError(f"{where}: a policy is a YAML mapping (bars, confidence, positive)")
    try:
        return Policy.model_validate(policy)
    except ValidationError as exc:
        raise ConfigError(f"{where}: {first_error(exc)}") from None


def item_fingerprint(item: Item) -> str:
    """What makes a validation item the same item: the text the judge read (not its id or its
    reference: renamed or relabelled, it has been seen)."""
    return stable_hash(
        item.model_dump(mode="json", include={"request", "response", "transcript"}), n=32
    )


def _event(
    scale: Scale, positive: str | int | None, threshold: int | None, where: str
) -> tuple[str, list[int]] | None:
    """The positive class of TPR/TNR/precision as scale indices: the policy's ``positive``
    label, else a failure below the run's threshold, else a binary scale's second label."""
    if positive is not None:
        try:
            value = scale.coerce(positive)
        except ValueError:
            raise ConfigError(
                f"{where}: field 'positive': {positive!r} is not on the {scale.describe()} scale"
            ) from None
        return f"verdict {scale.label_of(value) or value}", [scale.index(value)]
    if threshold is not None:
        return f"score < {threshold}", [scale.index(v) for v in scale.values if v < threshold]
    if scale.kind == "binary":
        return f"verdict {scale.label_of(scale.values[1]) or scale.values[1]}", [1]
    return None


# -- the ledger ------------------------------------------------------------------------------


def _ledger(run_dir: Path) -> Path:
    return run_dir.resolve().parent / LEDGER


def _check_unused(ledger: Path, fingerprints: list[str]) -> None:
    """Refuse when a certificate in ``ledger`` already consumed any of these items."""
    mine = set(fingerprints)
    for path in sorted(ledger.glob(f"*/{CERTIFICATE}")):
        try:
            earlier = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise CertificateError(f"{path}: unreadable certificate in the ledger") from None
        used = mine & set(earlier.get("item_fingerprints") or [])
        if used:
            raise CertificateError(
                f"{len(used)} of these {len(mine)} items were already consumed by certificate "
                f"{path} ({earlier.get('decision')}, issued {earlier.get('issued')}, judge "
                f"config {earlier.get('config_hash')}): a validation set is used once — "
                "certify on newly labelled items"
            )


# -- certify -------------------------------------------------------------------------------


def certify_run(
    run: str | Path,
    policy: str | Path | Policy | dict[str, Any],
    *,
    out: str | Path | None = None,
    workdir: Path,
    tracking_uri: str | None = None,
) -> Certificate:
    """Issue the certificate of the finished evaluate run ``run`` under ``policy``: written to
    the ledger (and to ``out``), logged on the evaluate run's MLflow run. No LM call."""
    from assay.metrics import certify

    if out is not None:  # before the items are consumed: a certificate recorded, its copy not
        check_writable(out, option="--out")
    pol = load_policy(policy)
    where = str(policy) if isinstance(policy, str | Path) else "policy"
    run_dir = Path(run)
    state = _run_state(run_dir)
    config, judgments = _read(run_dir)
    scale = config.judge.scale
    assert scale is not None
    items = judged_items(run_dir, config, set(judgments), state["run_hash"])
    labelled = [it for it in items if it.expected is not None]
    if not labelled:
        raise RunError(f"{run_dir}: no judged item has a reference: nothing to certify on")
    failure = [m for m in pol.bars if m.startswith("failure_")]
    if failure and (config.threshold is None or pol.positive is not None):
        raise ConfigError(
            f"{where}: {failure[0]} counts failures below the run's threshold: for a run with "
            "a threshold and no positive"
        )
    event = _event(scale, pol.positive, config.threshold, where)
    try:
        cert = certify(
            [scale.index(it.expected) for it in labelled],  # type: ignore[arg-type]
            [_index(scale, judgments[it.id].score) for it in labelled],
            pol,
            k=scale.k,
            event=event[1] if event else None,
            ordered=scale.kind != "categorical",
        )
    except ValueError as exc:  # a metric the scale cannot give (TPR without a positive class)
        raise ConfigError(f"{where}: {exc}") from None
    fingerprints = [item_fingerprint(it) for it in labelled]
    items_fp = data_fingerprint(sorted(labelled, key=lambda it: it.id))
    config_hash = config.judge.config_hash()
    logged = _logged_hash(run_dir)
    if logged is not None and logged != config_hash:
        raise RunError(
            f"{run_dir}: its config.yaml gives judge config {config_hash}, its metrics.json "
            f"{logged}: a run written by another version of assay, or edited; evaluate again"
        )
    ident = f"{config.judge.name}-{config_hash[:8]}-{items_fp[:8]}"
    ledger = _ledger(run_dir)
    unscored: dict[str, int] = {}
    for it in labelled:
        j = judgments[it.id]
        if j.score is None:
            unscored[str(j.unscored)] = unscored.get(str(j.unscored), 0) + 1
    certificate = Certificate(
        certificate=ident,
        decision="admitted" if cert.admitted else "refused",
        issued=datetime.now(UTC).isoformat(timespec="seconds"),
        assay_version=assay.__version__,
        judge=config.judge.name,
        model=config.judge.model,
        config_hash=config_hash,
        run=str(run_dir.resolve()),
        run_hash=state["run_hash"],
        data_fingerprint=items_fp,
        items=[it.id for it in labelled],
        item_fingerprints=fingerprints,
        event=event[0] if event else None,
        policy=pol,
        confidence=cert.confidence,
        delta_per_bar=cert.delta_per_bar,
        results=cert.results,
        n_items=cert.n_items,
        unscored=unscored,
        unscored_rule=cert.unscored_rule,
        ledger=str(ledger / ident),
        mlflow_run_id=state.get("mlflow_run_id") if config.tracking.enabled else None,
    )
    with file_lock(ledger / ".lock"):
        _check_unused(ledger, fingerprints)
        (ledger / ident).mkdir(parents=True, exist_ok=True)
        write_json(ledger / ident / CERTIFICATE, certificate.model_dump(mode="json"))
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        write_json(Path(out), certificate.model_dump(mode="json"))
    _write_reports(certificate)
    if certificate.mlflow_run_id:
        uri = tracking_uri or config.tracking.uri or default_tracking_uri(workdir)
        _log(certificate, uri)
    return certificate


def _run_state(run_dir: Path) -> dict[str, Any]:
    """``run.json`` of a finished evaluate run (one line when it is not one)."""
    try:
        state = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise RunError(f"{run_dir}: not a run directory (no readable run.json)") from None
    if state.get("kind", "evaluate") != "evaluate":
        raise RunError(f"{run_dir}: a {state.get('kind')} run; certify reads an evaluate run")
    if state.get("status") != "finished":
        raise RunError(f"{run_dir}: the run has not finished (re-run it to finish, then certify)")
    return state


def _logged_hash(run_dir: Path) -> str | None:
    """The judge config hash the run's metrics.json recorded (None when it has none)."""
    try:
        return json.loads((run_dir / "metrics.json").read_text(encoding="utf-8")).get("config_hash")
    except (OSError, ValueError, AttributeError):
        return None


def _index(scale: Scale, score: int | None) -> int | None:
    return None if score is None else scale.index(score)


def _log(certificate: Certificate, tracking_uri: str) -> None:
    """The bounds and the decision on the evaluate run they were computed from (as
    ``calibrate`` logs its threshold), with the certificate as an artifact."""
    import mlflow
    from mlflow.exceptions import MlflowException

    from assay.experiments.runs import mlflow_key

    client = mlflow.MlflowClient(tracking_uri=tracking_uri)
    run_id = certificate.mlflow_run_id
    assert run_id is not None
    try:
        client.get_run(run_id)
    except MlflowException:
        raise RunError(
            f"{certificate.ledger}: certificate written ({certificate.decision}), but the evaluate "
            f"run's MLflow run {run_id} is not in {tracking_uri}: give its --tracking-uri"
        ) from None
    for r in certificate.results:
        for what in ("point", "bound"):
            value = getattr(r, what)
            if value == value:  # nan is not logged
                client.log_metric(run_id, mlflow_key(f"certify_{r.metric}_{what}"), value)
    client.log_metric(run_id, "certify_admitted", float(certificate.admitted))
    client.set_tag(run_id, "assay.certificate", certificate.certificate)
    client.set_tag(run_id, "assay.certified", certificate.decision)
    for name in (CERTIFICATE, "report.md", "report.html"):
        client.log_artifact(run_id, str(Path(certificate.ledger) / name), "certificate")


# -- its report ------------------------------------------------------------------------------


def bounds_table(c: Certificate) -> Table:
    """The bars and the bounds behind the decision (the console, report.md and report.html)."""
    rows = []
    for r in c.results:
        kind = "lower" if r.side == "at_least" else "upper"
        rows.append(
            [
                r.metric,
                fmt(r.point),
                f"{kind} {fmt(r.bound)}",
                f"{'≥' if r.side == 'at_least' else '≤'} {r.bar:g}",
                f"{r.successes}/{r.n}" if r.successes is not None else str(r.n),
                r.method,
                "yes" if r.passed else "NO",
            ]
        )
    notes = [f"{r.metric}: {r.note}" for r in c.results if r.note]
    return Table(
        f"{c.decision.upper()} under policy {c.policy.name}",
        ["metric", "value", "bound", "bar", "n", "method", "passed"],
        rows,
        lead=(
            f"One-sided bounds at {c.confidence:.0%} jointly: each at {1 - c.delta_per_bar:.2%} "
            f"(Bonferroni over {len(c.results)} bars)"
            + (f"; positive = {c.event}" if c.event else "")
            + ". Rates: exact Clopper–Pearson; other metrics: one-sided percentile bootstrap "
            f"({c.policy.n_resamples} resamples of items, seed {c.policy.seed})."
        ),
        note=" ".join(
            [f"Unscored: {c.unscored} — {c.unscored_rule}." if c.unscored else "", *notes]
        ).strip(),
    )


def certificate_report(c: Certificate) -> Report:
    """The certificate as a report (report.md and report.html in its ledger folder)."""
    r = Report("certify", f"assay certify — {c.judge}: {c.decision}")
    r.facts = [
        ("certificate", c.certificate),
        ("judge", f"{c.judge} · model {c.model} · config hash {c.config_hash}"),
        ("items", f"{c.n_items} labelled items consumed · fingerprint {c.data_fingerprint}"),
        ("run", f"{c.run} (run hash {c.run_hash})"),
        ("issued", f"{c.issued} · assay {c.assay_version}"),
    ]
    r.tables = [bounds_table(c)]
    return r


def _write_reports(c: Certificate) -> None:
    from assay.report import markdown, write_html

    folder = Path(c.ledger)
    report = certificate_report(c)
    lines = [f"# {report.title}", "", *(f"- {k}: {v}" for k, v in report.facts), ""]
    write_atomic(folder / "report.md", "\n".join([*lines, *markdown(report.tables)]))
    write_html(report, folder)


# -- requiring a certificate -----------------------------------------------------------------


def read_certificate(path: str | Path) -> Certificate:
    """A certificate file (one line naming it when it is not one)."""
    try:
        return Certificate.model_validate_json(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise CertificateError(f"{path}: cannot read the certificate ({exc.strerror})") from None
    except ValidationError as exc:
        raise CertificateError(f"{path}: not a certificate ({first_error(exc)})") from None


def _check_ledger_copy(path: str, cert: Certificate) -> None:
    """Where the ledger that issued ``cert`` is on this machine, the file must say what the
    ledger's copy says (a copy elsewhere is checked by its own consistency alone)."""
    kept = Path(cert.ledger) / CERTIFICATE
    if not kept.is_file() or Path(path).resolve() == kept.resolve():
        return
    try:
        kept_cert = Certificate.model_validate_json(kept.read_text(encoding="utf-8"))
        same = kept_cert.model_dump_json() == cert.model_dump_json()  # NaN bounds compare equal
    except (OSError, ValidationError):
        same = False
    if not same:
        raise CertificateError(
            f"{path}: certificate {cert.certificate} differs from the ledger's copy {kept}: "
            "edited after it was issued; use the ledger's copy or certify again on new items"
        )


def require_certificates(paths: list[str | Path] | None, judges: list[JudgeConfig]) -> None:
    """With ``paths`` given: every judge in ``judges`` must have an admitted certificate among
    them for its exact config hash — else one line: none, refused, or stale (issued for another
    config). Nothing is checked when ``paths`` is empty."""
    if not paths:
        return
    certs = [(str(p), read_certificate(p)) for p in paths]
    for p, c in certs:
        _check_ledger_copy(p, c)
    for judge in judges:
        wanted = judge.config_hash()
        matching = [(p, c) for p, c in certs if c.config_hash == wanted]
        admitted = [p for p, c in matching if c.admitted]
        if admitted:
            continue
        if matching:
            p, c = matching[0]
            failed = ", ".join(
                f"{r.metric} bound {r.bound:.3f} vs bar {r.bar:g}"
                for r in c.results
                if not r.passed
            )
            raise CertificateError(
                f"{p}: certificate {c.certificate} refused judge {judge.name} ({failed}); "
                "a refused judge may not be used"
            )
        others = ", ".join(f"{p} is for config {c.config_hash}" for p, c in certs)
        raise CertificateError(
            f"stale: no certificate for judge {judge.name} (config {wanted}): {others} — the "
            "judge config changed since it was certified; certify it again on new items"
        )
