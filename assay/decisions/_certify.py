"""``assay certify RUN --policy POLICY``: a certificate for a judge config from a finished,
labelled evaluate run — one-sided bounds of the metrics the policy names against its bars
(:func:`assay.metrics.certify`), bound to the judge config's hash, the run's seal and the items
consumed, and signed (:mod:`assay._signing`).

Every certificate, admitted or refused, is kept in the ledger of the command's own runs folder
(``<workdir>/<output_dir>/certificates/<id>/certificate.json``, with its ``report.md`` and
``report.html``). A validation set is used once: a later ``certify`` on any item a certificate
consumed is refused, whatever the judge config — trying configs one after another on the same
items until one passes is choosing on the test set. An item is the text the judge read
(request, response, transcript), normalised (:mod:`assay.inputs._item_text`: invisible
characters dropped, NFKC, case-folded, whitespace collapsed), so renaming, relabelling,
re-spacing, re-casing it or slipping a zero-width space into it does not make it new. A
judge's attempts under a policy are counted in the ledger too: each takes δ / ``attempts`` of
the policy's error budget, and one past the budget is refused. What the ledger counts is its journal
(:mod:`._ledger_journal`), which keeps a certificate's items and share of δ when its folder is
deleted.

``evaluate``, ``harness`` and ``estimate`` take ``--require-certificate POLICY|CERTIFICATE``:
:func:`require_certificates` checks, before any LM call, that the ledger holds an admitted,
signed certificate of the judge's exact config — under a policy at least as strict as the one
named, on the positive class the use counts, or the very certificate named — and that its
journal holds it. A file never says where to look: ``certify`` counts in the ledger of the
runs folder its ``--output-dir`` names in the directory it runs in (``runs`` by default),
never the one a run's ``config.yaml`` names.
"""

from __future__ import annotations

import json
import math
import os
import secrets
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

import assay
from assay import _signing
from assay._json import loads as load_json
from assay._yaml import read_input
from assay.decisions import _ledger_journal as journal
from assay.decisions._finished import judged_items, read_evaluate_run
from assay.decisions._ledger_journal import entry_of
from assay.errors import ConfigError, RunError
from assay.evaluation import verdict_names
from assay.inputs import (
    CONFUSABLES,
    NORMALISED,
    Rule,
    data_fingerprint,
    fingerprints_under,
    first_error,
    item_keys,
    samples_of,
    used_keys,
)
from assay.metrics import MetricBound, Policy, Undefinable, fmt, fmt_level, inconsistency
from assay.programs import JudgeConfig
from assay.report import Report, Table
from assay.runs import default_tracking_uri, file_lock, write_atomic, write_json
from assay.scale import Scale
from assay.types import Item, PlainName, all_unscored

LEDGER = "certificates"
"""The folder, in a runs folder, that holds every certificate issued from there."""
CERTIFICATE = "certificate.json"
LEDGER_ID = "ledger-id"  # a ledger's random name: a certificate says which ledger issued it


class CertificateError(RunError):
    """A certificate that cannot be issued (items already consumed, the attempts spent) or
    does not cover the judge in use (none, refused, stale, laxer, forged): one line, exit 2."""


class Certificate(BaseModel):
    """What ``assay certify`` issues: the decision, the bounds behind it, and what they are
    bound to — the judge config's hash, the sealed run, the items consumed, the policy and the
    attempt — signed by the signing key."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    certificate: PlainName  # its id, its folder in the ledger
    decision: Literal["admitted", "refused"]
    issued: str  # UTC, ISO 8601
    assay_version: str
    judge: str
    model: str
    config_hash: str
    run: str
    run_hash: str
    run_seal: str  # the digest of the run's seal: the judgments, metrics and config it read
    data_fingerprint: str  # the item set consumed (as MLflow's assay.items tag, in full)
    items: list[str]  # the ids of the items consumed (labelled and judged)
    # the ledger's keys: each item's judged text, normalised (one to three keys an item)
    item_fingerprints: list[str]
    # the rule they were made under (_item_text); a certificate that names none reads as before
    fingerprint_rule: Rule = NORMALISED
    event: str | None  # what TPR/TNR/precision count as positive
    policy: Policy
    attempt: int  # this judge's certificates under this policy in the ledger, this one included
    confidence: Undefinable
    delta_per_bar: float  # δ / (bars × the policy's attempts)
    results: list[MetricBound]
    n_items: int
    unscored: dict[str, int]  # reason -> items, among those consumed
    unscored_rule: str
    ledger: str  # the ledger's folder of this certificate (certificate.json, report.md/html)
    ledger_id: str
    mlflow_run_id: str | None = None  # the evaluate run it was logged on
    signature: str = ""  # HMAC-SHA256 of every other field (canonical JSON), by the key

    @property
    def admitted(self) -> bool:
        return self.decision == "admitted"

    def signed_part(self) -> dict[str, Any]:
        """Every field but the signature, as the signature covers them."""
        return self.model_dump(mode="json", exclude={"signature"})

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
    return _policy(policy, where)


def _policy(data: Any, where: str) -> Policy:
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: a policy is a YAML mapping (bars, confidence, positive)")
    try:
        return Policy.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{where}: {first_error(exc)}") from None


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


def _policy_event(
    scale: Scale, policy: Policy, threshold: int | None, where: str
) -> tuple[str, list[int]] | None:
    """:func:`_event` of ``policy`` on a run (or a use) with ``threshold``; a ``failure_*`` bar
    needs a threshold and no ``positive`` (it counts failures below the threshold)."""
    failure = [m for m in policy.bars if m.startswith("failure_")]
    if failure and (threshold is None or policy.positive is not None):
        raise ConfigError(
            f"{where}: {failure[0]} counts failures below the run's threshold: for a run with "
            "a threshold and no positive"
        )
    return _event(scale, policy.positive, threshold, where)


# -- the ledger ------------------------------------------------------------------------------


def ledger_of(workdir: Path, output_dir: str) -> Path:
    """The ledger of the runs folder ``output_dir`` of ``workdir``: where ``certify`` issues
    and ``--require-certificate`` looks, whatever a certificate file says."""
    return (Path(workdir) / output_dir).resolve() / LEDGER


RUNS = "runs"
"""The runs folder ``certify`` counts in when its ``--output-dir`` names none (every config's
default ``output_dir``)."""


def runs_folder_of(
    workdir: Path,
    output_dir: str | None,
    run_dir: Path,
    made_for: str,
    what: str = "certify counts in",
) -> str:
    """The runs folder of ``workdir`` whose ledger ``certify`` counts in (and ``estimate
    --require-certificate`` reads): ``output_dir`` (its ``--output-dir``), else ``runs`` —
    never the one the run's own ``config.yaml`` names (``made_for``): a run evaluated with its
    ``output_dir`` pointed at another ledger, then copied here, would be certified there, on
    items this ledger consumed, or pass a gate on a certificate this ledger never issued.
    Without ``--output-dir``, a run made for another runs folder is refused: which ledger
    counts it is the user's to say (``what``: the command and what it does with the ledger)."""
    if output_dir is not None:
        return output_dir
    here = (Path(workdir) / RUNS).resolve()
    there = (Path(workdir) / made_for).resolve()
    if there != here:
        raise ConfigError(
            f"{run_dir}: made for the runs folder {there} (its output_dir), and {what} "
            f"the ledger of this folder's {here} — a ledger knows only the items certified "
            "in it: give --output-dir DIR to say which runs folder's ledger counts them"
        )
    return RUNS


def _entries(ledger: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Every certificate in ``ledger`` as written (read as data: a forged or unsigned one
    still consumes its items and counts as an attempt)."""
    out = []
    for path in sorted(ledger.glob(f"*/{CERTIFICATE}")):
        try:
            data = load_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise CertificateError(f"{path}: unreadable certificate in the ledger") from None
        if not isinstance(data, dict):
            raise CertificateError(f"{path}: unreadable certificate in the ledger")
        out.append((path, data))
    return out


def _counted(
    ledger: Path, ledger_id: str
) -> tuple[list[tuple[Path, dict[str, Any]]], list[tuple[Path, dict[str, Any]]]]:
    """What the ledger counts — the items consumed and the attempts made: its journal's
    entries (:mod:`._ledger_journal`: kept when a certificate's folder is deleted), and every
    certificate folder the journal does not hold (one written before the journal, or put there
    by hand), which the next certificate adds to it; and those folders."""
    kept = journal.read(ledger, ledger_id)
    known = {e.get("certificate") for e in kept}
    unjournaled = [(p, d) for p, d in _entries(ledger) if d.get("certificate") not in known]
    counted = [(ledger / str(e.get("certificate")) / CERTIFICATE, e) for e in kept]
    return counted + unjournaled, unjournaled


def _refuse_repeats(run_dir: Path, items: list[Item]) -> None:
    """Refuse items that repeat another's text under another id (:func:`~assay.inputs.item_keys`:
    re-spaced, re-cased, an invisible character added…): a certificate's trials are distinct
    items, and copies of the ones the judge gets right would raise its bounds. The epochs of an
    Inspect sample are not copies (each judged on its own transcript): they are bounded as one
    cluster each."""
    first: dict[str, str] = {}
    repeats = []
    for it in items:
        keys = item_keys(it)
        earlier = next((first[k] for k in keys if k in first), None)
        if earlier is not None:
            repeats.append((it.id, earlier))
        for k in keys:
            first.setdefault(k, it.id)
    if repeats:
        copy, original = repeats[0]
        raise CertificateError(
            f"{run_dir}: {len(repeats)} of these {len(items)} items repeat the text of another "
            f"under another id (item {copy!r} is item {original!r} again): a certificate's "
            "items are distinct items — remove the copies from the data and evaluate again"
        )


def _signed_elsewhere(
    signed: Path, ledger_id: str
) -> tuple[list[tuple[Path, dict[str, Any]]], dict[object, dict[str, Any]]]:
    """The certificates the signing key's journal (:data:`._ledger_journal.SIGNED`) holds from
    other ledgers, each with where its certificate is, and those it holds of this ledger, by
    id."""
    elsewhere, here = [], {}
    for e in journal.read(signed, journal.SIGNED_ID, journal.SIGNED):
        if e.get("ledger_id") == ledger_id:
            here[e.get("certificate")] = e
        else:
            folder = Path(str(e.get("ledger_folder") or signed))
            elsewhere.append((folder / str(e.get("certificate")) / CERTIFICATE, e))
    return elsewhere, here


def _signed_entry(entry: dict[str, Any], ledger_id: str, ledger: Path) -> dict[str, Any]:
    """A ledger's journal entry as the signing key's journal keeps it: with the ledger's id and
    folder."""
    return {**entry, "ledger_id": ledger_id, "ledger_folder": str(ledger)}


def _check_unused(entries: list[tuple[Path, dict[str, Any]]], items: list[Item]) -> None:
    """Refuse when a certificate in the ledger already consumed any of these items (compared
    under the fingerprint rule that certificate used: :func:`~assay.inputs.fingerprints_under`)."""
    mine: dict[object, list[set[str]]] = {}
    for path, earlier in entries:
        rule = earlier.get("fingerprint_rule")
        if rule not in mine:
            mine[rule] = fingerprints_under(rule, items)
        consumed = set(earlier.get("item_fingerprints") or [])
        used = sum(bool(fps & consumed) for fps in mine[rule])
        if used:
            raise CertificateError(
                f"{used} of these {len(items)} items were already consumed by certificate "
                f"{path} ({earlier.get('decision')}, issued {earlier.get('issued')}, judge "
                f"config {earlier.get('config_hash')}): a validation set is used once — "
                "certify on newly labelled items"
            )


def _attempt(
    entries: list[tuple[Path, dict[str, Any]]],
    judge: str,
    config_hash: str,
    policy: Policy,
    event: str | None,
    ledger: Path,
) -> int:
    """This judge's attempt number under ``policy``; refused when the δ its earlier
    certificates took leaves less than this one needs. An earlier certificate is of this judge
    by its name (a config tweaked after a refusal is the same judge tried again) or by its
    config hash (the same judge renamed), and under this policy by its name or by a claim at
    least as strict on the same event (:func:`_same_policy`)."""
    earlier = [
        e
        for _, e in entries
        if (e.get("judge") == judge or e.get("config_hash") == config_hash)
        and _same_policy(e, policy, event)
    ]
    spent = sum(_spent(e, policy) for e in earlier)
    share = policy.delta_per_attempt
    if spent + share > policy.delta * (1 + 1e-9):
        raise CertificateError(
            f"attempt {len(earlier) + 1} for judge {judge} under policy {policy.name}: its error "
            f"budget δ = {policy.delta:g} is spent ({len(earlier)} earlier certificates in "
            f"{ledger} or, signed by this key, another ledger took {spent:g}; this one would take "
            f"δ/attempts = {share:g}) — certifying "
            "again until one passes is trying until lucky: a policy plans its attempts before "
            "the first (attempts: N takes each at δ/N)"
        )
    return len(earlier) + 1


def _same_policy(entry: dict[str, Any], policy: Policy, event: str | None) -> bool:
    """Whether an earlier certificate counts against ``policy``'s attempts: issued under its
    name, or on the same event (the positive class as resolved, however the policy wrote it)
    with bars comparable to its own either way, whatever either's confidence — a bar on each
    of this policy's metrics at least as strict (an earlier admission would have admitted this
    claim too, so a laxer or renamed policy tried after a refusal is the same claim tried
    again), or a bar here on each of its metrics at least as strict (this admission would admit
    the earlier claim, so a stricter policy, or the same bars and one more, tried after a
    refusal would be the earlier claim's second try: its gate admits a use through the
    stricter certificate). Either way both admit the laxer bars at the lower confidence, one
    use tried twice. A journal line written before the claim was kept matches by name only."""
    earlier = entry.get("policy")
    if not isinstance(earlier, dict):
        return False
    if earlier.get("name") == policy.name:
        return True
    bars = earlier.get("bars")
    if not isinstance(bars, dict):
        return False
    if "event" in entry:
        if entry["event"] != event:
            return False
    elif earlier.get("positive") != policy.positive:
        return False
    mine = policy.model_dump(mode="json")["bars"]
    return _as_strict(bars, mine) or _as_strict(mine, bars)


def _as_strict(these: dict[str, Any], those: dict[str, Any]) -> bool:
    """Whether ``these`` bars (as written: metric → ``{side: value}``) hold a bar on each of
    ``those``'s metrics, on the same side, at least as strict."""
    for metric, bar in those.items():
        theirs = these.get(metric)
        if not isinstance(bar, dict) or len(bar) != 1:
            return False
        ((side, value),) = bar.items()
        if not isinstance(theirs, dict) or not isinstance(theirs.get(side), int | float):
            return False
        if not isinstance(value, int | float):
            return False
        if (theirs[side] < value) if side == "at_least" else (theirs[side] > value):
            return False
    return True


def _spent(entry: dict[str, Any], policy: Policy) -> float:
    """The share of δ an earlier certificate took: its level per bar times its bars (one
    written before attempts were counted took its whole δ; one that cannot be read, this
    policy's whole δ)."""
    try:
        value = float(entry["delta_per_bar"]) * len(entry["results"])
    except (KeyError, TypeError, ValueError):
        return policy.delta
    return value if 0 < value < 1 else policy.delta


def _ledger_id(ledger: Path, *, create: bool) -> str | None:
    """The ledger's random name (made the first time it issues a certificate)."""
    path = ledger / LEDGER_ID
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except FileNotFoundError:
        if not create:
            return None
    except OSError as exc:
        raise CertificateError(f"{path}: cannot read the ledger's id ({exc.strerror})") from None
    ledger.mkdir(parents=True, exist_ok=True)
    write_atomic(path, secrets.token_hex(16) + "\n")
    return path.read_text(encoding="utf-8").strip()


# -- certify -------------------------------------------------------------------------------


def certify_run(
    run: str | Path,
    policy: str | Path | Policy | dict[str, Any],
    *,
    out: str | Path | None = None,
    workdir: Path,
    tracking_uri: str | None = None,
    output_dir: str | None = None,
) -> Certificate:
    """Issue the certificate of the finished, sealed evaluate run ``run`` under ``policy``:
    signed, written to the ledger of ``workdir``'s runs folder ``output_dir`` (default
    ``runs``: :func:`runs_folder_of`; and to ``out``), logged on the evaluate run's MLflow
    run. No LM call. Nothing is written unless everything can be."""
    from assay.metrics import certify

    pol = load_policy(policy)
    where = str(policy) if isinstance(policy, str | Path) else "policy"
    run_dir = Path(run)
    config, judgments, state = read_evaluate_run(run_dir)
    runs = runs_folder_of(workdir, output_dir, run_dir, config.output_dir)
    scale = config.judge.scale
    assert scale is not None
    items = judged_items(run_dir, config, set(judgments), state["run_hash"], run_dir=run_dir)
    labelled = [it for it in items if it.expected is not None]
    if not labelled:
        raise RunError(f"{run_dir}: no judged item has a reference: nothing to certify on")
    _refuse_repeats(run_dir, labelled)
    from assay.decisions._tuning import refuse_tuned_items

    refuse_tuned_items(config.judge, labelled, workdir=workdir, output_dir=runs, what="certify")
    unscored: dict[str, int] = {}
    for it in labelled:
        j = judgments[it.id]
        if j.score is None:
            unscored[str(j.unscored)] = unscored.get(str(j.unscored), 0) + 1
    nothing = all_unscored(len(labelled), unscored)
    if nothing:  # refused before any item is consumed: the run measured nothing
        raise RunError(
            f"{run_dir}: {nothing}: nothing to certify on (once the cause is fixed, "
            "`assay evaluate --retry-unscored` judges them again)"
        )
    event = _policy_event(scale, pol, config.threshold, where)
    try:
        cert = certify(
            [scale.index(it.expected) for it in labelled],  # type: ignore[arg-type]
            [_index(scale, judgments[it.id].score) for it in labelled],
            pol,
            k=scale.k,
            event=event[1] if event else None,
            ordered=scale.kind != "categorical",
            labels=verdict_names(scale),
            # an Inspect sample's epochs (repeated texts were refused above: no other item is
            # one with another here)
            clusters=samples_of(labelled),
        )
    except ValueError as exc:  # a metric the scale cannot give (TPR without a positive class)
        raise ConfigError(f"{where}: {exc}") from None
    items_fp = data_fingerprint(sorted(labelled, key=lambda it: it.id))
    config_hash = config.judge.config_hash()
    logged = _logged_hash(run_dir)
    if logged is not None and logged != config_hash:
        raise RunError(
            f"{run_dir}: its config.yaml gives judge config {config_hash}, its metrics.json "
            f"{logged}: a run written by another version of assay, or edited; evaluate again"
        )
    ident = f"{config.judge.name}-{config_hash[:8]}-{items_fp[:8]}"
    ledger = ledger_of(workdir, runs)
    fields = {
        "certificate": ident,
        "decision": "admitted" if cert.admitted else "refused",
        "issued": datetime.now(UTC).isoformat(timespec="seconds"),
        "assay_version": assay.__version__,
        "judge": config.judge.name,
        "model": config.judge.model_shown,
        "config_hash": config_hash,
        "run": str(run_dir.resolve()),
        "run_hash": state["run_hash"],
        "run_seal": state["seal"]["digest"],
        "data_fingerprint": items_fp,
        "items": [it.id for it in labelled],
        "item_fingerprints": [key for it in labelled for key in used_keys(it)],
        "fingerprint_rule": CONFUSABLES,
        "event": event[0] if event else None,
        "policy": pol,
        "confidence": cert.confidence,
        "delta_per_bar": cert.delta_per_bar,
        "results": cert.results,
        "n_items": cert.n_items,
        "unscored": unscored,
        "unscored_rule": cert.unscored_rule,
        "ledger": str(ledger / ident),
        "mlflow_run_id": state.get("mlflow_run_id") if config.tracking.enabled else None,
    }
    staged = _stage_out(out)  # an --out that cannot be written stops it before any decision
    try:
        with file_lock(ledger / ".lock"):
            ledger_id = _ledger_id(ledger, create=True)
            assert ledger_id is not None
            entries, unjournaled = _counted(ledger, ledger_id)
            _signing.key(create=True)  # the signed journal is kept with the key's records
            signed = journal.signed_folder()
            signed.mkdir(parents=True, exist_ok=True)
            with file_lock(signed / ".lock"):
                elsewhere, here = _signed_elsewhere(signed, ledger_id)
                # this ledger's certificates the key's journal lacks (issued before it existed,
                # or a kill between a certificate's folder and its line there): counted in every
                # ledger from now, whatever this certify decides
                journaled = entries[: len(entries) - len(unjournaled)]
                local = [e for _, e in journaled] + [entry_of(d) for _, d in unjournaled]
                missing = [e for e in local if e.get("certificate") not in here]
                if missing:
                    signed_entries = [_signed_entry(e, ledger_id, ledger) for e in missing]
                    journal.append(signed, journal.SIGNED_ID, signed_entries, journal.SIGNED)
                # and those the key's journal holds of this ledger that it does not (a kill
                # after the key's line, before the certificate was written): their items are
                # consumed — but for the same certificate, issued again
                ids = {e.get("certificate") for e in local}
                unfinished = [
                    (ledger / str(c) / CERTIFICATE, e)
                    for c, e in here.items()
                    if c not in ids and c != ident
                ]
                counted = entries + elsewhere + unfinished
                _check_unused(counted, labelled)
                attempt = _attempt(
                    counted, config.judge.name, config_hash, pol, fields["event"], ledger
                )
                certificate = Certificate(**fields, attempt=attempt, ledger_id=ledger_id)
                certificate.signature = _signing.sign(certificate.signed_part())
                (ledger / ident).mkdir(parents=True, exist_ok=True)
                _write_reports(certificate)
                # the decision: the items are consumed in the key's journal first (a kill
                # before the certificate is written leaves them consumed, never free), then
                # its certificate.json in the ledger (a kill before the ledger's journal line
                # leaves the folder, which the next certificate adopts)
                issued = certificate.model_dump(mode="json")
                entry = _signed_entry(entry_of(issued), ledger_id, ledger)
                journal.append(signed, journal.SIGNED_ID, [entry], journal.SIGNED)
                write_json(ledger / ident / CERTIFICATE, issued)
                adopted = [entry_of(d) for _, d in unjournaled]  # folders the journal lacked
                journal.append(ledger, ledger_id, [*adopted, entry_of(issued)])
    except BaseException:
        if staged is not None:
            staged.unlink(missing_ok=True)
        raise
    if staged is not None:
        write_json(staged, certificate.model_dump(mode="json"))
        os.replace(staged, Path(out))  # type: ignore[arg-type]
    if certificate.mlflow_run_id:
        uri = tracking_uri or config.tracking.uri or default_tracking_uri(workdir)
        _log(certificate, uri)
    return certificate


def _stage_out(out: str | Path | None) -> Path | None:
    """A file beside ``out``, created now so that an ``--out`` that cannot be written is
    found before the certificate is issued (renamed onto ``out`` after)."""
    if out is None:
        return None
    path = Path(out)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():  # before naming a file beside it: "/" has no name
            raise IsADirectoryError(21, "Is a directory")
        staged = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        staged.write_text("", encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"{out}: cannot write the certificate there ({exc.strerror}); nothing was issued"
        ) from None
    return staged


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

    from assay.runs import mlflow_key

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


def bound_text(r: MetricBound) -> str:
    """A bound as printed beside its bar: to 3 decimals or the bar's, whichever has more, and
    rounded away from the bar's side (a lower bound down, an upper one up), so that the printed
    bound clears the printed bar exactly when the bound clears the bar (0.746577 against
    ≥ 0.7466 prints 0.7465, not 0.747)."""
    if r.bound != r.bound or math.isinf(r.bound):
        return fmt(r.bound)
    exponent = Decimal(repr(float(r.bar))).normalize().as_tuple().exponent
    digits = max(3, -exponent if isinstance(exponent, int) else 0)
    scaled = Decimal(repr(float(r.bound))).scaleb(digits)
    rounded = math.floor(scaled) if r.side == "at_least" else math.ceil(scaled)
    return fmt(float(Decimal(rounded).scaleb(-digits)), digits)


def bounds_table(c: Certificate) -> Table:
    """The bars and the bounds behind the decision (the console, report.md and report.html)."""
    rows = []
    for r in c.results:
        kind = "lower" if r.side == "at_least" else "upper"
        rows.append(
            [
                r.metric,
                fmt(r.point),
                f"{kind} {bound_text(r)}",
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
            f"One-sided bounds at {fmt_level(c.confidence)} jointly: each at "
            f"{1 - c.delta_per_bar:.2%} "
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
    """A certificate file (one line naming it when it is not one). Not verified: what decides
    is :func:`require_certificates`, which reads the ledger's copy."""
    try:
        return Certificate.model_validate_json(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise CertificateError(f"{path}: cannot read the certificate ({exc.strerror})") from None
    except ValidationError as exc:
        raise CertificateError(f"{path}: not a certificate ({first_error(exc)})") from None


def verified(
    path: Path, ledger: Path, journaled: dict[str, dict[str, Any]] | None = None
) -> Certificate:
    """The certificate at ``path`` in ``ledger`` if assay issued it there: signed by the key, a
    certificate, consistent (each passed its bound against its bar, the decision every bar),
    filed under its own id, issued by this ledger and held by its journal as it was issued
    (``journaled``: :func:`~._ledger_journal.journaled`, None for a ledger written before the
    journal existed) — else one line."""
    try:
        raw = load_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise CertificateError(f"{path}: unreadable certificate in the ledger") from None
    if not isinstance(raw, dict) or not raw.get("signature"):
        raise CertificateError(
            f"{path}: the certificate is not signed (copied in by hand, or issued before "
            "certificates were signed): certify again on new items"
        )
    try:
        cert = Certificate.model_validate(raw)
    except ValidationError as exc:
        raise CertificateError(f"{path}: not a certificate ({first_error(exc)})") from None
    if not _signing.verify(cert.signed_part(), cert.signature):
        raise CertificateError(
            f"{path}: certificate {cert.certificate} does not match its signature (edited "
            f"after it was issued, or signed with another key than {_signing.key_file()})"
        )
    if path.parent.name != cert.certificate:
        raise CertificateError(f"{path}: certificate {cert.certificate} filed under another id")
    if cert.ledger_id != _ledger_id(ledger, create=False):
        raise CertificateError(
            f"{path}: certificate {cert.certificate} was issued by another ledger and copied "
            f"into {ledger}: a certificate counts in the ledger that issued it"
        )
    if journaled is not None:
        _in_journal(path, cert, journaled, ledger)
    return cert


_JOURNAL_NAMES = ("decision", "issued", "judge", "config_hash")
"""What a certificate's journal line must say as its folder does (every journal line holds them,
one adopted from a certificate written before the journal too)."""


def _in_journal(
    path: Path, cert: Certificate, journaled: dict[str, dict[str, Any]], ledger: Path
) -> None:
    """Refuse a certificate the ledger's journal does not hold as it is: the journal is what
    the ledger counts, so one missing from it was put in the folder past ``certify`` (or
    issued by one killed before its line was written: the next ``certify`` here adopts it)."""
    entry = journaled.get(cert.certificate)
    if entry is None:
        raise CertificateError(
            f"{path}: certificate {cert.certificate} is not in the ledger's journal "
            f"({ledger / journal.JOURNAL}), which is what the ledger counts: put there past "
            "`assay certify`, or issued by one killed before it recorded it (the next certify "
            "here adopts it)"
        )
    issued = cert.model_dump(mode="json")
    if any(entry.get(k) != issued.get(k) for k in _JOURNAL_NAMES) or (
        (entry.get("policy") or {}).get("name") != cert.policy.name
    ):
        raise CertificateError(
            f"{path}: certificate {cert.certificate} is not the one the ledger's journal "
            f"recorded under its id ({ledger / journal.JOURNAL}): replaced after it was issued"
        )


def require_certificates(
    required: list[str | Path] | None,
    judges: list[JudgeConfig],
    *,
    ledger: Path,
    threshold: int | None = None,
) -> None:
    """With ``required`` given, refuse (one line) unless every judge in ``judges`` has an
    admitted certificate for its exact config hash in ``ledger`` — the ledger of the command's
    own runs folder, never one a file names. Each entry is a policy file (the use: a
    certificate under a policy at least as strict, :meth:`Policy.falls_short_of`) or a
    certificate file (that certificate, as the ledger holds it; one of them per judge).
    ``threshold``: the use's (its run's: a score below it is a failure) — a bar counted on the
    positive class counts only for the positive class the certificate counted it on. Either way
    the use is refused when the judge's certificates that would admit it, admitted or refused,
    took more than its δ (:func:`_within_budget`). Nothing is checked when ``required`` is
    empty."""
    if not required:
        return
    policies: list[tuple[str, Policy]] = []
    named: list[tuple[str, Certificate]] = []
    # what the ledger counts, checked against its head (a journal cut or replaced is refused)
    kept = journal.journaled(ledger, _ledger_id(ledger, create=False))
    for entry in required:
        where = str(entry)
        data = read_input(entry, CertificateError, what="certificate or policy file")
        if isinstance(data, dict) and "certificate" in data and "decision" in data:
            named.append((where, _as_kept(where, ledger, kept)))
        else:
            policies.append((where, _policy(data, where)))
    for judge in judges:
        for where, use in policies:
            _admitted_under(judge, use, where, ledger, threshold, kept)
        if named:
            _admitted_by(judge, named, threshold, ledger, kept)


def _as_kept(where: str, ledger: Path, journaled: dict[str, dict[str, Any]] | None) -> Certificate:
    """The ledger's copy of the certificate file ``where``, verified (``journaled``: what its
    journal holds); the file must say what the copy says."""
    cert = read_certificate(where)
    copy = ledger / cert.certificate / CERTIFICATE
    if not copy.is_file():
        raise CertificateError(
            f"{where}: certificate {cert.certificate} is not in the ledger {ledger}: a "
            "certificate counts only in the ledger of the runs folder that issued it"
        )
    kept_cert = verified(copy, ledger, journaled)
    if kept_cert.model_dump_json() != cert.model_dump_json():  # NaN bounds compare equal
        raise CertificateError(
            f"{where}: certificate {cert.certificate} differs from the ledger's copy {copy}: "
            "edited after it was issued; use the ledger's copy or certify again on new items"
        )
    return kept_cert


def _admitted_by(
    judge: JudgeConfig,
    named: list[tuple[str, Certificate]],
    threshold: int | None,
    ledger: Path,
    journaled: dict[str, dict[str, Any]] | None,
) -> None:
    """One of the certificates named admits ``judge``'s exact config, its bars on the positive
    class counted on the use's, within its policy's error budget (else: refused, another
    positive class, overspent, or stale)."""
    wanted = judge.config_hash()
    matching = [(p, c) for p, c in named if c.config_hash == wanted]
    for p, c in matching:
        if c.admitted:
            use_event = _use_event(judge, c.policy, threshold, p)
            other = c.policy.falls_short_of(c.policy, event=c.event, use_event=use_event)
            if other is None:
                _within_budget(judge, c.policy, p, use_event, ledger, journaled)
                return
            raise CertificateError(
                f"{p}: certificate {c.certificate} admitted judge {judge.name} under policy "
                f"{c.policy.name}, which does not hold for this use: {other}"
            )
    if matching:
        p, c = matching[0]
        raise CertificateError(f"{p}: certificate {c.certificate} {_refusal(c, judge)}")
    others = ", ".join(f"{p} is for config {c.config_hash}" for p, c in named)
    raise CertificateError(
        f"stale: no certificate for judge {judge.name} (config {wanted}): {others} — the "
        "judge config changed since it was certified; certify it again on new items"
    )


def _use_event(judge: JudgeConfig, policy: Policy, threshold: int | None, where: str) -> str | None:
    """The positive class ``policy``'s bars count on in a use of ``judge`` with ``threshold``
    (as :func:`certify_run` counted it on its run)."""
    assert judge.scale is not None
    event = _policy_event(judge.scale, policy, threshold, where)
    return event[0] if event else None


def _admitted_under(
    judge: JudgeConfig,
    use: Policy,
    where: str,
    ledger: Path,
    threshold: int | None,
    journaled: dict[str, dict[str, Any]] | None,
) -> None:
    """The ledger holds a verified certificate admitting ``judge``'s exact config under a
    policy at least as strict as ``use``, on the same positive class — else one line: why the
    first certificate of that config does not do (forged, refused, laxer, another positive
    class), or that there is none."""
    wanted = judge.config_hash()
    use_event = _use_event(judge, use, threshold, where)
    reasons = []
    for path, data in _entries(ledger):
        if data.get("config_hash") != wanted:
            continue
        try:
            cert = verified(path, ledger, journaled)
        except CertificateError as exc:
            reasons.append(str(exc))
            continue
        short = cert.policy.falls_short_of(use, event=cert.event, use_event=use_event)
        if cert.admitted and short is None:
            _within_budget(judge, use, where, use_event, ledger, journaled)
            return
        if not cert.admitted:
            reasons.append(f"{path}: certificate {cert.certificate} {_refusal(cert, judge)}")
        else:
            reasons.append(
                f"{path}: certificate {cert.certificate} admitted judge {judge.name} under "
                f"policy {cert.policy.name}, which does not hold for {where}: {short}"
            )
    if reasons:
        raise CertificateError(reasons[0])
    raise CertificateError(
        f"{where}: no certificate for judge {judge.name} (config {wanted}) in the ledger "
        f"{ledger}: certify this judge config under this policy first (a config changed since "
        "it was certified is another judge)"
    )


def _within_budget(
    judge: JudgeConfig,
    use: Policy,
    where: str,
    use_event: str | None,
    ledger: Path,
    journaled: dict[str, dict[str, Any]] | None,
) -> None:
    """Refuse a use whose error budget the ledger's certificates of ``judge`` overspent: each
    one, admitted or refused, whose admission admits the use (:meth:`Policy.falls_short_of`)
    was an attempt at it, and together they may take no more than its δ — else a refusal under
    the use's bars, then an admission under bars a hair stricter, would pass the gate on the
    second try (a ledger written before ``certify`` counted such claims together)."""
    wanted = judge.config_hash()
    kept = list((journaled or {}).values())
    known = {e.get("certificate") for e in kept}
    entries = kept + [d for _, d in _entries(ledger) if d.get("certificate") not in known]
    tried = [
        e
        for e in entries
        if (e.get("judge") == judge.name or e.get("config_hash") == wanted)
        and _admits(e, use, use_event)
    ]
    spent = sum(_spent(e, use) for e in tried)
    if spent > use.delta * (1 + 1e-9):
        raise CertificateError(
            f"{where}: {len(tried)} certificates of judge {judge.name} in {ledger} would admit "
            f"this use, and together took {spent:g} of its error budget δ = {use.delta:g}: it "
            "was tried again until one passed (a refusal under its bars, then an admission "
            "under bars as strict or stricter) — certify on new items under a policy that "
            "plans its attempts (attempts: N)"
        )


def _admits(entry: dict[str, Any], use: Policy, use_event: str | None) -> bool:
    """Whether the certificate ``entry`` (as the ledger keeps it), had it been admitted, would
    admit ``use``: its claim at least as strict, at a confidence at least as high, on the same
    positive class. A line that does not say its claim counts by the use's name."""
    policy = entry.get("policy")
    if not isinstance(policy, dict):
        return False
    claim = {k: policy.get(k) for k in journal.POLICY_CLAIM if policy.get(k) is not None}
    try:
        theirs = Policy.model_validate(
            {**claim, "name": str(policy.get("name")), "n_resamples": use.n_resamples}
        )
    except ValidationError:
        return policy.get("name") == use.name
    return theirs.falls_short_of(use, event=entry.get("event"), use_event=use_event) is None


def _refusal(cert: Certificate, judge: JudgeConfig) -> str:
    failed = ", ".join(
        f"{r.metric} bound {bound_text(r)} vs bar {r.bar:g}" for r in cert.results if not r.passed
    )
    return f"refused judge {judge.name} ({failed}); a refused judge may not be used"
