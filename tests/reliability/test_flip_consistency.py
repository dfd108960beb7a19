"""label_flip's consistency: the verdict moved from the judge's own verdict on the source toward
the probe's target. On an ordinal scale a step the other way is no flip (it counted as one, and
a judge stepping away from every target scored 0.60 where it moved toward none)."""

from __future__ import annotations

from assay.reliability._probe import Probe
from assay.reliability.scoring._kind import ScoringInput, get_scoring
from assay.scale import Scale
from assay.types import Judgment

BOOT = {"n_resamples": 1000, "confidence": 0.95, "seed": 0}


def consistency(rows: list[tuple[int, int, int]], scale: Scale) -> tuple[float, int]:
    """label_flip's consistency over (own source verdict, verdict on the probe, target) rows,
    one source each."""
    probes = [
        Probe(id=f"p{k}", test="label_flip", source_id=f"s{k}", target=target)
        for k, (_, _, target) in enumerate(rows)
    ]
    inp = ScoringInput(
        verdicts={
            p.id: Judgment(item_id=p.id, judge="j", score=verdict)
            for p, (_, verdict, _) in zip(probes, rows, strict=True)
        },
        source_verdicts={p.source_id: own for p, (own, _, _) in zip(probes, rows, strict=True)},
        source_criteria={},
        scale=scale,
        boot=BOOT,
        judged=probes,
    )
    m = get_scoring("flip").score(probes, inp).consistency
    assert m is not None
    return m.value, m.n


def test_on_an_ordinal_scale_only_a_move_toward_the_target_is_consistent():
    scale = Scale.model_validate({"kind": "ordinal", "min": 1, "max": 5})
    rows = [
        (2, 1, 5),  # stepped away from the target: not a flip
        (3, 2, 5),  # away
        (4, 5, 1),  # away
        (3, 4, 5),  # toward, short of it: consistent
        (2, 5, 5),  # reached it
        (3, 3, 5),  # did not move
    ]
    # by hand: 2 of 6 moved toward their target
    assert consistency(rows, scale) == (2 / 6, 6)


def test_on_a_binary_scale_any_move_is_toward_the_target():
    scale = Scale.model_validate({"kind": "binary", "labels": ["False", "True"]})
    rows = [(0, 1, 1), (1, 0, 0), (1, 1, 0), (0, 0, 1)]
    assert consistency(rows, scale) == (2 / 4, 4)
