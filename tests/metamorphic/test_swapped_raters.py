"""Swapping the two raters — which is the reference and which the candidate — leaves every
symmetric agreement figure as it was, to the last digit: the value and the interval's ends (and
its method, the count and ``n``) of every κ, accuracy and error rate, CCC, Pearson, Spearman and
MAE, and of Krippendorff's α and Fleiss' κ between two annotators; with clusters of pairs too.

The items are resampled sorted by their pairs; sorted by (reference, candidate) they were in
another order than by (candidate, reference), so the same seed drew other pairs and the ends
moved (by up to 0.008 on these data), and the values, summed in another order, in their last
digit. The one-sided rates (balanced accuracy, FPR, FNR, failure precision and incidence) say
which side is the reference and are not symmetric: their figures are those they always were.

Drawn from seeded generators: a few hundred items on a five-point, a binary and a four-category
scale; pairs whose multiset is its own swap (the two orders of the raters tie); a rater of one
verdict. The standalone symmetric metrics (``cohen_kappa``, ``pearson`` …) swapped are the same
to the last digit too."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
from sklearn.metrics import cohen_kappa_score

from assay.metrics import (
    AnnotationMatrix,
    MetricValue,
    accuracy,
    agreement_metrics,
    annotator_agreement,
    ccc,
    cohen_kappa,
    error_rate,
    kappa_binary,
    mae,
    pearson,
    spearman,
)

SYMMETRIC = {
    "kappa_categorical",
    "kappa_linear",
    "kappa_quadratic",
    "kappa_binary",
    "accuracy",
    "error_rate",
    "ccc",
    "pearson",
    "spearman",
    "mae",
}
# the one-sided rates, each of which says which side is the reference
ONE_SIDED = {
    "balanced_accuracy",
    "false_positive_rate",
    "false_negative_rate",
    "failure_precision",
    "failure_incidence",
}
SCALES = {
    "ordinal": {"kind": "ordinal", "k": 5, "threshold": 2},
    "binary": {"kind": "binary", "k": 2},
    "binary-named": {"kind": "binary", "k": 2, "labels": ["unsafe", "safe"]},
    "categorical": {"kind": "categorical", "k": 4, "labels": ["d", "b", "a", "c"], "threshold": 1},
}


def figures(m: MetricValue) -> tuple:
    """What a swap must keep, bit for bit (nan as None, so that it equals itself); the note
    names the candidate when it gave one verdict, so it is left out."""
    return tuple(
        None if isinstance(x, float) and math.isnan(x) else x
        for x in (m.value, m.ci_low, m.ci_high, m.n, m.count, m.ci_method)
    )


def drawn(scale: str, seed: int, n: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """A reference and a candidate that agrees with it 70% of the time (within a step on the
    five-point scale), ties throughout (few categories, many items)."""
    rng = np.random.default_rng(seed)
    k = SCALES[scale]["k"]
    ref = rng.integers(0, k, n)
    if scale == "ordinal":
        other = np.clip(ref + rng.choice([-1, 1], n), 0, k - 1)
    else:
        other = rng.integers(0, k, n)
    return ref, np.where(rng.random(n) < 0.7, ref, other)


def own_swap(scale: str, seed: int, n: int = 150) -> tuple[np.ndarray, np.ndarray]:
    """Pairs whose multiset is its own swap — each pair and its mirror image, shuffled: sorted
    either way the pairs are the same, so either order of the raters may be kept."""
    ref, cand = drawn(scale, seed, n)
    order = np.random.default_rng(seed + 100).permutation(2 * n)
    return np.concatenate([ref, cand])[order], np.concatenate([cand, ref])[order]


def swap_keeps(ref, cand, scale: str, seed: int = 0, clusters=None) -> dict[str, MetricValue]:
    """Every metric of the pairs and of the pairs swapped: the symmetric ones equal to the last
    digit, the one-sided ones what they were before the fix (trading places where the swap
    exchanges them: failure precision and incidence)."""
    options = {**SCALES[scale], "seed": seed, "clusters": clusters}
    base = agreement_metrics(ref, cand, **options)
    swapped = agreement_metrics(cand, ref, **options)
    assert base.keys() == swapped.keys() and SYMMETRIC | ONE_SIDED >= base.keys()
    for name in base.keys() & SYMMETRIC:
        assert figures(swapped[name]) == figures(base[name]), name
    return base


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_swap_keeps_every_symmetric_figure_to_the_last_digit(scale, seed):
    ref, cand = drawn(scale, seed)
    base = swap_keeps(ref, cand, scale, seed=seed)
    # the values are the raters' agreement as others compute it
    kappa = cohen_kappa_score(ref, cand, labels=list(range(SCALES[scale]["k"])))
    assert base["kappa_categorical"].value == pytest.approx(kappa, abs=1e-12)
    if scale == "ordinal":
        for w in ("linear", "quadratic"):
            assert base[f"kappa_{w}"].value == pytest.approx(
                cohen_kappa_score(ref, cand, weights=w), abs=1e-12
            )
        assert base["pearson"].value == pytest.approx(scipy.stats.pearsonr(ref, cand)[0])
        assert base["spearman"].value == pytest.approx(scipy.stats.spearmanr(ref, cand)[0])
        assert base["mae"].value == pytest.approx(np.abs(ref - cand).mean())


@pytest.mark.parametrize("scale", SCALES)
def test_with_clusters_of_pairs_too(scale):
    ref, cand = drawn(scale, 3)
    clusters = np.random.default_rng(4).integers(0, 100, ref.size)
    base = swap_keeps(ref, cand, scale, clusters=clusters)
    assert all("clusters" in m.note for m in base.values() if m.ci_method == "cluster bootstrap")


@pytest.mark.parametrize("scale", SCALES)
def test_pairs_whose_multiset_is_its_own_swap(scale):
    ref, cand = own_swap(scale, 5)
    swap_keeps(ref, cand, scale)
    # the same pairs in clusters that are not their own swap: a cluster of one mirror image
    # and one of the other do not trade places, so the clusters decide the order kept
    clusters = np.where(ref < cand, np.arange(ref.size) // 3, -1 - np.arange(ref.size))
    swap_keeps(ref, cand, scale, clusters=clusters)


@pytest.mark.parametrize("scale", SCALES)
def test_a_rater_of_one_verdict(scale):
    """The candidate gives one verdict on every item: κ, CCC and the correlations are
    undefined whichever side it is on, accuracy and MAE are not."""
    ref, _ = drawn(scale, 6)
    constant = np.full_like(ref, 1)
    base = swap_keeps(ref, constant, scale)
    assert math.isnan(base["kappa_categorical"].value) and base["kappa_categorical"].ci_low is None
    assert base["accuracy"].value == pytest.approx((ref == 1).mean())
    both = np.full_like(ref, 0)  # and both raters of the same one verdict
    swap_keeps(both, both.copy(), scale)


@pytest.mark.parametrize("level", ["nominal", "ordinal"])
def test_two_annotators_swapped_keep_alpha_and_fleiss_kappa(level):
    ref, cand = drawn("ordinal", 7)
    ids = [f"i{i}" for i in range(ref.size)]

    def agreement(first, second) -> dict[str, MetricValue]:
        matrix = AnnotationMatrix.from_mapping(
            {"a": dict(zip(ids, first.tolist(), strict=True)),
             "b": dict(zip(ids, second.tolist(), strict=True))}
        )  # fmt: skip
        return annotator_agreement(matrix, level=level, value_domain=list(range(5)))

    base, swapped = agreement(ref, cand), agreement(cand, ref)
    assert base.keys() == swapped.keys() == {"fleiss_kappa", f"krippendorff_alpha_{level}"}
    for name in base:
        assert figures(swapped[name]) == figures(base[name]), name


STANDALONE = {
    "cohen_kappa": lambda a, b: cohen_kappa(a, b, k=5),
    "cohen_kappa linear": lambda a, b: cohen_kappa(a, b, k=5, weights="linear"),
    "cohen_kappa quadratic": lambda a, b: cohen_kappa(a, b, k=5, weights="quadratic"),
    "kappa_binary": lambda a, b: kappa_binary(a, b, 2),
    "accuracy": accuracy,
    "error_rate": error_rate,
    "ccc": ccc,
    "pearson": pearson,
    "spearman": spearman,
    "mae": mae,
}


def bits(x: float) -> float | None:
    """A figure as a swap must keep it (nan as None, so that it equals itself)."""
    return None if math.isnan(x) else x


def test_the_standalone_symmetric_metrics_are_the_same_swapped_to_the_last_digit():
    """``cohen_kappa(a, b)`` summed the k × k table's cells in the other order than
    ``cohen_kappa(b, a)``: on these 200 pairs, 64% of the unweighted κ (51% linear, 40%
    quadratic) differed in their last digit. It is computed on the table or its transpose,
    whichever comes first. The others were symmetric already, on real-valued scores too: their
    sums over the items are taken in the same order whichever rater comes first."""
    rng = np.random.default_rng(8)
    for _ in range(200):
        n = int(rng.integers(5, 200))
        ref = rng.integers(0, 5, n)
        cand = np.clip(ref + rng.integers(-2, 3, n), 0, 4)
        for name, metric in STANDALONE.items():
            assert bits(metric(cand, ref)) == bits(metric(ref, cand)), name
        assert cohen_kappa(ref, cand, k=5, weights="linear") == pytest.approx(
            cohen_kappa_score(ref, cand, labels=list(range(5)), weights="linear"), abs=1e-12
        )
        x = rng.normal(size=n) * 3 + 1
        y = 0.5 * x + rng.normal(size=n)
        for metric in (ccc, pearson, spearman, mae):
            assert metric(x, y) == metric(y, x), metric.__name__
