"""Does a labelled sample look like the items it is meant to be a random sample of?

Prediction-powered estimates assume that the items a person labelled are a uniform random sample
of all the items. That cannot be proven from the data, but a sample chosen some other way —
the first rows of a file, the easy cases, another data set — often shows: a feature that
does not depend on the labels (the text's length, a category column, the judge's own
prediction) is distributed differently among the labelled items than among the others.

:func:`compare_samples` tests one such feature: the two-sample Kolmogorov–Smirnov test for a
number (``scipy.stats.ks_2samp``), Pearson's chi-square test of homogeneity for a category
(``scipy.stats.chi2_contingency``, with Yates' correction on a 2 × 2 table, as scipy does). A
small p-value says the two groups differ; a large one says only that no difference was seen
(a small labelled sample has little power). Several features are one family: adjust their
p-values together (:func:`assay.metrics.holm`).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from pydantic import ConfigDict
from pydantic.dataclasses import dataclass

from assay.metrics._validate import as_scores
from assay.metrics._value import Undefinable

FeatureKind = Literal["numeric", "categorical"]
KS = "two-sample Kolmogorov–Smirnov"
CHI_SQUARE = "chi-square test of homogeneity"


@dataclass(frozen=True, config=ConfigDict(ser_json_inf_nan="constants"))
class SampleComparison:
    """One feature of the labelled items against the same feature of the others: the test, its
    statistic and p-value (two-sided), and the group sizes. ``note`` says when the test had
    nothing to compare or its approximation is rough."""

    what: str
    test: str
    statistic: Undefinable
    p_value: Undefinable
    n_labelled: int
    n_unlabelled: int
    note: str | None = None


def compare_samples(
    labelled: ArrayLike | Sequence[Hashable],
    unlabelled: ArrayLike | Sequence[Hashable],
    *,
    what: str,
    kind: FeatureKind,
) -> SampleComparison:
    """Test whether a feature (``what``: named in the result) is distributed alike among the
    ``labelled`` items and the ``unlabelled`` ones: ``numeric`` values by the two-sample
    Kolmogorov–Smirnov test, ``categorical`` values (any hashable) by the chi-square test of
    homogeneity of their counts. Each group needs at least one item."""
    if kind == "numeric":
        a, b = as_scores(labelled, "labelled"), as_scores(unlabelled, "unlabelled")
        _non_empty(a.size, b.size)
        from scipy.stats import ks_2samp

        res = ks_2samp(a, b)
        return SampleComparison(what, KS, float(res.statistic), float(res.pvalue), a.size, b.size)
    if kind != "categorical":
        raise ValueError(f"kind must be 'numeric' or 'categorical', got {kind!r}")
    left, right = list(labelled), list(unlabelled)  # type: ignore[arg-type]
    _non_empty(len(left), len(right))
    for values, name in ((left, "labelled"), (right, "unlabelled")):
        for i, v in enumerate(values):
            if v is None or (isinstance(v, float) and math.isnan(v)) or not isinstance(v, Hashable):
                raise ValueError(f"{name} has no category at position {i} (got {v!r})")
    categories = list(dict.fromkeys([*left, *right]))
    if len(categories) < 2:
        return SampleComparison(
            what, CHI_SQUARE, 0.0, 1.0, len(left), len(right), "one category: nothing to compare"
        )
    index = {c: k for k, c in enumerate(categories)}
    table = np.zeros((2, len(categories)))
    for row, values in enumerate((left, right)):
        for v in values:
            table[row, index[v]] += 1
    from scipy.stats import chi2_contingency

    res = chi2_contingency(table)
    note = None
    if (res.expected_freq < 5).any():
        note = "approximate: some expected counts are below 5"
    return SampleComparison(
        what, CHI_SQUARE, float(res.statistic), float(res.pvalue), len(left), len(right), note
    )


def _non_empty(n_labelled: int, n_unlabelled: int) -> None:
    if not n_labelled or not n_unlabelled:
        raise ValueError(
            f"each group needs at least one item, got {n_labelled} labelled and "
            f"{n_unlabelled} unlabelled"
        )
