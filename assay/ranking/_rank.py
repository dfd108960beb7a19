"""``assay rank SOURCE...``: systems ranked from pairwise verdicts — Bradley–Terry strengths with
intervals, each judge's first-position effect in the model, the majority's cyclic triads, and
each judge's agreement with the others' ranking (:func:`assay.metrics.bradley_terry`).

No LM is called: the votes are read back (:mod:`._comparisons`) and the ranking is a run of its
own (``comparisons.jsonl``, ``metrics.json``, report.md / report.html, MLflow), named by a hash
of its votes and options, so the same sources and options find the finished run again.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from assay.errors import DataError, RunError
from assay.inputs import RunConfig, key_groups
from assay.metrics import CyclicTriads, JudgeAgreement, OrderEffect, Strength, Undefinable
from assay.ranking._comparisons import RankSource, Vote, read_source
from assay.runs import Run, TrackedRun
from assay.types import stable_hash

COMPARISONS = "comparisons.jsonl"


class RankConfig(RunConfig):
    """A ranking: where its votes come from and how the model is fitted."""

    sources: list[str] = Field(description="pairwise evaluate runs or tables of pairs")
    systems: tuple[str, str] | None = Field(
        None, description="the item columns naming responses A's and B's systems (runs)"
    )
    order_effect: bool = Field(True, description="each judge's first-position effect fitted")
    prior: float = Field(0.0, ge=0, description="the penalty alpha · Σ s² (0: maximum likelihood)")
    confidence: float = Field(0.95, gt=0, lt=1, description="the intervals' level")


class RankSummary(BaseModel):
    """What ``metrics.json`` holds: the sources and their votes, the fit's strengths, order
    effects, judges and cyclic triads, and what the model assumed."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    name: str
    sources: list[RankSource]
    n_votes: int
    n_systems: int
    n_components: int
    order_effect: bool
    prior: Undefinable
    confidence: Undefinable
    interval: str
    ties: str
    log_likelihood: Undefinable
    iterations: int
    strengths: list[Strength]
    order_effects: list[OrderEffect]
    judges: list[JudgeAgreement]
    triads: CyclicTriads
    comparisons_file: str = COMPARISONS
    run_dir: str
    mlflow_run_id: str | None = None  # set on return (metrics.json is written before logging)


def rank(
    sources: list[str],
    *,
    workdir: Path,
    tracking_uri: str,
    name: str = "rank",
    systems: tuple[str, str] | None = None,
    order_effect: bool = True,
    prior: float = 0.0,
    confidence: float = 0.95,
    output_dir: str = "runs",
    log: bool = True,
) -> RankSummary:
    """Rank the systems the votes of ``sources`` compare (see the module); ``tracking_uri``:
    where MLflow run ids among the sources are read, and the ranking is logged (``log``)."""
    from assay.metrics import bradley_terry

    votes: list[Vote] = []
    read: list[RankSource] = []
    with tempfile.TemporaryDirectory(prefix="assay-rank-") as tmp:
        for named in sources:
            got, summary = read_source(
                named, tracking_uri=tracking_uri, scratch=Path(tmp), systems=systems
            )
            twice = next((r for r in read if summary.digest and r.digest == summary.digest), None)
            if twice is not None:
                raise RunError(
                    f"{twice.named} and {named} are one source (the same "
                    f"{'sealed files' if summary.kind == 'run' else 'bytes'}): counted twice, "
                    "its votes would weigh double; give each source once"
                )
            votes += got
            read.append(summary)
    try:
        fit = bradley_terry(
            [v.a for v in votes],
            [v.b for v in votes],
            [v.winner for v in votes],
            first=[v.first for v in votes],
            judges=[v.judge for v in votes],
            order_effect=order_effect,
            alpha=prior,
            confidence=confidence,
            clusters=_vote_clusters(votes, read),
        )
    except ValueError as exc:  # the votes cannot be fitted as asked: say which option helps
        why = str(exc).replace("alpha > 0", "--prior > 0")
        why = why.replace("fit without an order effect", "rank with --no-order-effect")
        raise DataError(f"{', '.join(sources)}: {why}") from None
    config = RankConfig(
        name=name,
        output_dir=output_dir,
        tracking={"enabled": log},
        sources=list(sources),
        systems=systems,
        order_effect=order_effect,
        prior=prior,
        confidence=confidence,
    )
    records = [v.record() for v in votes]
    run_hash = stable_hash(
        {
            "votes": records,
            "order_effect": order_effect,
            "prior": prior,
            "confidence": confidence,
            "intervals": CLUSTERED_BY_ITEM,  # a ranking made before took the votes apart
        }
    )
    with Run.open(
        config, run_hash, command="rank", workdir=workdir, tracking_uri=tracking_uri
    ) as run:
        if run.finished:  # the same votes, the same options: nothing new to write
            summary = RankSummary.model_validate(run.store.read_json("metrics.json"))
            # logged now if an earlier call left it out (--no-log) and this one logs
            run.log_finished(lambda: _tracked(config, summary, run.run_hash))
        else:
            summary = RankSummary(
                name=name,
                sources=read,
                n_votes=fit.n_comparisons,
                n_systems=fit.n_systems,
                n_components=fit.n_components,
                order_effect=order_effect,
                prior=prior,
                confidence=confidence,
                interval=fit.interval,
                ties=fit.ties,
                log_likelihood=fit.log_likelihood,
                iterations=fit.iterations,
                strengths=list(fit.strengths),
                order_effects=list(fit.order_effects),
                judges=list(fit.judges),
                triads=fit.triads,
                run_dir=str(run.dir),
            )
            run.store.write_text(COMPARISONS, "".join(json.dumps(r) + "\n" for r in records))
            run.store.write_json("metrics.json", summary.model_dump(mode="json"))
            from assay.ranking._report import build_rank_report
            from assay.report import report_markdown, write_html

            report = build_rank_report(run.dir)
            run.store.write_text("report.md", report_markdown(report))
            write_html(report, run.dir)
            run.finish(_tracked(config, summary, run.run_hash))
        summary.mlflow_run_id = run.mlflow_run_id
        return summary


CLUSTERED_BY_ITEM = "cluster-robust by item: its text, in one run or several"
"""How the strengths' intervals take votes that share an item (a panel's members, several runs
of one data set): together, as one cluster. In a ranking's hash: one made before took two runs'
items under one id for one item, and one item under two ids for two."""


def _vote_clusters(votes: list[Vote], sources: list[RankSource]) -> list[str]:
    """Each vote's cluster, the votes its interval takes together: a run's votes on one item —
    the same text the judge read, or one Inspect sample (its votes' ``item_keys``), in one run
    or several, under one id or two —; a table's row, which names no item, is a vote of its
    own. Two runs' different items under one id are two clusters. The clusters keep the names
    a ranking of one run gave them (``item <id>``, a table's ``<file> row <k>``), on which the
    order the intervals sum them in rests: a second item under an id already named is named
    with its run too."""
    kinds = {s.named: s.kind for s in sources}
    groups = key_groups([_unit_keys(v, kinds.get(v.source)) for v in votes])
    names: dict[int, str] = {}
    taken: set[str] = set()
    for vote, group in zip(votes, groups, strict=True):
        if group not in names:
            names[group] = _cluster_name(vote, kinds.get(vote.source), taken)
            taken.add(names[group])
    return [names[g] for g in groups]


def _unit_keys(vote: Vote, kind: str | None) -> list[str]:
    """What makes a vote's item one with another's: its run and item id, and its item's text
    keys; a table's row, its file and row alone."""
    if kind == "run":
        return [f"run {vote.source} item {vote.where}", *vote.item_keys]
    return [f"table {vote.source} {vote.where}"]


def _cluster_name(vote: Vote, kind: str | None, taken: set[str]) -> str:
    """The name of the cluster whose first vote is ``vote``: ``item <id>`` (a table's row:
    ``<file> row <k>``), with its run where another cluster has that name — a different item
    under the same id in another run — (and a number where even that is taken)."""
    name = f"item {vote.where}" if kind == "run" else f"{vote.source} {vote.where}"
    if name in taken:
        name = f"{name} of {vote.source}"
    unique, k = name, 2
    while unique in taken:
        unique, k = f"{name} ({k})", k + 1
    return unique


def _tracked(config: RankConfig, s: RankSummary, run_hash: str) -> TrackedRun:
    """The MLflow run: the options as params; each system's strength and interval, each judge's
    order effect and agreement, the triads as metrics — keyed by the system's or judge's name,
    which the logger makes a valid key that no other name shares (``m+1`` →
    ``strength.m_1_<hash>``, listed with its name in the run's ``mlflow_keys.json``)."""
    metrics: dict[str, float] = {
        "n_votes": float(s.n_votes),
        "n_systems": float(s.n_systems),
        "n_components": float(s.n_components),
        "cyclic_triads": float(s.triads.cyclic),
        "triads": float(s.triads.triads),
        "log_likelihood": s.log_likelihood,
    }
    for row in s.strengths:
        key = row.system
        metrics |= {
            f"strength.{key}": row.strength,
            f"strength.{key}.ci_low": row.ci_low,
            f"strength.{key}.ci_high": row.ci_high,
            f"rank.{key}": float(row.rank),
        }
    for e in s.order_effects:
        key = e.judge
        metrics |= {
            f"order_effect.{key}": e.gamma,
            f"order_effect.{key}.ci_low": e.ci_low,
            f"order_effect.{key}.ci_high": e.ci_high,
        }
    for j in s.judges:
        if j.agreement is not None:
            metrics[f"agreement.{j.judge}"] = j.agreement
    return TrackedRun(
        name=config.name,
        params={
            "sources": ", ".join(config.sources)[:500],
            "order_effect": str(s.order_effect),
            "prior": str(s.prior),
            "confidence": str(s.confidence),
            "interval": s.interval,
            "ties": s.ties,
            "run_hash": run_hash,
        },
        metrics=metrics,
        tags={"assay.judges": ", ".join(j.judge for j in s.judges)[:500]},
    )
