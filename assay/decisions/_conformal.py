"""``assay conformal RUN --alpha A [--apply OTHER | --holdout F]``: split conformal prediction
sets for a judge's verdicts, from the verdict probabilities of a labelled evaluate
run judged with ``score_mode: expected``.

The calibration run fixes q̂ for the judge config that made it; the sets go to the items of
another run of the *same* judge config (``--apply``; a run of another config is refused: q̂
says nothing about it), to a seeded held-out part of the calibration run (``--holdout``), or,
with neither, back to the calibration items themselves (coverage then in-sample, and said so).
Each item's set — every score the judge cannot rule out at level α — and its size are the
judge's honest uncertainty about that item; coverage is measured where references exist. No LM
is called: the runs are read back, and the result is a run of its own (``conformal_sets.jsonl``,
``metrics.json``, report.md / report.html, MLflow).

An applied item that is a calibration item — by id, or by the text the judge read, normalised
as a certificate's consumed items are (:mod:`assay.inputs._item_text`) — gets its set but is
left out of the coverage (``overlap``): measured on the items q̂ was fitted to, coverage would
be in-sample.

The guarantee is for items exchangeable with the calibration items *that got probabilities*:
items left unscored (or without logprobs) are counted and get no set, never a made-up one.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from assay._files import check_writable
from assay.decisions._finished import judged_items, read_evaluate_run
from assay.errors import ConfigError, RunError
from assay.inputs import EvaluateConfig, RunConfig, samples_of, used_keys
from assay.metrics import MetricValue, Undefinable
from assay.report import Block, Items, Report, Row, Table, report_markdown
from assay.runs import (
    SEALED,
    Run,
    RunState,
    TrackedRun,
    finished_state,
    flatten_metrics,
    vouches_for,
    write_atomic,
)
from assay.scale import Scale
from assay.types import Judgment, Seed, stable_hash

if TYPE_CHECKING:
    from assay.metrics import ConformalCalibration

SETS = "conformal_sets.jsonl"
NO_PROBABILITIES = "no verdict probabilities"
SEALED_FILES = (*SEALED, SETS)
"""What a conformal run's seal covers: its config, its figures and every item's set."""
UNSEALED_SETS = (
    f"{SETS} is not vouched for: the run was sealed before conformal runs sealed their sets "
    "(its seal covers its config and figures only); run it in a new directory to seal them"
)
"""Said where the sets of a run sealed before its sets were are shown: nothing checks them."""

_log = logging.getLogger(__name__)


class ConformalConfig(RunConfig):
    """A conformal run: the calibration run, α, the score, and where the sets go."""

    calibration: str = Field(description="the labelled evaluate run q̂ is calibrated on")
    alpha: float = Field(gt=0, lt=1, description="miscoverage: sets hold the truth ≥ 1 − α")
    method: Literal["lac", "aps", "ordinal"] = Field(
        description="the nonconformity score: lac, aps, or ordinal (contiguous sets)"
    )
    apply: str | None = Field(None, description="an evaluate run of the same judge config")
    holdout: float | None = Field(
        None, gt=0, lt=1, description="share of the calibration run's labelled items held out"
    )
    seed: Seed = Field(default=0, description="the seed of the holdout split")


class ClassCoverageRow(BaseModel):
    """The sets of the items whose reference is ``score``."""

    model_config = ConfigDict(extra="forbid")

    score: int
    label: str | None
    n: int
    coverage: Undefinable
    mean_size: Undefinable


class ConformalSummary(BaseModel):
    """What ``metrics.json`` holds: the calibration (q̂ bound to the judge config's hash) and
    the sets it gave — how many, their sizes, and their coverage where references exist."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    calibration_run: str
    judge: str
    config_hash: str
    scale: str
    alpha: Undefinable
    method: str
    n_calibration: int
    rank: int  # q̂ is the rank-th smallest calibration score
    qhat: float | None  # None: every set is the whole scale (rank > n_calibration)
    calibration_excluded: dict[str, int]  # items of the run not used, by why
    applied_to: str
    in_sample: bool  # the sets are of the calibration items themselves
    n_items: int
    n_sets: int
    no_set: dict[str, int]  # items without a set, by why (unscored reasons, no probabilities)
    mean_size: Undefinable | None
    size_counts: list[int]  # sets of size 0, 1, 2, ...
    coverage: MetricValue | None  # on the labelled items (overlap with calibration excluded)
    per_class: list[ClassCoverageRow]
    overlap: int  # items also used to calibrate, left out of the coverage
    sets_file: str = SETS
    run_dir: str
    mlflow_run_id: str | None = None  # set on return (metrics.json is written before logging)


def default_method(scale: Scale) -> str:
    """``ordinal`` (contiguous sets) on an ordinal scale, ``lac`` otherwise."""
    return "ordinal" if scale.kind == "ordinal" else "lac"


def conformal(
    calibration: str | Path,
    *,
    alpha: float,
    workdir: Path,
    method: str | None = None,
    apply: str | Path | None = None,
    holdout: float | None = None,
    seed: int = 0,
    out: Path | None = None,
    tracking_uri: str | None = None,
) -> ConformalSummary:
    """Calibrate q̂ on ``calibration`` and write the sets of the target items (see the module)."""
    from assay.metrics import calibrate_conformal, prediction_sets, probability_matrix

    if not 0 < alpha < 1:
        raise ConfigError(f"--alpha {alpha}: a miscoverage between 0 and 1, e.g. 0.1")
    if apply is not None and holdout is not None:
        raise ConfigError(
            "--apply and --holdout: give one (sets for another run, or a held-out part)"
        )
    if out is not None:
        check_writable(out, option="--out")
    cal_dir = Path(calibration)
    cal_config, cal_judged, cal_state = read_evaluate_run(cal_dir)
    judge = cal_config.judge
    scale = judge.scale
    assert scale is not None
    method = method or default_method(scale)
    if method == "ordinal" and scale.kind == "categorical":
        raise ConfigError(
            f"--method ordinal needs ordered verdicts; the {scale.describe()} scale has none "
            "(use lac or aps)"
        )
    if not any(j.probabilities for j in cal_judged.values()):
        raise RunError(
            f"run {cal_dir} has no verdict probabilities; judge with score_mode: expected"
        )
    references, cal_texts, cal_samples = _labelled(cal_dir, cal_config, cal_judged, cal_state)
    usable = sorted(i for i, j in cal_judged.items() if j.probabilities and i in references)
    excluded = {
        "no_reference": sum(i not in references for i in cal_judged),
        "unscored": sum(j.score is None for i, j in cal_judged.items() if i in references),
        NO_PROBABILITIES: sum(
            j.score is not None and not j.probabilities
            for i, j in cal_judged.items()
            if i in references
        ),
    }
    if not usable:
        raise RunError(f"run {cal_dir}: no item with both a reference and verdict probabilities")

    cal_ids, in_sample, target_texts = usable, False, cal_texts
    if holdout is not None:
        cal_ids, held = _split(usable, holdout, seed, cal_samples)
        target, target_refs, applied_to = (
            {i: cal_judged[i] for i in held},
            references,
            (f"{len(held)} items held out of {cal_dir} (seed {seed})"),
        )
    elif apply is not None:
        target_config, target, target_state = read_evaluate_run(Path(apply))
        if target_config.judge.config_hash() != judge.config_hash():
            raise RunError(
                f"{apply}: a run of another judge config (hash "
                f"{target_config.judge.config_hash()[:10]} vs {judge.config_hash()[:10]}): "
                "conformal sets only transfer to the judge config they were calibrated for"
            )
        target_refs, target_texts, _ = _labelled(Path(apply), target_config, target, target_state)
        applied_to = str(apply)
    else:
        target, target_refs, applied_to, in_sample = cal_judged, references, str(cal_dir), True

    values = scale.values
    cal = calibrate_conformal(
        probability_matrix([cal_judged[i].probabilities or {} for i in cal_ids], values),
        [values.index(references[i]) for i in cal_ids],
        alpha,
        method,  # type: ignore[arg-type]
    )
    with_p = [i for i in sorted(target) if target[i].probabilities]
    masks = (
        prediction_sets(
            probability_matrix([target[i].probabilities or {} for i in with_p], values), cal
        )
        if with_p
        else []
    )
    sets = {
        i: [v for v, inside in zip(values, m, strict=True) if inside]
        for i, m in zip(with_p, masks, strict=True)
    }
    config = ConformalConfig(
        name=f"{cal_config.name}-conformal",
        output_dir=cal_config.output_dir,
        tracking=cal_config.tracking,
        calibration=str(cal_dir),
        alpha=alpha,
        method=method,  # type: ignore[arg-type]
        apply=None if apply is None else str(apply),
        holdout=holdout,
        seed=seed,
    )
    run_hash = stable_hash(
        {
            "judge": judge.config_hash(),
            "calibration": _fingerprint(cal_judged, cal_ids, references),
            "target": _fingerprint(target, sorted(target), target_refs),
            "alpha": alpha,
            "method": method,
            "in_sample": in_sample,
        }
    )
    with Run.open(
        config, run_hash, command="conformal", workdir=workdir, tracking_uri=tracking_uri
    ) as run:
        calibrated = _calibration_items(target, target_texts, cal_ids, cal_texts)
        records = _records(target, sets, target_refs, calibrated, scale)
        if run.finished:  # the same runs, the same options: nothing new to write
            summary = ConformalSummary.model_validate(run.store.read_json("metrics.json"))
            _warn_if_sets_unsealed(run)
            # the run is its runs' content, wherever they are: name the directory read this time
            summary.applied_to = applied_to
            # logged now if an earlier call left it out (tracking off) and this one logs
            run.log_finished(lambda: _tracked(config, summary, run.run_hash))
        else:
            summary = _summarize(
                config,
                judge.name,
                judge.config_hash(),
                scale,
                cal,
                excluded,
                applied_to,
                in_sample,
                records,
                run.dir,
            )
            run.store.write_text(SETS, "".join(json.dumps(r) + "\n" for r in records))
            run.store.write_json("metrics.json", summary.model_dump(mode="json"))
            report = build_conformal_report(run.dir)
            run.store.write_text("report.md", report_markdown(report))
            from assay.report import write_html

            write_html(report, run.dir)
            run.finish(_tracked(config, summary, run.run_hash), sealed=SEALED_FILES)
        summary.mlflow_run_id = run.mlflow_run_id
        if out is not None:
            _write_out(out, summary, records)
        return summary


def _warn_if_sets_unsealed(run: Run) -> None:
    """A finished run read back whose seal does not list its sets (sealed before conformal runs
    sealed them; an edited sets file is otherwise caught as the run is opened): said in one
    line, since the console names the file."""
    if not vouches_for(run.state, SETS):
        _log.warning("%s: %s", run.dir, UNSEALED_SETS)


def sets_note(run_dir: Path) -> str | None:
    """What the report says of the sets of the finished run in ``run_dir`` whose seal does not
    list them (:data:`UNSEALED_SETS`); None while the run goes on or when its seal vouches for
    them (a redrawn report checks the seal first: :func:`~assay.runs.check_redrawn`)."""
    state = finished_state(run_dir)
    return None if state is None or vouches_for(state, SETS) else UNSEALED_SETS


def _labelled(
    run_dir: Path, config: EvaluateConfig, judged: dict[str, Judgment], state: RunState
) -> tuple[dict[str, int], dict[str, frozenset[str]], dict[str, str]]:
    """The reference score of each judged item that has one, each judged item's keys (its
    text's, :func:`~assay.inputs.item_keys`, and the sample it is an epoch of: an Inspect log's
    epochs share their sample's input and reference, so one on each side is the same item
    twice) and what a split keeps together (:func:`~assay.inputs.samples_of`): the run's data
    read again, and refused unless it is the data the run judged (``judged_items``)."""
    items = judged_items(run_dir, config, judged, state.get("run_hash"), run_dir=run_dir)
    refs = {it.id: it.expected for it in items if it.id in judged and it.expected is not None}
    keys = {it.id: frozenset(used_keys(it)) for it in items}
    return refs, keys, dict(zip((it.id for it in items), samples_of(items), strict=True))


def _calibration_items(
    target: dict[str, Judgment],
    target_texts: dict[str, frozenset[str]],
    cal_ids: list[str],
    cal_texts: dict[str, frozenset[str]],
) -> set[str]:
    """The target items that are calibration items — by id, or by the text the judge read
    (normalised as a certificate's consumed items are: renamed, they are the same items)."""
    ids = set(cal_ids)
    texts = frozenset().union(*(cal_texts[i] for i in ids))
    return {i for i in target if i in ids or not texts.isdisjoint(target_texts.get(i, ()))}


def _split(
    ids: list[str], holdout: float, seed: int, samples: dict[str, str]
) -> tuple[list[str], list[str]]:
    """A seeded random (not stratified: exchangeable) split into (calibration, held out). The
    epochs of one sample (``samples``: what each item repeats) fall on one side together, the
    share ``holdout`` of the samples held out; items that repeat nothing are split one by one."""
    import numpy as np

    groups: dict[str, list[str]] = {}
    for i in ids:
        groups.setdefault(samples.get(i, i), []).append(i)
    units = list(groups.values())
    what = "usable items" if len(units) == len(ids) else "samples with usable items"
    n_held = round(len(units) * holdout)
    if not 0 < n_held < len(units):
        raise ConfigError(f"--holdout {holdout} of {len(units)} {what} leaves no item on one side")
    order = np.random.default_rng(seed).permutation(len(units))
    held = {i for k in order[:n_held] for i in units[k]}
    return [i for i in ids if i not in held], sorted(held)


def _fingerprint(judged: dict[str, Judgment], ids: list[str], refs: dict[str, int]) -> str:
    return stable_hash([(i, judged[i].probabilities, judged[i].unscored, refs.get(i)) for i in ids])


def _records(
    target: dict[str, Judgment],
    sets: dict[str, list[int]],
    refs: dict[str, int],
    calibration_items: set[str],
    scale: Scale,
) -> list[dict[str, Any]]:
    """One line of ``conformal_sets.jsonl`` per target item: its set (or why it has none)."""
    out = []
    for i in sorted(target):
        j, ref = target[i], refs.get(i)
        rec: dict[str, Any] = {"item_id": i}
        if i in sets:
            s = sets[i]
            rec |= {"set": s, "size": len(s)}
            if scale.labels:
                rec["labels"] = [scale.label_of(v) for v in s]
        else:
            reason = f"unscored: {j.unscored}" if j.score is None else NO_PROBABILITIES
            rec |= {"set": None, "size": None, "reason": reason}
        rec |= {"verdict": j.score, "reference": ref, "probabilities": j.probabilities}
        rec["covered"] = None if ref is None or i not in sets else ref in sets[i]
        rec["calibration"] = i in calibration_items
        out.append(rec)
    return out


def _summarize(
    config: ConformalConfig,
    judge: str,
    config_hash: str,
    scale: Scale,
    cal: ConformalCalibration,
    excluded: dict[str, int],
    applied_to: str,
    in_sample: bool,
    records: list[dict[str, Any]],
    run_dir: Path,
) -> ConformalSummary:
    from assay.metrics import set_coverage, wilson_interval

    values = scale.values
    with_set = [r for r in records if r["set"] is not None]
    no_set: dict[str, int] = {}
    for r in records:
        if r["set"] is None:
            no_set[r["reason"]] = no_set.get(r["reason"], 0) + 1
    measured = [
        r for r in with_set if r["reference"] is not None and (in_sample or not r["calibration"])
    ]
    coverage, per_class = None, []
    if measured:
        masks = [[v in r["set"] for v in values] for r in measured]
        s = set_coverage(masks, [values.index(r["reference"]) for r in measured])
        low, high = wilson_interval(s.covered, s.n)
        note = "in-sample: the calibration items themselves" if in_sample else None
        coverage = MetricValue(s.coverage, low, high, s.n, note)
        per_class = [
            ClassCoverageRow(
                score=values[c.label],
                label=scale.label_of(values[c.label]),
                n=c.n,
                coverage=c.coverage,
                mean_size=c.mean_size,
            )
            for c in s.per_class
        ]
    sizes = [r["size"] for r in with_set]
    return ConformalSummary(
        calibration_run=config.calibration,
        judge=judge,
        config_hash=config_hash,
        scale=scale.describe(),
        alpha=config.alpha,
        method=config.method,
        n_calibration=cal.n,
        rank=cal.rank,
        qhat=None if math.isinf(cal.qhat) else cal.qhat,
        calibration_excluded=excluded,
        applied_to=applied_to,
        in_sample=in_sample,
        n_items=len(records),
        n_sets=len(with_set),
        no_set=no_set,
        mean_size=sum(sizes) / len(sizes) if sizes else None,
        size_counts=[sizes.count(k) for k in range(len(values) + 1)],
        coverage=coverage,
        per_class=per_class,
        overlap=sum(r["calibration"] for r in records) if not in_sample else 0,
        run_dir=str(run_dir),
    )


def _write_out(path: Path, summary: ConformalSummary, records: list[dict[str, Any]]) -> None:
    """``--out``: the calibration (bound to the judge config) and every item's set, one JSON."""
    head = summary.model_dump(
        mode="json",
        include={"calibration_run", "judge", "config_hash", "scale", "alpha", "method", "qhat"},
    )
    try:
        write_atomic(path, json.dumps({**head, "sets": records}, indent=1) + "\n")
    except OSError as exc:
        raise RunError(f"{path}: cannot write the sets ({exc.strerror})") from None


def _tracked(config: ConformalConfig, s: ConformalSummary, run_hash: str) -> TrackedRun:
    metrics: dict[str, float] = {
        "n_calibration": float(s.n_calibration),
        "n_sets": float(s.n_sets),
        "whole_scale": float(s.qhat is None),
    }
    if s.qhat is not None:
        metrics["qhat"] = s.qhat
    if s.mean_size is not None:
        metrics["mean_set_size"] = s.mean_size
    if s.coverage is not None:
        metrics |= flatten_metrics({"coverage": s.coverage})
    for c in s.per_class:
        metrics[f"coverage.{c.score}"] = c.coverage
        metrics[f"mean_set_size.{c.score}"] = c.mean_size
    return TrackedRun(
        name=config.name,
        params={
            "alpha": str(s.alpha),
            "method": s.method,
            "calibration_run": s.calibration_run,
            "applied_to": s.applied_to,
            "judge.config_hash": s.config_hash,
            "run_hash": run_hash,
        },
        metrics=metrics,
        tags={"assay.judge": s.judge, "assay.scale": s.scale, "assay.config_hash": s.config_hash},
    )


# -- the report --------------------------------------------------------------------------------


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def conformal_headline(s: ConformalSummary) -> list[str]:
    """The lines the console and the report open with."""
    q = (
        f"q̂ = {s.qhat:.4f} (order statistic {s.rank} of the {s.n_calibration} scores)"
        if s.qhat is not None
        else f"q̂ = ∞: {s.n_calibration} items are too few for α = {s.alpha} "
        f"(it needs ⌈(n+1)(1−α)⌉ ≤ n), every set is the whole scale"
    )
    lines = [
        f"conformal sets ({s.method}, α = {s.alpha}) for judge {s.judge} "
        f"(config {s.config_hash[:10]}), calibrated on {s.n_calibration} labelled items: {q}",
        f"applied to {s.applied_to}: {s.n_sets} sets of {s.n_items} items, mean size "
        f"{_fmt(s.mean_size)} on a scale of {len(s.size_counts) - 1}",
    ]
    if s.overlap:
        lines.append(
            f"{s.overlap} of these items are calibration items (by id, or by the text the judge "
            "read): left out of the coverage, which would be in-sample on them"
        )
    if s.coverage is not None:
        c = s.coverage
        lines.append(
            f"coverage {c.value:.3f} [{c.ci_low:.3f}, {c.ci_high:.3f}] on {c.n} labelled items "
            f"(guaranteed ≥ {1 - s.alpha:.3f} on average over calibrations)"
            + (f" — {c.note}" if c.note else "")
        )
    return lines


def build_conformal_report(run_dir: Path) -> Report:
    """The report of the conformal run in ``run_dir`` (report.md shows the same tables)."""
    from assay.report import load_summary, read_jsonl

    run_dir = Path(run_dir)
    s = load_summary(run_dir / "metrics.json", ConformalSummary)
    records = read_jsonl(run_dir / s.sets_file)
    r = Report("conformal", f"assay conformal — {s.judge}")
    r.facts = [
        ("judge", f"{s.judge} (config {s.config_hash[:10]}) · {s.scale}"),
        ("calibration", f"{s.calibration_run}: {s.n_calibration} labelled items"),
        (
            "excluded from calibration",
            ", ".join(f"{k} {v}" for k, v in s.calibration_excluded.items()),
        ),
        ("method · α", f"{s.method} · {s.alpha}"),
        ("q̂", _fmt(s.qhat) if s.qhat is not None else "∞ (too few items: whole-scale sets)"),
        ("applied to", s.applied_to),
        (
            "sets",
            f"{s.n_sets} of {s.n_items} items"
            + "".join(f" · {k}: {v}" for k, v in s.no_set.items()),
        ),
    ]
    if s.overlap:
        r.facts.append(
            ("overlap", f"{s.overlap} items were also calibration items (not in the coverage)")
        )
    r.notes = conformal_headline(s)
    sizes = Table(
        "Set sizes",
        ["size", "items", "share"],
        [[k, n, f"{n / s.n_sets:.3f}" if s.n_sets else "—"] for k, n in enumerate(s.size_counts)],
        lead="The size of an item's set is the judge's honest uncertainty about it at level α: "
        "1 — only the judge's most probable verdict is plausible; the whole scale — it can rule "
        "out no verdict on this item"
        + (" (0 — no score is plausible enough)" if s.method == "lac" else "")
        + ".",
    )
    r.tables.append(sizes)
    if s.coverage is not None:
        c = s.coverage
        r.tables.append(
            Table(
                "Coverage per reference",
                ["reference", "items", "coverage", "mean set size"],
                [
                    [row.label or row.score, row.n, f"{row.coverage:.3f}", f"{row.mean_size:.2f}"]
                    for row in s.per_class
                ]
                + [
                    [
                        "all",
                        c.n,
                        f"{c.value:.3f} [{c.ci_low:.3f}, {c.ci_high:.3f}]",
                        f"{sum(row.n * row.mean_size for row in s.per_class) / c.n:.2f}",
                    ]
                ],
                note=f"Marginal coverage is guaranteed ≥ {1 - s.alpha:.3f} on average over "
                "calibration sets for exchangeable items; per reference it is measured, not "
                "guaranteed (no class-conditional calibration). The interval is Wilson's.",
            )
        )
    r.items = Items(
        "Items",
        [
            ("item", "text"),
            ("set", "text"),
            ("size", "num"),
            ("verdict", "num"),
            ("reference", "num"),
            ("covered", "text"),
        ],
        [
            Row(
                [
                    (x["item_id"], x["item_id"]),
                    (_set_text(x), x.get("size") if x.get("size") is not None else -1),
                    (str(x.get("size") if x.get("size") is not None else "—"), x.get("size") or 0),
                    (str(x.get("verdict")), x.get("verdict")),
                    (str(x.get("reference")), x.get("reference")),
                    (
                        "—" if x.get("covered") is None else ("yes" if x["covered"] else "no"),
                        str(x.get("covered")),
                    ),
                ],
                [Block("the judge's probability of each score", _probabilities_text(x))],
                "bad" if x.get("covered") is False else ("warn" if x.get("set") is None else ""),
            )
            for x in records
        ],
        sets_note(run_dir) or "",
    )
    return r


def _probabilities_text(rec: dict[str, Any]) -> str:
    probs = rec.get("probabilities")
    if not probs:
        return "none: the backend returned no probability for the verdict token"
    ordered = sorted(probs.items(), key=lambda kv: int(kv[0]))
    return ", ".join(f"{k}: {p:.3f}" for k, p in ordered)


def _set_text(rec: dict[str, Any]) -> str:
    if rec.get("set") is None:
        return rec.get("reason") or "—"
    shown = rec.get("labels") or rec["set"]
    return "{" + ", ".join(str(v) for v in shown) + "}"
