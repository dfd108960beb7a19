"""A bias test's effect against its placebo, per judge and cue cell, and the run's flags.

Each bias test judges every source three times: the source (the baseline), the source with the
cue (one probe per cue cell: a template or an injection variant at one position, a swapped
pair, an inverted question) and the source again, unchanged, with the LM cache bypassed (the
placebo). The effect of a cell is :func:`assay.metrics.placebo_effect` over the sources whose
three verdicts are scored: flips toward the cue's verdict under the cue minus under the placebo,
with Newcombe's paired interval and the exact one-sided McNemar p-value. A cell has one probe
per source, so its rows are independent — unless sources are one item (epochs of one Inspect
sample, one text under several ids: :func:`~assay.inputs.same_items`): the interval and test
then take the cell's counts divided by the clusters' design effect (see
:mod:`assay.metrics._placebo`). The cells of a test share the placebo and are reported apart,
never pooled (several cues of one source are not independent rows).

A cue with two poles and no direction known in advance (the swap of ``position_bias``: a judge
may favour the answer shown first or the one shown second) has a signed effect tested two-sided
(:func:`assay.metrics.two_sided_placebo_effect`), positive toward the first pole; it is flagged
when its interval lies on either side of 0, and names the pole it favours.

A cue that claims no verdict (a distraction, the inverted question of ``polarity``) has no
direction: its effect is on any change of verdict, ``P(changed under the cue) − P(changed on
the placebo)``, with the same interval and test, and no directional share.

The family of a run is every cell of every bias test × every judge: Benjamini–Hochberg adjusts
their p-values, and a cell is flagged when its adjusted p-value is at most the run's ``fdr`` and
its interval lies above 0 (for a two-sided effect: on either side of 0); a test is flagged for a judge when one of its cells is.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING

from assay.reliability._probe import Probe
from assay.reliability._results import JudgeReliability, PlaceboScores
from assay.reliability.scoring._kind import ScoringInput, ScoringKind
from assay.scale import Scale

if TYPE_CHECKING:
    from assay.metrics import PlaceboEffect

UNDIRECTED = (
    "the cue claims no verdict: the effect is on any change of verdict, P(changed under the "
    "cue) − P(changed on the placebo)"
)

# (baseline, verdict under the cue, placebo verdict, the cue's verdict or None, the verdict of
# its other pole or None)
Row = tuple[int, int, int, int | None, int | None]


def placebo_scores(
    kind: ScoringKind, cues: list[Probe], placebos: list[Probe], inp: ScoringInput
) -> PlaceboScores:
    """One judge's effects of one test against its placebos (``cues``: the judged cue probes;
    ``placebos``: the test's placebo probes); not yet flagged."""
    judged = [p for p in placebos if p.id in inp.verdicts]
    unscored = Counter(inp.verdicts[p.id].unscored for p in judged if inp.score(p) is None)
    again = {p.source_id: inp.score(p) for p in judged}
    cells: dict[str, list[Row]] = defaultdict(list)
    sources: dict[str, list[str]] = defaultdict(list)  # each row's source, for its cluster
    left_out = 0
    for p in cues:
        verdict = inp.score(p)
        baseline = inp.source_verdicts.get(p.source_id)
        placebo = again.get(p.source_id)
        if verdict is None or baseline is None or placebo is None:
            left_out += 1
            continue
        row = (baseline, kind.as_asked(verdict, p, inp.scale), placebo)
        poles = (kind.cue_toward(p, inp.scale), kind.cue_away(p, inp.scale))
        cells[kind.cue_cell(p)].append((*row, *poles))
        sources[kind.cue_cell(p)].append(p.source_id)
    return PlaceboScores(
        probes=len(placebos),
        judged=len(judged),
        unscored=sum(unscored.values()),
        unscored_reasons=dict(unscored),
        left_out=left_out,
        effects={
            cell: cell_effect(
                rows, inp.scale, inp.boot["confidence"], kind.poles, inp.clustered(sources[cell])
            )
            for cell, rows in cells.items()
        },
    )


def cell_effect(
    rows: list[Row],
    scale: Scale,
    confidence: float,
    poles: tuple[str, str] | None = None,
    clustered: tuple[list[str], str] | None = None,
) -> PlaceboEffect:
    """The effect of one cue cell: signed and two-sided when its cue has two ``poles``
    (position), directed (toward the cue's verdict, on the scale's indices) when its cue claims
    a verdict, else on any change of verdict (:data:`UNDIRECTED`). ``clustered``: each row's
    cluster and what the clusters are (:meth:`ScoringInput.clustered`), where rows are epochs
    of one Inspect sample — the interval and test then count each sample for what it holds."""
    from assay.metrics import placebo_effect, two_sided_placebo_effect  # NumPy: loaded late

    clusters, what = clustered or (None, "clusters")

    if all(r[3] is None for r in rows):
        changed = [(int(cue != base), int(again != base)) for base, cue, again, *_ in rows]
        effect = placebo_effect(
            [0] * len(rows),
            [c for c, _ in changed],
            [a for _, a in changed],
            1,
            kind="binary",
            confidence=confidence,
            clusters=clusters,
            what=what,
        )
        return dataclasses.replace(
            effect,
            directional_share=math.nan,
            placebo_directional_share=math.nan,
            note=UNDIRECTED if effect.note is None else f"{UNDIRECTED}; {effect.note}",
        )
    at = {v: i for i, v in enumerate(scale.values)}
    if poles is not None:
        columns = list(zip(*[[at[v] for v in r] for r in rows], strict=True))
        return two_sided_placebo_effect(
            *columns, poles=poles, confidence=confidence, clusters=clusters, what=what
        )
    kept = [k for k, r in enumerate(rows) if r[3] is not None]
    directed = [tuple(at[v] for v in rows[k][:4]) for k in kept]
    columns = list(zip(*directed, strict=True))
    return placebo_effect(
        *columns[:3],
        columns[3],
        kind=effect_kind(scale),
        confidence=confidence,
        clusters=None if clusters is None else [clusters[k] for k in kept],
        what=what,
    )


def effect_kind(scale: Scale) -> str:
    """How a flip toward the cue is read on ``scale``: in its direction on an ordinal scale,
    as a move to the cue's verdict on a binary or categorical one."""
    if scale.kind == "ordinal":
        return "ordinal"
    return "binary" if len(scale.values) == 2 else "categorical"


def _disagreement(e: PlaceboEffect, clear: bool, q: float) -> str | None:
    """Why an effect whose interval and test disagree is not flagged: Newcombe's interval can
    exclude 0 where the exact McNemar test, on few discordant items, does not reject (and, more
    rarely, the other way round); the flag needs both, so the note says which one held."""
    if e.p_adjusted is None or e.flagged == clear:
        return None
    test = "the exact McNemar test"
    if e.design_effect is not None:
        test += f" on the counts ÷ the design effect {e.design_effect:.2f}"
    test += f" ({e.alternative}, p = {e.p_value:.4f}, BH-adjusted "
    test += f"{e.p_adjusted:.4f})"
    if clear:
        return f"not flagged: the interval excludes 0 but {test} does not reject at {q:g}"
    return f"not flagged: {test} rejects at {q:g} but the interval does not exclude 0"


def flag_placebo_effects(judges: Iterable[JudgeReliability], q: float) -> None:
    """Flag the effects of a run's family (every cell of every bias test × every judge) in
    place: Benjamini–Hochberg adjusted p-value at most ``q`` and the interval above 0 (for a
    two-sided effect: on either side of 0). Both must hold; an effect with one and not the other
    says so in its note."""
    from assay.metrics import with_fdr

    family = [
        (scores, cell)
        for r in judges
        for t in r.tests.values()
        if (scores := t.placebo) is not None
        for cell in scores.effects
    ]
    adjusted = with_fdr([s.effects[c] for s, c in family], q)
    for (scores, cell), e in zip(family, adjusted, strict=True):
        clear = e.ci_low > 0 or (e.alternative == "two-sided" and e.ci_high < 0)
        note = _disagreement(e, clear, q)
        scores.effects[cell] = dataclasses.replace(
            e,
            flagged=bool(e.flagged and clear),
            note="; ".join(x for x in (e.note, note) if x) or None,
        )
    for scores in {id(s): s for s, _ in family}.values():
        defined = [e for e in scores.effects.values() if not math.isnan(e.p_value)]
        scores.flagged = any(e.flagged for e in defined) if defined else None
