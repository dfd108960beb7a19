"""Self-preference: does a judge score outputs of its own model family higher than others'?

Each judged item carries the family of the model that generated it (``generator``), and the
judge has a family of its own. The raw difference of the judge's mean score on its own
family's items and on the others' mixes two things: a preference for its own outputs and a
real difference in their quality. Where a human reference score exists, the judge's *error*
is compared instead:

    Δ = mean(judge − human | own family) − mean(judge − human | other families)

which is 0 for a judge whose errors do not depend on who wrote the output, however good the
outputs of its family are. Without references the raw difference is reported, with a note
that it confounds quality with preference.

The two groups are different items, so the interval is Welch's (a t interval with the
Welch–Satterthwaite degrees of freedom, the groups' variances not assumed equal) and the
p-value is Welch's two-sided t-test of ``H0: Δ = 0`` — the test the interval inverts: p is
below 1 − confidence exactly when the interval excludes 0 (a run flags an interval above 0).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from assay.metrics._bias_records import SelfPreference
from assay.metrics._intervals import _check_confidence
from assay.metrics._validate import _as_1d, _same_length, as_scores

WELCH = "Welch t"
WELCH_TEST = "Welch t-test, two-sided"
MIN_PER_GROUP = 2  # a variance needs two values
CONFOUNDED = (
    "no human reference: the raw difference of the judge's scores confounds a preference for "
    "its own family with any real difference in quality between the families' outputs"
)


def self_preference(
    scores: ArrayLike,
    generators: Sequence[Hashable],
    judge_family: Hashable,
    *,
    reference: ArrayLike | None = None,
    confidence: float = 0.95,
) -> SelfPreference:
    """The judge's self-preference Δ with its Welch interval and one-sided p-value.

    ``scores``: the judge's score of each item (a number; unscored items are the caller's to
    drop and count). ``generators``: the model family that wrote each item's output;
    ``judge_family``: the judge's, compared by equality. ``reference``: the human score of each
    item, nan where there is none; with it Δ compares ``judge − human`` on the items that have
    one, without it the raw scores. Each group needs at least two items."""
    confidence = _check_confidence(confidence)
    judge = as_scores(scores, "scores")
    own = _own_family(generators, judge_family, judge.size)
    human = None
    n_without = 0
    if reference is not None:
        human = _as_1d(reference, "reference").astype(np.float64)
        _same_length(judge, human, ("scores", "reference"))
        if np.isinf(human).any():
            first = int(np.flatnonzero(np.isinf(human))[0])
            raise ValueError(
                f"reference must hold finite numbers (nan for none), got {human[first]} at "
                f"position {first}"
            )
        has = ~np.isnan(human)
        n_without = int((~has).sum())
        judge, human, own = judge[has], human[has], own[has]
    _check_groups(own, str(judge_family), with_reference=human is not None)

    values = judge if human is None else judge - human
    difference, low, high, p, df, note = _welch(values[own], values[~own], confidence)
    notes = [x for x in (None if human is not None else CONFOUNDED, note) if x]
    return SelfPreference(
        judge_family=str(judge_family),
        adjusted=human is not None,
        difference=difference,
        ci_low=low,
        ci_high=high,
        confidence=confidence,
        interval=WELCH,
        p_value=p,
        test=WELCH_TEST,
        df=df,
        n_own=int(own.sum()),
        n_other=int((~own).sum()),
        judge_own=float(judge[own].mean()),
        judge_other=float(judge[~own].mean()),
        reference_own=None if human is None else float(human[own].mean()),
        reference_other=None if human is None else float(human[~own].mean()),
        n_without_reference=n_without,
        note="; ".join(notes) or None,
    )


def _own_family(generators: Sequence[Hashable], family: Hashable, n: int) -> NDArray[np.bool_]:
    """Per item: was its output written by the judge's family? Every item needs a family."""
    names = list(generators)
    if len(names) != n:
        raise ValueError(
            f"scores and generators must have the same length, got {n} and {len(names)}"
        )
    for i, g in enumerate(names):
        if g is None or (isinstance(g, float) and math.isnan(g)) or g == "":
            raise ValueError(f"generators has no model family at position {i}, got {g!r}")
    return np.array([g == family for g in names], dtype=bool)


def _check_groups(own: NDArray[np.bool_], family: str, *, with_reference: bool) -> None:
    where = " with a reference score" if with_reference else ""
    for count, who in (
        (int(own.sum()), f"of family {family!r}"),
        (int((~own).sum()), "of other families"),
    ):
        if count < MIN_PER_GROUP:
            raise ValueError(
                f"self-preference needs at least {MIN_PER_GROUP} items {who}{where}, got {count}"
            )


def _welch(
    own: NDArray[np.float64], other: NDArray[np.float64], confidence: float
) -> tuple[float, float, float, float, float, str | None]:
    """``(Δ, low, high, two-sided p, df, note)`` of Welch's interval and test of
    ``mean(own) − mean(other)``; nan interval and p-value when neither group varies."""
    difference = float(own.mean() - other.mean())
    v_own = float(own.var(ddof=1)) / own.size
    v_other = float(other.var(ddof=1)) / other.size
    se2 = v_own + v_other
    if se2 == 0:
        return (
            difference,
            math.nan,
            math.nan,
            math.nan,
            math.nan,
            ("no variation within either group: no standard error, so no interval or test"),
        )
    df = se2**2 / (v_own**2 / (own.size - 1) + v_other**2 / (other.size - 1))
    from scipy.stats import t  # scipy.stats takes a second to import: on first use

    se = math.sqrt(se2)
    half = float(t.ppf(1 - (1 - confidence) / 2, df)) * se
    p = min(1.0, 2 * float(t.sf(abs(difference) / se, df)))
    return difference, difference - half, difference + half, p, float(df), None
