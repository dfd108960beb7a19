"""``assay compare``: judge configs side by side, read back from MLflow.

Runs are selected by id or experiment name, reduced to judge runs (an evaluate run, or the
per-judge child of a harness run), and grouped by what they were measured on: the data set
fingerprint, the scale and, for harness runs, the probe set. One group is compared — a
leaderboard with CIs and cost, the judge params that differ, a Pareto plot of cost against the
metric and, for harness runs, a tests × judges heatmap. Every other run is listed with the
reason it was left out; ``force`` compares them all anyway.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
import tempfile
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from assay.errors import ConfigError, RunError
from assay.web import write_html_report

JUDGE_COMMANDS = ("evaluate", "harness")
DEFAULT_EXPERIMENT = "assay"
# Metrics where a lower value is the better judge (sorting and the Pareto front follow this).
_LOWER_IS_BETTER = ("mae", "error_rate", "false_positive_rate", "false_negative_rate", "flip_rate")
# Judge params shown first in the differences table, in this order; the rest follow by name.
_PARAM_ORDER = ("model", "program", "adapter", "temperature", "rubric", "instruction", "optimized")
_GROUP_FIELDS = ("command", "data set", "scale", "probe set")


def compare(
    selectors: list[str],
    *,
    tracking_uri: str,
    metric: str | None = None,
    force: bool = False,
    experiment: str | None = None,
    tags: dict[str, str] | None = None,
    out_dir: Path | None = None,
    log: bool = True,
) -> dict[str, Any]:
    """Compare the judge runs named by ``selectors`` (run ids or experiment names; none: every
    run of ``experiment``, default ``"assay"``).

    ``experiment`` given together with selectors, and ``tags``, filter: runs outside them are
    left out with a reason. Plots are written to ``out_dir`` (none written when it is ``None``
    and ``log`` is off); with ``log`` a comparison run is logged next to the first compared run.
    Returns the leaderboard, the differences table, the runs left out and where things went.
    """
    client = open_store(tracking_uri)
    candidates, left_out, first = _select(client, tracking_uri, selectors, experiment, tags or {})
    compared, key = _comparable(candidates, left_out, first, force)
    if not compared:
        why = "; ".join(f"{x['run_id']} ({x['name']}): {x['reason']}" for x in left_out)
        raise RunError(f"nothing to compare in {tracking_uri}: {why or 'no judge run found'}")
    metric = metric or _default_metric(compared)
    if not any(metric in r.data.metrics for r in compared):
        known = sorted({m for r in compared for m in r.data.metrics if "_ci_" not in m})
        raise RunError(
            f"metric '{metric}' is logged by none of the compared runs; they have: {', '.join(known)}"
        )
    rows = leaderboard(compared, metric)
    result: dict[str, Any] = {
        "tracking_uri": tracking_uri,
        "metric": metric,
        "forced": force,
        "group": dict(zip(("command", "data", "scale", "probes"), key, strict=True))
        if key
        else None,
        "leaderboard": rows,
        "differences": differences(compared, [r["run_id"] for r in rows]),
        "left_out": left_out,
        "plots": {},
        "comparison_run_id": None,
    }
    if out_dir is None and not log:
        return result
    with tempfile.TemporaryDirectory(prefix="assay-compare-") as tmp:
        folder = Path(out_dir) if out_dir is not None else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        files = _write_plots(compared, rows, metric, folder)
        if out_dir is not None:
            result["plots"] = {k: str(p) for k, p in files.items()}
        run_id = None
        if log:
            run_id = _start_comparison_run(client, compared, rows, metric, key, force)
            result["comparison_run_id"] = run_id
        (folder / "comparison.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
        files["report"] = write_html_report(folder)
        if run_id is not None:
            _finish_comparison_run(client, run_id, [*files.values(), folder / "comparison.json"])
    return result


# --- the store ------------------------------------------------------------------------------


def open_store(tracking_uri: str):
    """An MLflow client on an existing store; a store that cannot be opened is a ConfigError.

    Comparing only reads, so a missing SQLite file is refused rather than created (MLflow
    would create it, parent folders included, and initialise an empty store).
    """
    from mlflow import MlflowClient

    if tracking_uri.startswith("sqlite:"):
        _check_sqlite(tracking_uri)
    elif tracking_uri.startswith(("file:", "/", ".", "~")):
        path = Path(tracking_uri.removeprefix("file://").removeprefix("file:")).expanduser()
        if not path.is_dir():
            raise ConfigError(f"{tracking_uri}: no MLflow store there (not a folder)")
    client = MlflowClient(tracking_uri=tracking_uri)
    try:
        client.search_experiments(max_results=1)
    except Exception as exc:  # a server that is down, a store MLflow cannot read: any backend
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ConfigError(f"{tracking_uri}: cannot open the MLflow store ({first})") from None
    return client


def _check_sqlite(uri: str) -> None:
    raw = uri.split("?", 1)[0].removeprefix("sqlite://")
    if raw in ("", "/", "/:memory:"):
        raise ConfigError(f"{uri}: an in-memory store has no runs to compare")
    path = Path(raw[1:] if raw.startswith("/") else raw)
    if not path.is_file():
        raise ConfigError(f"{uri}: no MLflow store there ({path} does not exist)")
    try:
        with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True) as db:
            found = db.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name='runs'"
            ).fetchone()
    except sqlite3.Error as exc:
        raise ConfigError(f"{uri}: cannot open the MLflow store ({exc})") from None
    if found is None:
        raise ConfigError(f"{uri}: {path} is an SQLite file but not an MLflow store")


def _search(client, experiment_ids: list[str], filter_string: str = "") -> list:
    out, token = [], None
    while True:
        page = client.search_runs(experiment_ids, filter_string, max_results=1000, page_token=token)
        out.extend(page)
        token = page.token
        if not token:
            return out


# --- selection and grouping -----------------------------------------------------------------


def _left(run, reason: str) -> dict[str, str]:
    return {"run_id": run.info.run_id, "name": run.info.run_name or "", "reason": reason}


def _select(client, uri: str, selectors: list[str], experiment: str | None, tags: dict):
    """Judge runs to consider, runs left out on the way, and the judge run whose group is
    compared when the first selector is a run id (else ``None``: the largest group is)."""
    from mlflow.exceptions import MlflowException

    picked: list[tuple[Any, bool]] = []  # (run, named by its id)
    for sel in selectors:
        try:
            picked.append((client.get_run(sel), True))
            continue
        except MlflowException:
            pass
        exp = client.get_experiment_by_name(sel)
        if exp is None:
            raise RunError(f"{sel}: no such run id or experiment name in {uri}")
        picked += [(r, False) for r in _search(client, [exp.experiment_id])]
    only_exp = None
    if not selectors:
        name = experiment or DEFAULT_EXPERIMENT
        only_exp = client.get_experiment_by_name(name)
        if only_exp is None:
            raise RunError(
                f"no experiment '{name}' in {uri}: name the runs or experiments to compare"
            )
        picked = [(r, False) for r in _search(client, [only_exp.experiment_id])]
    elif experiment:
        only_exp = client.get_experiment_by_name(experiment)
        if only_exp is None:
            raise RunError(f"no experiment '{experiment}' in {uri}")

    candidates, left_out, seen, first = [], [], set(), None
    for i, (run, named) in enumerate(picked):
        for r in _judge_runs(client, run, named, left_out):
            if r.info.run_id in seen:
                continue
            seen.add(r.info.run_id)
            reason = _filtered_out(r, only_exp, tags)
            if reason:
                left_out.append(_left(r, reason))
                continue
            candidates.append(r)
            if i == 0 and named and first is None:
                first = r
    return candidates, left_out, first


def _judge_runs(client, run, explicit: bool, left_out: list) -> list:
    """A run as judge runs: itself, a harness parent's per-judge children, or nothing."""
    t = run.data.tags
    command = t.get("assay.command")
    if run.info.lifecycle_stage == "deleted":
        left_out.append(_left(run, "run deleted"))
        return []
    if command not in JUDGE_COMMANDS:
        # Inside an experiment, assay's own comparison runs are not judges and not noise.
        if command == "compare" and not explicit:
            return []
        left_out.append(
            _left(run, "a comparison run, not a judge run" if command else "not an assay run")
        )
        return []
    if command == "harness" and t.get("assay.role") == "parent":
        if not explicit:
            return []  # its children are in the same experiment
        children = _search(
            client, [run.info.experiment_id], f"tags.mlflow.parentRunId = '{run.info.run_id}'"
        )
        if not children:
            left_out.append(_left(run, "harness run without per-judge runs"))
        return children
    return [run]


def _filtered_out(run, experiment, tags: dict[str, str]) -> str | None:
    if experiment is not None and run.info.experiment_id != experiment.experiment_id:
        return f"not in experiment '{experiment.name}'"
    for k, want in tags.items():
        have = run.data.tags.get(k)
        if have != want:
            return f"tag {k} is {have!r}, not {want!r}"
    return None


def _group_key(run) -> tuple[str, str, str, str]:
    t = run.data.tags
    return (
        t.get("assay.command", ""),
        t.get("assay.data", ""),
        t.get("assay.scale", ""),
        t.get("assay.probes", ""),
    )


def _comparable(candidates: list, left_out: list, first, force: bool):
    """The compared runs and their group key (``None`` when forced across groups)."""
    if not candidates:
        return [], None
    groups: dict[tuple, list] = {}
    for r in candidates:
        groups.setdefault(_group_key(r), []).append(r)
    if force:
        return candidates, next(iter(groups)) if len(groups) == 1 else None
    if first is not None:
        key = _group_key(first)
    else:  # the largest group; on a tie, the one with the most recent run
        key = max(groups, key=lambda k: (len(groups[k]), max(r.info.start_time for r in groups[k])))
    for k, runs in groups.items():
        if k == key:
            continue
        name, a, b = next(
            (n, a, b) for n, a, b in zip(_GROUP_FIELDS, k, key, strict=True) if a != b
        )
        for r in runs:
            left_out.append(_left(r, f"{name} differs: {a or '—'} vs {b or '—'}"))
    return groups[key], key


def _default_metric(runs: list) -> str:
    """kappa_categorical (else accuracy) for evaluate runs, mean_pass_rate for harness runs;
    forced across both, whichever kind has more runs."""
    evaluate = [r for r in runs if r.data.tags.get("assay.command") == "evaluate"]
    if len(evaluate) * 2 < len(runs):
        return "mean_pass_rate"
    if all("kappa_categorical" in r.data.metrics for r in evaluate):
        return "kappa_categorical"
    return "accuracy"


def higher_is_better(metric: str) -> bool:
    """Whether a larger value of ``metric`` means a better judge (errors and costs: no)."""
    base = metric.rsplit(".", 1)[-1]
    return not (
        base in _LOWER_IS_BETTER or base.startswith(("usage_", "cost")) or base == "unscored"
    )


# --- tables ---------------------------------------------------------------------------------


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


def _labels(runs: list) -> dict[str, str]:
    names = [r.info.run_name or r.info.run_id[:8] for r in runs]
    dup = {n for n, c in Counter(names).items() if c > 1}
    return {
        r.info.run_id: f"{n} · {r.info.run_id[:6]}" if n in dup else n
        for r, n in zip(runs, names, strict=True)
    }


def _num(metrics: dict[str, float], key: str) -> float | None:
    v = metrics.get(key)
    return float(v) if v is not None and math.isfinite(v) else None


def pareto_front(points: list[tuple[float | None, float | None]], higher: bool = True) -> list:
    """For each (cost, value): is it Pareto-optimal? No other point is at most as costly and at
    least as good, and strictly better in one of the two. ``None`` where a coordinate is missing.
    """
    sign = 1 if higher else -1
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
            and sign * v2 >= sign * v
            and (c2 < c or sign * v2 > sign * v)
            for j, (c2, v2) in enumerate(points)
        )
        out.append(not dominated)
    return out


def leaderboard(runs: list, metric: str) -> list[dict[str, Any]]:
    """One row per judge run, best first (ties: cheaper first, then the earlier run)."""
    higher = higher_is_better(metric)
    labels = _labels(runs)
    rows = []
    for r in runs:
        m, t, p = r.data.metrics, r.data.tags, _judge_params(r)
        rows.append(
            {
                "run_id": r.info.run_id,
                "name": labels[r.info.run_id],
                "judge": t.get("assay.judge", ""),
                "command": t.get("assay.command", ""),
                "experiment_id": r.info.experiment_id,
                "metric": metric,
                "value": _num(m, metric),
                "ci_low": _num(m, f"{metric}_ci_low"),
                "ci_high": _num(m, f"{metric}_ci_high"),
                "accuracy": _num(m, "accuracy"),
                "cost_usd": _num(m, "usage_cost_usd"),
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
    inf = math.inf

    def order(row):
        v = row["value"]
        by_value = inf if v is None else (-v if higher else v)
        cost = inf if row["cost_usd"] is None else row["cost_usd"]
        return (by_value, cost, row["start_time"])

    rows.sort(key=order)
    front = pareto_front([(x["cost_usd"], x["value"]) for x in rows], higher)
    for i, (row, best) in enumerate(zip(rows, front, strict=True), start=1):
        row["rank"] = i
        row["pareto"] = best
    return rows


def differences(runs: list, order: list[str]) -> dict[str, Any]:
    """The judge params whose values differ between ``runs``, one column per run (in ``order``)."""
    by_id = {r.info.run_id: r for r in runs}
    params = {rid: _judge_params(by_id[rid]) for rid in order}
    keys = sorted(
        {k for p in params.values() for k in p} - {"config_hash"},
        key=lambda k: (_PARAM_ORDER.index(k) if k in _PARAM_ORDER else len(_PARAM_ORDER), k),
    )
    labels = _labels([by_id[rid] for rid in order])
    rows = {}
    for k in keys:
        values = [params[rid].get(k) or None for rid in order]  # unset is logged as ""
        if len(set(values)) > 1:
            rows[k] = [_shown(v) for v in values]
    return {"runs": order, "columns": [labels[rid] for rid in order], "rows": rows}


# --- plots and the comparison run -----------------------------------------------------------


def pareto_plot(
    points: list[tuple[str, float, float, bool]], path: Path, *, ylabel: str, title: str
) -> Path:
    """Cost against a metric, one labelled point per judge; the Pareto-optimal ones filled and
    joined by the front."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.2))
    for label, cost, value, best in points:
        ax.scatter(
            cost,
            value,
            s=60 if best else 40,
            facecolors="tab:green" if best else "none",
            edgecolors="tab:green" if best else "tab:gray",
            zorder=3,
        )
        ax.annotate(label, (cost, value), fontsize=8, xytext=(4, 4), textcoords="offset points")
    front = sorted((c, v) for _, c, v, best in points if best)
    if len(front) > 1:
        ax.step(*zip(*front, strict=True), where="post", color="tab:green", alpha=0.5)
    ax.set_xlabel("judge cost (USD)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _write_plots(runs: list, rows: list[dict], metric: str, folder: Path) -> dict[str, Path]:
    from assay.experiments.reliability._report import heatmap

    files: dict[str, Path] = {}
    for stale in ("pareto.png", "heatmap.png"):  # a previous comparison's plots in this folder
        (folder / stale).unlink(missing_ok=True)
    points = [
        (r["name"], r["cost_usd"], r["value"], bool(r["pareto"]))
        for r in rows
        if r["pareto"] is not None
    ]
    if points:
        direction = "higher is better" if higher_is_better(metric) else "lower is better"
        files["pareto"] = pareto_plot(
            points,
            folder / "pareto.png",
            ylabel=f"{metric} ({direction})",
            title="Cost vs metric (filled: Pareto-optimal)",
        )
    rank = {r["run_id"]: r["rank"] for r in rows}
    harness = sorted(
        (r for r in runs if r.data.tags.get("assay.command") == "harness"),
        key=lambda r: rank[r.info.run_id],
    )
    if harness:
        # The harness report's heatmap, fed with the per-judge runs' logged pass rates.
        labels = _labels(harness)
        tests = sorted(
            {
                k.removesuffix(".pass_rate")
                for r in harness
                for k in r.data.metrics
                if k.endswith(".pass_rate")
            }
        )
        grid = {
            "probes": dict.fromkeys(tests),
            "judges": {
                labels[r.info.run_id]: {
                    "tests": {
                        t: {"pass_rate": {"value": r.data.metrics[f"{t}.pass_rate"]}}
                        for t in tests
                        if f"{t}.pass_rate" in r.data.metrics
                    }
                }
                for r in harness
            },
        }
        files["heatmap"] = heatmap(grid, folder / "heatmap.png")
    return files


def _start_comparison_run(client, runs, rows, metric, key, force) -> str:
    from mlflow.entities import Param

    tags = {"assay.command": "compare", "assay.metric": metric}
    if key:
        for name, value in zip(("assay.data", "assay.scale", "assay.probes"), key[1:], strict=True):
            if value:
                tags[name] = value
    run = client.create_run(
        runs[0].info.experiment_id, run_name=f"compare-{len(rows)}-runs", tags=tags
    )
    params = [Param(f"run.{i}", r["run_id"]) for i, r in enumerate(rows)]
    params += [Param("metric", metric), Param("force", str(force))]
    client.log_batch(run.info.run_id, params=params)
    return run.info.run_id


def _finish_comparison_run(client, run_id: str, files: list[Path]) -> None:
    try:
        for f in files:
            client.log_artifact(run_id, str(f))
    except BaseException:
        client.set_terminated(run_id, "FAILED")
        raise
    client.set_terminated(run_id)


# --- the command line -----------------------------------------------------------------------


def render_markdown(result: dict[str, Any]) -> str:
    """The comparison as Markdown: leaderboard, differences, runs left out, where files went."""
    from assay.experiments._report import _fmt

    metric = result["metric"]
    g = result["group"]
    where = (
        f"data `{g['data']}` · scale {g['scale']}"
        + (f" · probes `{g['probes']}`" if g["probes"] else "")
        if g
        else "forced across data sets/scales"
    )
    lines = [
        f"## Leaderboard — {metric} ({'higher' if higher_is_better(metric) else 'lower'} is better)",
        "",
        f"{len(result['leaderboard'])} judge runs · {where}",
        "",
        f"| # | run |{'' if g else ' data · scale |'} model | {metric} [CI] | accuracy "
        "| cost USD | USD per accuracy point | Pareto | program | adapter | temp. | rubric "
        "| optimized | config | run id |",
        "|---" * (15 if g else 16) + "|",
    ]
    for r in result["leaderboard"]:
        ci = f" [{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]" if r["ci_low"] is not None else ""
        data = "" if g else f" `{r['data']}` · {r['scale']} |"
        lines.append(
            f"| {r['rank']} | {r['name']} |{data} `{r['model']}` | {_fmt(r['value'])}{ci} "
            f"| {_fmt(r['accuracy'])} | {_fmt(r['cost_usd'], 6)} "
            f"| {_fmt(r['cost_per_accuracy_point_usd'], 6)} "
            f"| {'yes' if r['pareto'] else ('—' if r['pareto'] is None else 'no')} "
            f"| {r['program']} | {r['adapter']} | {r['temperature']} | {r['rubric'] or '—'} "
            f"| {'yes' if r['optimized'] else 'no'} | {r['config_hash']} | `{r['run_id']}` |"
        )
    d = result["differences"]
    lines += ["", "## Config differences", ""]
    if d["rows"]:
        lines += [
            "| judge param | " + " | ".join(d["columns"]) + " |",
            "|---" * (len(d["columns"]) + 1) + "|",
        ]
        lines += [f"| {k} | " + " | ".join(v) + " |" for k, v in d["rows"].items()]
    else:
        lines.append("The compared runs share every judge param.")
    lines += ["", "## Left out", ""]
    lines += [f"- `{x['run_id']}` {x['name']}: {x['reason']}" for x in result["left_out"]] or [
        "none"
    ]
    if result["plots"]:
        lines += ["", "Plots: " + ", ".join(str(p) for p in result["plots"].values())]
    if result["comparison_run_id"]:
        lines.append(f"MLflow comparison run: {result['comparison_run_id']}")
    return "\n".join(lines) + "\n"


def add_parser(subparsers) -> None:
    """Register ``assay compare`` on the CLI's subparsers."""
    c = subparsers.add_parser(
        "compare", help="compare judge configs across MLflow runs: leaderboard, differences, plots"
    )
    c.add_argument(
        "runs",
        nargs="*",
        help="run ids or experiment names (default: every run of the experiment 'assay')",
    )
    c.add_argument(
        "--metric",
        help="metric to rank by (default: kappa_categorical, else accuracy; harness: mean_pass_rate)",
    )
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.add_argument(
        "--force", action="store_true", help="also compare runs on other data sets or scales"
    )
    c.add_argument(
        "--tracking-uri",
        help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db here)",
    )
    c.add_argument(
        "--experiment",
        help="experiment to read when no runs are named; with named runs, keep only its runs",
    )
    c.add_argument(
        "--tag",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="keep only runs with this tag (repeatable), e.g. assay.data=<fingerprint>",
    )
    c.add_argument("--out", help="folder for the plots and comparison.json (default: ./compare)")
    c.add_argument("--no-log", action="store_true", help="do not log a comparison run to MLflow")
    c.set_defaults(func=run)


def run(args) -> int:
    from assay.experiments._tracking import default_tracking_uri

    uri = (
        args.tracking_uri
        or os.environ.get("MLFLOW_TRACKING_URI")
        or default_tracking_uri(Path.cwd())
    )
    tags = {}
    for item in args.tag:
        k, sep, v = item.partition("=")
        if not sep or not k:
            raise ConfigError(f"--tag {item}: expected KEY=VALUE")
        tags[k] = v
    result = compare(
        args.runs,
        tracking_uri=uri,
        metric=args.metric,
        force=args.force,
        experiment=args.experiment,
        tags=tags,
        out_dir=(Path(args.out) if args.out else Path.cwd() / "compare").resolve(),
        log=not args.no_log,
    )
    print(json.dumps(result, default=str) if args.json else render_markdown(result), end="\n")
    return 0
