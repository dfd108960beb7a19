"""``assay compare --paired A B``: is judge B better than judge A on the same items?

Two evaluate runs of different judge configs, read back item by item (:mod:`._runs`), are
compared only on the same items with the same references (the ``assay.items`` fingerprint) and
the same scale and threshold; anything else is refused in one line. The paired items are those
both judges scored and that have a reference; every other item is listed with the reason.
The statistics — McNemar's exact test, the paired bootstrap, Holm, the items needed — are
:func:`assay.metrics.paired_comparison`'s.
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import Any

from assay.decisions._certify import RUNS
from assay.decisions._finished import JudgeRun, distinct_runs, read_judge_run
from assay.decisions._paired_results import (
    LeftOutItem,
    PairedResult,
    PairedSide,
    SeriesResult,
    UnscoredShift,
)
from assay.decisions._tuning import refuse_tuned_items
from assay.errors import ConfigError, RunError
from assay.evaluation import metric_kind, verdict_names
from assay.inputs import samples_of
from assay.metrics import higher_is_better

PAIRED_FILE = "paired.json"


def paired(
    a: str | Path,
    b: str | Path,
    *,
    tracking_uri: str,
    level: float = 0.05,
    delta: float = 0.05,
    power: float = 0.8,
    metrics: list[str] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    out_dir: Path | None = None,
    log: bool = True,
    workdir: Path | None = None,
) -> PairedResult:
    """Judge B's run against judge A's on the same items: every metric's difference with its
    interval and test, Holm across ``metrics`` (default: every metric of the scale), a verdict
    at ``level`` and, where none, the items needed to detect ``delta`` with ``power``.
    ``out_dir``: where paired.json, report.md and report.html go; ``log``: a comparison run
    in MLflow."""
    from assay.metrics import paired_comparison

    with tempfile.TemporaryDirectory(prefix="assay-paired-") as tmp:
        ra = read_judge_run(a, tracking_uri=tracking_uri, scratch=Path(tmp))
        rb = read_judge_run(b, tracking_uri=tracking_uri, scratch=Path(tmp))
    distinct_runs([ra, rb], "compare --paired")
    check_same_items(ra, rb, "A", "B")
    if ra.config.threshold != rb.config.threshold:
        raise RunError(
            f"{b}: threshold {rb.config.threshold}, A's is {ra.config.threshold}: the failure "
            "metrics would not be the same metrics"
        )
    scale = ra.scale
    ids, left_out = paired_ids(ra, rb, need_reference=True)
    if not ids:
        raise RunError(f"{a} and {b}: no item was scored by both judges and has a reference")
    by_id = {it.id: it for it in ra.items}
    compared = [by_id[i] for i in ids]
    for run in (ra, rb):  # a tuned judge measured on the items it was tuned on wins by it
        # the ledger of this folder's runs, whatever the run names; and the one it was made
        # for (a tuning record only ever makes a measurement stricter)
        for runs in dict.fromkeys((RUNS, run.config.output_dir)):
            refuse_tuned_items(
                run.config.judge,
                compared,
                workdir=workdir or Path.cwd(),
                output_dir=runs,
                what="compare --paired",
            )
    ref = [scale.index(by_id[i].expected) for i in ids]
    va = [scale.index(ra.judgments[i].score) for i in ids]
    vb = [scale.index(rb.judgments[i].score) for i in ids]
    thr = ra.config.threshold
    try:  # the verdicts are valid indices by now: what is left to refuse is the options
        result = paired_comparison(
            ref,
            va,
            vb,
            kind=metric_kind(scale),
            k=scale.k,
            threshold=scale.index(thr) if thr is not None else None,
            level=level,
            delta=delta,
            power=power,
            metrics=metrics,
            higher_is_better=higher_is_better,
            n_resamples=n_resamples,
            seed=seed,
            labels=verdict_names(scale),
            clusters=samples_of(compared),
        )
    except ValueError as exc:
        raise ConfigError(f"compare --paired: {exc}") from None
    out = PairedResult(
        a=side(ra),
        b=side(rb),
        items=ra.fingerprint,
        scale=scale.describe(),
        n_items=len(ra.items),
        n_paired=len(ids),
        left_out=left_out,
        comparison=result,
        verdict=verdict(result, verdict_names(scale)),
    )
    return write_outputs(out, out_dir, log, tracking_uri, workdir)


def check_same_items(a: JudgeRun, b: JudgeRun, name_a: str, name_b: str) -> None:
    """Refuse two runs on different items, references or scales (one line naming why)."""
    if a.scale.describe() != b.scale.describe():
        raise RunError(
            f"{b.named}: scale {b.scale.describe()}, {name_a}'s is {a.scale.describe()}: "
            "verdicts on different scales are not paired"
        )
    if a.fingerprint == b.fingerprint:
        return
    ia, ib = {it.id: it for it in a.items}, {it.id: it for it in b.items}
    if set(ia) != set(ib):
        only = sorted(set(ia) ^ set(ib))
        raise RunError(
            f"{a.named} and {b.named}: different items ({len(ia)} and {len(ib)} items, "
            f"{len(only)} in one run only, e.g. {only[0]}; items fingerprint {a.fingerprint} vs "
            f"{b.fingerprint})"
        )
    refs = sorted(i for i in ia if ia[i].expected != ib[i].expected)
    if refs:
        raise RunError(
            f"{a.named} and {b.named}: different references on {len(refs)} items (e.g. {refs[0]}: "
            f"{ia[refs[0]].expected} vs {ib[refs[0]].expected})"
        )
    raise RunError(
        f"{a.named} and {b.named}: the same item ids with different texts (items fingerprint "
        f"{a.fingerprint} vs {b.fingerprint})"
    )


def paired_ids(a: JudgeRun, b: JudgeRun, *, need_reference: bool) -> tuple[list[str], list]:
    """The items both runs scored (and, with ``need_reference``, that have one), in A's order,
    and every other item with why it is left out."""
    ids, left = [], []
    for it in a.items:
        why = []
        for name, run in (("A", a), ("B", b)) if need_reference else (("old", a), ("new", b)):
            j = run.judgments[it.id]
            if j.score is None:
                why.append(f"unscored by {name} ({j.unscored})")
        if need_reference and it.expected is None:
            why.append("no reference")
        if why:
            left.append(LeftOutItem(item_id=it.id, why="; ".join(why)))
        else:
            ids.append(it.id)
    return ids, left


def unscored_shift(old: JudgeRun, new: JudgeRun, ids: list[str], level: float) -> UnscoredShift:
    """How many of ``ids`` NEW left unscored where OLD scored them and the other way round,
    with the exact one-sided sign test (binomial, ½) that NEW fails more often."""
    from math import comb

    lost = sum(old.judgments[i].score is not None and new.judgments[i].score is None for i in ids)
    gained = sum(old.judgments[i].score is None and new.judgments[i].score is not None for i in ids)
    n = lost + gained
    p = sum(comb(n, k) for k in range(lost, n + 1)) / 2**n if n else None
    moved = p is not None and p < level
    return UnscoredShift(lost=lost, gained=gained, p_value=p, level=level, moved=moved)


def side(run: JudgeRun) -> PairedSide:
    return PairedSide(
        named=run.named,
        mlflow_run_id=run.mlflow_run_id,
        run_name=run.config.name,
        judge=run.config.judge.name,
        model=run.config.judge.model_shown,
        config_hash=run.config_hash,
        items=len(run.items),
        unscored=sum(j.score is None for j in run.judgments.values()),
    )


def verdict(result: Any, labels: list[str] | None = None) -> str:
    """What the comparison found, in words: first which judge is better on the metrics a judge
    giving one verdict everywhere cannot win (κ, accuracy, balanced accuracy...), at ``level``
    after Holm; then each pair of one-sided rates (:data:`~assay.metrics.TRADE_OFFS`) as a
    pair — a win on one is said with what the winner has on the other —; then a judge that
    gave one verdict on every item (``labels``: the scale's, by index)."""
    from assay.metrics import TRADE_OFFS

    m = result.tests  # the metrics with a test, which Holm counted
    adj = f"at {result.level:g}, Holm-adjusted over {m} metric{'s' * (m != 1)}"
    lead = [d for d in result.differences if d.metric not in TRADE_OFFS]
    parts = []
    for who in ("A", "B"):
        names = [d.metric for d in lead if d.better == who]
        if names:
            parts.append(f"{who} better than {_other(who)} on {', '.join(names)}")
    tested = [d.metric for d in lead if not math.isnan(d.p_adjusted)]
    head = "; ".join(parts) or f"no difference detected on {', '.join(tested) or 'any metric'}"
    clauses = [f"{head} {adj}"]
    by_name = {d.metric: d for d in result.differences}
    seen: set[str] = set()
    for d in result.differences:
        if d.metric not in TRADE_OFFS or d.metric in seen:
            continue
        pair = [d, by_name.get(TRADE_OFFS[d.metric])]
        seen.update(x.metric for x in pair if x is not None)
        won = [x for x in pair if x is not None and x.better is not None]
        if won:
            clauses.append(_trade_off(won[0], pair[1] if won[0] is d else d))
    constant = {
        who: labels[i] if labels is not None else f"index {i}"
        for who, i in (("A", result.a_constant), ("B", result.b_constant))
        if i is not None
    }
    if len(constant) == 2:
        clauses.append(
            f"A and B each gave one verdict on every item (A {constant['A']}, B "
            f"{constant['B']}): each wins or loses each one-sided rate by construction"
        )
    elif constant:
        ((who, shown),) = constant.items()
        clauses.append(
            f"{who} gave one verdict ({shown}) on every item: it wins or loses each one-sided "
            "rate by construction"
        )
    return "; ".join(clauses)


def _other(who: str) -> str:
    return "A" if who == "B" else "B"


def _trade_off(won: Any, counterpart: Any) -> str:
    """``W has the lower X (w vs o)``, and what W has on X's counterpart rate."""

    def has(d: Any, who: str) -> str:
        word = "higher" if d.higher_is_better else "lower"
        mine, theirs = (d.a, d.b) if who == "A" else (d.b, d.a)
        return f"the {word} {d.metric} ({mine:.3f} vs {theirs:.3f})"

    w = won.better
    out = f"{w} has {has(won, w)}"
    if counterpart is None:
        return out
    if counterpart.better == w:
        return f"{out} and {has(counterpart, w)}"
    if counterpart.better is not None:
        return f"{out}, {_other(w)} {has(counterpart, _other(w))}: a trade-off"
    mine, theirs = (counterpart.a, counterpart.b) if w == "A" else (counterpart.b, counterpart.a)
    return f"{out}, with {counterpart.metric} {mine:.3f} vs {theirs:.3f} (no difference detected)"


def compared_experiment(sides: tuple[Any, ...], tracking_uri: str) -> str:
    """The MLflow experiment a comparison is logged to: the compared runs' own, when both were
    logged to one experiment of this store, else ``assay``."""
    import mlflow
    from mlflow.exceptions import MlflowException

    client = mlflow.MlflowClient(tracking_uri=tracking_uri)
    names = set()
    for side in sides:
        if side.mlflow_run_id is None:
            return "assay"
        try:
            experiment_id = client.get_run(side.mlflow_run_id).info.experiment_id
            names.add(client.get_experiment(experiment_id).name)
        except MlflowException:  # logged to another store
            return "assay"
    return names.pop() if len(names) == 1 else "assay"


def write_outputs(
    result: Any, out_dir: Path | None, log: bool, tracking_uri: str, workdir: Path | None
) -> Any:
    """paired.json / drift.json, report.md and report.html (and a series' chart) in
    ``out_dir``; with ``log``, the same as a comparison run in MLflow (its params, metrics and
    those files)."""
    from assay.decisions._paired_report import build_paired_report, tracked_run
    from assay.report import markdown, write_html

    kind = "paired" if isinstance(result, PairedResult) else "drift"
    with tempfile.TemporaryDirectory(prefix=f"assay-{kind}-") as tmp:
        folder = Path(out_dir) if out_dir is not None else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        if out_dir is not None:
            result = result.model_copy(update={"out_dir": str(folder)})
        (folder / f"{kind}.json").write_text(result.model_dump_json(indent=2) + "\n")
        if isinstance(result, SeriesResult):  # the chart report.html embeds
            from assay.decisions._shift_report import EWMA_PNG, ewma_plot

            ewma_plot(result.chart, folder / EWMA_PNG, ylabel=result.score)
        report = build_paired_report(folder)
        lines = [f"# {report.title}", "", *(f"- {k}: {v}" for k, v in report.facts), ""]
        (folder / "report.md").write_text("\n".join(lines + markdown(report.tables)))
        write_html(report, folder)
        if log:
            from assay.runs import log_tracked

            root = workdir or Path.cwd()
            if isinstance(result, SeriesResult):
                sides = tuple(p.run for p in result.points)
            else:
                sides = (result.a, result.b) if kind == "paired" else (result.old, result.new)
            run_id = log_tracked(
                tracked_run(result, folder),
                tracking_uri=tracking_uri,
                experiment=compared_experiment(sides, tracking_uri),
                artifact_root=root / "mlartifacts",
            )
            result = result.model_copy(update={"comparison_run_id": run_id})
            (folder / f"{kind}.json").write_text(result.model_dump_json(indent=2) + "\n")
    return result
