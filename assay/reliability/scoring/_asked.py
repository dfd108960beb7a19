"""What the tests that ask the judge its task another way share (``prompt_paraphrase``: its
instruction and rubric in other words; ``scale_granularity``: its rubric on a coarser or finer
scale): per way of asking, the verdicts mapped back onto the judge's scale, how often they
changed from the judge's own source verdict, their agreement with the reference and the
verdicts given — and the same of the judge's own task on those sources (``original``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from assay.metrics import MetricValue
from assay.reliability._probe import Probe
from assay.reliability._results import AskedScores
from assay.reliability.scoring._kind import ScoringInput, SectionRow, cell
from assay.report import Table

ORIGINAL = "original"
"""The key of the judge's own task among the ways of asking it."""

SHORT = {"kappa_quadratic": "κ quadratic", "kappa_categorical": "κ"}
"""How a report names the agreement metric a row leads with."""


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
    out = {ORIGINAL: _scores([(v, v) for _, v in own], [s for s, _ in own], targets, inp)}
    groups: dict[str, list[Probe]] = {}
    for p in scored:
        groups.setdefault(way(p), []).append(p)
    for name, probes in groups.items():
        answered = [(v, back(v, p)) for p in probes if (v := inp.score(p)) is not None]
        scores = _scores(answered, [p.source_id for p in probes], targets, inp)
        rows, _ = inp.with_own(probes)
        scores.changed = inp.mean_of(rows, lambda r: back(r[1], r[0]) != r[2])
        out[name] = scores
    return out


def _scores(
    answered: list[tuple[int, int]],
    sources: list[str],
    targets: dict[str, int | None],
    inp: ScoringInput,
) -> AskedScores:
    """One way's figures from its verdicts (as answered, mapped back), one per source."""
    from assay.evaluation import agreement_summary  # NumPy: on first scoring

    scale = inp.scale
    labelled = [(targets[s], m) for s, (_, m) in zip(sources, answered, strict=True)]
    labelled = [(t, m) for t, m in labelled if t is not None]
    agreement = agreement_summary(
        [t for t, _ in labelled], [m for _, m in labelled], scale, threshold=None, **inp.boot
    )
    given = Counter(a for a, _ in answered)
    mapped = Counter(m for _, m in answered)
    return AskedScores(
        probes=len(answered),
        agreement=agreement.metrics,
        agreement_n=len(labelled),
        agreement_note=agreement.note,
        verdicts={str(v): given[v] for v in sorted(given)},
        mapped={str(v): mapped[v] for v in scale.values},
    )


def agreement_cell(scores: AskedScores, metric: str) -> str:
    """One agreement metric of a way of asking as a report cell ("n/a" when it has none)."""
    m = scores.agreement.get(metric)
    return cell(m) if m is not None else "n/a"


def main_agreement(scores: dict[str, AskedScores]) -> str:
    """The agreement metric a row leads with: quadratic-weighted κ on an ordinal scale, else
    Cohen's κ."""
    names = {k for s in scores.values() for k in s.agreement}
    return "kappa_quadratic" if "kappa_quadratic" in names else "kappa_categorical"


def ways_table(
    title: str,
    rows: list[SectionRow],
    field: str,
    way: tuple[list[str], Callable[[str, AskedScores, dict[str, Any]], list[str]]],
    *,
    note: str,
    quotes: list[tuple[str, str]],
) -> Table | None:
    """A kind's report section: a row per judge × way of asking (the judge's own task first)
    with what ``way`` says of it (its columns, and their cells from the way's name, scores and
    the judge's metrics), how many verdicts, how many changed from the source verdict, every
    agreement metric with its interval, and the verdicts given and mapped back."""
    rows = [r for r in rows if r[2].get(field)]
    if not rows:
        return None
    columns, describe = way
    names = list(
        dict.fromkeys(k for _, _, m in rows for w in m[field].values() for k in w.agreement)
    )
    table, notes = [], []
    for _, judge, m in rows:
        for name, w in m[field].items():
            table.append(
                [judge, *describe(name, w, m), str(w.probes)]
                + [cell(w.changed) if w.changed is not None else "—", str(w.agreement_n)]
                + [agreement_cell(w, k) for k in names]
                + [_counts(w.verdicts), _counts(w.mapped or {})]
            )
            if w.agreement_note:
                notes.append(f"{judge}, {name}: {w.agreement_note}")
    return Table(
        title,
        ["judge", *columns, "verdicts", "changed from the source verdict", "labelled"]
        + names
        + ["verdicts given", "mapped back"],
        table,
        note=" ".join([note, *notes]),
        quotes=quotes,
    )


def _counts(counts: dict[str, int]) -> str:
    return " ".join(f"{k}:{n}" for k, n in counts.items())


def value(m: MetricValue | None) -> float | None:
    return None if m is None else m.value
