"""Drift: the same judge config on the same anchor items at two times. Did its verdicts change
more often than its own sampling noise explains?

The noise is the judge's measured stochastic stability: from k verdicts per item sampled
independently, the probability that two independent verdicts on an item differ is
``1 − Σ_c p_c²``, estimated without bias per item by ``1 − Σ_c n_c (n_c − 1) / (k (k − 1))``
(the share of disagreeing pairs among its k samples) and averaged over the items: the predicted
change rate ``p``. The observed count of changed verdicts among ``n`` anchors is tested against
``Binomial(n, p)``: one-sided exact p-value ``P(X ≥ changed)`` (scipy), and the change rate gets
a Clopper–Pearson interval. With no stability measured, ``p = 0``: any change is flagged.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence

from pydantic import ConfigDict
from pydantic.dataclasses import dataclass


@dataclass(frozen=True, config=ConfigDict(ser_json_inf_nan="constants"))
class DriftTest:
    """Changed verdicts among ``n`` anchors against the stability-predicted rate."""

    n: int
    changed: int
    rate: float
    ci_low: float  # Clopper–Pearson at ``confidence``
    ci_high: float
    confidence: float
    predicted: float  # the change rate stability predicts (0: none measured)
    p_value: float  # one-sided exact binomial: P(X ≥ changed | n, predicted)
    level: float
    drifted: bool


def predicted_change_rate(samples: Iterable[Sequence[int]]) -> tuple[float, int]:
    """``(mean over items of the unbiased pairwise disagreement of its samples, items used)``;
    an item with fewer than 2 samples says nothing and is not used."""
    rates = []
    for verdicts in samples:
        k = len(verdicts)
        if k < 2:
            continue
        same = sum(c * (c - 1) for c in Counter(verdicts).values())
        rates.append(1.0 - same / (k * (k - 1)))
    if not rates:
        raise ValueError("no item with at least 2 sampled verdicts")
    return sum(rates) / len(rates), len(rates)


def drift_test(
    changed: int,
    n: int,
    predicted: float,
    *,
    level: float = 0.05,
    confidence: float = 0.95,
) -> DriftTest:
    """Is ``changed`` of ``n`` more than ``Binomial(n, predicted)`` explains at ``level``?"""
    from scipy.stats import binom, binomtest

    if n < 1 or not 0 <= changed <= n:
        raise ValueError(f"need 0 <= changed <= n and n >= 1, got changed={changed}, n={n}")
    if not 0 <= predicted <= 1:
        raise ValueError(f"predicted must be a rate in [0, 1], got {predicted}")
    for name, x in (("level", level), ("confidence", confidence)):
        if not 0 < x < 1:
            raise ValueError(f"{name} must be strictly between 0 and 1, got {x}")
    p = float(binom.sf(changed - 1, n, predicted)) if changed else 1.0
    ci = binomtest(changed, n).proportion_ci(confidence_level=confidence, method="exact")
    return DriftTest(
        n=n,
        changed=changed,
        rate=changed / n,
        ci_low=float(ci.low),
        ci_high=float(ci.high),
        confidence=confidence,
        predicted=predicted,
        p_value=min(1.0, p) if not math.isnan(p) else p,
        level=level,
        drifted=p < level,
    )
