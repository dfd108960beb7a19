"""``scale_granularity``: the same rubric answered on a coarser and a finer scale, each verdict
mapped back onto the judge's own scale — does the judge agree with people better, or worse,
when it has fewer or more points to choose from?

A probe is a source unchanged, carrying the judge's rubric with a scale of ``points`` points
(1..points) in ``meta["judge_task"]``: the harness runs each judge on it with that scale (the
judgment records that config's hash). Where the judge's scale names its verdicts, a sentence
after the rubric names the two ends of the new one ("1 stands for 'False' and 4 for 'True'");
the rest of the rubric is the judge's own.

Mapping back: the new scale's position is rescaled onto the judge's, end to end, and rounded to
the nearest score — ``values[round(i × (k − 1) / (points − 1))]`` for the i-th point (from 0)
of ``points``, on the judge's ``k`` scores. 1–10 maps back onto 1–5 two points each (1, 2 → 1;
3, 4 → 2; …; 9, 10 → 5); 1–3 onto 1–5 as 1, 3, 5; 1–4 onto a binary scale as 0, 0, 1, 1. A
number of points with a point exactly between two scores (a tie) is refused. The mapping is
saved with each probe (``meta["maps_back"]``).

By default (``points`` not given) the coarser scale is the one with the most points at most
half the judge's (rounded up) whose points land on the judge's scores exactly (1–5 → 1–3, 1–7 →
1–4; a binary scale has none), and the finer one has twice the judge's points (1–5 → 1–10,
binary → 1–4). A categorical scale has no order to coarsen or refine: the test refuses it.
"""

from __future__ import annotations

from pydantic import Field

from assay.errors import ConfigError
from assay.programs import is_pairwise
from assay.reliability._probe import Dropped, Probe
from assay.reliability._registry import GenerationContext, TestSettings, Unit, reliability_test
from assay.reliability.probes._task import AsksTask
from assay.scale import MAX_POINTS, Scale
from assay.types import Item, StrictInt


class ScaleGranularitySettings(TestSettings):
    points: list[StrictInt] | None = Field(
        default=None,
        min_length=1,
        max_length=10,
        description="the scales to ask, by their number of points (each 1..points); default: "
        "a coarser and a finer one than the judge's",
    )


def maps_back(points: int, scale: Scale) -> list[int]:
    """The judge's score for each point 1..``points`` of the other scale (see the module
    docstring); :class:`ConfigError` when a point falls exactly between two scores."""
    values, k = scale.values, scale.k
    out = []
    for i in range(points):
        twice = 2 * i * (k - 1)  # twice the rescaled position, times (points - 1)
        if twice % (2 * (points - 1)) == points - 1:
            raise ConfigError(
                f"tests.scale_granularity.points: point {i + 1} of 1-{points} falls exactly "
                f"between two scores of the {scale.describe()} scale; choose another number"
            )
        out.append(values[(twice + points - 1) // (2 * (points - 1))])
    return out


def default_points(scale: Scale) -> list[int]:
    """A coarser scale whose points land on the judge's scores (none for a binary one) and a
    finer one of twice its points."""
    k = scale.k
    coarser = [m for m in range(2, (k + 1) // 2 + 1) if (k - 1) % (m - 1) == 0]
    return coarser[-1:] + ([2 * k] if 2 * k <= MAX_POINTS else [])


def ends_named(points: int, scale: Scale) -> str | None:
    """The sentence naming the new scale's ends by the judge's labels (None: no labels)."""
    low, high = scale.label_of(scale.values[0]), scale.label_of(scale.values[-1])
    if low is None or high is None:
        return None
    return f"On the scale 1-{points}, 1 stands for '{low}' and {points} for '{high}'."


@reliability_test("scale_granularity")
class ScaleGranularityTest(AsksTask):
    scoring = "scale_granularity"
    asked = "its rubric on another scale"
    uses_llm = False
    needs_labels = False  # the verdict distributions need none; agreement where labelled
    Settings = ScaleGranularitySettings
    settings: ScaleGranularitySettings

    def check(self, items: list[Item], scale: Scale) -> None:
        super().check(items, scale)
        if scale.kind not in ("binary", "ordinal") or is_pairwise(scale):
            raise ConfigError(
                "tests.scale_granularity: needs a binary or ordinal scale to coarsen or refine, "
                f"not {scale.describe()}"
            )
        points = self.settings.points or default_points(scale)
        for m in points:
            if not 2 <= m <= MAX_POINTS or m == scale.k:
                raise ConfigError(
                    f"tests.scale_granularity.points: {m} must be 2..{MAX_POINTS} and not the "
                    f"{scale.k} points of the judge's scale"
                )
        if len(set(points)) != len(points):
            raise ConfigError("tests.scale_granularity.points: the numbers must be distinct")
        for m in points:
            maps_back(m, scale)

    def generate(self, unit: Unit, ctx: GenerationContext) -> list[Probe | Dropped]:
        _, rubric = self.judges_task(ctx)
        out: list[Probe | Dropped] = []
        for m in self.settings.points or default_points(ctx.scale):
            named = ends_named(m, ctx.scale)
            task = {
                "rubric": "\n\n".join(x for x in (rubric, named) if x) or None,
                "scale": Scale(kind="ordinal", min=1, max=m).model_dump(exclude_none=True),
            }
            back = {str(v): s for v, s in enumerate(maps_back(m, ctx.scale), start=1)}
            out += [
                Probe.from_source(
                    self.name,
                    src,
                    [m, task],
                    meta={"judge_task": task, "points": m, "maps_back": back},
                )
                for src in unit.sources
            ]
        return out
