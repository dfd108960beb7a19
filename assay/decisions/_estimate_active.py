"""Active labelling for ``assay estimate``: draw the items to label next where the judge is least
sure (``--suggest N``), and read the verdicts people give them back into an inverse-probability
weighted estimate (``--queue DIR``) — Zrnic & Candès' active inference
(:mod:`assay.metrics._active`).

Two phases. The items labelled before the draw (``n`` of the run's ``N``) are the first: a
uniform random sample, each item in it with probability ``p₁ = n / N``, recorded with the queue
and read back from it. A ``--validation`` run's labels are of other items, with no chance of
being drawn from the run's: a queue is drawn from the run alone, and one that is not read back
over the very items it was drawn from is refused. The queue is the second:
every item gets ``π₂ ∝ √(the judge's variance)``, mixed with a uniform share, scaled so that
the unlabelled ones sum to N (the budget, in expectation), and the unlabelled items are drawn
independently with it, all at once from a seed. An item's chance of being labelled in either
phase is ``π = p₁ + (1 − p₁) π₂``, and the estimate weighs every label by ``1 / π`` — so the
labels given before count with the judge's predictions as PPI's do, not as bare labels. The
queue (``label_queue.jsonl``: every item's ``π₂``, whether it was drawn, and the drawn items'
texts) is sealed with its run, so a ``π₂`` edited afterwards is refused; each verdict people
give is signed.

**A fixed budget**, chosen before the draw (with ``--target-half-width`` the queue's report shows
the budget PPI++'s plan asks for): the interval holds once every drawn item is labelled; until
then the estimate is provisional (a pending item counts as not drawn) and said so, and it does
not lead the report. Treating the first phase as independent draws with ``p₁`` (it was a sample of fixed
size) and ``π₂`` as fixed (its scale depends a little on which items the first phase took) are
the approximations made.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from pydantic import BaseModel, ConfigDict

from assay import _signing
from assay.decisions._estimate_pool import Pool
from assay.decisions.review_queue import LabelQueue
from assay.errors import ConfigError, RunError
from assay.metrics import MeanEstimate, Undefinable
from assay.scale import Scale

UNIFORM_SHARE = 0.2


class QueueState(BaseModel):
    """A label queue: drawn by this run (``--suggest``) or read back (``--queue``)."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    role: Literal["drawn", "read"]
    queue_dir: str
    source_run_hash: str
    scale: dict[str, Any]
    pool: int  # the unlabelled items it was drawn from
    labelled_before: int = 0  # the first phase: items labelled before the draw
    first_phase: Undefinable | None = None  # p₁ = labelled_before / every item (None: older queue)
    budget: float  # the expected number of new labels, Σπ₂ over the unlabelled items
    drawn: int
    labelled: int = 0
    pending: int = 0
    uncertainty: str  # what π followed
    uniform_share: Undefinable = UNIFORM_SHARE
    seed: int = 0

    @property
    def complete(self) -> bool:
        return self.role == "read" and self.pending == 0


def _uncertainty(pool: Pool) -> tuple[list[float], str]:
    """Each item's uncertainty for the draw, and what it is in words: the variance of the
    judge's distribution (an unscored item, or one without a probability, as unsure as the
    least sure item); all zero — uniform sampling — when the judge gave no probability."""
    if pool.prediction in ("verdict", "score"):
        return [0.0] * len(pool.items), "none: the judge gave no probability, so uniform"
    spreads = [it.spread for it in pool.items]
    worst = max((s for s in spreads if s is not None), default=0.0)
    what = (
        "the variance of the judge's distribution: p(1 − p) of its probability"
        if pool.target.rate
        else "the variance of the judge's distribution of the score"
    )
    return [worst if s is None else s for s in spreads], what


def second_phase(
    u: Sequence[float] | NDArray[np.float64],
    unlabelled: Sequence[int] | NDArray[np.intp],
    budget: int,
) -> NDArray[np.float64]:
    """Every item's ``π₂`` (``active_sampling_probabilities`` over all the items), its total
    over the ``unlabelled`` positions equal to ``budget``: the scale found by bisection."""
    from assay.metrics import active_sampling_probabilities

    def over_pool(total: float) -> tuple[float, NDArray[np.float64]]:
        pi = active_sampling_probabilities(u, total, uniform_share=UNIFORM_SHARE)
        return float(pi[unlabelled].sum()), pi

    low, high = float(budget), float(len(u))
    got, pi = over_pool(low)
    if len(unlabelled) == len(u) or abs(got - budget) < 1e-9:
        return pi
    for _ in range(100):
        mid = (low + high) / 2
        got, pi = over_pool(mid)
        if abs(got - budget) < 1e-9:
            break
        low, high = (mid, high) if got < budget else (low, mid)
    return pi


def either_phase(first: float, second: ArrayLike) -> NDArray[np.float64]:
    """Each item's chance of being labelled in either phase, ``π = p₁ + (1 − p₁) π₂``: in the
    first phase's uniform sample (``first``: ``p₁ = n / N``) or, outside it, drawn by the queue
    with its ``π₂`` (``second``). The estimate weighs each label by ``1 / π``."""
    return first + (1 - first) * np.asarray(second, dtype=float)


def draw_queue(
    pool: Pool, scale: Scale, budget: int, seed: int, source_run_hash: str
) -> tuple[QueueState, list[dict[str, Any]]]:
    """The label queue of ``budget`` items (in expectation) drawn from the pool's unlabelled
    items, and its records: every item's ``π₂``, whether it was drawn (or labelled before); a
    drawn item's texts and what the judge said of it."""
    from assay.metrics import draw_active_sample

    unlabelled = pool.unlabelled
    if budget > len(unlabelled):
        raise ConfigError(
            f"--suggest {budget}: only {len(unlabelled)} unlabelled items to draw from"
        )
    u, what = _uncertainty(pool)
    pi = second_phase(u, unlabelled, budget)
    drawn_at = draw_active_sample(pi[unlabelled], seed=seed).tolist()
    drawn = {unlabelled[k] for k in drawn_at}
    records = []
    for i, it in enumerate(pool.items):
        record: dict[str, Any] = {
            "item_id": it.id,
            "inclusion": float(pi[i]),
            "drawn": i in drawn,
            "labelled_before": it.labelled,
            "prediction": pool.f[i],
        }
        if i in drawn:
            record |= {
                "request": it.item.request,
                "response": it.item.response,
                "transcript": None
                if it.item.transcript is None
                else [m.model_dump(mode="json") for m in it.item.transcript],
                "judge": _judge_said(pool, i, scale),
            }
        records.append(record)
    state = QueueState(
        role="drawn",
        queue_dir="",
        source_run_hash=source_run_hash,
        scale=scale.model_dump(mode="json"),
        pool=len(unlabelled),
        labelled_before=len(pool.labelled),
        first_phase=len(pool.labelled) / len(pool.items),
        budget=float(pi[unlabelled].sum()),
        drawn=len(drawn),
        pending=len(drawn),
        uncertainty=what,
        seed=seed,
    )
    return state, records


def _judge_said(pool: Pool, i: int, scale: Scale) -> dict[str, str]:
    """What the judge said of pool item ``i``, for the reviewer: its verdict and prediction."""
    it = pool.items[i]
    if it.unscored is not None:
        verdict = f"unscored ({it.unscored})"
    else:
        verdict = str(it.verdict) if not pool.target.rate else ("yes" if it.verdict else "no")
        verdict = f"{pool.target.name}: {verdict}" if pool.target.rate else f"score {verdict}"
    return {
        "verdict": verdict,
        "prediction": f"{pool.f[i]:.3f}",
        "what": pool.prediction
        if it.unscored is None
        else "a stand-in: the mean prediction (the judge left it unscored)",
    }


def first_phase(queue: LabelQueue) -> float:
    """The first phase's ``p₁`` the queue was drawn with, as its sealed state records it (a
    queue drawn before it was recorded: ``labelled_before`` over every item it was drawn
    from — the same number)."""
    state = queue.state
    if state.get("first_phase") is not None:
        return float(state["first_phase"])
    before = int(state.get("labelled_before") or 0)
    return before / (int(state["pool"]) + before)


def drawn_from(pool: Pool, queue: LabelQueue) -> dict[str, dict[str, Any]]:
    """The queue's record of each of the pool's items, by id; a pool that is not the one the
    queue was drawn from — an item missing from either, or labelled before in one and not the
    other (a queue drawn with another run's labels beside it) — is a one-line RunError: its
    probabilities would weigh other items."""
    records = {r["item_id"]: r for r in queue.pool()}
    ids = {it.id for it in pool.items}
    problems = (
        *(f"item {it.id} of the run is not in it" for it in pool.items if it.id not in records),
        *(f"its item {k} is not in the run" for k in records if k not in ids),
        *(
            f"item {it.id} is labelled before the draw in one and not in the other"
            for it in pool.items
            if it.id in records and bool(records[it.id].get("labelled_before")) != it.labelled
        ),
    )
    if problems:
        raise RunError(
            f"{queue.path}: not drawn from these items ({problems[0]}): its probabilities are "
            "another pool's (a queue drawn beside a --validation run's labels, which is no "
            "longer allowed); draw a new queue from the run alone"
        )
    return records


def active_estimate(
    pool: Pool, queue: LabelQueue, run_hash: str, alpha: float
) -> tuple[MeanEstimate | None, QueueState, str]:
    """Active PPI++ over every item of the run from the labels given before (the first phase)
    and the queue's verdicts, each weighed by ``1 / π``; the queue's state; a key of what was
    read (the queue's identity and its verdicts: part of the estimate run's identity). None
    when fewer than two labels are in."""
    from assay.metrics import active_ppi_mean

    queue.check_source(run_hash)
    records = drawn_from(pool, queue)
    verdicts = queue.verdicts()
    first = first_phase(queue)
    second, labels, positions = [], [], []
    drawn = pending = 0
    for i, it in enumerate(pool.items):
        r = records[it.id]
        second.append(float(r["inclusion"]))
        if it.labelled:
            labels.append(it.label)
            positions.append(i)
        elif r.get("drawn"):
            drawn += 1
            v = verdicts.get(it.id)
            if v is None:
                pending += 1
            else:
                labels.append(pool.target.of(int(v["score"])))
                positions.append(i)
    state = QueueState.model_validate(
        {
            **queue.state,
            "role": "read",
            "queue_dir": str(queue.path),
            "drawn": drawn,
            "labelled": drawn - pending,
            "pending": pending,
        }
    )
    key = _signing.digest(
        {"queue": queue.identity, "verdicts": sorted((k, v["score"]) for k, v in verdicts.items())}
    )
    if len(labels) < 2:
        return None, state, key
    kind = "probability" if pool.target.rate else "score"
    est = active_ppi_mean(
        labels,
        np.asarray(positions),
        pool.f,
        either_phase(first, second),
        alpha=alpha,
        prediction=kind,  # type: ignore[arg-type]
        clusters=pool.clusters,  # an Inspect sample's epochs: one unit
    )
    est = pool.described(est)
    if pending:
        note = (
            f"provisional: {pending} of the {drawn} drawn items are not labelled yet (counted as "
            "not drawn); the interval holds once every one is (fixed budget)"
        )
        est = dataclasses.replace(est, note="; ".join(x for x in (note, est.note) if x))
    return est, state, key
