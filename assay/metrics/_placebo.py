"""The effect of a cue on a judge's verdicts, measured against a placebo.

A bias probe inserts a cue (a fabricated citation, "most reviewers judged this …", an injected
instruction) and asks whether the verdict moves. A judge that samples its verdicts moves too,
cue or no cue, so the share of moved verdicts alone makes a noisy judge look biased by every
cue. The placebo is the same item judged again, unchanged, with the same sampling and the LM
cache bypassed: it moves only by the judge's own noise.

Per source item there are three verdicts: on the unchanged item (``baseline``), on the item
with the cue (``cue``) and on the unchanged item judged again (``placebo``). The cue points to
a verdict (``toward``: the label it asserts, or for an ordinal scale the end it pushes to). A
verdict *flips toward the cue* when it moves from the baseline to the cue's label (binary,
categorical) or in the cue's direction (ordinal). Over the items whose baseline is not already
the cue's verdict (only those can move toward it):

    effect = P(cue flips toward) − P(placebo flips toward)

The two flips are observed on the same items, so the interval is Newcombe's for paired
proportions (:func:`newcombe_paired_interval`), and the p-value of ``H0: effect ≤ 0`` is the
exact one-sided McNemar test: given the items where exactly one of the two flipped, under
``H0`` the cue's share of them is at most one half (binomial, ``p = P(X ≥ cue only)`` for
``X ~ Bin(cue only + placebo only, 1/2)``). A judge that ignores the cue has exchangeable cue
and placebo verdicts, so its effect is 0 whatever its noise.

The directional share says where the verdicts that changed went: of the items whose verdict
changed under the cue, the share that moved toward it (the placebo's share beside it is what
noise alone gives). A family of effects (a run's tests × judges) is flagged by
Benjamini–Hochberg at a false discovery rate ``q`` (:func:`with_fdr`).

A cue with two poles and no direction known in advance (the order of a pair: a judge may prefer
the answer shown first or the one shown second, and both are a position bias) is measured by
:func:`two_sided_placebo_effect`: per item, did the cue move the verdict further toward one pole
than the placebo did? The signed effect is the share of items where the cue moved it further
toward the ``toward`` pole minus the share where it moved it further toward the ``away`` pole
(positive: ``toward`` is favoured), with Newcombe's interval and the exact two-sided McNemar
p-value (under no effect the cue and placebo verdicts are exchangeable, so each such item goes
either way with probability one half).

Items in clusters (``clusters``: the epochs of one Inspect sample, each judged with the cue and
on the placebo) are not independent: a sample whose verdict moved under the cue moves in every
epoch, and counting its epochs as items makes the test and the interval surer than the samples
allow. Where a cluster holds several items, the paired table's counts are divided by the
design effect of the clusters (:func:`~assay.metrics.paired_design_effect`: the clustered
variance of the discordant difference over its independent one), and the same interval and
test are computed on those effective counts — the exact binomial tail taken at non-integer
counts through the regularized incomplete beta function. Its normal approximation is
Durkalski et al.'s clustered McNemar statistic; epochs that repeat each sample's verdicts
exactly give the samples' own interval and p-value.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from assay.metrics._cluster import _cluster_index, paired_design_effect, shared_clusters
from assay.metrics._intervals import _check_confidence, newcombe_paired_interval
from assay.metrics._multitest import benjamini_hochberg
from assay.metrics._validate import _same_length, as_labels
from assay.metrics._value import PlaceboEffect

Kind = Literal["binary", "categorical", "ordinal"]
NEWCOMBE = "Newcombe paired score interval (method 10)"
EXACT_MCNEMAR = "exact McNemar, one-sided"
EXACT_MCNEMAR_TWO_SIDED = "exact McNemar, two-sided"


def flips_toward(
    baseline: NDArray[np.int64], verdict: NDArray[np.int64], toward: NDArray[np.int64], kind: Kind
) -> NDArray[np.bool_]:
    """Per item: did ``verdict`` move from ``baseline`` toward the cue's verdict ``toward``?
    For binary and categorical scales: it is now the cue's label and was not; for an ordinal
    scale: it moved in the direction from the baseline to ``toward``."""
    if kind == "ordinal":
        return np.sign(verdict - baseline) * np.sign(toward - baseline) > 0
    return (verdict == toward) & (baseline != toward)


def placebo_effect(
    baseline: ArrayLike,
    cue: ArrayLike,
    placebo: ArrayLike,
    toward: int | ArrayLike,
    *,
    kind: Kind,
    confidence: float = 0.95,
    clusters: ArrayLike | None = None,
    what: str = "clusters",
) -> PlaceboEffect:
    """The effect of a cue on the judge's verdicts against the placebo, with Newcombe's paired
    interval and the exact one-sided McNemar p-value of ``effect ≤ 0``.

    ``baseline``, ``cue``, ``placebo``: the judge's verdicts (0-based category indices, ordered
    for an ordinal scale), one per source item, on the unchanged item, the item with the cue
    and the unchanged item judged again without the cache. Items where any of the three is
    unscored are the caller's to drop and count. ``toward``: the cue's verdict, one index for
    every item or one per item (e.g. the opposite of each item's reference label). ``kind``:
    ``binary``, ``categorical`` (a flip is a move to the cue's label) or ``ordinal`` (a move in
    the cue's direction). ``clusters``: each item's cluster id, where items come in clusters
    (the epochs of an Inspect sample): the interval and the test on the counts divided by the
    clusters' design effect (see the module's docstring); ``what``: what the clusters are, for
    the note."""
    if kind not in ("binary", "categorical", "ordinal"):
        raise ValueError(f"kind must be 'binary', 'categorical' or 'ordinal', got {kind!r}")
    confidence = _check_confidence(confidence)
    v0 = as_labels(baseline, "baseline")
    v_cue = as_labels(cue, "cue")
    v_placebo = as_labels(placebo, "placebo")
    _same_length(v0, v_cue, ("baseline", "cue"))
    _same_length(v0, v_placebo, ("baseline", "placebo"))
    target = _toward(toward, v0.size)

    eligible = v0 != target
    cue_toward = flips_toward(v0, v_cue, target, kind)
    placebo_toward = flips_toward(v0, v_placebo, target, kind)
    both = int(np.sum(cue_toward & placebo_toward))
    cue_only = int(np.sum(cue_toward & ~placebo_toward))
    placebo_only = int(np.sum(~cue_toward & placebo_toward))
    n = int(eligible.sum())
    cue_changes = int(np.sum(v_cue != v0))
    placebo_changes = int(np.sum(v_placebo != v0))
    cue_flips, placebo_flips = both + cue_only, both + placebo_only
    counts = dict(
        n=n,
        n_at_cue=int(v0.size - n),
        cue_flips=cue_flips,
        placebo_flips=placebo_flips,
        both_flipped=both,
        cue_only=cue_only,
        placebo_only=placebo_only,
        confidence=confidence,
        interval=NEWCOMBE,
        test=EXACT_MCNEMAR,
        cue_changes=cue_changes,
        placebo_changes=placebo_changes,
        directional_share=_share(cue_flips, cue_changes),
        placebo_directional_share=_share(placebo_flips, placebo_changes),
    )
    return _measured(
        counts,
        (both, cue_only, placebo_only),
        one_sided_mcnemar,
        undefined="every baseline verdict already is the cue's, so no verdict can move toward it",
        clustered=_clustered(
            cue_toward.astype(np.int64) - placebo_toward.astype(np.int64), clusters, eligible
        ),
        what=what,
    )


def two_sided_placebo_effect(
    baseline: ArrayLike,
    cue: ArrayLike,
    placebo: ArrayLike,
    toward: ArrayLike,
    away: ArrayLike,
    *,
    poles: tuple[str, str] = ("toward", "away"),
    confidence: float = 0.95,
    clusters: ArrayLike | None = None,
    what: str = "clusters",
) -> PlaceboEffect:
    """The effect of a cue with two poles (``toward`` and ``away``, a verdict index each, per
    item) and no direction known in advance, against the placebo; signed, tested two-sided.

    Per item the verdict's place on the axis from ``away`` (0) to ``toward`` (1; any other
    verdict, a tie, ½) gives each move from the baseline a sign. The cue moved the verdict
    *further toward* a pole than the placebo when its sign is past the placebo's that way.
    ``effect`` = P(further toward ``toward``) − P(further toward ``away``) over every item,
    Newcombe's paired interval, the exact two-sided McNemar p-value of ``effect = 0``, and
    ``favoured``: the name in ``poles`` of the pole the effect points to (None at 0). The
    counts face the favoured pole (``toward`` at 0): ``cue_flips`` / ``placebo_flips`` the
    moves to it under the cue / the placebo, ``cue_only`` / ``placebo_only`` the items where
    the cue / the placebo moved further toward it than the other; ``n_at_cue`` is 0, as every
    item can move one way or the other. ``clusters``, ``what``: as for :func:`placebo_effect`."""
    confidence = _check_confidence(confidence)
    v0 = as_labels(baseline, "baseline")
    v_cue = as_labels(cue, "cue")
    v_placebo = as_labels(placebo, "placebo")
    _same_length(v0, v_cue, ("baseline", "cue"))
    _same_length(v0, v_placebo, ("baseline", "placebo"))
    up, down = _toward(toward, v0.size), _toward(away, v0.size)
    if np.any(up == down):
        raise ValueError("toward and away must be two different verdicts on every item")

    def place(v: NDArray[np.int64]) -> NDArray[np.float64]:
        return np.where(v == up, 1.0, np.where(v == down, 0.0, 0.5))

    start = place(v0)
    cue_move = np.sign(place(v_cue) - start)
    placebo_move = np.sign(place(v_placebo) - start)
    further_up = int(np.sum(cue_move > placebo_move))
    further_down = int(np.sum(cue_move < placebo_move))
    n = int(v0.size)
    sign = 1 if further_up >= further_down else -1
    favoured = None if further_up == further_down else poles[0 if sign > 0 else 1]
    cue_flips = int(np.sum(cue_move == sign))
    placebo_flips = int(np.sum(placebo_move == sign))
    cue_changes = int(np.sum(v_cue != v0))
    placebo_changes = int(np.sum(v_placebo != v0))
    counts = dict(
        n=n,
        n_at_cue=0,
        cue_flips=cue_flips,
        placebo_flips=placebo_flips,
        both_flipped=int(np.sum((cue_move == sign) & (placebo_move == sign))),
        cue_only=max(further_up, further_down),
        placebo_only=min(further_up, further_down),
        confidence=confidence,
        interval=NEWCOMBE,
        test=EXACT_MCNEMAR_TWO_SIDED,
        cue_changes=cue_changes,
        placebo_changes=placebo_changes,
        directional_share=_share(cue_flips, cue_changes),
        placebo_directional_share=_share(placebo_flips, placebo_changes),
        alternative="two-sided",
        favoured=favoured,
    )
    return _measured(
        counts,
        (0, further_up, further_down),
        two_sided_mcnemar,
        undefined="no item",
        clustered=_clustered(
            np.sign(cue_move - placebo_move).astype(np.int64), clusters, np.ones(n, dtype=bool)
        ),
        what=what,
    )


def _clustered(
    differences: NDArray[np.int64], clusters: ArrayLike | None, counted: NDArray[np.bool_]
) -> tuple[int, float] | None:
    """``(clusters, design effect)`` of the ``counted`` items when a cluster holds several of
    them; None when none does (or no clusters were given): the items are independent."""
    every = shared_clusters(clusters, np.arange(counted.shape[0]))
    ids = None if every is None else shared_clusters(every[counted], np.arange(int(counted.sum())))
    if ids is None:
        return None
    return _cluster_index(ids, ids.shape[0])[1], paired_design_effect(differences[counted], ids)


def _measured(
    counts: dict[str, Any],
    pairs: tuple[int, int, int],
    test: Callable[[float, float], float],
    *,
    undefined: str,
    clustered: tuple[int, float] | None = None,
    what: str = "clusters",
) -> PlaceboEffect:
    """The effect of ``counts`` (a :class:`PlaceboEffect`'s counts, ``n`` among them) from its
    paired outcomes ``pairs`` — (both, the first side only, the second side only) —:
    ``effect`` = (first only − second only) ÷ n with Newcombe's paired interval and ``test``'s
    p-value; every figure undefined, with the note ``undefined``, when ``n`` is 0.
    ``clustered``: ``(clusters, design effect)`` of items in clusters — the interval and the
    test on the counts divided by the design effect, and the note says so (``what``: what the
    clusters are)."""
    if clustered is not None:
        n_clusters, design_effect = clustered
        counts = dict(
            counts,
            clusters=n_clusters,
            design_effect=design_effect,
            interval=f"{counts['interval']}, counts ÷ the design effect of the clusters",
            test=f"{counts['test']}, counts ÷ the design effect of the clusters",
        )
    n, confidence = counts["n"], counts["confidence"]
    if n == 0:
        nan = math.nan
        return PlaceboEffect(
            **counts,
            cue_rate=nan,
            placebo_rate=nan,
            effect=nan,
            ci_low=nan,
            ci_high=nan,
            p_value=nan,
            note=f"undefined: {undefined}",
        )
    both, first_only, second_only = pairs
    neither = n - both - first_only - second_only
    de = 1.0 if clustered is None else clustered[1]
    low, high = newcombe_paired_interval(
        both, first_only, second_only, neither, confidence, design_effect=de
    )
    note = None
    if clustered is not None:
        note = (
            f"{n} items in {clustered[0]} clusters"
            + ("" if what == "clusters" else f" ({what})")
            + ", not independent: interval and test on the "
            f"counts ÷ their design effect {de:.2f}, as {n / de:.1f} independent items"
        )
    return PlaceboEffect(
        **counts,
        cue_rate=counts["cue_flips"] / n,
        placebo_rate=counts["placebo_flips"] / n,
        effect=(first_only - second_only) / n,
        ci_low=low,
        ci_high=high,
        p_value=test(first_only / de, second_only / de),  # whole counts: the exact binomial
        note=note,
    )


def one_sided_mcnemar(first_only: float, second_only: float) -> float:
    """Exact one-sided McNemar p-value of ``H0: P(first) ≤ P(second)`` on paired binary
    outcomes: ``P(X ≥ first_only)`` for ``X ~ Bin(first_only + second_only, 1/2)``; 1 without a
    discordant pair. Effective counts (divided by a design effect) need not be whole: the tail
    is then the regularized incomplete beta function ``I_½(first_only, second_only + 1)``,
    which is ``P(X ≥ first_only)`` at whole counts."""
    if first_only <= 0:  # P(X ≥ 0), with or without a discordant pair
        return 1.0
    if not (float(first_only).is_integer() and float(second_only).is_integer()):
        from scipy.special import betainc

        return float(betainc(first_only, second_only + 1.0, 0.5))
    first_only, second_only = int(first_only), int(second_only)
    discordant = first_only + second_only
    # P(X > first_only − 1), the binomial tail of scipy.special (scipy.stats.binom.sf's value to
    # within 1e-15, relative; a tenth of scipy.stats's import, which a run's end waits on)
    from scipy.special import bdtrc

    return float(bdtrc(first_only - 1, discordant, 0.5))


def two_sided_mcnemar(first_only: float, second_only: float) -> float:
    """Exact two-sided McNemar p-value of ``H0: P(first) = P(second)`` on paired binary
    outcomes: twice the smaller binomial tail of ``Bin(first_only + second_only, 1/2)``, at most
    1; 1 without a discordant pair."""
    return min(
        1.0, 2 * one_sided_mcnemar(max(first_only, second_only), min(first_only, second_only))
    )


def with_fdr(effects: Sequence[PlaceboEffect], q: float = 0.05) -> tuple[PlaceboEffect, ...]:
    """The effects of one family (a run's tests × judges) with their Benjamini–Hochberg adjusted
    p-values and ``flagged = p_adjusted ≤ q``; an undefined effect stays unflagged and does not
    count in the family's size."""
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must be strictly between 0 and 1, got {q!r}")
    adjusted = benjamini_hochberg([e.p_value for e in effects])
    return tuple(
        dataclasses.replace(
            e,
            p_adjusted=None if math.isnan(p) else float(p),
            flagged=False if math.isnan(p) else bool(p <= q),
        )
        for e, p in zip(effects, adjusted, strict=True)
    )


def _toward(toward: int | ArrayLike, n: int) -> NDArray[np.int64]:
    """The cue's verdict per item: one index broadcast to ``n`` items, or one per item."""
    if np.ndim(toward) == 0:
        return np.broadcast_to(as_labels([toward], "toward"), (n,))
    target = as_labels(toward, "toward")
    if target.size != n:
        raise ValueError(
            f"toward must be one category index or one per item ({n}), got {target.size}"
        )
    return target


def _share(count: int, total: int) -> float:
    return count / total if total else math.nan
