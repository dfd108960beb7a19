"""Which items tuned a judge: a measurement of a tuned judge on those items is refused.

A judge tuned on labelled items (``assay optimize``, or MLflow's ``align()`` with MemAlign, SIMBA
or GEPA) agrees with those labels because it was fitted to them; measured on them again, its
agreement, a paired comparison with the judge it came from and a certificate all overstate it.
So every tuning is recorded — the tuned judge (its config hash, its program state's content
digest and the MLflow URIs it can be loaded by) and the items it saw (ids, and the text the
judge read normalised as a certificate's consumed items are:
:mod:`assay.inputs._item_text`, invisible characters dropped, NFKC, case-folded, whitespace
collapsed, look-alike letters folded) — in the ledger of the runs folder it was tuned from, signed
with the signing key. Each record is added through the ledger's tuning journal
(:data:`._ledger_journal.TUNINGS`: signed lines chained to one another, their head kept with the
signing key's records, found by the key's identity), as a certificate is through the certificates'
journal: what is refused is what the journal holds, and every record folder besides — a record's
folder deleted leaves its items refused, and a journal removed, cut back or edited is refused in one
line.
A decision rule fitted on labels is a tuning too (``assay calibrate``: a threshold, an isotonic
or a Platt map on a judge's P(positive)): its record names the judge whose probabilities it was
fitted on, and every judge that decides from those probabilities by a threshold or a map — the
fitted one, a rounded or hand-moved threshold, another of the maps — is the tuned judge; so are
``assay selective calibrate``'s thresholds on each stage's confidence (the tuned judge: the
stage's judge config, its ``confidence`` included).
``assay certify`` and ``compare --paired`` look up the judge they measure in that ledger (the
command's own runs folder — certify's ``--output-dir``, else ``runs`` —, never one a run's files
name; ``compare --paired`` also in the one each run was made for, since a record only ever makes
a measurement stricter) and refuse items that reached its tuning, matched by id or by
normalised text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from assay import _signing
from assay._json import loads as load_json
from assay.decisions import _ledger_journal as journal
from assay.decisions._certify import _ledger_id, ledger_of
from assay.decisions._ledger_journal import TUNINGS
from assay.errors import RunError
from assay.inputs import (
    CONFUSABLES,
    NORMALISED,
    Rule,
    fingerprints_under,
    used_keys,
)
from assay.programs import JudgeConfig, is_mlflow_uri, resolve_program_state, state_file_digest
from assay.runs import file_lock, write_json
from assay.types import Item, PlainName, stable_hash

TUNING = "tuning"
"""The folder, in a runs folder's ledger, that holds every tuning record made from there."""
RECORD = "tuning.json"


class TunedItemsError(RunError):
    """A tuned judge measured on items that reached its tuning: one line, exit 2."""


class TuningRecord(BaseModel):
    """The items one tuning saw, and the judge it produced — signed by the signing key."""

    model_config = ConfigDict(extra="forbid")

    record: PlainName  # its id, its folder in the ledger
    issued: str  # UTC, ISO 8601
    source: str  # what tuned it, e.g. "assay optimize (gepa)" or "mlflow align (SIMBA)"
    run: str  # where the tuning ran (a run directory, or what the caller named)
    judge: str
    base_config_hash: str  # the judge it was tuned from
    config_hash: str  # the tuned judge, as the tuning wrote it
    program_state_digest: str | None = None  # SHA-256 of the tuned program state's bytes
    program_state_uris: list[str] = []  # MLflow URIs the tuned state is loaded by
    items: list[str]  # ids of the items the tuning saw
    item_fingerprints: list[str]  # the same items' judged texts, normalised (one to three keys)
    # the rule they were made under (_item_text); a record that names none reads as before
    fingerprint_rule: Rule = NORMALISED
    # a decision rule fitted on labels (assay calibrate): the config hash of the judge whose
    # P(positive) it was fitted on, with no threshold or map; None for any other tuning
    decision_rule_of: str | None = None
    signature: str = ""

    def signed_part(self) -> dict[str, object]:
        # a record of another tuning signs what it signed before the field existed
        unset = set() if self.decision_rule_of is not None else {"decision_rule_of"}
        return self.model_dump(mode="json", exclude={"signature", *unset})

    def tunes(self, judge: JudgeConfig) -> bool:
        """Whether ``judge`` is the judge this tuning produced: the same config hash, the same
        program state bytes wherever the file now is, or an MLflow URI of the state — or, for
        a fitted decision rule, any judge deciding by a threshold or a map from the
        probabilities it was fitted on."""
        if judge.config_hash() == self.config_hash:
            return True
        if self.decision_rule_of is not None:
            return _decides_from(judge) == self.decision_rule_of
        state = judge.program_state
        if not state:
            return False
        if state in self.program_state_uris:
            return True
        digest = state_file_digest(state)
        return digest is not None and digest == self.program_state_digest


def record_tuning(
    tuned: JudgeConfig,
    base: JudgeConfig,
    items: Iterable[Item],
    *,
    source: str,
    run: str | Path,
    ledger: Path,
    uris: Sequence[str] = (),
    decision_rule_of: JudgeConfig | None = None,
) -> TuningRecord:
    """Record, signed, in ``ledger`` that ``tuned`` was tuned from ``base`` on ``items`` (the
    items its tuning saw: a train split and the validation split an optimizer selects on).
    Writing the same tuning again only adds URIs it had not named. A tuned state named by an
    MLflow URI (``runs:/<id>/program.json``: what an alignment logged) is downloaded once and
    its bytes digested, so a copy of it elsewhere is the tuned judge too.

    ``decision_rule_of``: the tuning fitted a decision rule (a threshold or a calibration map)
    on this judge's P(positive); every judge that decides from those probabilities by a
    threshold or a map is then the tuned judge, and its program state alone is not (the judge
    without the rule was not tuned on these items)."""
    seen = list(items)
    state = tuned.program_state
    if decision_rule_of is not None:
        digest = None
    elif state and is_mlflow_uri(state):
        digest = state_file_digest(resolve_program_state(state))
        uris = [*uris, state]
    else:
        digest = state_file_digest(state)
    key = stable_hash([tuned.config_hash(), digest, sorted(it.id for it in seen)])
    ident = f"{tuned.name}-{key[:12]}"
    folder = ledger / TUNING / ident
    with file_lock(ledger / ".lock"):
        ledger_id = _ledger_id(ledger, create=True)
        assert ledger_id is not None
        held = _held(ledger, ledger_id)  # a journal cut or replaced is refused
        unjournaled = [r for _, r in _folders(ledger) if r not in held]  # written before it
        old = _read(folder / RECORD) or next((r for r in held if r.record == ident), None)
        known = old.program_state_uris if old is not None else []
        record = TuningRecord(
            record=ident,
            issued=old.issued if old else datetime.now(UTC).isoformat(timespec="seconds"),
            source=source,
            run=str(run),
            judge=tuned.name,
            base_config_hash=base.config_hash(),
            config_hash=tuned.config_hash(),
            program_state_digest=digest,
            program_state_uris=sorted({*known, *uris}),
            items=[it.id for it in seen],
            item_fingerprints=[key for it in seen for key in used_keys(it)],
            fingerprint_rule=CONFUSABLES,
            decision_rule_of=(
                None if decision_rule_of is None else _without_rule(decision_rule_of).config_hash()
            ),
        )
        same = old is not None and old.model_dump(exclude={"signature"}) == record.model_dump(
            exclude={"signature"}
        )
        if same:
            assert old is not None
            record = old
        else:
            record.signature = _signing.sign(record.signed_part())
        adds = [*unjournaled, *([] if record in [*held, *unjournaled] else [record])]
        # the signing key's journal first: a kill before the ledger's leaves the items refused
        # everywhere, never free elsewhere (the same record, written again, completes)
        _sign_everywhere([*held, *adds])
        if not same or not (folder / RECORD).is_file():
            folder.mkdir(parents=True, exist_ok=True)
            write_json(folder / RECORD, record.model_dump(mode="json"))
        if adds:  # the folders the journal lacked, and this record
            journal.append(ledger, ledger_id, [r.model_dump(mode="json") for r in adds], TUNINGS)
    return record


def _sign_everywhere(records: list[TuningRecord]) -> None:
    """Add to the signing key's journal of tuning records
    (:data:`._ledger_journal.SIGNED_TUNINGS`) those of ``records`` it does not hold yet: what a
    ledger's tunings fitted on is refused in every other ledger of the machine."""
    folder = journal.signed_folder()
    folder.mkdir(parents=True, exist_ok=True)
    with file_lock(folder / ".lock"):
        known = {r.record for r in _signed_records()}
        new = [r for r in records if r.record not in known]
        if new:
            dumped = [r.model_dump(mode="json") for r in new]
            journal.append(folder, journal.SIGNED_ID, dumped, journal.SIGNED_TUNINGS)


def _signed_records() -> list[TuningRecord]:
    """The tuning records the signing key's journal holds (checked against its head; none
    without a key)."""
    if _signing.key_id() is None:
        return []
    return _journaled(journal.signed_folder(), journal.SIGNED_ID, journal.SIGNED_TUNINGS)


def tunings(ledger: Path) -> list[tuple[Path, TuningRecord]]:
    """Every tuning record in ``ledger``: each its tuning journal holds (checked against its
    head: a journal removed, cut back or edited is refused — a record's folder deleted is not
    a tuning undone), and every record folder besides, where it is; and every tuning record
    the signing key's journal holds from another ledger of the machine
    (:data:`._ledger_journal.SIGNED_TUNINGS`). A folder's signature says assay wrote it; one
    that does not match is counted all the same: a record only ever makes a measurement
    stricter."""
    held = _held(ledger, _ledger_id(ledger, create=False))
    folders = _folders(ledger)
    where = {r.record: p for p, r in folders if r in held}  # its folder, while it is there
    kept = [(where.get(r.record, ledger / TUNINGS.file), r) for r in held]
    here = [*kept, *((p, r) for p, r in folders if r not in held)]
    if _signing.key_id() is None:  # no key: nothing was ever recorded on this machine
        return here
    ids = {r.record for _, r in here}
    signed = journal.signed_folder() / journal.SIGNED_TUNINGS.file
    return here + [(signed, r) for r in _signed_records() if r.record not in ids]


def refuse_tuned_items(
    judge: JudgeConfig, items: Sequence[Item], *, workdir: Path, output_dir: str, what: str
) -> None:
    """Refuse, in one line, to measure ``judge`` on ``items`` (``what``: the measurement, e.g.
    ``"certify"``) when any of them reached a tuning of that judge recorded in the ledger of
    ``workdir``'s runs folder ``output_dir``: matched by id or by the normalised judged text."""
    ledger = ledger_of(workdir, output_dir)
    ids = {it.id for it in items}
    for path, record in tunings(ledger):
        if not record.tunes(judge):
            continue
        by_id = ids & set(record.items)
        seen = set(record.item_fingerprints)
        fingerprints = fingerprints_under(record.fingerprint_rule, items)
        by_text = {it.id for it, fps in zip(items, fingerprints, strict=True) if fps & seen}
        if by_id or by_text:
            n = len(by_id | by_text)
            where = path if path.name == RECORD else f"{record.record} in {path}"
            raise TunedItemsError(
                f"{what}: {n} of these {len(items)} items reached the tuning of judge "
                f"{judge.name!r} ({record.source}, {record.run}; {len(by_id)} by id, "
                f"{len(by_text)} by normalised text or Inspect sample — record {where}): a "
                "tuned judge is measured on held-out items only"
            )


def _decides_from(judge: JudgeConfig) -> str | None:
    """The config hash of the judge whose P(positive) ``judge`` decides from by a threshold or a
    calibration map (``judge`` without them); None when it has neither."""
    if judge.decision_threshold is None and judge.calibration is None:
        return None
    return _without_rule(judge).config_hash()


def _without_rule(judge: JudgeConfig) -> JudgeConfig:
    return judge.model_copy(update={"decision_threshold": None, "calibration": None})


def _held(ledger: Path, ledger_id: str | None) -> list[TuningRecord]:
    """The tuning records the ledger's tuning journal holds (:func:`._ledger_journal.read`:
    checked against its head)."""
    return _journaled(ledger, ledger_id, TUNINGS)


def _journaled(folder: Path, ident: str | None, which: journal.Journal) -> list[TuningRecord]:
    """The tuning records journal ``which`` in ``folder`` holds (its head found by ``ident``),
    each checked against it."""
    path = folder / which.file
    out = []
    for n, entry in enumerate(journal.read(folder, ident, which), start=1):
        try:
            out.append(TuningRecord.model_validate(entry))
        except ValueError:
            raise RunError(f"{path}, entry {n}: not a tuning record") from None
    return out


def _folders(ledger: Path) -> list[tuple[Path, TuningRecord]]:
    """The tuning records in ``ledger``'s record folders, as they are."""
    out = []
    for path in sorted((ledger / TUNING).glob(f"*/{RECORD}")):
        record = _read(path)
        if record is not None:
            out.append((path, record))
    return out


def _read(path: Path) -> TuningRecord | None:
    if not path.is_file():
        return None
    try:
        data = load_json(path.read_text(encoding="utf-8"))
        record = TuningRecord.model_validate(data)
    except (OSError, ValueError):
        raise RunError(f"{path}: unreadable tuning record in the ledger") from None
    return record
