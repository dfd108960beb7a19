"""Adjusted p-values over a family of tests.

Benjamini–Hochberg controls the false discovery rate over a large family (every bias test of a
run × every judge), where a family-wise correction would leave a run with many judges and
tests unable to flag anything: a test rejected at adjusted p ≤ q keeps the expected share of
false flags among all flags at most ``q`` when the tests are independent or positively
dependent (Benjamini & Hochberg 1995; Benjamini & Yekutieli 2001 for the dependence condition).

Holm controls the family-wise error over a small family (the few checks that a labelled sample
looks like the items it was drawn from): under any dependence, the chance that any test of a
family where nothing differs is rejected at adjusted p ≤ α is at most α (Holm 1979).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray


def benjamini_hochberg(p_values: ArrayLike) -> NDArray[np.float64]:
    """Benjamini–Hochberg adjusted p-values, in the order given: sorted ``p₍ᵢ₎ · m / i``, a
    running minimum from the largest down, capped at 1 (as
    ``statsmodels.stats.multitest.multipletests(method="fdr_bh")`` computes them). An undefined
    (nan) p-value stays nan and is not counted in ``m``."""

    def step(sorted_p: NDArray[np.float64]) -> NDArray[np.float64]:
        m = sorted_p.size
        scaled = sorted_p * m / np.arange(1, m + 1)
        return np.minimum.accumulate(scaled[::-1])[::-1]

    return _adjusted(p_values, step)


def holm(p_values: ArrayLike) -> NDArray[np.float64]:
    """Holm's step-down adjusted p-values, in the order given: sorted ``p₍ᵢ₎ · (m − i + 1)``, a
    running maximum from the smallest up, capped at 1 (as
    ``statsmodels.stats.multitest.multipletests(method="holm")`` computes them). An undefined
    (nan) p-value stays nan and is not counted in ``m``."""

    def step(sorted_p: NDArray[np.float64]) -> NDArray[np.float64]:
        m = sorted_p.size
        return np.maximum.accumulate(sorted_p * (m - np.arange(m)))

    return _adjusted(p_values, step)


def _adjusted(
    p_values: ArrayLike, step: Callable[[NDArray[np.float64]], NDArray[np.float64]]
) -> NDArray[np.float64]:
    """The p-values checked, the defined ones adjusted by ``step`` in ascending order (capped
    at 1) and put back in the order given."""
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"p_values must be 1-D, got an array of shape {p.shape}")
    bad = ~np.isnan(p) & ~((p >= 0) & (p <= 1))
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise ValueError(f"p_values must lie in [0, 1], got {p[first]} at position {first}")
    out = np.full(p.shape, math.nan)
    defined = np.flatnonzero(~np.isnan(p))
    if defined.size:
        values = p[defined]
        order = np.argsort(values, kind="stable")
        adjusted = np.empty(values.size)
        adjusted[order] = np.minimum(step(values[order]), 1.0)
        out[defined] = adjusted
    return out
