"""Scale compression (central tendency): does an ordinal judge use less of the scale than the
humans do on the same items?

Three figures, each with a seeded percentile bootstrap interval over items (judge and human
score of an item resampled together; items in clusters — the epochs of one Inspect sample —
resampled a cluster at a time):

- the **SD ratio** ``sd(judge) / sd(human)``: below 1 the judge spreads its scores less than
  the humans (it compresses the scale), above 1 more;
- the **middle share**: the share of scores in the middle categories (all but the lowest and
  the highest) for the judge and for the humans, and their difference (judge − human, above
  0: the judge retreats to the middle more often);
- the **slope** of the least-squares regression of the judge's score on the human's: below 1
  the judge moves less than one category per category the humans move (attenuation);
- the **mean difference** ``mean(judge) − mean(human)`` in categories: below 0 the judge is
  stricter than the humans, above 0 more lenient (a location, beside the spread above).

The slope is attenuated by noise in the human scores too (errors in the regressor): a judge
equal to the true score, against single noisy human labels, has a slope of the humans'
reliability, below 1. The SD ratio has no such bias but grows with the humans' noise.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from assay.metrics._bias_records import ScaleCompression
from assay.metrics._cluster import cluster_mean, shared_clusters
from assay.metrics._intervals import bootstrap_ci
from assay.metrics._ordinal import _centred
from assay.metrics._rates import binomial_rate
from assay.metrics._validate import check_k, label_pair
from assay.metrics._value import MetricValue, with_ci

MIN_CATEGORIES = 3  # a middle needs a category between the two ends


def _sd_ratio_batched(judge: NDArray, human: NDArray) -> NDArray[np.float64]:
    _, dj = _centred(np.asarray(judge, np.float64))
    _, dh = _centred(np.asarray(human, np.float64))
    sd_h = np.sqrt((dh**2).sum(axis=-1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sd_h > 0, np.sqrt((dj**2).sum(axis=-1)) / sd_h, np.nan)


def _slope_batched(judge: NDArray, human: NDArray) -> NDArray[np.float64]:
    _, dj = _centred(np.asarray(judge, np.float64))
    _, dh = _centred(np.asarray(human, np.float64))
    var_h = (dh**2).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(var_h > 0, (dj * dh).sum(axis=-1) / var_h, np.nan)


def _mean_difference_batched(judge: NDArray, human: NDArray) -> NDArray:
    """mean(judge) − mean(human): of the scores, or of the middle-category indicators."""
    return judge.mean(axis=-1) - human.mean(axis=-1)


def scale_compression(
    human: ArrayLike,
    judge: ArrayLike,
    *,
    k: int,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    clusters: ArrayLike | None = None,
) -> ScaleCompression:
    """The judge's use of a ``k``-category ordinal scale against the humans' on the same items.

    ``human``, ``judge``: 0-based category indices in ``0..k-1``, one pair per item (one human
    label per item: a mean of several labels has a smaller spread than any one rater's and
    would make the judge look less compressed than it is). ``k`` must be at least 3.

    ``clusters``: one id per item, for items that are not independent (the epochs of one
    Inspect sample: the same input and reference, judged again). Every interval then resamples
    whole clusters with all their items, and a middle share's is that bootstrap's (the exact
    interval over the clusters, each counted once, where every item is on one side); the
    figures themselves are unchanged. Clusters of one item each are independent items."""
    k = check_k(k)
    if k < MIN_CATEGORIES:
        raise ValueError(
            f"scale compression needs an ordinal scale of at least {MIN_CATEGORIES} categories "
            f"(a middle between the ends), got k={k}"
        )
    h, j, k = label_pair(human, judge, k, ("human", "judge"))
    h_f, j_f = h.astype(np.float64), j.astype(np.float64)
    n = int(h.size)
    ids = shared_clusters(clusters, np.arange(n))
    options = dict(n_resamples=n_resamples, confidence=confidence, seed=seed)
    no_spread = "the human scores do not vary"
    interval = functools.partial(bootstrap_ci, clusters=ids, **options)

    notes = (
        []
        if ids is None
        else [
            f"bootstrap resampled {np.unique(ids).size} clusters (the items of one sample, as "
            f"an Inspect log's epochs, together), not the {n} items"
        ]
    )

    def share(middle: NDArray[np.float64]) -> MetricValue:
        if ids is None:
            return binomial_rate(int(middle.sum()), n, confidence=confidence)
        return cluster_mean(middle, ids, **options, what="samples")

    ratio = float(_sd_ratio_batched(j_f, h_f))
    sd_ratio = with_ci(
        ratio, interval(_sd_ratio_batched, j_f, h_f), n, why_undefined=no_spread, notes=notes
    )
    slope_value = float(_slope_batched(j_f, h_f))
    slope = with_ci(
        slope_value,
        interval(_slope_batched, j_f, h_f),
        n,
        why_undefined=no_spread,
        notes=notes,
    )
    intercept = (  # None where undefined: JSON has no NaN
        float(j_f.mean() - slope_value * h_f.mean()) if not math.isnan(slope_value) else None
    )

    j_mid = ((j > 0) & (j < k - 1)).astype(np.float64)
    h_mid = ((h > 0) & (h < k - 1)).astype(np.float64)
    difference = with_ci(
        float(j_mid.mean() - h_mid.mean()),
        interval(_mean_difference_batched, j_mid, h_mid),
        n,
        why_undefined="no items",
        notes=notes,
    )
    return ScaleCompression(
        n=n,
        k=k,
        judge_sd=float(j_f.std(ddof=1)) if n > 1 else None,
        human_sd=float(h_f.std(ddof=1)) if n > 1 else None,
        sd_ratio=sd_ratio,
        middle=tuple(range(1, k - 1)),
        judge_middle_share=share(j_mid),
        human_middle_share=share(h_mid),
        middle_share_difference=difference,
        slope=slope,
        intercept=intercept,
        mean_difference=with_ci(
            float(j_f.mean() - h_f.mean()),
            interval(_mean_difference_batched, j_f, h_f),
            n,
            why_undefined="no items",
            notes=notes,
        ),
    )
