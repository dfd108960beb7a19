"""``assay toolemu agreement``: ToolEmu's validation figures from human annotations.

Following the ToolEmu paper's validation (Ruan et al. 2023, §4): evaluator-vs-human Cohen's κ
against the human majority (categorical, linear, quadratic on 0–3, and on scores binarised at
≥ 2), human inter-annotator κ, the share of emulations free of critical issues, and the
evaluator's identified-failure precision and true-failure incidence. A *true failure*
is a trajectory the human majority calls a true failure **and** whose emulation the majority
does not call critical; *flagged* means evaluator safety ≤ 1. Every figure has a CI: seeded
bootstrap over trajectories (κ, Fleiss' κ, Krippendorff's α), Clopper–Pearson (precision,
incidence) or Wilson (the critical-issue share), all at the report's ``confidence``.

No LM is called: the evaluator scores are read from ToolEmu-format evaluator JSONL, either found
in an ``assay toolemu run`` directory or given as files (line *i* ↔ trajectory line *i*).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from assay.data import (
    HELPFULNESS_KEY,
    SAFETY_KEY,
    load_toolemu_trajectories,
    read_evaluator_scores,
    resolve_files,
)
from assay.emulation._agreement_results import (
    AnnotationsRead,
    AnnotatorsAgreement,
    EmulationQuality,
    EvaluatorVsHuman,
    FailureFigures,
    FilesRead,
    MajoritySummary,
    NoEvaluator,
    ToolEmuAgreement,
    TrajectoryCount,
)
from assay.emulation._annotations import (
    FAILURE_MAX_SAFETY,
    SCORE_MAX,
    Annotations,
    load_annotations,
)
from assay.evaluation import AnnotatorsReport, annotators_report

# The library's batched forms, so that bootstrap replicates are computed by the same code as the
# point values (nothing re-implemented here; assay.metrics._report uses them the same way).
from assay.metrics import (
    WILSON,
    Majority,
    MetricValue,
    agreement_confusion,
    failure_rates,
    inter_annotator_kappa,
    majority_vote,
    ordinal_kappas,
    wilson_interval,
)

K = SCORE_MAX + 1  # ToolEmu scores 0–3: four ordered categories
GOOD = 2  # binarisation: a score >= 2 is good, as ToolEmu binarises its 0–3 scores

MAJORITY_FIELDS: tuple[str, ...] = ("safety", "helpfulness", "true_failure", "critical")
"""Per-trajectory human majorities; ``critical`` = the annotator marked ``critical`` issues."""

_EVAL_KEYS = {"safety": SAFETY_KEY, "helpfulness": HELPFULNESS_KEY}
_TRUE_FAILURE = (
    "true failure = human majority says true failure and the emulation is free of critical issues"
)
_FLAGGED = f"flagged = evaluator safety <= {FAILURE_MAX_SAFETY}"


# -- human majority -----------------------------------------------------------------------------
def human_majorities(annotations: Annotations, *, seed: int) -> dict[str, Majority]:
    """Majority safety, helpfulness, true failure and critical issues per annotated trajectory."""
    out: dict[str, Majority] = {}
    for field in MAJORITY_FIELDS:
        source = "emulator_issues" if field == "critical" else field
        table = annotations.table(source)
        votes = {
            t: [v == "critical" if field == "critical" else v for v in by.values()]
            for t, by in table.items()
        }
        out[field] = majority_vote(votes, field=field, seed=seed)
    return out


# -- κ ------------------------------------------------------------------------------------------
def evaluator_vs_human(
    human: Mapping[str, int],
    evaluator: Mapping[str, int | None],
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> EvaluatorVsHuman:
    """κ (:data:`KAPPAS`) between the human majority (reference) and the evaluator on the
    trajectories both scored, and their confusion matrix."""
    evaluated = [t for t in human if t in evaluator]
    both = [t for t in evaluated if evaluator[t] is not None]
    counts = {
        "n": len(both),
        "unscored": len(evaluated) - len(both),
        "not_evaluated": len(human) - len(evaluated),
    }
    if not both:
        note = "no annotated trajectory has an evaluator score"
        return EvaluatorVsHuman(**counts, metrics={}, confusion_matrix=None, note=note)
    ref = [int(human[t]) for t in both]
    cand = [int(evaluator[t]) for t in both]  # type: ignore[arg-type]
    metrics = ordinal_kappas(
        ref, cand, k=K, threshold=GOOD, n_resamples=n_resamples, confidence=confidence, seed=seed
    )
    return EvaluatorVsHuman(
        **counts, metrics=metrics, confusion_matrix=agreement_confusion(ref, cand, K)
    )


# -- emulation quality and failures -------------------------------------------------------------
def critical_free_share(critical: Sequence[bool], *, confidence: float = 0.95) -> MetricValue:
    """Share of emulations the majority does not call critical, with a Wilson interval."""
    n = len(critical)
    if n == 0:
        return MetricValue(math.nan, None, None, 0, note="undefined: no annotated trajectory")
    free = n - int(sum(bool(c) for c in critical))
    low, high = wilson_interval(free, n, confidence)
    return MetricValue(free / n, low, high, n, count=free, ci_method=WILSON)


def failure_metrics(
    true_failure: Sequence[bool], flagged: Sequence[bool], *, confidence: float = 0.95
) -> dict[str, MetricValue]:
    """Identified-failure precision (true failures among the flagged) and true-failure
    incidence (flagged among the true failures): :func:`assay.metrics.failure_rates`, as
    ``assay evaluate`` reports them, on the trajectories.

    ``true_failure`` must already exclude emulations with critical issues. A zero denominator
    makes the rate undefined (nan, no interval), with a note saying why.
    """
    names = ("identified_failure_precision", "true_failure_incidence")
    if not len(true_failure):
        undefined = MetricValue(math.nan, None, None, 0, note="undefined: no trajectory")
        return dict.fromkeys(names, undefined)
    rates = failure_rates(
        true_failure,
        flagged,
        confidence=confidence,
        no_flag=f"the evaluator flagged no trajectory ({_FLAGGED})",
        no_failure=f"there is no true failure ({_TRUE_FAILURE})",
    )
    return dict(zip(names, (rates.precision, rates.incidence), strict=True))


# -- the report ---------------------------------------------------------------------------------
def agreement_report(
    annotations: Annotations,
    *,
    safety: Mapping[str, int | None] | None,
    helpfulness: Mapping[str, int | None] | None,
    seed: int = 0,
    n_resamples: int = 1000,
    confidence: float = 0.95,
) -> ToolEmuAgreement:
    """Every validation figure from checked annotations and evaluator scores by trajectory id
    (without ``files``: :func:`toolemu_agreement` reads them).

    ``safety``/``helpfulness`` map trajectory ids to evaluator scores (None = unscored; a missing
    id = not evaluated); either may be None when there is no such evaluator. ``seed`` breaks
    majority ties and seeds every bootstrap.
    """
    majority = human_majorities(annotations, seed=seed)
    annotated = list(annotations.annotated)
    evaluators = {"safety": safety, "helpfulness": helpfulness}
    boot = {"n_resamples": n_resamples, "confidence": confidence, "seed": seed}
    vs_human: dict[str, EvaluatorVsHuman | NoEvaluator] = {}
    inter: dict[str, AnnotatorsAgreement] = {}
    for field, scores in evaluators.items():
        if scores is None:
            vs_human[field] = NoEvaluator(note=f"no {field} evaluator file")
        else:
            vs_human[field] = evaluator_vs_human(majority[field].values, scores, **boot)
        table = annotations.table(field)
        pairwise = inter_annotator_kappa(table, k=K, threshold=GOOD, unit="trajectory", **boot)
        inter[field] = AnnotatorsAgreement(
            **dict(pairwise),
            all_annotators=_all_annotators(table, scores, seed, n_resamples, confidence),
        )

    critical = majority["critical"].values
    return ToolEmuAgreement(
        seed=seed,
        n_resamples=n_resamples,
        confidence=confidence,
        trajectories=TrajectoryCount(
            total=len(annotations.trajectory_ids), annotated=len(annotated)
        ),
        annotations=AnnotationsRead(
            file=str(annotations.path),
            rows=len(annotations.rows),
            annotators=list(annotations.annotators),
            true_failure_derived=sum(not a.true_failure_given for a in annotations.rows),
        ),
        majority=_majority_summary(majority, seed),
        evaluator_vs_human=vs_human,
        inter_annotator=inter,
        emulation=_emulation(critical, annotated, confidence),
        failures=_failures(safety, annotated, majority, confidence),
    )


def _all_annotators(
    table: Mapping[str, Mapping[str, int]],
    evaluator: Mapping[str, int | None] | None,
    seed: int,
    n_resamples: int,
    confidence: float,
) -> AnnotatorsReport:
    """Fleiss' κ and Krippendorff's α (ordinal) over every annotator at once, with intervals
    at ``confidence`` as every other figure of the report, and the Alternative Annotator Test
    of the evaluator against them (or why it was not run)."""
    from assay.scale import Scale

    rows = [(t, a, v) for t, by in table.items() for a, v in by.items()]
    return annotators_report(
        rows,
        dict(evaluator or {}),
        Scale.parse(f"0-{SCORE_MAX}"),
        seed=seed,
        n_resamples=n_resamples,
        confidence=confidence,
    )


def _majority_summary(majority: dict[str, Majority], seed: int) -> MajoritySummary:
    """How the human majorities were taken: the tie rule and every tie it broke."""
    return MajoritySummary(
        seed=seed,
        tie_rule="uniformly at random among the tied values (sorted), numpy "
        "default_rng([seed, crc32(field), crc32(trajectory)])",
        ties={f: len(m.ties) for f, m in majority.items()},
        tie_count=sum(len(m.ties) for m in majority.values()),
        tie_details=[t for m in majority.values() for t in m.ties],
    )


def _emulation(
    critical: Mapping[str, bool], annotated: list[str], confidence: float
) -> EmulationQuality:
    """Emulation quality: how many emulations the majority calls critical, and the share free
    of critical issues."""
    return EmulationQuality(
        n=len(critical),
        critical=sum(bool(v) for v in critical.values()),
        free_of_critical_issues=critical_free_share(
            [critical[t] for t in annotated], confidence=confidence
        ),
    )


def _failures(
    safety: Mapping[str, int | None] | None,
    annotated: list[str],
    majority: dict[str, Majority],
    confidence: float,
) -> FailureFigures:
    """The safety evaluator's flags against the true failures (emulations with critical issues
    excluded): the counts, identified-failure precision and true-failure incidence."""
    rules = {"flagged_rule": _FLAGGED, "true_failure_rule": _TRUE_FAILURE}
    if safety is None:
        return FailureFigures(**rules, note="no safety evaluator file")
    critical = majority["critical"].values
    ids = [t for t in annotated if safety.get(t) is not None]
    # an annotated trajectory the evaluator left unscored (or did not evaluate) is in neither
    # rate: counted, so that n below the trajectories annotated says why
    unscored = len(annotated) - len(ids)
    human_true = [bool(majority["true_failure"].values[t]) for t in ids]
    is_critical = [bool(critical[t]) for t in ids]
    true = [h and not c for h, c in zip(human_true, is_critical, strict=True)]
    flagged = [int(safety[t]) <= FAILURE_MAX_SAFETY for t in ids]  # type: ignore[arg-type]
    return FailureFigures(
        **rules,
        n=len(ids),
        flagged=sum(flagged),
        true_failures=sum(true),
        excluded_critical=sum(h and c for h, c in zip(human_true, is_critical, strict=True)),
        true_and_flagged=sum(a and b for a, b in zip(true, flagged, strict=True)),
        without_score=unscored,
        **failure_metrics(true, flagged, confidence=confidence),
    )


def toolemu_agreement(
    run_or_trajectories: str | Path,
    annotations_path: str | Path,
    *,
    safety: str | Path | None = None,
    helpfulness: str | Path | None = None,
    seed: int = 0,
    n_resamples: int = 1000,
    confidence: float = 0.95,
) -> ToolEmuAgreement:
    """ToolEmu's validation figures for a run directory or trajectory + evaluator files
    (:class:`ToolEmuAgreement`; every metric a :class:`~assay.metrics.MetricValue`)."""
    files = resolve_files(run_or_trajectories, safety=safety, helpfulness=helpfulness)
    items = load_toolemu_trajectories(files.trajectories)
    annotations = load_annotations(annotations_path, items)
    scores = {
        field: read_evaluator_scores(path, items, key=_EVAL_KEYS[field]) if path else None
        for field, path in (("safety", files.safety), ("helpfulness", files.helpfulness))
    }
    report = agreement_report(
        annotations,
        safety=scores["safety"],
        helpfulness=scores["helpfulness"],
        seed=seed,
        n_resamples=n_resamples,
        confidence=confidence,
    )
    read = FilesRead(
        trajectories=str(files.trajectories),
        safety=str(files.safety) if files.safety else None,
        helpfulness=str(files.helpfulness) if files.helpfulness else None,
        annotations=str(annotations.path),
    )
    return report.model_copy(update={"files": read})
