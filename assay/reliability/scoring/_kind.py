"""What a scoring kind is: how one judge's verdicts on one test's probes become metrics.

A kind is one file: its scorer, its typed metrics model and (optionally) its report section and
headline, registered by name with ``@scoring_kind("name")``. A reliability test names its kind
in ``scoring``. Every kind reports the envelope — probes, judged, unscored (and why), the pass
rate against the probes' targets and the consistency with the judge's own source verdict; what
the kind adds is its :class:`ScoringMetrics` subclass, written flat into ``metrics.json``.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

from assay._registry import Registry
from assay.errors import ConfigError
from assay.metrics import CLOPPER_PEARSON_CLUSTERS, MetricValue, fmt, fmt_ci
from assay.reliability._probe import Probe, is_placebo
from assay.reliability._results import HarnessSummary, ReliabilityScores
from assay.scale import Scale
from assay.types import Judgment

_log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from assay.report import Table


class ScoringMetrics(BaseModel):
    """What a kind adds to the envelope; ``pass_rate`` and ``consistency`` go to the envelope.
    Subclasses declare their fields in the order ``metrics.json`` lists them; a field the
    scorer does not set is left out of it."""

    model_config = ConfigDict(extra="forbid")

    pass_rate: MetricValue | None = None
    consistency: MetricValue | None = None

    def added(self) -> dict[str, Any]:
        """The fields past the envelope that the scorer set, in declaration order."""
        return {
            k: getattr(self, k)
            for k in type(self).model_fields
            if k in self.model_fields_set and k not in ("pass_rate", "consistency")
        }


@dataclass
class ScoringInput:
    """What a scorer reads besides the probes: the judge's verdicts by probe id, its own
    verdict per source (None = unscored) and per-criterion verdicts per source (transcript
    judges), the scale, the bootstrap options (``n_resamples``, ``confidence``, ``seed``) and
    every judged probe of the test, scored or not (``judged``: a kind whose unit is a source's
    whole set of probes, as stability's k samples, must know which of them went unscored).

    ``samples`` maps a source to the cluster of sources it is one item with (empty otherwise):
    the epochs of an Inspect sample, which share its input and reference, and sources whose
    text another repeats under another id (:func:`~assay.inputs.same_items`). Every interval
    resamples a cluster's sources together (:meth:`cluster`), as it resamples a source's probes
    together: duplicating every source leaves every interval and p-value as they were."""

    verdicts: dict[str, Judgment]
    source_verdicts: dict[str, int | None]
    source_criteria: dict[str, dict[str, int | None]]
    scale: Scale
    boot: dict[str, Any]
    judged: list[Probe] = field(default_factory=list)
    kind: str = ""  # the scoring kind's name, for a note on what it computed
    samples: dict[str, str] = field(default_factory=dict)

    def cluster(self, source_id: str) -> str:
        """What an interval resamples ``source_id``'s probes with: the other sources it is one
        item with (its Inspect sample's other epochs, its text's repeats: :attr:`samples`),
        else the source alone."""
        sample = self.samples.get(source_id)
        return source_id if sample is None else f"one item: {sample}"

    def score(self, p: Probe) -> int | None:
        return self.verdicts[p.id].score

    def with_own(self, scored: list[Probe]) -> tuple[list[tuple[Probe, int, int]], int]:
        """``(probe, verdict, own source verdict)`` of the probes whose source the judge scored,
        and how many had an unscored source."""
        rows, source_unscored = [], 0
        for p in scored:
            own = self.source_verdicts.get(p.source_id)
            if own is None:
                source_unscored += 1
                continue
            rows.append((p, self.verdicts[p.id].score, own))
        return rows, source_unscored

    def mean(self, values: list[float], clusters: list[str]) -> MetricValue | None:
        """The mean of ``values`` with a CI that resamples source items (``clusters``: each
        value's source; all of a drawn source's probes come along, and the other epochs of its
        Inspect sample: :meth:`cluster`); None when there is nothing to average. A value that is
        no finite number (a scorer's nan) leaves it undefined, its note saying that the
        scoring kind gave it, for how many of the probes."""
        if not values:
            return None
        values = [float(v) for v in values]
        bad = [v for v in values if not math.isfinite(v)]
        if bad:
            what = "/".join(sorted({"nan" if math.isnan(v) else "infinite" for v in bad}))
            by = f" '{self.kind}'" if self.kind else ""
            return MetricValue(
                math.nan,
                None,
                None,
                len(values),
                note=f"{SCORER_GAVE_NO_NUMBER}{by} gave {what} for {len(bad)} of the "
                f"{len(values)} probes",
            )
        from assay.metrics import cluster_mean  # NumPy: not on the way to the first LM call

        ids, what = self.clustered(clusters) or (clusters, "source items")
        return cluster_mean(values, ids, what=what, **self.boot)

    def clustered(self, sources: list[str]) -> tuple[list[str], str] | None:
        """The clusters of values of ``sources`` — each source with the others it is one item
        with: the other epochs of its Inspect sample, its text's repeats — and what they are
        (``clusters`` and ``what`` of :func:`~assay.metrics.cluster_mean`); None when no two of
        the sources are one item (each source its own cluster: items independent)."""
        seen = Counter(self.samples[s] for s in set(sources) if s in self.samples)
        if not any(n > 1 for n in seen.values()):
            return None
        return [self.cluster(s) for s in sources], SAMPLE_CLUSTERS

    def mean_of(self, rows: list[tuple], fn: Callable[[tuple], Any]) -> MetricValue | None:
        """The share of ``rows`` (``(probe, ...)``) for which ``fn`` holds, clustered by source."""
        return self.mean([float(fn(r)) for r in rows], [r[0].source_id for r in rows])


SAMPLE_CLUSTERS = "source items, the epochs of an Inspect sample and the repeats of a text together"
"""What an interval resamples where sources are one item: epochs of one Inspect sample, or
one text under several ids."""

SCORER_GAVE_NO_NUMBER = "undefined: the scoring kind"
"""How the note of a mean a scorer's nan left undefined begins (:meth:`ScoringInput.mean`)."""


def scorer_notes(judge: str, test: str, scores: ReliabilityScores) -> list[str]:
    """One note per metric of ``scores`` that its scorer's nan (or infinite) values left
    undefined — what the console and the report say of it, beside ``undefined``."""
    metrics = {"pass_rate": scores.pass_rate, "consistency": scores.consistency}
    out = []
    for name, m in {**metrics, **scores.scoring_metrics}.items():
        note = m.note if isinstance(m, MetricValue) else None
        if note and note.startswith(SCORER_GAVE_NO_NUMBER):
            out.append(f"judge {judge}, test {test}: {name} {note}")
    return out


# One row of a report section: (test, judge, the judge's metrics on it as one flat dict).
SectionRow = tuple[str, str, dict[str, Any]]


class ScoringKind:
    """Base of every scoring kind; subclasses set ``Metrics`` and ``score``, and may add a
    report section (``section``, placed by ``order``) and ``headlines`` for the console."""

    name: ClassVar[str]
    Metrics: ClassVar[type[ScoringMetrics]] = ScoringMetrics
    # where the kind's section goes among the sections after the per-judge tables
    order: ClassVar[int] = 100
    # (metric, label) pairs printed after a test's pass rate on the console
    headlines: ClassVar[tuple[tuple[str, str], ...]] = ()
    # the metrics logged to MLflow besides the envelope's (with their CI bounds, per group)
    tracked: ClassVar[tuple[str, ...]] = ()

    def score(self, scored: list[Probe], inp: ScoringInput) -> ScoringMetrics:
        """The metrics of the probes with a scored verdict (``scored``)."""
        raise NotImplementedError

    def section(self, rows: list[SectionRow]) -> Table | None:
        """The kind's report section over every test of this kind and judge (None: none)."""
        return None

    # -- a bias test's placebo: how a cue probe's verdict compares with the source's ---------
    def cue_cell(self, probe: Probe) -> str:
        """The cue cell of ``probe`` (one probe per source each): its variant and position."""
        keys = ("variant", "position")
        return "/".join(str(probe.meta[k]) for k in keys if k in probe.meta) or probe.test

    def cue_toward(self, probe: Probe, scale: Scale) -> int | None:
        """The verdict the cue of ``probe`` pushes toward; None: it claims none (its effect is
        then on any change of verdict)."""
        return None

    # a cue with two poles and no direction known in advance names them here (position: the
    # answer shown first or second); its effect is signed and tested two-sided, ``cue_toward``
    # giving the first pole's verdict and ``cue_away`` the second's
    poles: ClassVar[tuple[str, str] | None] = None

    def cue_away(self, probe: Probe, scale: Scale) -> int | None:
        """The verdict of the cue's second pole (``poles``); None for a one-way cue."""
        return None

    def as_asked(self, verdict: int, probe: Probe, scale: Scale) -> int:
        """``verdict`` on ``probe`` as a verdict on its source's question (polarity mirrors)."""
        return verdict

    def pass_rate(self, scored: list[Probe], inp: ScoringInput) -> MetricValue | None:
        """The share of the probes with a target whose verdict, as asked (:meth:`as_asked`),
        is that target, over every probe of ``scored``: it compares a probe's verdict with its
        target and needs no source verdict, so a probe whose source the judge left unscored
        counts like any other (only consistency and the figures relative to the source verdict
        leave it out, and count it in ``source_unscored``)."""
        labelled = [p for p in scored if p.target is not None]
        return inp.mean(
            [float(self.as_asked(inp.score(p), p, inp.scale) == p.target) for p in labelled],
            [p.source_id for p in labelled],
        )

    def headline(self, metrics: dict[str, Any]) -> list[str]:
        """The ``headlines`` the metrics have, as ``label value`` strings."""
        return [
            f"{label} {cell(metrics[k])}"
            for k, label in self.headlines
            if metrics.get(k) is not None
        ]


_KINDS: Registry[type[ScoringKind]] = Registry("scoring kind", "assay.reliability.scoring")


def scoring_kind(name: str) -> Callable[[type[ScoringKind]], type[ScoringKind]]:
    """Register a scoring kind under ``name`` (the ``scoring`` a reliability test names)."""
    return _KINDS.register(name)


def known_scorings() -> list[str]:
    return _KINDS.names()


def get_scoring(name: str) -> ScoringKind:
    """The registered scoring kind ``name``."""
    return _KINDS.get(name)()


def scoring_kinds() -> list[ScoringKind]:
    """Every registered kind, in report-section order."""
    return sorted((cls() for cls in _KINDS.classes()), key=lambda k: k.order)


def score_test(
    scoring: str,
    probes: list[Probe],
    verdicts: dict[str, Judgment],
    source_verdicts: dict[str, int | None],
    scale: Scale,
    *,
    source_criteria: dict[str, dict[str, int | None]] | None = None,
    samples: dict[str, str] | None = None,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> ReliabilityScores:
    """Metrics of one test for one judge. ``verdicts`` maps probe id → judgment,
    ``source_verdicts`` maps source id → the judge's score on the source (None = unscored),
    ``source_criteria`` source id → its per-criterion scores (transcript judges), ``samples``
    source id → the cluster of sources it is one item with (:attr:`ScoringInput.samples`). A bias
    test's placebos are scored apart: its effects against them (``placebo``, not yet flagged:
    :func:`flag_placebo_effects` does that over the run)."""
    placebos = [p for p in probes if is_placebo(p)]
    probes = [p for p in probes if not is_placebo(p)]
    judged = [p for p in probes if p.id in verdicts]
    unscored = Counter(verdicts[p.id].unscored for p in judged if verdicts[p.id].score is None)
    scored = [p for p in judged if verdicts[p.id].score is not None]
    inp = ScoringInput(
        verdicts,
        source_verdicts,
        source_criteria or {},
        scale,
        dict(n_resamples=n_resamples, confidence=confidence, seed=seed),
        judged=judged,
        kind=scoring,
        samples=samples or {},
    )
    kind = get_scoring(scoring)
    m = kind.score(scored, inp)
    placebo = None
    if placebos:
        from assay.reliability.scoring._placebo import placebo_scores

        placebo = placebo_scores(kind, judged, placebos, inp)
    return ReliabilityScores(
        probes=len(probes),
        judged=len(judged),
        unscored=sum(unscored.values()),
        unscored_reasons=dict(unscored),
        pass_rate=m.pass_rate,
        consistency=m.consistency,
        placebo=placebo,
        scoring_metrics=m.added(),
    )


def cell(m: object) -> str:
    """A metric as a report cell (the harness's console, report.md and report.html): its value
    and CI, or a bare number. † marks the exact interval over source items that stands for a
    bootstrap of a constant outcome; ‡ a bootstrap interval of no width that is none (every
    item's outcome one value between the ends — a pair right in one order of two: 0.50 [0.50,
    0.50] — or a single item): it shows no variation in the resamples, not certainty."""
    d = m.to_dict() if isinstance(m, MetricValue) else m
    if not (isinstance(d, dict) and "value" in d):
        return fmt(m, 2)  # type: ignore[arg-type]
    if d.get("ci_method") == CLOPPER_PEARSON_CLUSTERS:
        return fmt_ci(d, 2) + " †"
    low, high = d.get("ci_low"), d.get("ci_high")
    flat = low is not None and low == high and d.get("ci_method") is not None
    return fmt_ci(d, 2) + (" ‡" if flat else "")


def kind_of(test: str) -> str | None:
    """The scoring kind of the registered test ``test``; None for a test nobody registered in
    this process — a plug-in its user registered by hand in the process that ran it, not
    through the run's ``plugins:``, which a helper interpreter or a later reader imports. Its
    section and metrics are then left out, which is said once per process in a warning naming
    the test, not silently."""
    from assay.reliability._registry import registered_test

    try:
        return registered_test(test).scoring
    except ConfigError:
        if test not in _UNKNOWN_SAID:
            _UNKNOWN_SAID.add(test)
            _log.warning(
                "test '%s' is registered by no plug-in this process imported: its scoring "
                "kind's report section and metrics are left out; list the plug-in that "
                "registers it in the config's plugins:",
                test,
            )
        return None


_UNKNOWN_SAID: set[str] = set()  # the tests :func:`kind_of` warned of, in this process


def section_rows(summary: HarnessSummary, kind: str) -> list[SectionRow]:
    """Each judge's metrics on every test of ``kind`` (tests by name, then judges in order), as
    one flat dict: a section reads the envelope and the kind's metrics alike."""
    tests = sorted({t for r in summary.judges.values() for t in r.tests if kind_of(t) == kind})
    return [
        (t, name, _flat(r.tests[t]))
        for t in tests
        for name, r in summary.judges.items()
        if t in r.tests
    ]


def _flat(m: ReliabilityScores) -> dict[str, Any]:
    return {"pass_rate": m.pass_rate, "consistency": m.consistency, **m.scoring_metrics}


def source_unscored_note(rows: list[SectionRow]) -> str:
    """What a section of figures relative to the judge's own source verdict says when some
    judge left a source unscored (nothing otherwise)."""
    if not any(m.get("source_unscored") for _, _, m in rows):
        return ""
    return (
        "A probe whose source verdict is unscored has no own verdict to compare with: it is "
        "left out of the figures relative to it and counted in its judge's table (\"with an "
        'unscored source"); the pass rate counts it.'
    )


def ordered(scale: Scale) -> bool:
    """Whether verdicts can be closer or further (binary, ordinal, scored labels)."""
    return scale.kind != "categorical" or bool(scale.scores)


def toward(verdict: int, own: int, cue: int, scale: Scale) -> bool:
    """Did ``verdict`` move from ``own`` toward ``cue``? (closer on an ordered scale, equal to
    it on an unordered one; never when it did not move)."""
    if verdict == own:
        return False
    if ordered(scale):
        return abs(verdict - cue) < abs(own - cue)
    return verdict == cue
