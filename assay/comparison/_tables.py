"""The leaderboard and the table of judge params that differ."""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from assay.comparison._results import Differences, LeaderboardRow
from assay.comparison._select import WORST_TEST, item_set, kind_of, measured_on
from assay.metrics import goodness
from assay.runs import CONFIDENCE_TAG

# Judge params shown first in the differences table, in this order; the rest follow by name.
_PARAM_ORDER = (
    "model",
    "program",
    "adapter",
    "temperature",
    "rubric",
    "instruction",
    "optimized",
    "optimizer",
)


def worst_test(metrics: dict[str, float]) -> tuple[float, str] | None:
    """The lowest pass rate or consistency over a harness judge's tests, and which it is.

    Consistency is each test's own "did the right thing relative to the judge's verdict on the
    unperturbed source": stay for the invariance tests, *move* for ``label_flip`` (and toward
    the target for the agent tests, away from it under ``polarity``'s inverted question). A
    judge whose verdict does not depend on the judged response — a constant judge, a
    label-blind one — never moves between a source and its probe, so its ``label_flip``
    consistency is exactly 0 and so is this minimum: it can at best tie a judge that never
    moves either. ``None`` when the run logged no per-test rate.
    """
    rates = [
        (v, k)
        for k, v in metrics.items()
        if k.count(".") == 1
        and k.split(".")[1] in ("pass_rate", "consistency")
        and v is not None
        and math.isfinite(v)
    ]
    return min(rates) if rates else None


def metric_value(metrics: dict[str, float], metric: str) -> float | None:
    """``metric`` of a run: as logged, or (``worst_test_rate``) computed from what it logged."""
    if metric == WORST_TEST:
        worst = worst_test(metrics)
        return None if worst is None else float(worst[0])
    return _num(metrics, metric)


def short_sha(text: str) -> str:
    """Eight hex digits of the SHA-256 of ``text``: names long params (rubrics) in tables."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def _shown(value: str | None) -> str:
    """A param value for a table: long or multi-line text as a short sha and its first words."""
    if value is None or value == "":
        return "—"
    if len(value) > 40 or "\n" in value:
        head = " ".join(value.split())[:24]
        return f"sha {short_sha(value)} “{head}…”"
    return value


def _judge_params(run) -> dict[str, str]:
    """``judge.*`` params without the prefix; ``program_state`` becomes ``optimized``."""
    p = {k.removeprefix("judge."): v for k, v in run.data.params.items() if k.startswith("judge.")}
    state = p.pop("program_state", "")
    p["optimized"] = f"yes (state {short_sha(state)})" if state else "no"
    p.pop("name", None)  # the display name, not part of the config
    return p


def labels_of(runs: list) -> dict[str, str]:
    names = [r.info.run_name or r.info.run_id[:8] for r in runs]
    dup = {n for n, c in Counter(names).items() if c > 1}
    return {
        r.info.run_id: f"{n} · {r.info.run_id[:6]}" if n in dup else n
        for r, n in zip(runs, names, strict=True)
    }


def _num(metrics: dict[str, float], key: str) -> float | None:
    v = metrics.get(key)
    return float(v) if v is not None and math.isfinite(v) else None


def pareto_front(points: list[tuple[float | None, float | None]]) -> list:
    """For each (cost, value): is it Pareto-optimal? No other point is at most as costly and at
    least as good (values oriented so that larger is better: :func:`goodness`), and strictly
    better in one of the two. ``None`` where a coordinate is missing.
    """
    out: list[bool | None] = []
    for i, (c, v) in enumerate(points):
        if c is None or v is None:
            out.append(None)
            continue
        dominated = any(
            j != i
            and c2 is not None
            and v2 is not None
            and c2 <= c
            and v2 >= v
            and (c2 < c or v2 > v)
            for j, (c2, v2) in enumerate(points)
        )
        out.append(not dominated)
    return out


PAIRED = (
    "kappa_categorical",
    "kappa_linear",
    "kappa_quadratic",
    "kappa_binary",
    "balanced_accuracy",
    "ccc",
    "pearson",
    "spearman",
    "mae",
)
"""The agreement metrics that are over every pair scored on both sides (``n_paired``): what
an evaluate run logged before it logged each metric's own ``<metric>_n``."""


def metric_n(run, metric: str, worst: tuple[float, str] | None = None) -> int | None:
    """What ``metric`` of ``run`` is over, as the run recorded it: its own ``<metric>_n`` (a
    rate's denominator — failure precision's the flagged failures —, a κ's pairs), else, for
    an agreement metric of a run logged before it recorded that, the pairs it scored on both
    sides (``n_paired``); None when the run recorded neither — never the items it was given,
    of which an unscored item is no part."""
    m = run.data.metrics
    own = _num(m, f"{worst[1] if worst else metric}_n")
    if own is None and metric in PAIRED and kind_of(run) == "agreement":
        own = _num(m, "n_paired")
    return None if own is None else int(own)


def ci_level(run) -> float | None:
    """The confidence level of a run's logged intervals (``assay.confidence``); None for a run
    logged before assay recorded it."""
    try:
        return float(run.data.tags[CONFIDENCE_TAG])
    except (KeyError, ValueError):
        return None


def leaderboard(runs: list, metric: str) -> list[LeaderboardRow]:
    """One row per judge run, best first (ties: cheaper first, then the earlier run)."""
    labels = labels_of(runs)
    rows = []
    for r in runs:
        m, t, p = r.data.metrics, r.data.tags, _judge_params(r)
        worst = worst_test(m) if metric == WORST_TEST else None
        n_items, n_paired = _num(m, "n_items"), _num(m, "n_paired")
        if n_items is None and str(t.get("assay.n_items", "")).isdigit():
            n_items = float(t["assay.n_items"])
        rows.append(
            {
                "run_id": r.info.run_id,
                "name": labels[r.info.run_id],
                "judge": t.get("assay.judge", ""),
                "command": t.get("assay.command", ""),
                "experiment_id": r.info.experiment_id,
                "metric": metric,
                "value": metric_value(m, metric),
                "worst_of": worst[1] if worst else None,
                "n": metric_n(r, metric, worst),
                "n_items": None if n_items is None else int(n_items),
                "n_paired": None if n_paired is None else int(n_paired),
                "measured_on": measured_on(r),
                "items": item_set(r),
                "ci_low": _num(m, f"{metric}_ci_low"),
                "ci_high": _num(m, f"{metric}_ci_high"),
                "ci_level": ci_level(r),
                "accuracy": _num(m, "accuracy"),
                "cost_usd": _work(m, "cost_usd"),
                "tokens": _tokens(m),
                "calls": _work(m, "calls"),
                "unpriced_calls": _work(m, "unpriced_calls"),
                "untallied_calls": _work(m, "untallied_calls"),
                "cost_per_accuracy_point_usd": _num(m, "cost_per_accuracy_point_usd"),
                "model": p.get("model", ""),
                "program": p.get("program", ""),
                "adapter": p.get("adapter", ""),
                "temperature": p.get("temperature", ""),
                "rubric": short_sha(p["rubric"]) if p.get("rubric") else "",
                "optimized": p["optimized"] != "no",
                "config_hash": p.get("config_hash", "")[:10],
                "data": t.get("assay.data", ""),
                "scale": t.get("assay.scale", ""),
                "probes": t.get("assay.probes", ""),
                "start_time": datetime.fromtimestamp(r.info.start_time / 1000, UTC).isoformat(),
            }
        )
    paid_in = paid_axis(rows)
    for row in rows:
        row["paid_in"] = paid_in
        row["paid"] = row["cost_usd"] if paid_in == "usd" else row[paid_in]
        for key in ("tokens", "calls", "unpriced_calls", "untallied_calls"):
            del row[key]
    inf = math.inf

    def order(row):
        v = row["value"]
        by_value = inf if v is None else -goodness(metric, v)
        paid = inf if row["paid"] is None else row["paid"]
        return (by_value, paid, row["start_time"])

    rows.sort(key=order)
    front = pareto_front(
        [(x["paid"], None if x["value"] is None else goodness(metric, x["value"])) for x in rows]
    )
    for i, (row, best) in enumerate(zip(rows, front, strict=True), start=1):
        row["rank"] = i
        row["pareto"] = best
    return [LeaderboardRow(**row) for row in rows]


PAID_LABELS = {
    "usd": "judge cost of the work (USD; cached answers priced as first served)",
    "tokens": "judge cost of the work in tokens (prompt + completion; no USD price)",
    "calls": "judge cost of the work in LM answers (no USD price or token count)",
}
"""The x-axis label of the Pareto plot for each way of counting a judge's cost of the work."""


def paid_axis(rows: list[dict[str, Any]]) -> str:
    """How the leaderboard counts each judge's cost of the work (its Pareto front's cost
    coordinate; answers its run took from the LM cache count as if paid, so a warm cache makes
    no judge look cheaper): ``usd`` when some run cost USD and every run's answers had a
    price; otherwise ``tokens``
    (local or unpriced models cost 0 USD, which would tie every judge at cost 0), or ``calls``
    where no tokens were counted — or where some answers' tokens were never reported (a server
    that sends no usage): their USD and tokens are unknown, and would make that judge look
    cheap."""
    untallied = any(r.get("untallied_calls") for r in rows)
    if any(r["cost_usd"] for r in rows) and not any(r["unpriced_calls"] for r in rows):
        if not untallied:
            return "usd"
    if any(r["tokens"] for r in rows) and not untallied:
        return "tokens"
    return "calls"


def paid_note(rows: list[LeaderboardRow]) -> list[str]:
    """What the report says when the Pareto front is not drawn in USD."""
    if not rows or rows[0].paid_in == "usd":
        return []
    return [
        f"the Pareto front counts each judge's cost of the work in {rows[0].paid_in}, not "
        "USD: some runs' models had no price (local or unpriced), which would tie every judge "
        "at cost 0"
        + (
            ", or some answers came without token counts (their tokens and cost unknown)"
            if rows[0].paid_in == "calls"
            else ""
        )
    ]


def _work(m: dict[str, float], key: str) -> float | None:
    """A run's cost of the work (``work_<key>``: every answer its judgments used, those from
    the LM cache priced as first served — a run on a warm cache is not cheaper); for a run
    logged without it, its usage (``usage_<key>``)."""
    return _num(m, f"work_{key}") if f"work_{key}" in m else _num(m, f"usage_{key}")


def _tokens(m: dict[str, float]) -> float | None:
    prompt, completion = _work(m, "prompt_tokens"), _work(m, "completion_tokens")
    if prompt is None and completion is None:
        return None
    return (prompt or 0.0) + (completion or 0.0)


def differences(runs: list, order: list[str]) -> Differences:
    """The judge params whose values differ between ``runs``, one column per run (in ``order``)."""
    by_id = {r.info.run_id: r for r in runs}
    params = {rid: _judge_params(by_id[rid]) for rid in order}
    keys = sorted(
        {k for p in params.values() for k in p} - {"config_hash"},
        key=lambda k: (_PARAM_ORDER.index(k) if k in _PARAM_ORDER else len(_PARAM_ORDER), k),
    )
    labels = labels_of([by_id[rid] for rid in order])
    rows = {}
    for k in keys:
        values = [params[rid].get(k) or None for rid in order]  # unset is logged as ""
        if len(set(values)) > 1:
            rows[k] = [_shown(v) for v in values]
    return Differences(runs=order, columns=[labels[rid] for rid in order], rows=rows)


def level_text(level: float | None) -> str:
    """A confidence level as the tables show it: ``95%``; ``level not recorded`` for a run
    logged before assay recorded it."""
    return "level not recorded" if level is None else f"{level * 100:g}%"


def shared_level(rows: list[LeaderboardRow]) -> float | None:
    """The confidence level of every row's interval, when they share one (None when they do
    not, or one's is not recorded): only then are the intervals shown under one heading."""
    levels = {r.ci_level for r in rows if r.ci_low is not None}
    return next(iter(levels)) if len(levels) == 1 else None


def level_note(rows: list[LeaderboardRow], metric: str) -> list[str]:
    """What the report says when the rows' intervals are at different confidence levels
    (a 50% interval is narrower than the same run's 95% one): each row shows its level, and
    their widths do not compare."""
    shown = [r for r in rows if r.ci_low is not None]
    levels: dict[str, list[str]] = {}
    for r in shown:
        levels.setdefault(level_text(r.ci_level), []).append(r.name)
    if len(levels) < 2:
        return []
    each = "; ".join(f"{lvl}: {', '.join(names)}" for lvl, names in levels.items())
    return [
        f"the {metric} intervals are at different confidence levels ({each}): each row shows "
        "its own, and their widths do not compare — run the judges at one bootstrap.confidence "
        "to compare them"
    ]


def same_items(rows: list[LeaderboardRow]) -> bool:
    """Whether every row's figure is over the same items: each run scored every item it was
    given (``n_paired`` = ``n_items``, where it recorded them) and every figure's n is
    recorded and the same."""
    ns = {r.n for r in rows}
    dropped = any(
        r.n_paired is not None and r.n_items is not None and r.n_paired < r.n_items for r in rows
    )
    return len(ns) == 1 and None not in ns and not dropped


def n_note(rows: list[LeaderboardRow], metric: str) -> list[str]:
    """What the report says when the rows' figures are not over the same items: the runs
    whose figures leave out items they were given (unscored, or without a reference), each
    with how many it scored — a judge that could not parse half the items is ranked on the
    other half — and those that recorded no n for the metric."""
    if same_items(rows):
        return []
    why = []
    for r in rows:
        if r.n_paired is not None and r.n_items is not None and r.n_paired < r.n_items:
            why.append(
                f"{r.name} scored {r.n_paired} of its {r.n_items} items on both sides (judged, "
                f"with a reference): its figures leave the other {r.n_items - r.n_paired} out"
            )
    unknown = [r.name for r in rows if r.n is None]
    if unknown:
        why.append(f"{', '.join(unknown)} recorded no n for {metric}")
    return [
        f"{metric} is not over the same items in every run (n is each run's own)"
        + (f": {'; '.join(why)}" if why else "")
    ]
