"""What the tests that ask the judge its task another way share (``prompt_paraphrase``: its
instruction and rubric in other words; ``scale_granularity``: its rubric on a coarser or finer
scale): per way of asking, the verdicts mapped back onto the judge's scale, how often they
changed from the judge's own source verdict, their agreement with the reference and the
verdicts given — and the same of the judge's own task on those sources (``original``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from assay.metrics import MetricValue
from assay.reliability._probe import Probe
from assay.reliability._results import AskedScores
from assay.reliability.scoring._kind import ScoringInput, cell

ORIGINAL = "original"
"""The key of the judge's own task among the ways of asking it."""

SHORT = {"kappa_quadratic": "κ quadratic", "kappa_categorical": "κ"}
"""How a report names the agreement metric a row leads with."""

# One verdict: (the probe, or None for the source itself; the verdict as answered; mapped back)
Verdict = tuple[Probe | None, int, int]


def ways_asked(
    scored: list[Probe],
    inp: ScoringInput,
    way: Callable[[Probe], str],
    back: Callable[[int, Probe], int],
) -> dict[str, AskedScores]:
    """Per way of asking (``way`` of each probe, in the probes' order), after the judge's own
    task on the same sources: ``back`` maps a verdict onto the judge's scale."""
    targets = {p.source_id: p.target for p in scored}
    own = [
        (sid, v)
        for sid in dict.fromkeys(p.source_id for p in scored)
        if (v := inp.source_verdicts.get(sid)) is not None
    ]
    out = {ORIGINAL: _scores([(None, v, v) for _, v in own], [s for s, _ in own], targets, inp)}
    groups: dict[str, list[Probe]] = {}
    for p in scored:
        groups.setdefault(way(p), []).append(p)
    for name, probes in groups.items():
        answered = [(p, inp.score(p), back(inp.score(p), p)) for p in probes]
        scores = _scores(answered, [p.source_id for p in probes], targets, inp)  # type: ignore[arg-type]
        rows, _ = inp.with_own(probes)
        scores.changed = inp.mean_of(rows, lambda r: back(r[1], r[0]) != r[2])
        out[name] = scores
    return out


def _scores(
    answered: list[Verdict], sources: list[str], targets: dict, inp: ScoringInput
) -> AskedScores:
    from assay.evaluation import agreement_summary  # NumPy: on first scoring

    scale = inp.scale
    labelled = [(targets[s], v[2]) for s, v in zip(sources, answered, strict=True)]
    labelled = [(t, m) for t, m in labelled if t is not None]
    agreement = agreement_summary(
        [t for t, _ in labelled], [m for _, m in labelled], scale, threshold=None, **inp.boot
    )
    given = Counter(a for _, a, _ in answered)
    mapped = Counter(m for _, _, m in answered)
    return AskedScores(
        probes=len(answered),
        agreement=agreement.metrics,
        agreement_n=len(labelled),
        agreement_note=agreement.note,
        verdicts={str(v): given[v] for v in sorted(given)},
        mapped={str(v): mapped[v] for v in scale.values},
    )


def agreement_cell(scores: AskedScores | dict, metric: str) -> str:
    """One agreement metric of a way of asking as a report cell ("n/a" when it has none)."""
    m = _get(scores, "agreement") or {}
    return cell(m.get(metric)) if m.get(metric) is not None else "n/a"


def main_agreement(scores: dict[str, AskedScores | dict]) -> str:
    """The agreement metric a row leads with, beside accuracy: quadratic-weighted κ on an
    ordinal scale, else Cohen's κ."""
    names = {k for s in scores.values() for k in (_get(s, "agreement") or {})}
    return "kappa_quadratic" if "kappa_quadratic" in names else "kappa_categorical"


def _get(scores: AskedScores | dict, key: str):
    """A field of a way's scores, whether the model or ``metrics.json`` read back."""
    return scores.get(key) if isinstance(scores, dict) else getattr(scores, key)


def value(m: MetricValue | dict | None) -> float | None:
    if m is None:
        return None
    return m.get("value") if isinstance(m, dict) else m.value
