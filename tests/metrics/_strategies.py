"""Hypothesis strategies shared by the metrics tests: paired labels and paired scores."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st


@st.composite
def label_pairs(draw, min_k: int = 2, max_k: int = 6, max_size: int = 40):
    """(k, y_true, y_pred): two equally long arrays of indices in 0..k-1."""
    k = draw(st.integers(min_k, max_k))
    n = draw(st.integers(1, max_size))
    labels = st.lists(st.integers(0, k - 1), min_size=n, max_size=n)
    return k, np.array(draw(labels)), np.array(draw(labels))


@st.composite
def score_pairs(draw, min_size: int = 1, max_size: int = 40):
    """(x, y): two equally long arrays of real scores with two decimals in [-10, 10]."""
    n = draw(st.integers(min_size, max_size))
    scores = st.lists(st.integers(-1000, 1000), min_size=n, max_size=n)
    return np.array(draw(scores)) / 100.0, np.array(draw(scores)) / 100.0


@st.composite
def bool_pairs(draw, max_size: int = 40):
    """(a, b): two equally long boolean arrays."""
    n = draw(st.integers(1, max_size))
    flags = st.lists(st.booleans(), min_size=n, max_size=n)
    return np.array(draw(flags)), np.array(draw(flags))
