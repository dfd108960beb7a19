"""A harness run's ``metrics.json`` (:class:`HarnessSummary`): each judge's scores on every
test (:func:`score_test`), its usage and cost per accuracy point, what generation spent and
dropped, and the review."""

from __future__ import annotations

from math import isfinite

from assay.programs import JudgeConfig
from assay.reliability._config import HarnessConfig
from assay.reliability._probe import Dropped, Probe
from assay.reliability._registry import ReliabilityTest
from assay.reliability._results import HarnessSummary, JudgeReliability, ReviewCounts
from assay.reliability.engine._generation import UnitRecord
from assay.reliability.engine._judging import judged_id, judgment_file
from assay.reliability.scoring import flag_placebo_effects, score_test, scorer_notes
from assay.types import Item, Judgment, Usage


def harness_metrics(
    config: HarnessConfig,
    instances: list[ReliabilityTest],
    judge_cfgs: list[JudgeConfig],
    seeds: list[Item],
    probes: list[Probe],
    judgments: dict[str, dict[str, Judgment]],
    records: list[UnitRecord],
    dropped: list[Dropped],
    reviewed: dict[str, int],
    *,
    data_fingerprint: str,
    pairs: dict[str, int] | None = None,
) -> HarnessSummary:
    """The run's metrics from what it judged (``probes``: those sent to the judges);
    ``pairs``: what building labelled pairs from a score column counted, if it did."""
    b = config.bootstrap
    by_test = _by_test(probes)
    results = {
        cfg.name: _judge_metrics(config, cfg, instances, seeds, probes, judgments[cfg.name])
        for cfg in judge_cfgs
    }
    flag_placebo_effects(results.values(), config.fdr)  # the family: tests × judges
    gen_usage = _generation_usage(records)
    lm_calls = {k: v.calls for k, v in gen_usage.items()}
    for name, r in results.items():
        lm_calls[f"judge:{name}"] = r.usage.calls
    return HarnessSummary(
        seeds=len(seeds),
        notes=[n for t in instances for n in t.notes()]
        + [
            n for j, r in results.items() for t, m in r.tests.items() for n in scorer_notes(j, t, m)
        ],
        probes={t.name: len(by_test.get(t.name, [])) for t in instances},
        dropped=_drop_counts(dropped),
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
        f"probes) has its exact interval; seed {b.seed}, {b.confidence:.0%} intervals",
        fdr=config.fdr
        if any(t.placebo for r in results.values() for t in r.tests.values())
        else None,
        data_fingerprint=data_fingerprint,
        pairs=pairs,
    )


def _judge_metrics(
    config: HarnessConfig,
    cfg: JudgeConfig,
    instances: list[ReliabilityTest],
    seeds: list[Item],
    probes: list[Probe],
    js: dict[str, Judgment],
) -> JudgeReliability:
    """One judge (``js``: its judgments by id): every test scored against the probes' targets
    and the judge's own verdicts on the sources."""
    b = config.bootstrap
    by_test = _by_test(probes)
    sources = {s.id: js[f"source:{s.id}"].score if f"source:{s.id}" in js else None for s in seeds}
    source_criteria = {
        s.id: js[f"source:{s.id}"].criteria or {} for s in seeds if f"source:{s.id}" in js
    }
    verdicts = {p.id: js[judged_id(p)] for p in probes if judged_id(p) in js}
    per_test = {
        t.name: score_test(
            t.scoring,
            by_test.get(t.name, []),
            verdicts,
            sources,
            config.scale,
            source_criteria=source_criteria,
            n_resamples=b.n_resamples,
            confidence=b.confidence,
            seed=b.seed,
        )
        for t in instances
    }
    judge_usage = Usage.total(j.usage for j in js.values())
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
        source_unscored=sum(v is None for v in sources.values()),
        usage=judge_usage,
        work=work,
        mean_pass_rate=mean_pass,
        cost_per_accuracy_point_usd=(
            work.known_cost() / (mean_pass * 100)  # type: ignore[operator]
            if mean_pass and work.known_cost() is not None
            else None  # unknown: an answer with no price is not free
        ),
    )


def _by_test(probes: list[Probe]) -> dict[str, list[Probe]]:
    out: dict[str, list[Probe]] = {}
    for p in probes:
        out.setdefault(p.test, []).append(p)
    return out


def _generation_usage(records: list[UnitRecord]) -> dict[str, Usage]:
    """LM usage of generation, summed by ``<stage>:<test>``."""
    out: dict[str, Usage] = {}
    for r in records:
        for stage, u in r.usage.items():
            key = f"{stage}:{r.test}"
            out[key] = out[key] + u if key in out else u
    return out


def _drop_counts(dropped: list[Dropped]) -> dict[str, dict[str, int]]:
    """How many attempts each test dropped, by reason."""
    counts: dict[str, dict[str, int]] = {}
    for d in dropped:
        counts.setdefault(d.test, {}).setdefault(d.reason, 0)
        counts[d.test][d.reason] += 1
    return counts
