"""``assay estimate RUN``: your system's number — a failure incidence, a harmful-compliance rate,
a mean score — from a judge's verdict on every item and a human label on a few, with an interval
that holds however bad the judge is (prediction-powered inference, :mod:`assay.metrics._ppi`).

The labelled items are the finished evaluate run's items with a reference (``missing_expected:
keep``), or those of a ``--validation`` run of the same judge config. Every estimator these data
allow goes in one table — PPI++ (the headline), PPI, stratified PPI++ (``--strata``), the human
labels alone, Rogan–Gladen — each with its effective number of human labels. The labelled items
must be a uniform random sample of the items: that is said, and checked on what does not depend
on the labels (text length, the judge's prediction, the strata and named columns; Holm-adjusted):
a clear difference is refused, a possible one warned of. ``--target-half-width`` / ``--budget``
plan the labels; ``--suggest N`` draws a queue of items to label next with known probabilities
(active labelling), and ``--queue`` reads its verdicts back into an inverse-probability-weighted
estimate. No LM is called; the result is a run of its own (metrics.json, report.md,
report.html, MLflow).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections import Counter
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from assay.decisions._estimate_active import QueueState, active_estimate, draw_queue
from assay.decisions._estimate_pool import (
    Pool,
    PredictionChoice,
    Target,
    pool_from,
    pool_item,
    pool_of,
    same_texts,
    target_of,
)
from assay.decisions._finished import judged_items, read_evaluate_run
from assay.decisions.review_queue import LABEL_QUEUE, LabelQueue
from assay.errors import ConfigError, DataError, RunError
from assay.inputs import RunConfig
from assay.metrics import LabelPlan, MeanEstimate, Undefinable, fmt
from assay.runs import SEALED, Run, TrackedRun
from assay.scale import Scale
from assay.types import Item, Judgment, stable_hash

ITEMS = "estimate_items.jsonl"
WARN_AT = 0.05
REFUSE_AT = 0.001

Finding = Literal["none", "warning", "refused"]


class EstimateConfig(RunConfig):
    """An estimate run: the runs read, the quantity, the prediction and the options."""

    run: str = Field(description="the evaluate run whose items are estimated")
    validation: str | None = Field(None, description="a labelled run of the same judge config")
    queue: str | None = Field(None, description="an estimate --suggest run: its human verdicts")
    target: str = Field(
        description=("the event whose rate is estimated (a verdict, score < N) or the mean score")
    )
    prediction: PredictionChoice | None = Field(
        default=None,
        description=(
            "the judge's prediction PPI uses: probability or verdict (default: the "
            "probability when the judgments carry one)"
        ),
    )
    strata: str | None = Field(default=None, description="a data column: stratified PPI++ over it")
    weights: str | None = Field(
        default=None, description="a data column of positive observation weights"
    )
    check_columns: list[str] = Field(
        default_factory=list,
        description="data columns on which the labelled items are compared with the others",
    )
    accept_shift: bool = Field(
        default=False,
        description="estimate even when the labelled items clearly differ from the others",
    )
    alpha: float = Field(0.05, gt=0, lt=1, description="the error level: intervals at 1 − α")
    target_half_width: float | None = Field(
        None, gt=0, description="plan: the human labels each estimator needs for this half-width"
    )
    budget: int | None = Field(
        None, ge=1, description="plan: the half-width this many human labels buy"
    )
    suggest: int | None = Field(
        None, ge=1, description="active labelling: about N items drawn to be labelled next"
    )
    seed: int = Field(
        default=0, description="the seed of --suggest's draw and of Rogan–Gladen's bootstrap"
    )


class SampleCheck(BaseModel):
    """One comparison of the labelled items with the unlabelled ones (see
    :func:`assay.metrics.compare_samples`), its Holm-adjusted p-value and what it led to."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    what: str
    test: str
    statistic: Undefinable
    p_value: Undefinable
    p_adjusted: Undefinable
    n_labelled: int
    n_unlabelled: int
    finding: Finding
    note: str | None = None


class PlanRow(BaseModel):
    """One estimator's label plan, for the target half-width (``given: half-width``: the labels
    it needs) or for the budget (``given: labels``: the half-width they buy)."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    given: Literal["half-width", "labels"]
    plan: LabelPlan


class JudgeOnLabelled(BaseModel):
    """The judge's 0/1 verdicts against the human labels on the labelled, scored items."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    n: int
    sensitivity: Undefinable
    specificity: Undefinable


class EstimateSummary(BaseModel):
    """What ``metrics.json`` of an estimate run holds."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    run: str
    validation: str | None = None
    judge: str
    config_hash: str
    scale: str
    target: str
    mean_score: bool  # the target is the mean score, not a rate
    prediction: str
    prediction_source: str
    n_items: int
    n_labelled: int
    n_unlabelled: int
    n_validation: int = 0  # the labelled items that are the --validation run's
    unscored: dict[str, int]
    stand_in: Undefinable | None
    without_probability: int
    alpha: Undefinable
    headline: str | None  # None: no estimate yet (a queue drawn before any label)
    estimates: list[MeanEstimate]
    sampling: str
    checks: list[SampleCheck]
    warnings: list[str]
    judge_on_labelled: JudgeOnLabelled | None = None
    plan: list[PlanRow] = Field(default_factory=list)
    plan_target_half_width: Undefinable | None = None
    plan_budget: int | None = None
    plan_weights: str | None = None  # the --weights column the plan is weighted by
    queue: QueueState | None = None
    run_dir: str = ""
    mlflow_run_id: str | None = None

    @property
    def best(self) -> MeanEstimate | None:
        """The headline estimate (None before any)."""
        return next((e for e in self.estimates if e.method == self.headline), None)

    def of(self, method: str) -> MeanEstimate | None:
        """The estimate of one estimator (None when it was not computed)."""
        return next((e for e in self.estimates if e.method == method), None)


# -- reading the runs ------------------------------------------------------------------------


def _read(
    run: str | Path,
    validation: str | Path | None,
    require_certificate: list[str] | None,
    workdir: Path,
    threshold: int | None = None,
    output_dir: str | None = None,
) -> tuple[list[tuple[str, Any, Any, Any, bool]], Any, list[str]]:
    """The runs to pool (``pool_of``'s tuples), RUN's config and the run hashes read
    (``threshold``: the estimate's, when it names one). The certificate is looked for in the
    ledger of ``workdir``'s runs folder ``output_dir`` (default ``runs``), never the one RUN's
    config names (:func:`~._certify.runs_folder_of`)."""
    config, judged, state = read_evaluate_run(Path(run), where=run)
    if require_certificate:
        from assay.decisions._certify import ledger_of, require_certificates, runs_folder_of

        what = "estimate --require-certificate looks in"
        runs = runs_folder_of(workdir, output_dir, Path(run), config.output_dir, what)
        ledger = ledger_of(workdir, runs)
        use = threshold if threshold is not None else config.threshold
        require_certificates(require_certificate, [config.judge], ledger=ledger, threshold=use)
    items = judged_items(run, config, judged, state.get("run_hash"), run_dir=Path(run))
    runs = [(str(run), config, items, judged, False)]
    hashes = [str(state.get("run_hash"))]
    if validation is not None:
        v_config, v_judged, v_state = read_evaluate_run(Path(validation), where=validation)
        if config.judge.config_hash() != v_config.judge.config_hash():
            raise RunError(
                f"{validation}: a run of another judge config (hash "
                f"{v_config.judge.config_hash()[:10]} vs {config.judge.config_hash()[:10]}): "
                "its errors say nothing about this judge"
            )
        v_items = judged_items(
            validation, v_config, v_judged, v_state.get("run_hash"), run_dir=Path(validation)
        )
        runs.insert(0, (str(validation), v_config, v_items, v_judged, True))
        hashes.append(str(v_state.get("run_hash")))
    return runs, config, hashes


# -- the checks of the sample -------------------------------------------------------------------


BY_SAMPLE = (
    "the human-only, PPI, PPI++, stratified PPI++ and active PPI++ intervals take the samples as "
    "the unit (cluster-robust), Rogan–Gladen's bootstrap draws whole samples, the sample "
    "checks compare one epoch of each and the label plan takes its pilot's variances over the "
    "samples"
)
"""What an estimate over an Inspect log's epochs computes by the samples: every figure."""
BY_REPEAT = (
    "each counts once — the human-only, PPI, PPI++, stratified PPI++ and active PPI++ "
    "intervals take the repeated item as the unit (cluster-robust), Rogan–Gladen's bootstrap "
    "draws it whole, the sample checks compare one copy of each and the label plan takes its "
    "pilot's variances over them"
)
"""What an estimate over items repeated under other ids computes by the repeated item."""


def _by_sample_line(items: int, samples: int) -> str:
    """What ``assay estimate`` says of ``items`` epochs of ``samples`` Inspect samples among the
    pool's items: how it takes them (no figure takes them as independent items)."""
    return (
        f"{items} of the items are epochs of {samples} Inspect samples (the same input and "
        f"reference, judged again): {BY_SAMPLE}; set data.epochs: first to judge one epoch a "
        "sample"
    )


def _repeats_lines(pool: Pool) -> list[str]:
    """What ``assay estimate`` says of the pool's items that are one item with another: the
    epochs of Inspect samples (:func:`_by_sample_line`), or the same text under several ids —
    labelled or judged again, it is no new evidence, and each figure takes it once."""
    items, groups, inspect = pool.repeats
    if not items:
        return []
    if inspect:
        return [_by_sample_line(items, groups)]
    return [
        f"{items} of the items are {groups} items repeated (the same text under other ids, or "
        f"the epochs of an Inspect sample): {BY_REPEAT}"
    ]


def _one_epoch_a_sample(pool: Pool, indices: list[int]) -> list[int]:
    """``indices`` with only the first of the items that are one item among them (the epochs of
    an Inspect sample, one text under several ids: :attr:`Pool.samples`; an item alone is
    kept)."""
    seen: set[str] = set()
    kept = []
    for i in indices:
        sample = pool.samples[i]
        if sample is not None:
            if sample in seen:
                continue
            seen.add(sample)
        kept.append(i)
    return kept


def sample_checks(
    pool: Pool,
    *,
    strata: list[str] | None,
    strata_column: str | None,
    check_columns: list[str],
    accept_shift: bool,
    unstratified: str | None = None,
) -> tuple[list[SampleCheck], list[str]]:
    """Compare the labelled items with the unlabelled ones on the text's length, the judge's
    prediction (scored items), the strata and each check column; Holm-adjust the p-values.
    Adjusted p < ``REFUSE_AT`` refuses (a DataError naming the feature) unless ``accept_shift``
    or the feature is the strata column and stratified PPI++, which allows any allocation, was
    computed (``unstratified`` says why it was not: then every estimate left assumes a uniform
    sample, and the strata refuse like any column); adjusted p < ``WARN_AT`` warns. Returns
    the checks and the warnings in words."""
    from assay.metrics import compare_samples, holm

    epochs = _repeats_lines(pool)
    # an Inspect sample's epochs (the same input, the same reference) are one item to a test of
    # the two sides' distributions: each side's first epoch of each sample (the others, counted
    # as new samples, would make a small difference look certain)
    lab, unl = _one_epoch_a_sample(pool, pool.labelled), _one_epoch_a_sample(pool, pool.unlabelled)
    if not lab or not unl:
        return [], epochs
    features: list[tuple[str, str, list[Any], bool]] = [
        ("text length (characters)", "numeric", [it.length for it in pool.items], True)
    ]
    scored = [i for i, it in enumerate(pool.items) if it.verdict is not None]
    verdicts = pool.prediction in ("verdict", "score")
    features.append(
        (
            f"the judge's prediction ({pool.prediction})",
            "categorical" if verdicts else "numeric",
            [pool.f[i] if i in set(scored) else None for i in range(len(pool.items))],
            True,
        )
    )
    if strata is not None:
        strata_refuse = unstratified is not None
        features.append(
            (f"column {strata_column} (the strata)", "categorical", strata, strata_refuse)
        )
    for name in check_columns:
        values = pool.column(name, "--check-column")
        features.append((f"column {name}", _kind(values), values, True))

    done = []
    for what, kind, values, may_refuse in features:
        left = [values[i] for i in lab if values[i] is not None or kind == "categorical"]
        right = [values[i] for i in unl if values[i] is not None or kind == "categorical"]
        if kind == "categorical":
            left = ["(empty)" if v is None else _hashable(v) for v in left]
            right = ["(empty)" if v is None else _hashable(v) for v in right]
        if not left or not right:
            continue
        done.append((compare_samples(left, right, what=what, kind=kind), may_refuse))  # type: ignore[arg-type]
    adjusted = holm([c.p_value for c, _ in done]) if done else []
    items, _, inspect = pool.repeats
    unit = (
        "items"
        if not items
        else "items (one epoch of each Inspect sample)"
        if inspect
        else "items (one copy of each repeated item)"
    )
    checks, warnings = [], []
    for (c, may_refuse), p_adj in zip(done, adjusted, strict=True):
        finding: Finding = "none"
        if p_adj < REFUSE_AT and may_refuse and not accept_shift:
            raise DataError(
                f"the {len(lab)} labelled {unit} differ from the {len(unl)} others in {c.what} "
                f"({c.test}, Holm-adjusted p = {p_adj:.2g}): they do not look like a random "
                "sample of the same items; label a random sample, or pass --accept-shift to "
                "estimate anyway"
                + (
                    f" ({unstratified}, which would allow a stratified sample)"
                    if c.what.endswith("(the strata)")
                    else ""
                )
            )
        if p_adj < WARN_AT:
            finding = "warning"
            why = (
                "stratified PPI++ allows that; PPI and PPI++ assume a uniform sample"
                if not may_refuse
                else "the estimates assume a uniform random sample: check how they were chosen"
            )
            accepted = " (--accept-shift)" if p_adj < REFUSE_AT and may_refuse else ""
            warnings.append(
                f"the labelled items differ from the others in {c.what} ({c.test}, "
                f"Holm-adjusted p = {p_adj:.2g}){accepted}: {why}"
            )
        checks.append(
            SampleCheck(
                what=c.what,
                test=c.test,
                statistic=c.statistic,
                p_value=c.p_value,
                p_adjusted=float(p_adj),
                n_labelled=c.n_labelled,
                n_unlabelled=c.n_unlabelled,
                finding=finding,
                note=c.note,
            )
        )
    return checks, warnings + epochs


def _kind(values: list[Any]) -> str:
    """A column compared as a number when it holds more than ten distinct numbers, else as
    categories."""
    present = [v for v in values if v is not None]
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in present)
    return "numeric" if present and numbers and len(set(present)) > 10 else "categorical"


def _hashable(value: Any) -> Any:
    return value if isinstance(value, str | int | float | bool) else str(value)


# -- the estimates ---------------------------------------------------------------------------


def estimates(
    pool: Pool,
    *,
    alpha: float,
    strata: list[str] | None,
    weights: list[float] | None,
    seed: int,
    n_resamples: int = 1000,
    population: str | None = None,
) -> tuple[list[MeanEstimate], JudgeOnLabelled | None, list[str]]:
    """Every estimator these data allow: human labels only, PPI, PPI++, stratified PPI++ (with
    ``strata``), Rogan–Gladen (a rate with verdicts, unweighted); the judge's sensitivity and
    specificity on the labelled items; notes on what could not be computed. ``population``:
    the run whose mean is estimated, when the pool holds another's labelled items (a
    --validation run): the strata are weighted by their shares of its items alone."""
    from assay.metrics import (
        human_only_mean,
        ppi_mean,
        stratified_ppi_mean,
    )

    lab, unl = pool.labelled, pool.unlabelled
    if not lab:
        raise DataError(
            f"none of the {len(pool.items)} items has a human label: label a uniform random "
            "sample of them (an empty reference cell is an unlabelled item), or give "
            "--validation LABELLED_RUN"
        )
    if len(lab) < 2:
        raise DataError(
            f"1 of the {len(pool.items)} items has a human label: an interval needs at least 2 "
            "(label more of a uniform random sample)"
        )
    y = np.array([pool.items[i].label for i in lab], dtype=float)
    f = np.asarray(pool.f, dtype=float)
    w = None if weights is None else np.asarray(weights, dtype=float)
    w_lab = None if w is None else w[lab]
    # an Inspect log's epochs of one sample: every standard error takes the samples as the unit
    samples = pool.clusters
    clusters = None if samples is None else [samples[i] for i in lab]
    rows = [human_only_mean(y, alpha=alpha, weights=w_lab, clusters=clusters)]
    if not unl:
        note = (
            f"every item is labelled: the {len(lab)} human labels are the answer, and the "
            "judge's predictions have nothing to add"
        )
        return [dataclasses.replace(rows[0], note=note)], None, [note]
    kind = "probability" if pool.target.rate else "score"
    common = {
        "alpha": alpha,
        "prediction": kind,
        "weights": w_lab,
        "weights_unlabelled": None if w is None else w[unl],
        "clusters": clusters,
        "clusters_unlabelled": None if samples is None else [samples[i] for i in unl],
    }
    ppi = ppi_mean(y, f[lab], f[unl], lam=1.0, **common)  # type: ignore[arg-type]
    ppi_pp = ppi_mean(y, f[lab], f[unl], **common)  # type: ignore[arg-type]
    rows += [pool.described(ppi_pp), pool.described(ppi)]
    notes: list[str] = []
    if strata is not None:
        shares = None
        if population is not None:
            own = [k for k, it in zip(strata, pool.items, strict=True) if it.run == population]
            shares = {k: c / len(own) for k, c in Counter(own).items()}
        try:
            s = stratified_ppi_mean(
                y,
                f[lab],
                f[unl],
                [strata[i] for i in lab],
                [strata[i] for i in unl],
                alpha=alpha,
                prediction=kind,  # type: ignore[arg-type]
                shares=shares,
                clusters=common["clusters"],
                clusters_unlabelled=common["clusters_unlabelled"],
            )
            rows.append(pool.described(s))
        except ValueError as exc:
            notes.append(f"stratified PPI++ not computed: {exc}")
    judge = None
    if pool.target.rate:
        rg, judge, note = _rogan_gladen(
            pool,
            alpha=alpha,
            seed=seed,
            n_resamples=n_resamples,
            samples=samples,
        )
        if rg is not None and w is None:
            rows.append(rg)
        elif w is not None:
            notes.append("Rogan–Gladen not computed: it takes no observation weights")
        if note:
            notes.append(note)
    return rows, judge, notes


def _rogan_gladen(
    pool: Pool, *, alpha: float, seed: int, n_resamples: int, samples: list[str] | None = None
) -> tuple[MeanEstimate | None, JudgeOnLabelled | None, str | None]:
    """Rogan–Gladen on the scored items, the judge's sensitivity and specificity on the
    labelled ones, and a note on what it left out or why it is missing. ``samples``: each pool
    item's Inspect sample, where some hold several epochs (the bootstrap draws whole samples)."""
    from assay.metrics import rogan_gladen_mean

    scored = [k for k, it in enumerate(pool.items) if it.verdict is not None]
    lab = [pool.items[k] for k in scored if pool.items[k].labelled]
    unl = [pool.items[k] for k in scored if not pool.items[k].labelled]
    by_sample: dict[str, list[str] | None] = {"clusters": None, "clusters_unlabelled": None}
    if samples is not None:
        by_sample["clusters"] = [samples[k] for k in scored if pool.items[k].labelled]
        by_sample["clusters_unlabelled"] = [
            samples[k] for k in scored if not pool.items[k].labelled
        ]
    if len(lab) < 2 or not unl:
        return None, None, "Rogan–Gladen not computed: too few scored items on one side"
    y = [it.label for it in lab]
    v = [it.verdict for it in lab]
    positives = [vv for yy, vv in zip(y, v, strict=True) if yy == 1]
    negatives = [vv for yy, vv in zip(y, v, strict=True) if yy == 0]
    judge = JudgeOnLabelled(
        n=len(lab),
        sensitivity=sum(positives) / len(positives) if positives else math.nan,
        specificity=1 - sum(negatives) / len(negatives) if negatives else math.nan,
    )
    rg = rogan_gladen_mean(
        y,
        v,
        [it.verdict for it in unl],
        alpha=alpha,
        seed=seed,
        n_resamples=n_resamples,
        **by_sample,  # type: ignore[arg-type]
    )
    left = sum(it.verdict is None for it in pool.items)
    if left:
        note = f"{left} unscored items left out (Rogan–Gladen needs a verdict)"
        rg = dataclasses.replace(rg, note="; ".join(x for x in (rg.note, note) if x))
    return rg, judge, None


def headline_of(rows: list[MeanEstimate], strata_shifted: bool, queue_complete: bool) -> str | None:
    """The estimator the run leads with: active PPI++ once a label queue is complete, stratified
    PPI++ when the labelled items' strata differ from the others' (PPI++ then assumes what the
    sample is not), the human labels when every item is labelled, else PPI++; None when there
    is no estimate yet (a queue drawn before any label)."""
    methods = [e.method for e in rows]
    if queue_complete and "active_ppi++" in methods:
        return "active_ppi++"
    if strata_shifted and "stratified_ppi++" in methods:
        return "stratified_ppi++"
    if "ppi++" in methods:
        return "ppi++"
    return "human_only" if "human_only" in methods else None


def within_rates(e: MeanEstimate) -> MeanEstimate:
    """A rate's estimate and normal interval cut to [0, 1], where every rate lies, the note
    giving what was cut: with few labels ``value ± z·se`` reaches past them (0.500 [-0.193,
    1.193] on 2 labels), and PPI's correction can put the value itself past them (1.001 when
    every label is 1 and the judge was unsure). The value is cut with its interval, so the
    report never prints an estimate outside its own interval. Cutting changes no coverage —
    the true rate is inside both intervals or neither —; ``std_error`` and ``half_width`` stay
    the normal interval's. An end left infinite by a one-sided bound stays so; one past them by
    a floating-point rounding is brought in without a word."""
    from assay.metrics import FLOAT_ROUNDING

    value, low, high = e.value, e.ci_low, e.ci_high
    past = [x for x in (value, low, high) if math.isfinite(x) and not 0 <= x <= 1]
    if not past:
        return e
    inside = [x if not math.isfinite(x) else min(1.0, max(0.0, x)) for x in (value, low, high)]
    cut = dataclasses.replace(e, value=inside[0], ci_low=inside[1], ci_high=inside[2])
    if all(-FLOAT_ROUNDING <= x <= 1 + FLOAT_ROUNDING for x in past):  # past by a rounding
        return cut
    if not 0 <= value <= 1:
        said = (
            f"its estimate {value:.4f} and normal interval [{fmt(low)}, {fmt(high)}] reach past "
            f"the rates 0 to 1: the estimate is cut to {fmt(inside[0])} with its interval"
        )
    else:
        said = (
            f"its normal interval [{fmt(low)}, {fmt(high)}] reaches past the rates 0 to 1: "
            "cut to them"
        )
    return dataclasses.replace(
        cut,
        note="; ".join(
            [
                *([e.note] if e.note else []),
                said + " (with this few labels the normal approximation is rough)",
            ]
        ),
    )


def sampling_text(
    pool: Pool, headline: str | None, strata_column: str | None, validation: bool
) -> str:
    """The headline's assumption about which items were labelled, in words."""
    n_lab, n = len(pool.labelled), len(pool.items)
    if headline == "active_ppi++":
        return (
            "the label queue's items were drawn once, each with its recorded probability π, "
            "before any label was seen, and every drawn item was labelled (a fixed budget); the "
            "items labelled before were a uniform random sample"
        )
    if headline == "stratified_ppi++":
        return (
            f"within each stratum of {strata_column}, the labelled items are a uniform random "
            "sample of its items"
        )
    if validation:
        return (
            f"the {n_lab} labelled items (the --validation run's) are a uniform random sample "
            f"of the same population as the {n - n_lab} items of the run"
        )
    return f"the {n_lab} labelled items are a uniform random sample of the {n} items"


# -- the label plan ----------------------------------------------------------------------------


def plan_labels(
    pool: Pool,
    *,
    alpha: float,
    target_half_width: float | None,
    budget: int | None,
    separate_labels: bool = False,
    weights: list[float] | None = None,
) -> list[PlanRow]:
    """From the labelled items as a pilot: the labels each estimator needs for the target
    half-width, and the half-width the budget buys (human-only and PPI++ with the pool's
    prediction; Rogan–Gladen with the verdicts, for a rate, unless weighted). The labels are
    drawn from the pool's items, each one labelled leaving one prediction fewer; with
    ``separate_labels`` (a --validation run) from another sample, next to all of the run's
    predictions. With observation ``weights`` the pilot is weighted as the estimates are (its
    moments those of ``w·y`` and ``w·f``), the labels to come weighted like the pilot's. Over an
    Inspect log's epochs the pilot's variances are those over the samples, as the estimates'
    standard errors are (:func:`~assay.metrics.pilot_moments`'s clusters)."""
    from assay.metrics import half_width_for_labels, labels_needed, pilot_moments

    lab, unl = pool.labelled, pool.unlabelled
    samples = pool.clusters

    def clusters(lab: list[int], unl: list[int]) -> dict[str, Any]:
        if samples is None:
            return {}
        return {
            "clusters": [samples[i] for i in lab],
            "clusters_unlabelled": [samples[i] for i in unl],
        }

    if len(lab) < 2 or not unl:
        raise DataError(
            "--target-half-width / --budget plan from a pilot: at least 2 labelled items and "
            "one unlabelled"
        )

    w = None if weights is None else np.asarray(weights, dtype=float)

    def moments(y: list, f: Any, f_u: Any, **weighted: Any) -> tuple[Any, dict[str, int]]:
        try:
            pilot = pilot_moments(y, f, f_u, **weighted)
        except ValueError as exc:
            raise DataError(f"--target-half-width / --budget: {exc}") from None
        where = {"n_unlabelled": len(f_u)} if separate_labels else {"n_items": len(y) + len(f_u)}
        return pilot, where

    f = np.asarray(pool.f, dtype=float)
    y = [pool.items[i].label for i in lab]
    by_weight = {} if w is None else {"weights": w[lab], "weights_unlabelled": w[unl]}
    by_weight |= clusters(lab, unl)
    pilots = [(*moments(y, f[lab], f[unl], **by_weight), ("human_only", "ppi++"))]
    if pool.target.rate and w is None:  # Rogan–Gladen takes no weights: not computed, not planned
        scored_lab = [i for i in lab if pool.items[i].verdict is not None]
        scored_unl = [i for i in unl if pool.items[i].verdict is not None]
        if len(scored_lab) >= 2 and scored_unl:
            verdict_pilot = moments(
                [pool.items[i].label for i in scored_lab],
                [pool.items[i].verdict for i in scored_lab],
                [pool.items[i].verdict for i in scored_unl],
                **clusters(scored_lab, scored_unl),
            )
            pilots.append((*verdict_pilot, ("rogan_gladen",)))
    plans: list[PlanRow] = []
    if target_half_width is not None:
        for pilot, where, methods in pilots:
            needed = labels_needed(pilot, target_half_width, alpha=alpha, **where)
            plans += [PlanRow(given="half-width", plan=p) for p in needed if p.method in methods]
    if budget is not None:
        for pilot, where, methods in pilots:
            bought = half_width_for_labels(pilot, budget, alpha=alpha, **where)
            plans += [PlanRow(given="labels", plan=p) for p in bought if p.method in methods]
    return plans


def _summary(
    pool: Pool,
    rows: list[MeanEstimate],
    checks: list[SampleCheck],
    warnings: list[str],
    *,
    run: str,
    judge: str,
    config_hash: str,
    scale: str,
    alpha: float,
    validation: str | None = None,
    strata_column: str | None = None,
    judge_on_labelled: JudgeOnLabelled | None = None,
    queue: QueueState | None = None,
) -> EstimateSummary:
    """The summary of the estimates of a pool: the headline chosen and put first, the others in
    the report's order, and the assumption in words."""
    shifted = any(c.finding != "none" and c.what.endswith("(the strata)") for c in checks)
    headline = headline_of(rows, shifted, queue is not None and queue.complete)
    rows = sorted(rows, key=lambda e: (e.method != headline, _ORDER.index(e.method)))
    if pool.target.rate:
        rows = [within_rates(e) for e in rows]
    if headline is None:
        warnings = [
            *warnings,
            "no estimate yet: label the queue's items, then read it back with --queue",
        ]
    return EstimateSummary(
        run=run,
        validation=validation,
        judge=judge,
        config_hash=config_hash,
        scale=scale,
        target=pool.target.name,
        mean_score=not pool.target.rate,
        prediction=pool.prediction,
        prediction_source=pool.prediction_source,
        n_items=len(pool.items),
        n_labelled=len(pool.labelled),
        n_unlabelled=len(pool.unlabelled),
        n_validation=sum(it.run == validation for it in pool.items),
        unscored=pool.unscored,
        stand_in=pool.stand_in,
        without_probability=pool.without_probability,
        alpha=alpha,
        headline=headline,
        estimates=rows,
        sampling=sampling_text(pool, headline, strata_column, validation is not None),
        checks=checks,
        warnings=warnings,
        judge_on_labelled=judge_on_labelled,
        queue=queue,
    )


def estimate_items(
    items: list[Item],
    judgments: dict[str, Judgment],
    labels: dict[str, float],
    *,
    target: Target,
    scale: Scale,
    run: str,
    judge: str,
    config_hash: str,
    alpha: float = 0.05,
    seed: int = 0,
) -> EstimateSummary:
    """The estimates of ``target`` over ``items`` judged ``judgments``, a person's label
    (``labels``: the target's value by item id) on some: what ``assay estimate`` computes for
    an evaluate run, for another runner's items (a ToolEmu run's trajectories and their
    annotations). The sample is checked and differences are warned of, never refused: a
    report shows them."""
    data = {run: run}
    pool = pool_from(
        [pool_item(it, judgments[it.id], labels.get(it.id), target, scale, run) for it in items],
        target,
        None,
        data,
    )
    checks, warnings = sample_checks(
        pool, strata=None, strata_column=None, check_columns=[], accept_shift=True
    )
    rows, judge_on_labelled, notes = estimates(
        pool, alpha=alpha, strata=None, weights=None, seed=seed
    )
    return _summary(
        pool,
        rows,
        checks,
        warnings + notes,
        run=run,
        judge=judge,
        config_hash=config_hash,
        scale=scale.describe(),
        alpha=alpha,
        judge_on_labelled=judge_on_labelled,
    )


# -- the command -------------------------------------------------------------------------------


def refuse_options(
    *,
    alpha: float,
    validation: str | Path | None,
    queue: str | Path | None,
    suggest: int | None,
    strata: str | None,
    weights: str | None,
) -> None:
    """Refuse, in one line each, an ``--alpha`` outside (0, 1) and the options that do not go
    together."""
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0 < alpha < 1:
        raise ConfigError(f"--alpha {alpha}: an error level strictly between 0 and 1 (e.g. 0.05)")
    if strata is not None and weights is not None:
        raise ConfigError("--weights with --strata: stratified PPI++ takes no observation weights")
    if queue is not None and (suggest is not None or validation is not None):
        raise ConfigError(
            "--queue reads a label queue's verdicts: without --suggest or --validation"
        )
    if suggest is not None and validation is not None:
        raise ConfigError(
            "--suggest with --validation: a queue weighs each label by the chance its item of "
            "RUN had of being labelled, and the --validation run's labels are of other items; "
            "draw the queue without --validation (RUN's own labels are its first phase)"
        )
    if weights is not None and (suggest is not None or queue is not None):
        raise ConfigError("--weights with active labelling (--suggest, --queue): not supported")


def estimate(
    run: str | Path,
    validation: str | Path | None = None,
    *,
    positive: str | None = None,
    threshold: int | None = None,
    prediction: PredictionChoice | None = None,
    strata: str | None = None,
    weights: str | None = None,
    check_columns: list[str] | None = None,
    accept_shift: bool = False,
    alpha: float = 0.05,
    target_half_width: float | None = None,
    budget: int | None = None,
    suggest: int | None = None,
    queue: str | Path | None = None,
    seed: int = 0,
    n_resamples: int = 1000,
    require_certificate: list[str] | None = None,
    workdir: Path | None = None,
    tracking_uri: str | None = None,
    output_dir: str | None = None,
) -> EstimateSummary:
    """The mean of the human label over ``run``'s items (a rate of the event ``positive`` /
    ``score < threshold``, or the mean score) from its labelled items (or ``validation``'s) and
    the judge's predictions on the rest; see the module. With ``require_certificate``, only for
    a judge config with an admitted certificate in the ledger of ``workdir``'s runs folder
    ``output_dir`` (default ``runs``; a run made for another is refused without it). The
    estimate run is written in ``output_dir``, else in the runs folder ``run``'s config names."""
    from assay.decisions._estimate_report import write_reports

    workdir = Path(workdir or Path.cwd())
    refuse_options(
        alpha=alpha,
        validation=validation,
        queue=queue,
        suggest=suggest,
        strata=strata,
        weights=weights,
    )
    runs, config, hashes = _read(
        run, validation, require_certificate, workdir, threshold, output_dir
    )
    label_queue = None
    if queue is not None:
        label_queue = LabelQueue(Path(queue))
        label_queue.check_source(hashes[0])
    scale = config.judge.scale
    assert scale is not None
    target = target_of(scale, positive, threshold if threshold is not None else config.threshold)
    pool = pool_of(runs, target, scale, prediction)
    twice = []
    if validation is not None:
        shared = same_texts(pool, str(validation))
        if shared:
            twice.append(
                f"{shared} of the --validation run's labelled items have the texts of items of "
                f"{run}: each counts twice, its label among the validation's and its prediction "
                "among the run's (two runs are two samples, never merged)"
            )
    strata_values = pool.strata(strata) if strata is not None else None
    weight_values = pool.weights(weights) if weights is not None else None
    if (suggest is not None or queue is not None) and len(pool.labelled) < 2:
        # active labelling may start from no label: the queue's draws are the labels
        rows, judge = [], None
        notes = [
            f"{len(pool.labelled)} items were labelled before the queue: the estimates from a "
            "uniform sample need at least 2"
        ]
    else:
        rows, judge, notes = estimates(
            pool,
            alpha=alpha,
            strata=strata_values,
            weights=weight_values,
            seed=seed,
            n_resamples=n_resamples,
            population=None if validation is None else str(run),
        )
    unstratified = None
    if strata is not None and not any(e.method == "stratified_ppi++" for e in rows):
        unstratified = next(
            (n for n in notes if n.startswith("stratified PPI++ not computed")),
            "stratified PPI++ not computed",
        )
    checks, warnings = sample_checks(
        pool,
        strata=strata_values,
        strata_column=strata,
        check_columns=list(check_columns or []),
        accept_shift=accept_shift,
        unstratified=unstratified,
    )
    queue_state, queue_records, queue_key = None, None, None
    if suggest is not None:
        queue_state, queue_records = draw_queue(pool, scale, suggest, seed, hashes[0])
    if label_queue is not None:
        active, queue_state, queue_key = active_estimate(pool, label_queue, hashes[0], alpha)
        if active is not None:
            rows.append(active)
        else:
            notes.append("active PPI++ not computed yet: fewer than 2 labels in")
    plans = (
        plan_labels(
            pool,
            alpha=alpha,
            target_half_width=target_half_width,
            budget=budget,
            separate_labels=validation is not None,
            weights=weight_values,
        )
        if target_half_width is not None or budget is not None
        else []
    )
    est_config = EstimateConfig(
        name=f"{config.name}-estimate",
        output_dir=output_dir or config.output_dir,
        tracking=config.tracking,
        run=str(run),
        validation=None if validation is None else str(validation),
        queue=None if queue is None else str(queue),
        target=target.name,
        prediction=prediction,
        strata=strata,
        weights=weights,
        check_columns=list(check_columns or []),
        accept_shift=accept_shift,
        alpha=alpha,
        target_half_width=target_half_width,
        budget=budget,
        suggest=suggest,
        seed=seed,
    )
    summary = _summary(
        pool,
        rows,
        checks,
        warnings + twice + notes,
        run=str(run),
        judge=config.judge.name,
        config_hash=config.judge.config_hash(),
        scale=scale.describe(),
        alpha=alpha,
        validation=None if validation is None else str(validation),
        strata_column=strata,
        judge_on_labelled=judge,
        queue=queue_state,
    )
    summary.plan = plans
    summary.plan_target_half_width = target_half_width
    summary.plan_budget = budget
    summary.plan_weights = weights if plans else None
    run_hash = stable_hash(
        {
            "runs": hashes,
            "queue": queue_key,
            "options": est_config.model_dump(
                mode="json",
                exclude={"name", "output_dir", "tracking", "run", "validation", "queue"},
            ),
            "n_resamples": n_resamples,
        }
    )
    with Run.open(
        est_config, run_hash, command="estimate", workdir=workdir, tracking_uri=tracking_uri
    ) as out:
        if out.finished:  # the same runs and options: nothing new to write
            done = EstimateSummary.model_validate(out.store.read_json("metrics.json"))
            # logged now if an earlier call left it out (tracking off) and this one logs
            done.mlflow_run_id = out.log_finished(lambda: _tracked(est_config, done, out.run_hash))
            return done
        summary.run_dir = str(out.dir)
        if queue_state is not None and queue_state.role == "drawn":
            queue_state.queue_dir = str(out.dir)
            out.store.write_text(LABEL_QUEUE, "".join(json.dumps(r) + "\n" for r in queue_records))
        out.store.write_text(ITEMS, "".join(json.dumps(r) + "\n" for r in pool.records()))
        out.store.write_json("metrics.json", summary.model_dump(mode="json"))
        write_reports(out.dir)
        sealed = (*SEALED, ITEMS, *([LABEL_QUEUE] if queue_records is not None else []))
        summary.mlflow_run_id = out.finish(
            _tracked(est_config, summary, out.run_hash), sealed=sealed
        )
    return summary


_ORDER = (
    "ppi++",
    "ppi",
    "stratified_ppi++",
    "active_ppi++",
    "active_ppi",
    "human_only",
    "rogan_gladen",
)


def metric_key(method: str) -> str:
    """An estimator's name as an MLflow key (``ppi++`` → ``ppi_pp``)."""
    return method.replace("++", "_pp")


def _tracked(config: EstimateConfig, s: EstimateSummary, run_hash: str) -> TrackedRun:
    metrics: dict[str, float] = {
        "n_items": float(s.n_items),
        "n_labelled": float(s.n_labelled),
        "n_unlabelled": float(s.n_unlabelled),
    }
    for e in s.estimates:
        key = metric_key(e.method)
        values = {
            "value": e.value,
            "ci_low": e.ci_low,
            "ci_high": e.ci_high,
            "half_width": e.half_width,
            "std_error": e.std_error,
            "effective_labels": e.effective_labels,
            "lam": e.lam,
        }
        for name, v in values.items():
            if v is not None and math.isfinite(v):
                metrics[f"{key}.{name}"] = float(v)
    best = s.best
    if best is not None:
        for name, v in (("estimate", best.value), ("estimate_ci_low", best.ci_low)):
            if math.isfinite(v):
                metrics[name] = float(v)
        if math.isfinite(best.ci_high):
            metrics["estimate_ci_high"] = float(best.ci_high)
    for c in s.checks:
        slug = c.what.split(" (")[0].replace(" ", "_")
        metrics[f"check.{slug}.p_adjusted"] = c.p_adjusted
    for row in s.plan:
        p, key = row.plan, metric_key(row.plan.method)
        if row.given == "half-width" and p.n_labels is not None:
            metrics[f"plan.{key}.labels_needed"] = float(p.n_labels)
        if row.given == "labels" and math.isfinite(p.half_width):
            metrics[f"plan.{key}.half_width"] = p.half_width
    if s.queue is not None:
        metrics |= {
            "queue.drawn": float(s.queue.drawn),
            "queue.labelled": float(s.queue.labelled),
            "queue.pending": float(s.queue.pending),
        }
    params = {
        "run": s.run,
        "target": s.target,
        "prediction": s.prediction,
        "prediction_source": s.prediction_source,
        "alpha": str(s.alpha),
        "headline": s.headline or "none",
        "judge.config_hash": s.config_hash,
        "run_hash": run_hash,
    }
    for key in ("validation", "queue", "strata", "weights"):
        value = getattr(config, key)
        if value is not None:
            params[key] = str(value)
    return TrackedRun(
        name=config.name,
        params=params,
        metrics=metrics,
        tags={"assay.judge": s.judge, "assay.scale": s.scale, "assay.config_hash": s.config_hash},
    )
