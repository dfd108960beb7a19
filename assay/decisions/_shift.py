"""``assay drift``'s two other questions about a system's score across judge versions.

``drift OLD NEW --anchors FILE``: "our score moved: is it the model or the judge?" OLD is the
old system judged by the old judge, NEW the new system judged by the new judge; both judged the
anchor items FILE names, which must be byte-identical in both runs (the same content digest,
not just the same id). The judge's shift is measured on the anchors, the system's change is
the rest of the score change (:func:`assay.metrics.shift_decomposition`).

``drift RUN1 RUN2 ... --series``: each run's score, in the order given, on an EWMA control
chart (:func:`assay.metrics.ewma_chart`) — which run first moved beyond its noise.

Both read finished evaluate runs through their seals (:func:`read_judge_run`), on one ordered
scale: a mean score (a binary scale's: the rate of its positive label).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.decisions._finished import JudgeRun, distinct_runs, read_judge_run
from assay.decisions._paired import side, unscored_shift, write_outputs
from assay.decisions._paired_results import LeftOutItem, SeriesPoint, SeriesResult, ShiftResult
from assay.errors import ConfigError, DataError, RunError
from assay.inputs import samples_of
from assay.scale import Scale
from assay.types import Item, stable_hash

if TYPE_CHECKING:
    from assay.metrics import EwmaChart, ShiftDecomposition


def anchor_shift(
    old: str | Path,
    new: str | Path,
    anchors: str | Path,
    *,
    tracking_uri: str,
    confidence: float = 0.95,
    out_dir: Path | None = None,
    log: bool = True,
    workdir: Path | None = None,
) -> ShiftResult:
    """NEW's score change from OLD split into the judge's shift on the anchors ``anchors``
    names (a file of item ids, one a line) and the system's change on every other item, each
    with a seeded percentile bootstrap interval at ``confidence``."""
    from assay.metrics import shift_decomposition

    wanted = read_anchor_ids(Path(workdir or Path.cwd()) / anchors, shown=anchors)
    with tempfile.TemporaryDirectory(prefix="assay-drift-") as tmp:
        ro = read_judge_run(old, tracking_uri=tracking_uri, scratch=Path(tmp))
        rn = read_judge_run(new, tracking_uri=tracking_uri, scratch=Path(tmp))
    distinct_runs([ro, rn], "drift --anchors")
    scale = _one_scale([ro, rn])
    ids = _anchors_in_both(anchors, wanted, ro, rn)
    is_anchor = set(ids)
    left: list[LeftOutItem] = []
    pairs = []
    # what each item is resampled with: the Inspect sample it is an epoch of, else itself
    sample = {
        name: dict(zip((it.id for it in run.items), samples_of(run.items), strict=True))
        for name, run in (("OLD", ro), ("NEW", rn))
    }
    anchor_samples: list[str] = []
    for i in ids:
        why = [
            f"anchor unscored by {name} ({run.judgments[i].unscored})"
            for name, run in (("OLD", ro), ("NEW", rn))
            if run.judgments[i].score is None
        ]
        if why:
            left.append(LeftOutItem(item_id=i, why="; ".join(why)))
        else:
            pairs.append((ro.judgments[i].score, rn.judgments[i].score))
            anchor_samples.append(sample["OLD"][i])
    rest: dict[str, list[int]] = {}
    rest_samples: dict[str, list[str]] = {}
    for name, run in (("OLD", ro), ("NEW", rn)):
        rest[name], rest_samples[name] = [], []
        for it in run.items:
            if it.id in is_anchor:
                continue
            j = run.judgments[it.id]
            if j.score is None:
                left.append(LeftOutItem(item_id=it.id, why=f"unscored by {name} ({j.unscored})"))
            else:
                rest[name].append(j.score)
                rest_samples[name].append(sample[name][it.id])
    for what, n in (
        ("anchors scored by both judges", len(pairs)),
        ("other items scored in OLD", len(rest["OLD"])),
        ("other items scored in NEW", len(rest["NEW"])),
    ):
        if n < 2:
            raise RunError(f"{old} and {new}: {n} {what}; the decomposition needs at least 2")
    try:
        d = shift_decomposition(
            [a for a, _ in pairs],
            [b for _, b in pairs],
            rest["OLD"],
            rest["NEW"],
            confidence=confidence,
            clusters=(anchor_samples, rest_samples["OLD"], rest_samples["NEW"]),
        )
    except ValueError as exc:
        raise ConfigError(f"drift --anchors: {exc}") from None
    unscored = unscored_shift(ro, rn, ids, round(1 - confidence, 10))  # as the intervals
    verdict = shift_verdict(d, same_judge=ro.config_hash == rn.config_hash)
    if unscored.moved:  # the judge changed on the anchors: it stopped answering some
        verdict = f"the judge moved on the anchors: {unscored.said()}; {verdict}"
    elif unscored.said():
        verdict += f"; on the anchors, {unscored.said()}"
    result = ShiftResult(
        old=side(ro),
        new=side(rn),
        anchors_file=str(anchors),
        scale=scale.describe(),
        score=score_name(scale),
        left_out=left,
        decomposition=d,
        verdict=verdict,
        unscored=unscored,
    )
    return write_outputs(result, out_dir, log, tracking_uri, workdir)


def score_series(
    runs: list[str | Path],
    *,
    tracking_uri: str,
    smoothing: float = 0.2,
    width: float = 3.0,
    center: float | None = None,
    sigma: float | None = None,
    baseline: int = 5,
    out_dir: Path | None = None,
    log: bool = True,
    workdir: Path | None = None,
) -> SeriesResult:
    """Each run's score (its mean over the items it scored), in the order given, on an EWMA
    chart with smoothing λ = ``smoothing`` and limits ``width`` σ wide; μ0 = ``center`` and
    σ = ``sigma`` where given, else from the first ``baseline`` runs."""
    from assay.metrics import ewma_chart

    if len(runs) < 2:
        raise ConfigError(f"drift --series: {len(runs)} run given; a series needs at least 2")
    read = []
    with tempfile.TemporaryDirectory(prefix="assay-drift-") as tmp:
        for named in runs:
            read.append(read_judge_run(named, tracking_uri=tracking_uri, scratch=Path(tmp)))
    distinct_runs(read, "drift --series")
    scale = _one_scale(read)
    points = []
    for run in read:
        scores = [j.score for j in run.judgments.values() if j.score is not None]
        if not scores:
            raise RunError(f"{run.named}: no item was scored, so the run has no score")
        points.append(
            SeriesPoint(run=side(run), score=sum(scores) / len(scores), scored=len(scores))
        )
    try:
        chart = ewma_chart(
            [p.score for p in points],
            smoothing=smoothing,
            width=width,
            center=center,
            sigma=sigma,
            baseline=baseline if center is None or sigma is None else None,
        )
    except ValueError as exc:  # the chart's arguments, as the command line names them
        why = re.sub(r"\b(baseline|sigma|center|smoothing|width)\b", r"--\1", str(exc))
        why = why.replace(" values", " runs")
        raise ConfigError(f"drift --series: {why}") from None
    result = SeriesResult(
        scale=scale.describe(),
        score=score_name(scale),
        points=points,
        chart=chart,
        verdict=series_verdict(chart, [p.run.named for p in points]),
    )
    return write_outputs(result, out_dir, log, tracking_uri, workdir)


def read_anchor_ids(path: Path, *, shown: str | Path | None = None) -> dict[str, int]:
    """The anchor ids ``path`` lists, one a line (blank lines and ``#`` comments skipped), each
    with its line number; a missing file, an empty list or a repeated id is one line naming it
    (as ``shown``, default ``path``)."""
    shown = shown if shown is not None else path
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(
            f"cannot read the anchors file ({exc.__class__.__name__})", path=shown
        ) from None
    ids: dict[str, int] = {}
    for n, line in enumerate(lines, start=1):
        item_id = line.strip()
        if not item_id or item_id.startswith("#"):
            continue
        if item_id in ids:
            raise DataError(
                f"anchor {item_id} again (first on line {ids[item_id]})", path=f"{shown} line {n}"
            )
        ids[item_id] = n
    if not ids:
        raise DataError("no anchor ids (one item id a line)", path=shown)
    return ids


def content_digest(item: Item) -> str:
    """The digest of an item's content: every field but its id and its reference (its texts,
    transcript and other columns), so that two runs' anchors are the same inputs byte for
    byte, not just the same ids."""
    return stable_hash(item.model_dump(mode="json", exclude={"id", "expected"}))


def _anchors_in_both(
    anchors: str | Path, wanted: dict[str, int], old: JudgeRun, new: JudgeRun
) -> list[str]:
    """The anchor ids, in the file's order, each refused in one line naming the anchors file's line unless it is an
    item of both runs with the same content digest."""
    items = {"OLD": {it.id: it for it in old.items}, "NEW": {it.id: it for it in new.items}}
    for item_id, n in wanted.items():
        where = f"{anchors} line {n}"
        for name, run in (("OLD", old), ("NEW", new)):
            if item_id not in items[name]:
                raise DataError(
                    f"anchor {item_id} is not an item of {name} ({run.named})", path=where
                )
        a, b = (content_digest(items[k][item_id]) for k in ("OLD", "NEW"))
        if a != b:
            raise DataError(
                f"anchor {item_id} differs between OLD and NEW (content digest {a[:10]} vs "
                f"{b[:10]}): anchors must be the same inputs, byte for byte",
                path=where,
            )
    return list(wanted)


def _one_scale(runs: list[JudgeRun]) -> Scale:
    first = runs[0].scale
    for run in runs[1:]:
        if run.scale.describe() != first.describe():
            raise RunError(
                f"{run.named}: scale {run.scale.describe()}, {runs[0].named}'s is "
                f"{first.describe()}: scores on different scales are not one score"
            )
    if not first.ordered:
        raise RunError(
            f"{runs[0].named}: scale {first.describe()} is unordered: its labels have no mean "
            "score (give the labels scores)"
        )
    return first


def score_name(scale: Scale) -> str:
    """What the score of a run is on ``scale``: a rate of the positive label, or a mean."""
    if scale.kind == "binary":
        return f"rate of {scale.label_of(1) or 1}"
    return "mean score"


def shift_verdict(d: ShiftDecomposition, *, same_judge: bool) -> str:
    """The decomposition in words: the change, the judge's part and the system's, and which of
    the two moved (an interval that excludes 0)."""
    from assay.metrics import fmt_level

    pct = fmt_level(d.confidence)

    def said(value: float, low: float, high: float) -> str:
        return f"{value:+.3f} [{low:+.3f}, {high:+.3f}]"

    moved = []
    if not d.judge_shift_low <= 0 <= d.judge_shift_high:
        moved.append("the judge" + (" (one config: it drifted)" if same_judge else ""))
    if not d.system_change_low <= 0 <= d.system_change_high:
        moved.append("the system")
    head = f"{' and '.join(moved)} moved" if moved else "neither the judge nor the system moved"
    flat = no_width_said(shift_intervals(d))
    return (
        f"{head}: score change {said(d.score_change, d.score_change_low, d.score_change_high)} "
        f"= judge shift {said(d.judge_shift, d.judge_shift_low, d.judge_shift_high)} on "
        f"{d.anchors} anchors + system change "
        f"{said(d.system_change, d.system_change_low, d.system_change_high)} ({pct} intervals)"
        + (f"; {flat}" if flat else "")
    )


def shift_intervals(d: Any) -> dict[str, tuple[float, float]]:
    """The decomposition's three intervals by name (``d``: the model or its dump)."""
    get = d.get if isinstance(d, dict) else lambda k: getattr(d, k)
    names = {"score change": "score_change", "judge shift": "judge_shift"}
    names["system change"] = "system_change"
    return {said: (get(f"{k}_low"), get(f"{k}_high")) for said, k in names.items()}


def no_width_said(intervals: dict[str, tuple[float, float]]) -> str | None:
    """Which of ``intervals`` print as one value, said as what that shows; None: none."""
    from assay.metrics import NARROWER_THAN_SHOWN

    flat = [name for name, (low, high) in intervals.items() if high - low < NARROWER_THAN_SHOWN]
    if not flat:
        return None
    return (
        f"the {' and '.join(flat)} interval{'s' if len(flat) > 1 else ''} "
        f"{'have' if len(flat) > 1 else 'has'} no width at the printed digits: every resample "
        "gave (about) the same value, which shows no variation in the resamples, not certainty"
    )


def series_verdict(chart: EwmaChart, names: list[str]) -> str:
    if chart.first_out is None:
        return f"in control: none of {len(names)} runs beyond the EWMA limits"
    i = chart.first_out
    count = sum(chart.out_of_control)
    return (
        f"out of control: run {i} ({names[i - 1]}) first beyond the EWMA limits (EWMA "
        f"{chart.ewma[i - 1]:.3f}, limits [{chart.lower[i - 1]:.3f}, {chart.upper[i - 1]:.3f}]); "
        f"{count} of {len(names)} runs beyond them"
    )
