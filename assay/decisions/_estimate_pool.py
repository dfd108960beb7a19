"""What an estimate is about: the items of finished evaluate runs as one pool — each item's human
label where a person gave one, the judge's prediction of it, its verdict, and the features the
sample checks compare — and the quantity estimated (the rate of an event, or the mean score).

The prediction is the judge's probability of the event when its judgments carry one (in order:
the calibrated probability, the token probabilities of ``score_mode: expected``, the share of a
sampled judge's samples or of a panel's members, the verdict's own token probability on a
binary scale), else its 0/1 verdict; for the mean score, the probability-weighted score or the
score. An item the judge left unscored keeps its place: it has no verdict, and its prediction is
a constant stand-in — the mean prediction over the scored items — that carries no information
about it, which PPI's correction on the labelled items then treats like any wrong prediction.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from assay.errors import ConfigError, DataError
from assay.inputs import EvaluateConfig, item_keys, same_items, sample_of
from assay.metrics import MeanEstimate
from assay.scale import Scale
from assay.types import Item, Judgment

PredictionChoice = Literal["probability", "verdict"]


@dataclass(frozen=True)
class Target:
    """What is estimated: the rate of an event (the scores in ``scores``) or, when ``scores`` is
    None, the mean score."""

    name: str
    scores: frozenset[int] | None

    @property
    def rate(self) -> bool:
        return self.scores is not None

    def of(self, score: int) -> float:
        """An item's value: 1/0 for the event, or its score."""
        return float(score in self.scores) if self.scores is not None else float(score)


def target_of(scale: Scale, positive: str | None, threshold: int | None) -> Target:
    """The event a rate is of — a label (``positive``; on a binary scale the positive label by
    default) or ``score < threshold`` — or the mean score on an ordinal scale given neither."""
    if positive is not None and threshold is not None:
        raise ConfigError("--positive and --threshold: give one (a label, or scores below N)")
    if threshold is not None:
        if threshold not in scale.values:
            raise ConfigError(f"--threshold {threshold} is not on the {scale.describe()} scale")
        return Target(f"score < {threshold}", frozenset(v for v in scale.values if v < threshold))
    if positive is None:
        if scale.kind == "binary":
            return Target(f"verdict {scale.label_of(1) or 1}", frozenset({1}))
        if scale.kind == "ordinal":
            return Target("mean score", None)
        raise ConfigError(
            f"the {scale.describe()} scale has no single positive verdict: give --positive LABEL"
        )
    try:
        value = scale.coerce(positive)
    except ValueError:
        raise ConfigError(f"--positive {positive}: not on the {scale.describe()} scale") from None
    return Target(f"verdict {scale.label_of(value) or value}", frozenset({value}))


@dataclass
class PoolItem:
    """One item of the pool: its human label (``label``, the target's value of its reference;
    None when unlabelled), the judge's verdict as the target's value (None when unscored), its
    probability or expected value and the spread of its distribution (None without one)."""

    item: Item
    label: float | None
    verdict: float | None
    probability: float | None
    spread: float | None  # the variance of the judge's distribution (None without one)
    probability_source: str | None
    unscored: str | None
    run: str  # which run it was read from (where a mistake in its data is)

    @property
    def id(self) -> str:
        return self.item.id

    @property
    def meta(self) -> dict[str, Any]:
        return self.item.meta

    @property
    def length(self) -> int:
        return text_length(self.item)

    @property
    def labelled(self) -> bool:
        return self.label is not None


@dataclass
class Pool:
    """The items an estimate is about, and the prediction each gets: ``f`` in item order (the
    stand-in for the unscored ones), ``prediction`` what it is (``probability``, ``verdict``,
    ``expected score``, ``score``) and where it came from."""

    target: Target
    items: list[PoolItem]
    prediction: str
    prediction_source: str
    f: list[float]
    stand_in: float | None
    without_probability: int  # scored items whose verdict stood in for a missing probability
    data: dict[str, str] = field(default_factory=dict)  # run -> its data file (for errors)

    @property
    def labelled(self) -> list[int]:
        return [i for i, it in enumerate(self.items) if it.labelled]

    @functools.cached_property
    def samples(self) -> list[str | None]:
        """The items each item is one item with, by position: its run's items that share its
        text or its Inspect sample (:func:`~assay.inputs.same_items`: the same text under other
        ids, the epochs of one sample), named by run and group; None for an item alone. Never
        across runs: a --validation run's copy of an item is counted by :func:`same_texts`."""
        by_run: dict[str, list[int]] = {}
        for k, it in enumerate(self.items):
            by_run.setdefault(it.run, []).append(k)
        out: list[str | None] = [None] * len(self.items)
        for run, positions in by_run.items():
            groups = same_items([self.items[k].item for k in positions])
            for k, group in zip(positions, groups, strict=True):
                out[k] = None if group is None else f"{run}: {group}"
        return out

    @functools.cached_property
    def repeats(self) -> tuple[int, int, bool]:
        """``(items, groups, inspect)``: how many items are one item with another
        (:attr:`samples`), in how many groups, and whether every group is an Inspect sample's
        epochs (else some are one text under several ids)."""
        grouped = [(s, it.item) for s, it in zip(self.samples, self.items, strict=True) if s]
        groups = {s for s, _ in grouped}
        epochs = {s for s, item in grouped if sample_of(item) is not None}
        return len(grouped), len(groups), groups == epochs

    @functools.cached_property
    def clusters(self) -> list[str] | None:
        """Each item's cluster for a standard error — the items it is one item with
        (:attr:`samples`), an item alone one of its own (by position) — by position; None when
        no cluster holds two."""
        ids = [sample or f"position {k}" for k, sample in enumerate(self.samples)]
        return ids if len(set(ids)) < len(ids) else None

    @property
    def unlabelled(self) -> list[int]:
        return [i for i, it in enumerate(self.items) if not it.labelled]

    @property
    def unscored(self) -> dict[str, int]:
        return dict(Counter(it.unscored for it in self.items if it.unscored))

    def described(self, e: MeanEstimate) -> MeanEstimate:
        """``e`` (a prediction-powered estimate) with the prediction named as the pool has it,
        and its note saying which items had a stand-in prediction."""
        notes = [e.note] if e.note else []
        unscored = self.unscored
        if unscored:
            reasons = ", ".join(f"{r} {n}" for r, n in sorted(unscored.items()))
            n = sum(unscored.values())
            notes.append(
                f"{n} unscored item{'s' * (n != 1)} ({reasons}): the mean prediction "
                f"{self.stand_in:.3f} stands in"
            )
        if self.without_probability:
            n = self.without_probability
            notes.append(
                f"{n} item{'s' * (n != 1)} without a probability: "
                f"{'their verdicts stand' if n != 1 else 'its verdict stands'} in"
            )
        return dataclasses.replace(e, prediction=self.prediction, note="; ".join(notes) or None)

    def records(self) -> list[dict[str, Any]]:
        """One line per item for ``estimate_items.jsonl``: its human label, the judge's verdict
        and the prediction the estimate used, its text length and the run it came from."""
        return [
            {
                "item_id": it.id,
                "label": it.label,
                "verdict": it.verdict,
                "unscored": it.unscored,
                "prediction": f,
                "length": it.length,
                "run": it.run,
            }
            for it, f in zip(self.items, self.f, strict=True)
        ]

    def column(self, name: str, option: str) -> list[Any]:
        """Each item's value of the data column ``name`` (None where empty); a column no item
        of a run has is a one-line ConfigError naming the option and the run's columns."""
        for run in dict.fromkeys(it.run for it in self.items):
            mine = [it for it in self.items if it.run == run]
            if not any(name in it.meta for it in mine):
                known = sorted({k for it in mine for k in it.meta})
                raise ConfigError(
                    f"{option} {name}: no such column in the data of {run} "
                    f"({self.data.get(run, '?')}; its other columns: {', '.join(known) or 'none'})"
                )
        return [_cell(it.meta.get(name)) for it in self.items]

    def strata(self, name: str) -> list[str]:
        """Each item's stratum: the column's value as text; an empty one is a DataError."""
        out = []
        for it, v in zip(self.items, self.column(name, "--strata"), strict=True):
            if v is None or isinstance(v, dict | list):
                raise DataError(
                    f"item {it.id}: no stratum ({v!r}); every item needs one",
                    path=self.data.get(it.run),
                    field=name,
                )
            out.append(str(v))
        return out

    def weights(self, name: str) -> list[float]:
        """Each item's observation weight: a positive finite number, else a DataError naming
        the item and the column (a weight of zero would leave the item out unseen)."""
        out = []
        for it, v in zip(self.items, self.column(name, "--weights"), strict=True):
            ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            if not ok or v <= 0:
                raise DataError(
                    f"item {it.id}: weight {v!r}; a weight is a positive number",
                    path=self.data.get(it.run),
                    field=name,
                )
            out.append(float(v))
        return out


def _cell(value: Any) -> Any:
    """A data cell with an empty one as None (a NaN or blank cell)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, str) and not value.strip():
        return None
    return value


def text_length(item: Item) -> int:
    """The characters a judge read: request, response and every message of the transcript."""
    transcript = sum(len(m.content) for m in item.transcript or [])
    return len(item.request) + len(item.response) + transcript


def judge_distribution(
    j: Judgment, target: Target, scale: Scale
) -> tuple[dict[float, float], str] | None:
    """The judge's distribution of the target's value for one scored judgment — ``{1: p, 0: 1 −
    p}`` for a rate, each score's probability for the mean score — and where it came from;
    None when the judgment carries none."""
    if j.score is None:
        return None
    scores = target.scores
    if scores is not None and scale.kind == "binary" and j.calibrated_probability is not None:
        p = j.calibrated_probability
        return _binary(p if scores == {1} else 1 - p), "calibrated probability"
    if j.probabilities:
        dist: dict[float, float] = {}
        for k, p in j.probabilities.items():
            value = target.of(int(k))
            dist[value] = dist.get(value, 0.0) + p
        return dist, "token probabilities"
    votes, what = _votes(j)
    if votes:
        dist = {}
        for v in votes:
            dist[target.of(v)] = dist.get(target.of(v), 0.0) + 1 / len(votes)
        return dist, what
    if (
        scores is not None
        and scale.kind == "binary"
        and j.confidence is not None
        and j.confidence_source == "probability"
    ):
        c = j.confidence
        return _binary(c if j.score in scores else 1 - c), "the verdict's token probability"
    return None


def _binary(p: float) -> dict[float, float]:
    return {1.0: p, 0.0: 1 - p}


def _moments(dist: dict[float, float]) -> tuple[float, float]:
    """The mean and variance of a distribution over values."""
    mean = sum(v * p for v, p in dist.items())
    return mean, sum(p * (v - mean) ** 2 for v, p in dist.items())


def _votes(j: Judgment) -> tuple[list[int], str]:
    """The scored verdicts of a sampled judge's samples or a panel's members."""
    samples = (j.raw or {}).get("samples") if isinstance(j.raw, dict) else None
    if samples:
        return [s["score"] for s in samples if s.get("score") is not None], "share of samples"
    if j.members:
        return [m["score"] for m in j.members if m.get("score") is not None], "share of the panel"
    return [], ""


def pool_item(
    item: Item, judgment: Judgment, label: float | None, target: Target, scale: Scale, run: str
) -> PoolItem:
    """One item of a pool: its human ``label`` (the target's value; None when unlabelled) and
    what the judge said of it."""
    dist = judge_distribution(judgment, target, scale)
    mean, spread = _moments(dist[0]) if dist is not None else (None, None)
    return PoolItem(
        item=item,
        label=label,
        verdict=None if judgment.score is None else target.of(judgment.score),
        probability=mean,
        spread=spread,
        probability_source=None if dist is None else dist[1],
        unscored=None if judgment.score is not None else (judgment.unscored or "unscored"),
        run=run,
    )


def pool_of(
    runs: Sequence[tuple[str, EvaluateConfig, list[Item], dict[str, Judgment], bool]],
    target: Target,
    scale: Scale,
    choice: PredictionChoice | None,
) -> Pool:
    """The pool of the runs given, each ``(name, config, items, judgments, labelled_only)``, the
    items' references their labels: a run marked ``labelled_only`` (a ``--validation`` run)
    gives its labelled items alone. Each run's items are its own: two runs are two samples,
    never merged by id (two runs that both number their rows from 0 share ids, not items),
    and an item whose texts are in both counts in both (:func:`same_texts` counts them).
    ``choice``: the prediction asked for (None: the probability when any judgment carries
    one)."""
    items: list[PoolItem] = []
    data: dict[str, str] = {}
    for name, config, run_items, judged, labelled_only in runs:
        data[name] = str(data_file(config))
        for it in run_items:
            if labelled_only and it.expected is None:
                continue
            label = None if it.expected is None else target.of(it.expected)
            items.append(pool_item(it, judged[it.id], label, target, scale, name))
    return pool_from(items, target, choice, data)


def same_texts(pool: Pool, run: str) -> int:
    """How many of ``run``'s items in the pool have the texts (request, response, transcript)
    of an item of another run in it: the same item in two runs, counted in both. The same
    texts as certify's consumed items are the same (:func:`item_keys`): re-spaced, re-cased,
    with invisible characters added or look-alike letters swapped in, a copy is the item."""
    keys = [(it.run == run, item_keys(it.item)) for it in pool.items]
    others = {key for mine, item in keys if not mine for key in item}
    return sum(not others.isdisjoint(item) for mine, item in keys if mine)


def pool_from(
    items: list[PoolItem],
    target: Target,
    choice: PredictionChoice | None,
    data: dict[str, str] | None = None,
) -> Pool:
    """The pool of ``items``, each with the prediction the estimate uses: the judge's
    probability when ``choice`` asks for it or, given no choice, when any judgment carries one
    (its verdict where one does not); the stand-in for the unscored items. ``data``: each run's
    data file, for messages."""
    scored = [it for it in items if it.verdict is not None]
    if not scored:
        reasons = Counter(it.unscored for it in items)
        shown = ", ".join(f"{r} {n}" for r, n in reasons.most_common())
        raise DataError(
            f"all {len(items)} judgments are unscored ({shown}): nothing to estimate from"
        )
    sources = Counter(it.probability_source for it in scored if it.probability_source)
    if choice == "probability" and not sources:
        raise ConfigError(
            "--prediction probability: the judgments carry no probability (judge with "
            "score_mode: expected, a calibration map, or confidence: {source: samples | panel "
            "| probability})"
        )
    use_probability = bool(sources) and choice != "verdict"
    values = [
        (it.probability if use_probability and it.probability is not None else it.verdict)
        for it in items
    ]
    present = [v for v in values if v is not None]
    stand_in = sum(present) / len(present) if len(present) < len(values) else None
    if target.rate:
        prediction = "probability" if use_probability else "verdict"
    else:
        prediction = "expected score" if use_probability else "score"
    source = sources.most_common(1)[0][0] if use_probability else "its verdict"
    return Pool(
        target=target,
        items=items,
        prediction=prediction,
        prediction_source=source,
        f=[stand_in if v is None else v for v in values],  # type: ignore[misc]
        stand_in=stand_in,
        without_probability=sum(it.probability is None for it in scored) if use_probability else 0,
        data=data or {},
    )


def data_file(config: EvaluateConfig) -> Path | str:
    """Where a run's items came from, for a message."""
    return config.data.path or str(config.data.tracking_uri or "")
