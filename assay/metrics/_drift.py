"""Drift: the same judge config on the same anchor items at two times. Did its verdicts change
more often than its own sampling noise explains?

The noise is the judge's measured stochastic stability: from k verdicts per item sampled
independently, the probability that two independent verdicts on an item differ is
``1 − Σ_c p_c²``, estimated without bias per item by ``1 − Σ_c n_c (n_c − 1) / (k (k − 1))``
(the share of disagreeing pairs among its k samples) and averaged over the items: the predicted
change rate. That rate is itself an estimate, so the test splits its level α (Bonferroni): the
rate's upper bound at ``1 − α/2`` (percentile bootstrap over the stability items) and the
one-sided exact binomial test ``P(X ≥ changed | n, upper bound)`` at ``α/2`` (scipy) — together
a false alarm at most α. The change rate gets a Clopper–Pearson interval. With no stability
measured the predicted rate is 0 and the test is at α: any change is flagged.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np
from numpy.typing import ArrayLike
from pydantic import ConfigDict
from pydantic.dataclasses import dataclass

from assay.metrics._value import Undefinable


@dataclass(frozen=True, config=ConfigDict(ser_json_inf_nan="constants"))
class Stability:
    """The change rate a judge's sampling noise predicts: its estimate, the upper bound the
    drift test uses (one-sided, ``1 − level/2``) and the items it was measured on."""

    rate: Undefinable
    upper: Undefinable
    items: int
    samples: int  # the most samples of one item (k)
    level: Undefinable


@dataclass(frozen=True, config=ConfigDict(ser_json_inf_nan="constants"))
class DriftTest:
    """Changed verdicts among ``n`` anchors against the stability-predicted rate."""

    n: int
    changed: int
    rate: Undefinable
    ci_low: float  # Clopper–Pearson at ``confidence``
    ci_high: Undefinable
    confidence: Undefinable
    predicted: float  # the change rate stability predicts (0: none measured)
    tested_against: float  # its upper bound (or 0), the binomial test's rate
    p_value: float  # one-sided exact binomial: P(X ≥ changed | n, tested_against)
    level: float  # the family's: a false alarm at most this
    test_level: float  # the binomial test's own: level / 2 with a measured stability
    drifted: bool
    # the anchors' effective number when they are epochs of Inspect samples (None: independent):
    # the test and the interval at it, the changes in proportion
    effective_n: float | None = None


def item_change_rates(samples: Iterable[Sequence[int]]) -> list[float]:
    """Per item with at least 2 samples: the share of its sample pairs that disagree (the
    unbiased estimate of P(two independent verdicts differ))."""
    rates = []
    for verdicts in samples:
        k = len(verdicts)
        if k >= 2:
            same = sum(c * (c - 1) for c in Counter(verdicts).values())
            rates.append(1.0 - same / (k * (k - 1)))
    return rates


def stability(
    samples: Iterable[Sequence[int]], *, level: float = 0.05, n_resamples: int = 1000, seed: int = 0
) -> Stability:
    """The predicted change rate from each item's sampled verdicts (items with fewer than 2
    samples say nothing and are not used), with its ``1 − level/2`` upper bound."""
    import numpy as np

    from assay.metrics._intervals import bootstrap_ci

    samples = [list(s) for s in samples]
    rates = item_change_rates(samples)
    if not rates:
        raise ValueError("no item with at least 2 sampled verdicts")
    if all(r == rates[0] for r in rates):
        upper = rates[0]  # no spread to resample (e.g. a judge that never changes its mind)
    else:

        def mean(x):
            return np.mean(x, axis=-1)

        upper = bootstrap_ci(
            mean, rates, n_resamples=n_resamples, confidence=1 - level, seed=seed
        ).high
    return Stability(
        rate=float(sum(rates) / len(rates)),
        upper=float(upper),
        items=len(rates),
        samples=max(len(s) for s in samples),
        level=level,
    )


def drift_test(
    changed: int,
    n: int,
    measured: Stability | None,
    *,
    level: float = 0.05,
    confidence: float = 0.95,
    clusters: ArrayLike | None = None,
) -> DriftTest:
    """Is ``changed`` of ``n`` more than the judge's measured stability explains at ``level``?
    (``measured``: from :func:`stability` at the same level; ``None``: no change expected.)

    ``clusters`` (one per anchor): where one holds several anchors (an Inspect log's epochs of
    one sample), the binomial test and the Clopper–Pearson interval are taken at the anchors'
    effective number (:func:`~assay.metrics.effective_trials`: the worst correlation within a
    cluster), with the changes in proportion (real numbers: the Beta function's forms of
    both)."""
    from scipy.special import betainc
    from scipy.stats import binom

    from assay.metrics._cluster import effective_trials, shared_clusters
    from assay.metrics._intervals import (
        clopper_pearson_interval,
        effective_clopper_pearson_interval,
    )

    if n < 1 or not 0 <= changed <= n:
        raise ValueError(f"need 0 <= changed <= n and n >= 1, got changed={changed}, n={n}")
    for name, x in (("level", level), ("confidence", confidence)):
        if not 0 < x < 1:
            raise ValueError(f"{name} must be strictly between 0 and 1, got {x}")
    if measured is not None and measured.level != level:
        raise ValueError(f"stability bound at level {measured.level}, the test at {level}")
    against = measured.upper if measured is not None else 0.0
    test_level = level / 2 if measured is not None else level
    grouped = shared_clusters(clusters, np.arange(n))
    effective_n = None if grouped is None else effective_trials(grouped)
    if effective_n is not None:
        x = changed / n * effective_n
        # P(X ≥ x | trials, against) = I_against(x, trials − x + 1): the binomial's tail in
        # the form that takes real counts
        p = float(betainc(x, effective_n - x + 1, against)) if changed else 1.0
        low, high = effective_clopper_pearson_interval(x, effective_n, confidence)
    else:
        p = float(binom.sf(changed - 1, n, against)) if changed else 1.0
        low, high = clopper_pearson_interval(changed, n, confidence)
    return DriftTest(
        n=n,
        changed=changed,
        rate=changed / n,
        ci_low=low,
        ci_high=high,
        confidence=confidence,
        predicted=measured.rate if measured is not None else 0.0,
        tested_against=against,
        p_value=min(1.0, p),
        level=level,
        test_level=test_level,
        drifted=p < test_level,
        effective_n=effective_n,
    )
