"""The votes a ranking is fitted on, read from a finished pairwise evaluate run or a table of
pairs: one :class:`Vote` per judge's verdict on a pair of systems.

A pairwise run's item is a pair whose responses A and B belong to two systems: by default the
rows ``data.pairs`` paired (``meta.pair.a`` / ``meta.pair.b``: the essays of a PERSUADE pair),
or the item columns named by ``systems``. Its judge's verdict (A, B or tie) says which system won,
and the order the judge saw the pair in (recorded with every pairwise verdict) which one was
shown first. A panel's members vote one by one, each a judge of its own. A verdict left unscored
is no vote: it is counted by its reason, never turned into a winner.

A table has a row per vote: ``a``, ``b`` (the systems), ``winner`` (``a``'s or ``b``'s name, or
``tie``) and, optionally, ``first`` (the system shown first; empty: unknown) and ``judge``. Cells
are read without their surrounding spaces and compared as written (case counts): no system is
named ``tie`` — its wins would read as ties —, while ``Tie`` is a name like any other.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from assay._files import sha256_file
from assay.data import ColumnMap, is_missing, load_table
from assay.errors import DataError, RunError

TABLE_SUFFIXES = (".csv", ".tsv", ".jsonl", ".json")
TIE = "tie"
COLUMNS = ("a", "b", "winner", "first", "judge")


@dataclass(frozen=True)
class Vote:
    """One judge's verdict on systems ``a`` and ``b``: ``winner`` one of them or None (a tie),
    ``first`` the one shown first (None: unknown); where it was read (``source``, ``where``: the
    item id or the table's row) and, for a run's, what makes its item the same item as another
    (``item_keys``: :func:`~assay.inputs.used_keys` — the text the judge read, or the Inspect
    sample —; a table's row reads no text and has none)."""

    a: str
    b: str
    winner: str | None
    first: str | None
    judge: str
    source: str
    where: str
    item_keys: tuple[str, ...] = ()

    def record(self) -> dict[str, str | None]:
        """The vote as ``comparisons.jsonl`` keeps it: every field but its item keys (hashes,
        which say nothing read back)."""
        fields = (f.name for f in dataclasses.fields(self) if f.name != "item_keys")
        return {name: getattr(self, name) for name in fields}


class RankSource(BaseModel):
    """What one source gave: its votes per judge, and the verdicts that are no vote, by why."""

    model_config = ConfigDict(extra="forbid")

    named: str
    kind: str  # "run" or "table"
    votes: int
    judges: dict[str, int]
    left_out: dict[str, int]
    mlflow_run_id: str | None = None
    config_hash: str | None = None  # a run's judge config
    # a run's seal digest, a table's SHA-256: one source given twice (or a copy) is refused
    digest: str | None = None


def read_source(
    named: str, *, tracking_uri: str, scratch: Path, systems: tuple[str, str] | None
) -> tuple[list[Vote], RankSource]:
    """The votes of ``named``: a table of pairs (by its suffix), else an evaluate run (a
    directory or an MLflow run id)."""
    path = Path(named)
    if path.suffix.lower() in TABLE_SUFFIXES and not path.is_dir():
        if systems is not None:
            raise RunError(f"{named}: --systems names the columns of a run's items, not a table's")
        return read_table(path)
    return read_run(named, tracking_uri=tracking_uri, scratch=scratch, systems=systems)


def _summary(
    named: str, kind: str, votes: list[Vote], left_out: Counter[str], **more: Any
) -> RankSource:
    judges = Counter(v.judge for v in votes)
    return RankSource(
        named=named,
        kind=kind,
        votes=len(votes),
        judges=dict(sorted(judges.items())),
        left_out=dict(sorted(left_out.items())),
        **more,
    )


# -- a table of pairs ----------------------------------------------------------------------


def read_table(path: Path) -> tuple[list[Vote], RankSource]:
    """The votes of a CSV/TSV/JSON Lines table (see the module); a bad cell is one line naming
    the file, the row and the column."""
    rows = load_table(
        str(path),
        columns=ColumnMap(id="@row", request=None, response=None, expected=None),
        suggest_format=False,
    )
    if not rows:
        raise DataError("no rows: a table of pairs has a row per vote", path=path)
    missing = [c for c in ("a", "b", "winner") if c not in rows[0].meta]
    if missing:
        found = ", ".join(rows[0].meta) or "none"
        raise DataError(
            f"no column {', '.join(repr(c) for c in missing)} (columns: {found}); a table of "
            f"pairs has columns {', '.join(COLUMNS)} (first and judge optional)",
            path=path,
        )
    votes = []
    for row, it in enumerate(rows, start=1):

        def cell(column: str, meta: dict[str, Any] = it.meta) -> str | None:
            value = meta.get(column)
            return None if value is None or is_missing(value) else str(value).strip() or None

        a, b, winner = cell("a"), cell("b"), cell("winner")
        for column, value in (("a", a), ("b", b), ("winner", winner)):
            if value is None:
                raise DataError("empty cell", path=path, row=row, field=column)
        assert a is not None and b is not None and winner is not None
        for column, system in (("a", a), ("b", b)):
            if system == TIE:  # the winner column's tie: a system so named could never win
                raise DataError(
                    f"'{TIE}' is the winner column's tie, not a name a system can have (it "
                    "could never win)",
                    path=path,
                    row=row,
                    field=column,
                )
        if a == b:
            raise DataError(f"'{a}' against itself", path=path, row=row, field="b")
        if winner not in (a, b, TIE):
            raise DataError(
                f"'{winner}' is neither '{a}' nor '{b}' nor '{TIE}'",
                path=path,
                row=row,
                field="winner",
            )
        first = cell("first")
        if first is not None and first not in (a, b):
            raise DataError(
                f"'{first}' is neither '{a}' nor '{b}' (empty: unknown)",
                path=path,
                row=row,
                field="first",
            )
        judge = cell("judge") or path.stem
        won = None if winner == TIE else winner
        votes.append(Vote(a, b, won, first, judge, str(path), f"row {row}"))
    digest = sha256_file(path)
    return votes, _summary(str(path), "table", votes, Counter(), digest=digest)


# -- a pairwise evaluate run ---------------------------------------------------------------


def read_run(
    named: str, *, tracking_uri: str, scratch: Path, systems: tuple[str, str] | None
) -> tuple[list[Vote], RankSource]:
    """The votes of a finished pairwise evaluate run, read back through its seal."""
    from assay.decisions import read_judge_run
    from assay.inputs import used_keys
    from assay.programs import is_pairwise

    run = read_judge_run(named, tracking_uri=tracking_uri, scratch=scratch)
    scale = run.scale
    if not is_pairwise(scale):
        raise RunError(
            f"{named}: a run of a {run.config.judge.task} judge on a {scale.describe()} scale; "
            "a ranking reads the verdicts of a pairwise judge (task: pairwise)"
        )
    votes: list[Vote] = []
    left_out: Counter[str] = Counter()
    for item in run.items:
        x, y = _systems(named, item.id, item.meta, systems)
        keys = tuple(used_keys(item))
        j = run.judgments[item.id]
        ballots = j.members if j.members is not None else [_ballot(j)]
        for ballot in ballots:
            if ballot.get("score") is None:
                left_out[f"unscored ({ballot.get('unscored') or 'unknown'})"] += 1
                continue
            label = scale.label_of(ballot["score"])
            winner = {"A": x, "B": y}.get(label or "")
            order = ballot.get("order")
            first = {"AB": x, "BA": y}.get(order) if isinstance(order, str) else None
            votes.append(Vote(x, y, winner, first, str(ballot["judge"]), named, item.id, keys))
    if not votes:
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(left_out.items()))
        raise RunError(f"{named}: no verdict to rank on ({reasons or 'no items'})")
    return votes, _summary(
        named,
        "run",
        votes,
        left_out,
        mlflow_run_id=run.mlflow_run_id,
        config_hash=run.config_hash,
        digest=run.seal or None,
    )


def _ballot(j: Any) -> dict[str, Any]:
    """A single judge's judgment as a panel member's vote."""
    raw = j.raw if isinstance(j.raw, dict) else {}
    return {"judge": j.judge, "score": j.score, "unscored": j.unscored, "order": raw.get("order")}


def _systems(
    named: str, item_id: str, meta: dict[str, Any], columns: tuple[str, str] | None
) -> tuple[str, str]:
    """The systems of responses A and B of an item: ``columns``' values, else the pair's rows."""
    if columns is not None:
        values = []
        for column in columns:
            value = meta.get(column)
            if value is None or is_missing(value) or not str(value).strip():
                raise DataError(
                    f"item {item_id}: no system in column '{column}' (--systems)",
                    path=named,
                    field=column,
                )
            values.append(str(value).strip())
        x, y = values
    else:
        pair = meta.get("pair")
        if not isinstance(pair, dict) or "a" not in pair or "b" not in pair:
            raise RunError(
                f"{named}: item {item_id} names no systems: pairs built by data.pairs do, or "
                "name the item columns of responses A's and B's systems with --systems A_COL,B_COL"
            )
        x, y = str(pair["a"]), str(pair["b"])
    if x == y:
        raise DataError(f"item {item_id}: '{x}' against itself", path=named, field="systems")
    return x, y
