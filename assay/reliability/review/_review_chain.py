"""A harness run's review decisions as one signed chain (:class:`assay.runs.SignedHistory`):
which decision counts is the latest line of a probe, and decisions gate which probes are judged
and edited targets change the figures, so ``reviews.jsonl`` is checked as a whole before
anything reads it — each line signed with the signing key over its fields, the run's identity
and the line before it, the count and last signature kept with the key's records
(``review-runs/``: :func:`assay._signing.records_folder`).
A line written by hand (past ``assay review import`` and the review app), edited, moved,
removed, copied, or the end cut off is refused in one line naming the file and the first bad row.

The identity a decision is bound to is the run's hash and instance as ``run.json`` names them:
the run folder's own (its name ends with the hash; the instance is drawn when the folder is
made). A harness re-run of another config that only adds or changes a judge opens the same
folder, so its decisions carry over and stay valid; a config that makes other probes is another
folder; decisions copied from another folder of the same run are refused, and a folder deleted
and made again is a new instance, with a history of its own. Decisions written before they were signed
are adopted as they stand, once (their lines could not be checked; from then on they are).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from assay import _json
from assay.errors import DataError, RunError
from assay.reliability._files import REVIEWS
from assay.runs import HistoryKind, SignedHistory, file_lock, signed_run

__all__ = ["DECISIONS_CHAIN", "LOCK", "review_history", "review_lock", "run_identity"]

LOCK = "reviews.lock"

DECISIONS_CHAIN = HistoryKind(
    bound_to="run",
    lines="decisions",
    heads="review-runs",
    line=lambda r: f"decision on probe {r.get('probe_id')!r}",
    signed_before=False,  # before the chain, review decisions were not signed at all
)
"""A harness run's review decisions, as :class:`assay.runs.SignedHistory` chains them."""


@contextmanager
def review_lock(run_dir: Path) -> Iterator[None]:
    """Exclusive lock on the run's review log (:func:`assay.runs.file_lock` on
    ``reviews.lock``): every writer holds it from reading the history to the end of its
    append, so concurrent reviewers (processes or threads) never lose or interleave a
    decision."""
    with file_lock(Path(run_dir) / LOCK):
        yield


def run_identity(run_dir: Path) -> str:
    """The run's hash and instance, as its ``run.json`` names them: what every review decision
    is bound to (:func:`assay.runs.signed_run`; the hash alone for a run created before runs
    had an instance)."""
    path = Path(run_dir) / "run.json"
    try:
        state = _json.loads(path.read_text(encoding="utf-8"))
        run_hash, instance = state.get("run_hash"), state.get("instance")
    except (OSError, ValueError, AttributeError):
        run_hash, instance = None, None
    if not isinstance(run_hash, str) or not run_hash:
        raise RunError(f"{run_dir}: not a harness run directory (no run.json naming its run)")
    return signed_run(run_hash, instance if isinstance(instance, str) else None)


def review_history(run_dir: Path) -> SignedHistory:
    """The run's ``reviews.jsonl`` as one signed chain, bound to the run's instance."""
    run_dir = Path(run_dir)
    return SignedHistory(
        DECISIONS_CHAIN,
        run_dir / REVIEWS,
        run_identity(run_dir),
        read=_objects,
        lock=lambda: review_lock(run_dir),
    )


def _objects(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """The file's lines as (row, JSON object); a torn last line (a killed writer) is skipped,
    a line that is not an object is a one-line DataError (each decision's own fields are
    checked once its signature holds: ``read_reviews``)."""
    out = []
    for lineno, record in _json.records(path):
        if not isinstance(record, dict):
            raise DataError("not a JSON object", path=path, row=lineno)
        out.append((lineno, record))
    return out
