"""Calibrating a probability threshold for a binary judge (pure)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from assay.metrics._kappa import cohen_kappa


def fit_threshold(scores: ArrayLike, labels: ArrayLike) -> tuple[float, float]:
    """The threshold ``t`` on ``scores`` (e.g. P(label 1)) whose decisions ``score >= t``
    agree best with the 0/1 ``labels`` by Cohen's κ; returns ``(t, κ)``.

    Candidates are one cut per distinct score (reported as the midpoint to the score below
    where that still separates them) and one above the highest. Among equally good thresholds the one closest to 0.5 is taken
    (then the lower), so the choice does not depend on the order of the data.
    """
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=int)
    if s.shape != y.shape or s.ndim != 1 or s.size == 0:
        raise ValueError("scores and labels must be non-empty 1-D arrays of the same length")
    if not np.isin(y, (0, 1)).all():
        raise ValueError("labels must be 0 or 1")
    u = np.unique(s)
    # Every distinct decision is `s >= u[i]` for some i, or "nothing positive" (above the max).
    # The reported threshold is the midpoint below u[i] when it still separates u[i-1] from u[i]
    # (floating point can collapse the midpoint of very close scores), else u[i] itself.
    candidates = []
    for i, cut in enumerate(u):
        mid = (u[i - 1] + cut) / 2 if i else cut
        candidates.append(float(mid) if i and u[i - 1] < mid <= cut else float(cut))
    candidates.append(float(np.nextafter(u[-1], np.inf)))
    best: tuple[float, float, float] | None = None  # (kappa, -distance to 0.5, -t)
    best_t = candidates[0]
    for t in candidates:
        k = cohen_kappa(y, (s >= t).astype(int), k=2)
        k = -1.0 if np.isnan(k) else float(k)
        key = (round(k, 12), -abs(t - 0.5), -t)
        if best is None or key > best:
            best, best_t = key, t
    assert best is not None
    return best_t, best[0]
