"""``assay compare``: judge configs side by side, read back from MLflow.

Runs are selected by id or experiment name, reduced to judge runs (an evaluate run, the
per-judge child of a harness run, an optimize run's baseline and optimized children), and
grouped by what they were measured on: the fingerprint of the exact items (``assay.items``: an
optimize child's test split is not its data set; a harness judge's items are its probes) and
the scale. One group is compared — a
leaderboard with CIs and cost, the judge params that differ, a Pareto plot of cost against the
metric and, for harness runs, a tests × judges heatmap. Every other run is listed with the
reason it was left out; ``force`` compares them all anyway.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from assay.comparison._html_report import build_report
from assay.comparison._plots import write_plots
from assay.comparison._results import Comparison
from assay.comparison._select import (
    comparable,
    default_metric,
    group_of,
    no_width_note,
    notes,
    select,
)
from assay.comparison._tables import (
    differences,
    leaderboard,
    level_note,
    metric_value,
    n_note,
    paid_note,
    same_items,
    shared_level,
)
from assay.errors import RunError
from assay.runs import open_store


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
) -> Comparison:
    """Compare the judge runs named by ``selectors`` (run ids or experiment names; none: every
    run of ``experiment``, default ``"assay"``).

    ``experiment`` given together with selectors, and ``tags``, filter: runs outside them are
    left out with a reason. Plots are written to ``out_dir`` (none written when it is ``None``
    and ``log`` is off); with ``log`` a comparison run is logged next to the first compared run.
    Returns the leaderboard, the differences table, the runs left out and where things went.
    """
    client = open_store(tracking_uri)
    candidates, left_out, first = select(client, tracking_uri, selectors, experiment, tags or {})
    compared, key = comparable(candidates, left_out, first, force)
    if not compared:
        why = "; ".join(f"{x['run_id']} ({x['name']}): {x['reason']}" for x in left_out)
        raise RunError(f"nothing to compare in {tracking_uri}: {why or 'no judge run found'}")
    if len(compared) == 1 and len(candidates) > 1:  # the runs asked for: one is no comparison
        why = "; ".join(f"{x['run_id']} ({x['name']}): {x['reason']}" for x in left_out)
        raise RunError(
            f"nothing to compare: only {compared[0].info.run_id} ({compared[0].info.run_name}) "
            f"is left, the others are not comparable with it — {why} (--force compares "
            "across groups)"
        )
    metric = metric or default_metric(compared)
    if not any(metric_value(r.data.metrics, metric) is not None for r in compared):
        known = sorted({m for r in compared for m in r.data.metrics if "_ci_" not in m})
        raise RunError(
            f"metric '{metric}' is logged by none of the compared runs; they have: {', '.join(known)}"
        )
    rows = leaderboard(compared, metric)
    result: dict[str, Any] = {
        "tracking_uri": tracking_uri,
        "metric": metric,
        "forced": force,
        "group": group_of(compared, key),
        "same_items": same_items(rows),
        "ci_level": shared_level(rows),
        "leaderboard": rows,
        "differences": differences(compared, [r.run_id for r in rows]),
        "left_out": left_out,
        "notes": notes(compared, metric)
        + n_note(rows, metric)
        + level_note(rows, metric)
        + paid_note(rows)
        + no_width_note(rows, metric),
        "plots": {},
        "comparison_run_id": None,
    }
    if out_dir is None and not log:
        return Comparison.model_validate(result)
    with tempfile.TemporaryDirectory(prefix="assay-compare-") as tmp:
        folder = Path(out_dir) if out_dir is not None else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        files = write_plots(compared, rows, metric, folder)
        if out_dir is not None:
            result["plots"] = {k: str(p) for k, p in files.items()}
        run_id = None
        if log:
            run_id = _start_comparison_run(client, compared, rows, metric, result["group"], force)
            result["comparison_run_id"] = run_id
        (folder / "comparison.json").write_text(
            Comparison.model_validate(result).model_dump_json(indent=2) + "\n"
        )
        from assay.report import write_html  # the page's renderer, loaded on first use

        files["report"] = write_html(build_report(folder), folder)
        if run_id is not None:
            _finish_comparison_run(client, run_id, [*files.values(), folder / "comparison.json"])
    return Comparison.model_validate(result)


def _start_comparison_run(client, runs, rows, metric, group, force) -> str:
    from mlflow.entities import Param

    tags = {"assay.command": "compare", "assay.metric": metric}
    for name in ("items", "data", "scale", "probes") if group else ():
        if group[name]:
            tags[f"assay.{name}"] = group[name]
    run = client.create_run(
        runs[0].info.experiment_id, run_name=f"compare-{len(rows)}-runs", tags=tags
    )
    params = [Param(f"run.{i}", r.run_id) for i, r in enumerate(rows)]
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
