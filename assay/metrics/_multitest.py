"""Benjamini–Hochberg adjusted p-values: the false discovery rate over a family of tests (every
bias test of a run × every judge), where a family-wise correction (Holm) would leave a run
with many judges and tests unable to flag anything.

A test rejected at adjusted p ≤ q keeps the expected share of false flags among all flags at
most ``q`` when the tests are independent or positively dependent (Benjamini & Hochberg 1995;
Benjamini & Yekutieli 2001 for the dependence condition).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray


def benjamini_hochberg(p_values: ArrayLike) -> NDArray[np.float64]:
    """Benjamini–Hochberg adjusted p-values, in the order given: sorted ``p₍ᵢ₎ · m / i``, a
    running minimum from the largest down, capped at 1 (as
    ``statsmodels.stats.multitest.multipletests(method="fdr_bh")`` computes them). An undefined
    (nan) p-value stays nan and is not counted in ``m``."""
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
        m = values.size
        scaled = values[order] * m / np.arange(1, m + 1)
        stepped = np.minimum.accumulate(scaled[::-1])[::-1]
        adjusted = np.empty(m)
        adjusted[order] = np.minimum(stepped, 1.0)
        out[defined] = adjusted
    return out
