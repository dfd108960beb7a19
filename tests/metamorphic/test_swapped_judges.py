"""Swapping the two judges of a paired comparison — which is A and which is B — gives the
mirror image, to the last digit: each judge keeps its own figures (A's value is the swapped
call's B's), every difference ``B − A`` is negated, its interval's ends negated and exchanged,
the p-values (raw and Holm-adjusted), the test and the items needed are the same and the
other judge is better; with clusters of items too.

The items are resampled sorted by their rows; sorted by (reference, A, B) they were in another
order than by (reference, B, A), so the same seed drew other resamples: on 36 data sets drawn
as these are (the three scales, six seeds, with and without clusters of about three items) an
interval's end moved by up to 0.036 and the p-values with them (ordinal, seed 0, clusters: κ's
difference [0.0047, 0.2505], p = 0.0060, separated; swapped [−0.2245, 0.0020], p = 0.0080, did
not).

Where (reference, B, A) sorts to the rows of (reference, A, B) — B's verdicts are A's in a
mirror: for each reference, as many items where A says x and B says y as where A says y and B
says x, clusters too — swapped, A and B are the same data: there each judge's value is the
other's, the difference 0 and its interval its own mirror image.

Drawn from seeded generators: 300 items on a five-point, a binary and a four-category scale,
judge A right 60% of the time and judge B 70%; rows that are their own mirror image; a judge of
one verdict; identical judges."""

from __future__ import annotations

import math

import numpy as np
import pytest

from assay.metrics import PairedComparison, PairedDifference, paired_comparison
from assay.metrics._report import _first_arrangement

SCALES = {
    "ordinal": {"kind": "ordinal", "k": 5, "threshold": 2},
    "binary": {"kind": "binary", "k": 2},
    "binary-named": {"kind": "binary", "k": 2, "labels": ["unsafe", "safe"]},
    "categorical": {"kind": "categorical", "k": 4, "labels": ["d", "b", "a", "c"], "threshold": 1},
}


def bits(x) -> object:
    """A figure as a swap must keep it (nan as None, so that it equals itself)."""
    return None if isinstance(x, float) and math.isnan(x) else x


def negated(x: float | None) -> float | None:
    return None if x is None else -x


def parts(note: str | None) -> set[str] | None:
    return None if note is None else set(note.split("; "))


def renamed(note: str | None) -> set[str] | None:
    """A note's parts with the judges' names exchanged."""
    if note is None:
        return None
    swap = [("judge A", "judge B"), ("for A:", "for B:")]
    swap += [(new, old) for old, new in swap]
    out = set()
    for part in note.split("; "):
        for i, (old, _) in enumerate(swap):
            part = part.replace(old, f"<{i}>")
        for i, (_, new) in enumerate(swap):
            part = part.replace(f"<{i}>", new)
        out.add(part)
    return out


def mirrored(base: PairedDifference, swapped: PairedDifference) -> None:
    """``swapped`` is ``base`` with A and B exchanged, bit for bit."""
    name = base.metric
    assert swapped.metric == name
    assert (bits(swapped.a), bits(swapped.b)) == (bits(base.b), bits(base.a)), name
    assert bits(swapped.delta) == bits(negated(base.delta)), name
    assert (swapped.ci_low, swapped.ci_high) == (negated(base.ci_high), negated(base.ci_low)), name
    assert bits(swapped.p_value) == bits(base.p_value), name
    assert bits(swapped.p_adjusted) == bits(base.p_adjusted), name
    assert (swapped.test, swapped.higher_is_better) == (base.test, base.higher_is_better), name
    assert swapped.better == {"A": "B", "B": "A", None: None}[base.better], name
    assert swapped.items_needed == base.items_needed, name
    assert renamed(swapped.note) == parts(base.note), name


def swap_mirrors(ref, a, b, scale: str, seed: int = 0, clusters=None) -> PairedComparison:
    """The comparison of A and B and that of B and A: mirror images of each other."""
    options = {**SCALES[scale], "seed": seed, "clusters": clusters}
    base = paired_comparison(ref, a, b, **options)
    swapped = paired_comparison(ref, b, a, **options)
    assert [d.metric for d in swapped.differences] == [d.metric for d in base.differences]
    for d, s in zip(base.differences, swapped.differences, strict=True):
        mirrored(d, s)
    assert (swapped.a_only_right, swapped.b_only_right) == (base.b_only_right, base.a_only_right)
    assert (swapped.a_constant, swapped.b_constant) == (base.b_constant, base.a_constant)
    for field in ("n", "tests", "ci_level", "n_resamples", "seed", "note"):
        assert getattr(swapped, field) == getattr(base, field), field
    return base


def drawn(scale: str, seed: int, n: int = 300) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A reference, judge A right 60% of the time and judge B 70% (otherwise a step off on the
    five-point scale, at random elsewhere): ties throughout, and differences to detect."""
    rng = np.random.default_rng(seed)
    k = SCALES[scale]["k"]
    ref = rng.integers(0, k, n)

    def judge(right: float) -> np.ndarray:
        if scale == "ordinal":
            other = np.clip(ref + rng.choice([-1, 1], n), 0, k - 1)
        else:
            other = rng.integers(0, k, n)
        return np.where(rng.random(n) < right, ref, other)

    return ref, judge(0.6), judge(0.7)


def arranged(ref, a, b, scale: str, clusters=None) -> tuple[int, bool]:
    """Which order of the judges the items are resampled in — 0 (A's first) or 1 (B's) —,
    and whether the other sorts to the same rows."""
    options = SCALES[scale]
    kept, _, _, _, tied = _first_arrangement(
        options["kind"],
        options["k"],
        options.get("threshold"),
        ((ref, a, b), (ref, b, a)),
        options.get("labels"),
        clusters,
    )
    return kept, tied


def kept(ref, a, b, scale: str, clusters=None) -> int:
    kept, tied = arranged(ref, a, b, scale, clusters)
    assert not tied
    return kept


def own_mirror(scale: str, seed: int, n: int = 150) -> tuple[np.ndarray, ...]:
    """Rows that are their own mirror image — each (reference, A, B) and (reference, B, A),
    shuffled — and clusters that are too (a cluster of three rows and one of their mirror
    images); swapped, A and B are the same data."""
    ref, a, b = drawn(scale, seed, n)
    order = np.random.default_rng(seed + 100).permutation(2 * n)
    clusters = np.concatenate([np.arange(n) // 3, 1000 + np.arange(n) // 3])
    return tuple(
        x[order]
        for x in (np.concatenate([ref, ref]), np.concatenate([a, b]), np.concatenate([b, a]))
    ) + (clusters[order],)


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_swap_mirrors_every_difference_to_the_last_digit(scale, seed):
    ref, a, b = drawn(scale, seed)
    base = swap_mirrors(ref, a, b, scale, seed=seed)
    # the figures are the judges' own: accuracy is the share each got right
    accuracy = {d.metric: d for d in base.differences}["accuracy"]
    assert (accuracy.a, accuracy.b) == (np.mean(ref == a), np.mean(ref == b))
    kappa = {d.metric: d for d in base.differences}["kappa_categorical"]
    assert kappa.ci_low != -kappa.ci_high  # not a mirror image of itself
    # the same order of the judges is kept whichever is named first
    assert kept(ref, a, b, scale) == 1 - kept(ref, b, a, scale)


def test_either_order_of_the_judges_is_kept_on_some_data():
    """The seeds above resample in A's order on some data sets and in B's on others."""
    orders = {kept(*drawn(scale, seed), scale) for scale in SCALES for seed in (0, 1, 2)}
    assert orders == {0, 1}


@pytest.mark.parametrize("scale", SCALES)
def test_with_clusters_of_items_too(scale):
    ref, a, b = drawn(scale, 3)
    clusters = np.random.default_rng(4).integers(0, 100, ref.size)
    base = swap_mirrors(ref, a, b, scale, clusters=clusters)
    assert all(d.test == "paired cluster bootstrap" for d in base.differences)
    assert kept(ref, a, b, scale, clusters) == 1 - kept(ref, b, a, scale, clusters)


@pytest.mark.parametrize("scale", SCALES)
def test_a_judge_of_one_verdict(scale):
    """A gives one verdict on every item: κ is undefined for it, its note names it (as B once
    swapped), and every other difference is the mirror image."""
    ref, _, b = drawn(scale, 6)
    constant = np.full_like(ref, 1)
    base = swap_mirrors(ref, constant, b, scale)
    kappa = {d.metric: d for d in base.differences}["kappa_categorical"]
    assert math.isnan(kappa.a) and math.isnan(kappa.p_value) and "for A" in kappa.note
    assert base.a_constant == 1 and base.b_constant is None


@pytest.mark.parametrize("scale", SCALES)
def test_identical_judges_differ_by_nothing_either_way(scale):
    ref, a, _ = drawn(scale, 7)
    base = swap_mirrors(ref, a, a.copy(), scale)
    for d in base.differences:
        if d.ci_low is not None:
            assert (d.delta, d.ci_low, d.ci_high, d.p_value) == (0, 0, 0, 1), d.metric


@pytest.mark.parametrize("scale", SCALES)
def test_rows_that_are_their_own_mirror_image(scale):
    """Swapped, A and B are the same data: each judge's value is the other's, every difference
    0 and its interval its own mirror image (the interval and its mirror image, whichever
    reaches further on each side), with clusters too; clusters that are not their own mirror
    image decide the order kept, and the swap mirrors as elsewhere."""
    ref, a, b, clusters = own_mirror(scale, 5)
    for ids in (None, clusters):
        assert arranged(ref, a, b, scale, ids) == (0, True)
        base = swap_mirrors(ref, a, b, scale, clusters=ids)
        for d in base.differences:
            assert (bits(d.a), d.delta, d.better) == (bits(d.b), 0, None), d.metric
            assert d.ci_low is None or d.ci_low == -d.ci_high, d.metric
        assert base.a_only_right == base.b_only_right
    # the same rows, the clusters not their own mirror image: one of A right and B wrong, and
    # one of the other way round, do not trade places
    clusters = np.where(a < b, np.arange(a.size) // 3, -1 - np.arange(a.size))
    kept(ref, a, b, scale, clusters)
    swap_mirrors(ref, a, b, scale, clusters=clusters)
