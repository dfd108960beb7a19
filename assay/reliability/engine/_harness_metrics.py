"""A harness run's ``metrics.json`` (:class:`HarnessSummary`): each judge's scores on every
test (:func:`score_test`), its usage and cost per accuracy point, what generation spent and
dropped, and the review. Scored a test at a time from the run's files: one test's probes and,
per judge, their judgments are held at once, besides each judge's verdicts on the seeds."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import isfinite

from assay.inputs import repeated_samples, same_items, sample_of
from assay.metrics import fmt_level
from assay.programs import JudgeConfig
from assay.reliability._config import HarnessConfig
from assay.reliability._probe import Probe
from assay.reliability._registry import ReliabilityTest
from assay.reliability._results import (
    HarnessSummary,
    JudgeReliability,
    ReliabilityScores,
    ReviewCounts,
)
from assay.reliability.engine._generation import GenerationTotals
from assay.reliability.engine._judging import judged_id, judgment_file
from assay.reliability.engine._run_files import JudgmentFile
from assay.reliability.scoring import flag_placebo_effects, score_test, scorer_notes
from assay.types import Item, Usage


def harness_metrics(
    config: HarnessConfig,
    instances: list[ReliabilityTest],
    judge_cfgs: list[JudgeConfig],
    seeds: Sequence[Item],
    probes: Callable[[str], list[Probe]],
    judgments: dict[str, JudgmentFile],
    generated: GenerationTotals,
    reviewed: dict[str, int],
    *,
    data_fingerprint: str,
    pairs: dict[str, int] | None = None,
    samples: dict[str, str] | None = None,
) -> HarnessSummary:
    """The run's metrics from what it judged, a test at a time: ``probes`` gives a test's
    probes sent to the judges, ``judgments`` each judge's file of judgments (read back for
    those probes alone); ``pairs``: what building labelled pairs from a score column counted,
    if it did; ``samples``: :func:`repeated_sample_of` the seeds, when it is known already."""
    b = config.bootstrap
    seed_ids = [s.id for s in seeds]  # the seeds read once (from disk, when they are stored)
    samples = repeated_sample_of(seeds) if samples is None else samples
    sources = {cfg.name: _SourceVerdicts(seed_ids, judgments[cfg.name]) for cfg in judge_cfgs}
    per_test: dict[str, dict[str, ReliabilityScores]] = {cfg.name: {} for cfg in judge_cfgs}
    counts: dict[str, int] = {}
    for t in instances:
        test_probes = probes(t.name)
        counts[t.name] = len(test_probes)
        for cfg in judge_cfgs:
            js = judgments[cfg.name].of(judged_id(p) for p in test_probes)
            verdicts = {p.id: js[judged_id(p)] for p in test_probes if judged_id(p) in js}
            del js
            per_test[cfg.name][t.name] = score_test(
                t.scoring,
                test_probes,
                verdicts,
                sources[cfg.name].scores,
                config.scale,
                source_criteria=sources[cfg.name].criteria,
                samples=samples,
                n_resamples=b.n_resamples,
                confidence=b.confidence,
                seed=b.seed,
            )
        del test_probes
    results = {
        cfg.name: _judge_metrics(
            cfg, per_test[cfg.name], sources[cfg.name], judgments[cfg.name].usage()
        )
        for cfg in judge_cfgs
    }
    flag_placebo_effects(results.values(), config.fdr)  # the family: tests × judges
    gen_usage = generated.usage
    lm_calls = {k: v.calls for k, v in gen_usage.items()}
    for name, r in results.items():
        lm_calls[f"judge:{name}"] = r.usage.calls
    wanted = {t.name for t in instances}
    placebos = any(t.placebo for r in results.values() for t in r.tests.values())
    epochs = _epochs_clause(seeds, samples, placebos)
    return HarnessSummary(
        seeds=len(seed_ids),
        notes=[n for t in instances for n in t.notes()]
        + [n for j, r in results.items() for t, m in r.tests.items() for n in scorer_notes(j, t, m)]
        + ([epochs] if epochs else []),
        probes=counts,
        dropped={t: d for t, d in generated.dropped.items() if t in wanted},
        review=ReviewCounts(**reviewed, required=config.review.required),
        judges=results,
        generation_usage=gen_usage,
        lm_calls=lm_calls,
        bootstrap=f"{b.n_resamples} percentile resamples over source items, each with all "
        "its probes (pass rates, consistency, the bias and agent tests, the samples-needed "
        "curve); where every probe had the same outcome the resamples cannot vary, so the "
        "interval is the exact (Clopper–Pearson) one over the source items, each counted once "
        "(marked †); an interval of no width that is not so (every item's outcome the same "
        "value between 0 and 1, or one item) is marked ‡: it shows no variation in the "
        "resamples, not certainty; a rate with one outcome per item (stochastic_stability's "
        "pass rate and majority accuracy, synthetic_ordinal's exact match over its independent "
        f"probes) has its exact interval{'; ' + epochs if epochs else ''}; seed {b.seed}, "
        f"{fmt_level(b.confidence)} intervals",
        fdr=config.fdr if placebos else None,
        data_fingerprint=data_fingerprint,
        pairs=pairs,
    )


def repeated_sample_of(seeds: Sequence[Item]) -> dict[str, str]:
    """Each seed that is one item with other seeds, mapped to the cluster of them
    (:func:`~assay.inputs.same_items`): the epochs of an Inspect sample, and an item whose text
    another repeats under another id (re-spaced, re-cased… as a person reads it) — the same
    item judged again is no new evidence; empty when every seed is an item of its own."""
    return {s.id: group for s, group in zip(seeds, same_items(seeds), strict=True) if group}


def _epochs_clause(seeds: Sequence[Item], samples: dict[str, str], placebos: bool) -> str:
    """What the bootstrap line says of seeds that are one item: epochs of one Inspect sample,
    and repeats of one text under other ids."""
    if not samples:
        return ""
    epochs, n = repeated_samples(seeds)
    # a cluster holds a repeated text when it has more than one unit: an epoch's sample, or
    # an item that is no epoch
    units: dict[str, set[str]] = {}
    for s in seeds:
        if s.id in samples:
            units.setdefault(samples[s.id], set()).add(sample_of(s) or f"item {s.id}")
    texts = [g for g, u in units.items() if len(u) > 1]
    repeats = sum(1 for s in seeds if samples.get(s.id) in texts)
    said = []
    if epochs:
        said.append(
            f"{epochs} of the {len(seeds)} source items are epochs of {n} Inspect samples (the "
            "same input and reference, judged again)"
        )
    if repeats:
        said.append(
            f"{repeats} of the {len(seeds)} source items are {len(texts)} texts written more "
            "than once under other ids (the same text as a person reads it, judged again)"
        )
    and_ = (
        "; the placebo effects' intervals and tests take their counts divided by the "
        f"{'samples' if not repeats else 'clusters'}' design effect"
    )
    what = "a sample's epochs" if not repeats else "each such cluster's items"
    return (
        f"{' and '.join(said)}: every interval resamples {what} together, as one cluster (a "
        f"rate with one outcome per item too, by the cluster bootstrap){and_ if placebos else ''}"
    )


class _SourceVerdicts:
    """A judge's own verdict on each seed (None: unscored or not judged) and, for the seeds it
    judged, its per-criterion verdicts (transcript judges): what every test is scored
    against, a few numbers a seed."""

    def __init__(self, seed_ids: list[str], js: JudgmentFile):
        read = js.of(f"source:{i}" for i in seed_ids)
        self.scores = {
            i: read[f"source:{i}"].score if f"source:{i}" in read else None for i in seed_ids
        }
        self.criteria = {
            i: read[f"source:{i}"].criteria or {} for i in seed_ids if f"source:{i}" in read
        }


def _judge_metrics(
    cfg: JudgeConfig,
    per_test: dict[str, ReliabilityScores],
    sources: _SourceVerdicts,
    judge_usage: Usage,
) -> JudgeReliability:
    """One judge: its scores on every test, its verdicts on the sources, its usage (every
    latest judgment in its file) and the cost of an accuracy point."""
    work = judge_usage.work()
    # over the tests whose pass rate is defined (a scorer's nan is undefined, as no pass rate)
    pass_values = [
        m.pass_rate.value for m in per_test.values() if m.pass_rate and isfinite(m.pass_rate.value)
    ]
    mean_pass = sum(pass_values) / len(pass_values) if pass_values else None
    return JudgeReliability(
        model=cfg.model_shown,
        config_hash=cfg.config_hash(),
        tests=per_test,
        judgments=judgment_file(cfg),
        source_unscored=sum(v is None for v in sources.scores.values()),
        usage=judge_usage,
        work=work,
        mean_pass_rate=mean_pass,
        cost_per_accuracy_point_usd=(
            work.known_cost() / (mean_pass * 100)  # type: ignore[operator]
            if mean_pass and work.known_cost() is not None
            else None  # unknown: an answer with no price is not free
        ),
    )
