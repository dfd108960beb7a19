"""Two judges on the same items against the same references: is B better than A?

Every agreement metric the evaluate summary reports for the scale (:func:`agreement_metrics`'s
list, the same batched functions) is computed for judge A and judge B, and their difference
``Δ = B − A`` is tested:

- **accuracy** by McNemar's exact test on the discordant items (A right and B wrong against A
  wrong and B right; ``statsmodels.stats.contingency_tables.mcnemar(exact=True)``);
- every other metric by a **paired bootstrap**: the items are resampled jointly (one index
  matrix, both judges' verdicts and the reference of an item stay together), ``Δ*`` computed on
  each replicate; the two-sided p-value is ``2 · min(#{Δ* ≤ 0}, #{Δ* ≥ 0}) + 1) / (B + 1)``
  (the percentile interval inverted: it is below the level exactly when the interval at that
  level leaves 0 out, up to the ``+1``).

Multiplicity: the p-values of the metrics compared are adjusted together by **Holm** (as
``statsmodels.stats.multitest.multipletests(method="holm")`` adjusts them), which controls the
family-wise error rate at the level; a metric's verdict comes from its Holm-adjusted p-value.
The intervals are **Bonferroni** intervals (each at ``1 − level / m`` for ``m`` metrics), so
that they hold simultaneously; Holm can reject where a Bonferroni interval still touches 0
(it is uniformly more powerful): then the p-value decides, and the interval shows the size.

Power, for the metrics that did not separate: the items needed to detect ``Δ`` at the
Bonferroni level ``level / m`` (Holm's strictest step, so conservative) with the given power —
for accuracy by Connor's formula for McNemar's test (R. J. Connor, "Sample size for testing
differences in proportions for the paired-sample design", Biometrics 43:207–211, 1987; normal
approximation with the observed discordance rate ψ, at least Δ): ``n = (z_{1−α/2} √ψ + z_{power}
√(ψ − Δ²))² / Δ²``; for every other metric from its bootstrap standard error, which scales as
``1/√n``: ``n' = n · SE² · (z_{1−α/2} + z_{power})² / Δ²``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from pydantic import ConfigDict
from pydantic.dataclasses import dataclass

from assay.metrics._cluster import cluster_replicates, shared_clusters
from assay.metrics._intervals import (
    _check_confidence,
    _check_resamples,
    _percentile_ci,
    _replicates,
    _resample_indices,
)
from assay.metrics._report import (
    _KINDS,
    TRADE_OFFS,
    _check_threshold,
    _first_arrangement,
    _specs,
    _varies,
)
from assay.metrics._validate import check_k, label_pair
from assay.metrics._value import Undefinable

MCNEMAR = "McNemar exact"
BOOTSTRAP = "paired bootstrap"
PAIRED_CLUSTER_BOOTSTRAP = "paired cluster bootstrap"


@dataclass(frozen=True, config=ConfigDict(ser_json_inf_nan="constants"))
class PairedDifference:
    """One metric of judges A and B on the same items: both values, ``delta = b − a`` with its
    (Bonferroni) interval, the test's raw and Holm-adjusted p-values, which judge is better at
    the level (``None``: no difference detected) and, when none was, the items needed to detect
    the comparison's Δ (``None`` with a note when it cannot be said)."""

    metric: str
    a: Undefinable
    b: Undefinable
    delta: Undefinable
    ci_low: Undefinable | None
    ci_high: Undefinable | None
    p_value: Undefinable
    p_adjusted: Undefinable
    test: str
    higher_is_better: bool
    better: Literal["A", "B"] | None
    items_needed: int | None = None
    note: str | None = None


@dataclass(frozen=True, config=ConfigDict(ser_json_inf_nan="constants"))
class PairedComparison:
    """The differences of every metric, and what they were computed with."""

    n: int
    level: Undefinable
    tests: int  # m: the metrics with a test (Holm's family; undefined ones have none)
    ci_level: float  # each interval's level: 1 − level / m (Bonferroni)
    delta: float  # the Δ the items needed are for
    power: Undefinable
    a_only_right: int  # accuracy's discordant items: A right, B wrong
    b_only_right: int  # ... and A wrong, B right
    n_resamples: int
    seed: int
    differences: list[PairedDifference]  # the one-sided rates (TRADE_OFFS) last
    note: str | None = None  # about the comparison as a whole
    # the index a judge gave on every item (None: it gave more than one): such a judge wins
    # one of each pair of TRADE_OFFS by construction
    a_constant: int | None = None
    b_constant: int | None = None


def mcnemar_exact(a_correct: ArrayLike, b_correct: ArrayLike) -> tuple[int, int, float]:
    """``(A right only, B right only, two-sided exact p-value)`` of McNemar's test for two
    judges' correctness on the same items (statsmodels' exact binomial test on the discordant
    pairs; p = 1 when there are none)."""
    a = np.asarray(a_correct, dtype=bool)
    b = np.asarray(b_correct, dtype=bool)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(
            f"a_correct and b_correct must be 1-D of one length, got {a.shape}, {b.shape}"
        )
    from statsmodels.stats.contingency_tables import mcnemar

    a_only, b_only = int(np.sum(a & ~b)), int(np.sum(~a & b))
    table = [[int(np.sum(a & b)), a_only], [b_only, int(np.sum(~a & ~b))]]
    return a_only, b_only, float(mcnemar(table, exact=True).pvalue)


def bootstrap_p_value(replicates: ArrayLike) -> float:
    """Two-sided p-value of ``Δ = 0`` from bootstrap replicates of Δ (nan ones dropped):
    ``min(1, 2 · (min(#{Δ* ≤ 0}, #{Δ* ≥ 0}) + 1) / (B + 1))``; nan when none is defined."""
    d = np.asarray(replicates, dtype=np.float64)
    d = d[~np.isnan(d)]
    if d.size == 0:
        return math.nan
    tail = min(int(np.sum(d <= 0)), int(np.sum(d >= 0)))
    return min(1.0, 2.0 * (tail + 1) / (d.size + 1))


def _z(p: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(p))


def items_needed_mcnemar(discordance: float, delta: float, alpha: float, power: float) -> int:
    """Items for McNemar's test to detect an accuracy difference ``delta`` at two-sided level
    ``alpha`` with ``power``, for a discordance rate ψ (share of items where exactly one judge is
    right; at least ``delta``): Connor (1987), ``(z_{1−α/2} √ψ + z_{power} √(ψ − Δ²))² / Δ²``."""
    if not 0 < delta <= 1:
        raise ValueError(f"delta must be in (0, 1] for accuracy, got {delta}")
    psi = min(1.0, max(float(discordance), delta))
    n = (_z(1 - alpha / 2) * math.sqrt(psi) + _z(power) * math.sqrt(psi - delta**2)) ** 2
    return math.ceil(n / delta**2)


def items_needed_se(n: int, se: float, delta: float, alpha: float, power: float) -> int:
    """Items to detect a difference ``delta`` at two-sided level ``alpha`` with ``power`` when
    the difference's standard error on ``n`` items is ``se`` and scales as ``1/√n``."""
    if not delta > 0 or not se > 0:
        raise ValueError(f"delta and se must be positive, got {delta}, {se}")
    return math.ceil(n * se**2 * (_z(1 - alpha / 2) + _z(power)) ** 2 / delta**2)


def paired_comparison(
    reference: ArrayLike,
    a: ArrayLike,
    b: ArrayLike,
    *,
    kind: str,
    k: int,
    threshold: int | None = None,
    level: float = 0.05,
    delta: float = 0.05,
    power: float = 0.8,
    metrics: Collection[str] | None = None,
    higher_is_better: Callable[[str], bool] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    labels: Sequence[str] | None = None,
    clusters: ArrayLike | None = None,
) -> PairedComparison:
    """Judge B against judge A on the same items: every metric of ``kind`` (as
    :func:`agreement_metrics` reports it), its difference ``B − A`` with a Bonferroni interval,
    McNemar's exact test (accuracy) or the paired bootstrap (the rest), Holm across the metrics,
    which is better at ``level`` and, where neither is, the items needed to detect ``delta``.

    ``reference``, ``a``, ``b``: 0-based indices in ``0..k-1``, one per item scored by both
    judges (the caller counts and lists the rest). ``metrics``: the family compared (default:
    all of the scale's but ``error_rate``, which is ``1 − accuracy``; the fewer, the milder
    the correction). ``higher_is_better(name)``:
    False for the metrics where a lower value is the better judge (default: all higher).
    ``labels``: the categories' names by index; how a scale lists or names categories whose
    order means nothing moves no figure (as in :func:`agreement_metrics`). Nor does which
    judge is A: swapped, each judge keeps its figures and every difference is the mirror
    image, to the last digit — its value and its interval's ends negated (the ends
    exchanged), the p-values the same. The items are resampled sorted with the judges in the
    order whose sorted rows come first (:func:`_first_arrangement`), A's or B's, and the
    figures computed with them in that order, then given back to their names. Where both
    orders sort to the same rows — B's verdicts are A's in a mirror: for each reference, as many
    items where A says x and B says y as where A says y and B says x (clusters too), B
    identical to A among them — A and B swapped are the same data: each judge's value is
    the other's, every difference 0 and its interval the percentile interval and its mirror
    image together (whichever reaches further on each side), its own mirror image.

    ``clusters`` (one id per item) groups items that are not independent — the epochs of one
    Inspect sample. Where a cluster holds more than one item, every metric, accuracy too, is
    tested by the **paired cluster bootstrap** (the clusters resampled with all their items,
    both judges' verdicts with them: McNemar's test counts each item as independent), and the
    items needed are whole clusters of the mean size (the standard error scales as one over the
    root of the clusters).
    """
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {', '.join(_KINDS)}; got {kind!r}")
    if np.asarray(reference).size == 0:
        raise ValueError("no item was scored by both judges")
    names = ("reference", "a", "b")
    ref, a_idx, k = label_pair(reference, a, check_k(k), names[:2])
    ref, b_idx, k = label_pair(reference, b, k, (names[0], names[2]))
    if kind == "binary" and k != 2:
        raise ValueError(f"a binary scale has k=2 categories, got k={k}")
    # the figures depend neither on the rows' order, nor on how the scale lists or names
    # categories whose order means nothing, nor on which judge is A: the items sorted with the
    # judges in the order whose sorted rows come first, and computed with them in that order
    # (``flipped``: B's first), each judge's figures then given back to it and the
    # difference's negated, so that A and B swapped give the mirror image to the last digit
    threshold = _check_threshold(threshold, k)
    kept, _, order, (ref, first, second), mirror = _first_arrangement(
        kind, k, threshold, ((ref, a_idx, b_idx), (ref, b_idx, a_idx)), labels, clusters
    )
    flipped = kept == 1
    a_idx, b_idx = (second, first) if flipped else (first, second)
    judges = ("B", "A") if flipped else ("A", "B")  # the first and the second judge computed
    # ``mirror``: (reference, B, A) sorts to the rows of (reference, A, B), clusters too — B's
    # verdicts are A's seen in a mirror, and A and B swapped are the same data: each judge's
    # value is the other's, the difference 0 and its interval its own mirror image
    n_resamples = _check_resamples(n_resamples)
    _check_confidence(1 - level)
    _check_confidence(power)
    if not delta > 0:
        raise ValueError(f"delta must be positive, got {delta}")
    n = int(ref.shape[0])

    specs = list(
        zip(
            _specs(kind, k, threshold, ref, first, ("the reference", f"judge {judges[0]}")),
            _specs(kind, k, threshold, ref, second, ("the reference", f"judge {judges[1]}")),
            strict=True,
        )
    )
    # the metrics a judge giving one verdict everywhere cannot win first: they lead the verdict
    specs.sort(key=lambda pair: pair[0].name in TRADE_OFFS)
    if metrics is None:  # error_rate is 1 − accuracy: one difference, tested once
        specs = [(sa, sb) for sa, sb in specs if sa.name != "error_rate"]
    else:
        known = [sa.name for sa, _ in specs]
        unknown = [x for x in metrics if x not in known]
        if unknown or not metrics:
            raise ValueError(
                f"unknown metrics {', '.join(unknown) or '(none given)'}; this scale has: "
                f"{', '.join(known)}"
            )
        specs = [(sa, sb) for sa, sb in specs if sa.name in metrics]
    grouped = shared_clusters(clusters, order)
    n_clusters = 0 if grouped is None else int(np.unique(grouped).size)
    indices = _resample_indices(n, n_resamples, seed)
    # the discordant counts of the judges as computed (first, second); the test is symmetric
    first_only, second_only, mcnemar_p = mcnemar_exact(ref == first, ref == second)
    a_only, b_only = (second_only, first_only) if flipped else (first_only, second_only)
    same = bool(np.all(a_idx == b_idx))

    rows = []
    for spec_1, spec_2 in specs:  # the first judge computed, the second
        split = len(spec_1.arrays)

        def diff(
            *arrays, fa=spec_1.statistic, fb=spec_2.statistic, split=split
        ) -> NDArray[np.float64]:
            return fb(*arrays[split:]) - fa(*arrays[:split])

        value_1 = float(spec_1.statistic(*(x[None, :] for x in spec_1.arrays))[0])
        value_2 = float(spec_2.statistic(*(x[None, :] for x in spec_2.arrays))[0])
        if mirror:  # the same value, summed over the items in another order
            value_2 = value_1
        arrays = [*spec_1.arrays, *spec_2.arrays]
        if grouped is None:
            reps = _replicates(diff, arrays, indices)
        else:
            reps = cluster_replicates(diff, arrays, grouped, n_resamples=n_resamples, seed=seed)
        defined = reps[~np.isnan(reps)]
        computed = {judges[0]: (value_1, spec_1), judges[1]: (value_2, spec_2)}
        value_a, value_b = computed["A"][0], computed["B"][0]
        undefined = [
            f"undefined for {who}: {spec.undefined}"
            for who, (value, spec) in sorted(computed.items())
            if math.isnan(value)
        ]
        notes = list(undefined)
        if spec_1.name == "accuracy" and grouped is None:
            p, test = mcnemar_p, MCNEMAR
        else:
            p = bootstrap_p_value(reps)
            test = BOOTSTRAP if grouped is None else PAIRED_CLUSTER_BOOTSTRAP
            if defined.size < reps.size and not undefined:
                # a resample without one of the classes leaves κ or a rate undefined: the test
                # and the interval are those of the others (as the interval always was)
                notes.append(
                    f"{reps.size - defined.size} of {reps.size} replicates undefined for A or "
                    f"B: the p-value and interval from the other {defined.size}"
                )
        if undefined:  # a metric undefined for a judge has no test
            p = math.nan
        se = float(np.std(defined, ddof=1)) if defined.size > 1 else math.nan
        rows.append((spec_1.name, value_a, value_b, reps, p, test, se, notes))

    # the family: the metrics with a test (one undefined for A or B has none)
    m = max(1, sum(not math.isnan(r[4]) for r in rows))
    ci_level = 1 - level / m
    adjusted = _holm([r[4] for r in rows])
    alpha_each = level / m
    out = []
    for (name, va, vb, reps, p, test, se, notes), p_adj in zip(rows, adjusted, strict=True):
        ci = _percentile_ci(reps, ci_level)
        # the replicates are of the second judge's figure less the first's: flipped, of A − B
        low, high = (0.0 - ci.high, 0.0 - ci.low) if flipped else (ci.low, ci.high)
        if mirror:  # the interval and its mirror image: they are equally the data's
            low, high = min(low, 0.0 - high), max(high, 0.0 - low)
        higher = higher_is_better(name) if higher_is_better is not None else True
        d = vb - va
        better = None
        if not math.isnan(p_adj) and p_adj < level and d != 0:
            better = "B" if (d > 0) == higher else "A"
        needed = None
        if better is None and not math.isnan(p):
            if test == MCNEMAR:
                needed = items_needed_mcnemar(
                    (a_only + b_only) / n, min(delta, 1.0), alpha_each, power
                )
            elif se > 0 and grouped is not None:  # whole clusters: SE ~ 1/√clusters
                clusters_needed = items_needed_se(n_clusters, se, delta, alpha_each, power)
                needed = math.ceil(clusters_needed * n / n_clusters)
                notes.append(
                    f"{clusters_needed} clusters (samples) of {n / n_clusters:.1f} items each "
                    "needed"
                )
            elif se > 0:
                needed = items_needed_se(n, se, delta, alpha_each, power)
            elif not same:
                notes.append("no variation across bootstrap replicates: items needed unknown")
        defined_ci = ci.n_dropped < ci.n_resamples
        out.append(
            PairedDifference(
                metric=name,
                a=va,
                b=vb,
                delta=d,
                ci_low=low if defined_ci else None,
                ci_high=high if defined_ci else None,
                p_value=p,
                p_adjusted=p_adj,
                test=test,
                higher_is_better=higher,
                better=better,
                items_needed=needed,
                note="; ".join(notes) or None,
            )
        )
    said = []
    if same:
        said.append(
            "A and B gave the same verdict on every item: no difference to measure, and no "
            "standard error to size a larger sample from"
        )
    if grouped is not None:
        said.append(
            f"the {n_clusters} clusters (the items of one sample, as an Inspect log's epochs) "
            f"resampled with all their items, not the {n} items one by one"
        )
    whole = "; ".join(said)
    whole = whole[:1].upper() + whole[1:] if whole else None
    return PairedComparison(
        n=n,
        level=level,
        tests=m,
        ci_level=ci_level,
        delta=delta,
        power=power,
        a_only_right=a_only,
        b_only_right=b_only,
        n_resamples=n_resamples,
        seed=seed,
        differences=out,
        note=whole,
        a_constant=None if _varies(a_idx) else int(a_idx[0]),
        b_constant=None if _varies(b_idx) else int(b_idx[0]),
    )


def _holm(p_values: list[float]) -> list[float]:
    """Holm-adjusted p-values, as ``statsmodels.stats.multitest.multipletests(method="holm")``
    computes them (sorted p × (m, m−1, …, 1), running maximum, capped at 1; checked equal in
    the tests) — here, because statsmodels runs a full ``gc.collect()`` on every Holm call
    (a quarter of a second in a process holding DSPy). An undefined p-value stays nan and is
    not counted in m."""
    defined = [i for i, p in enumerate(p_values) if not math.isnan(p)]
    out = [math.nan] * len(p_values)
    if defined:
        p = np.array([p_values[i] for i in defined])
        order = np.argsort(p, kind="stable")
        stepped = np.maximum.accumulate(p[order] * np.arange(len(p), 0, -1))
        adjusted = np.empty_like(p)
        adjusted[order] = np.minimum(stepped, 1.0)
        for i, v in zip(defined, adjusted, strict=True):
            out[i] = float(v)
    return out
