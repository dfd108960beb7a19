"""A cue's effect against its placebo over items in clusters (the epochs of an Inspect sample):
the paired table's counts divided by the clusters' design effect. Checked against Durkalski et
al.'s clustered McNemar statistic written out from the paper beside statsmodels' McNemar,
metamorphically (items alone keep every figure; epochs that repeat each sample give the
samples' own), and by seeded simulation: under no effect, with whole samples moving together,
the clustered test rejects near its level where the items taken as independent do not."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom
from statsmodels.stats.contingency_tables import mcnemar

from assay.metrics import (
    newcombe_paired_interval,
    one_sided_mcnemar,
    paired_design_effect,
    placebo_effect,
    two_sided_placebo_effect,
)

FIELDS = ("n", "cue_only", "placebo_only", "effect", "ci_low", "ci_high", "p_value")


def figures(e) -> tuple:
    return tuple(getattr(e, f) for f in FIELDS)


def durkalski(first: np.ndarray, second: np.ndarray, clusters: np.ndarray) -> float:
    """Durkalski, Palesch, Lipsitz & Rust (2003), eq. 2: ``(Σ b_k − Σ c_k)² ÷ Σ (b_k − c_k)²``
    with ``b_k`` / ``c_k`` cluster k's pairs where only the first / only the second holds."""
    top, bottom = 0.0, 0.0
    for k in np.unique(clusters):
        at = clusters == k
        b = int(np.sum(first[at] & ~second[at]))
        c = int(np.sum(~first[at] & second[at]))
        top += b - c
        bottom += (b - c) ** 2
    return top**2 / bottom


@pytest.mark.parametrize("seed", range(6))
def test_mcnemar_divided_by_the_design_effect_is_durkalskis_clustered_statistic(seed):
    rng = np.random.default_rng(seed)
    clusters = np.repeat(np.arange(15), rng.integers(1, 5, 15))
    lean = rng.uniform(0.1, 0.9, 15)[clusters]  # each cluster's own chance of moving
    first = rng.uniform(size=clusters.size) < lean
    second = rng.uniform(size=clusters.size) < 0.4
    b, c = int(np.sum(first & ~second)), int(np.sum(~first & second))
    table = [[int(np.sum(first & second)), b], [c, int(np.sum(~first & ~second))]]
    plain = mcnemar(table, exact=False, correction=False).statistic  # (b − c)² ÷ (b + c)
    d = first.astype(int) - second.astype(int)
    ratio = float(np.sum(np.bincount(clusters, weights=d) ** 2)) / (b + c)
    design = paired_design_effect(d, clusters)
    assert design == pytest.approx(max(1.0, ratio), rel=1e-12)
    if ratio >= 1.0:
        assert plain / design == pytest.approx(durkalski(first, second, clusters), rel=1e-12)


def test_items_alone_keep_every_figure_they_had():
    rng = np.random.default_rng(3)
    base, cue, again = (rng.integers(0, 3, 40) for _ in range(3))
    alone = placebo_effect(base, cue, again, 2, kind="ordinal")
    named = placebo_effect(
        base, cue, again, 2, kind="ordinal", clusters=[f"i{k}" for k in range(40)]
    )
    assert figures(named) == figures(alone)
    assert named.clusters is None and named.design_effect is None and named.note == alone.note
    up, down = np.full(40, 2), np.zeros(40, dtype=int)
    two = two_sided_placebo_effect(base, cue, again, up, down)
    assert figures(two_sided_placebo_effect(base, cue, again, up, down, clusters=range(40))) == (
        figures(two)
    )


@pytest.mark.parametrize("epochs", [2, 3, 5])
def test_epochs_that_repeat_each_sample_give_the_samples_own_figures(epochs):
    rng = np.random.default_rng(epochs)
    base, cue, again = (rng.integers(0, 2, 30) for _ in range(3))
    ids = np.repeat(np.arange(30), epochs)
    copies = [np.repeat(v, epochs) for v in (base, cue, again)]
    samples = placebo_effect(base, cue, again, 1, kind="binary")
    repeated = placebo_effect(*copies, 1, kind="binary", clusters=ids)
    assert repeated.design_effect == epochs and repeated.clusters == int(np.sum(base != 1))
    assert np.allclose(
        [samples.effect, samples.ci_low, samples.ci_high, samples.p_value],
        [repeated.effect, repeated.ci_low, repeated.ci_high, repeated.p_value],
        rtol=0,
        atol=1e-12,
    )
    naive = placebo_effect(*copies, 1, kind="binary")  # the epochs as new samples
    if samples.cue_only != samples.placebo_only:
        assert naive.ci_high - naive.ci_low < repeated.ci_high - repeated.ci_low
    up, down = np.ones(30, dtype=int), np.zeros(30, dtype=int)
    two = two_sided_placebo_effect(base, cue, again, up, down)
    two_repeated = two_sided_placebo_effect(
        *copies, np.repeat(up, epochs), np.repeat(down, epochs), clusters=ids
    )
    assert np.allclose(
        [two.effect, two.ci_low, two.ci_high, two.p_value],
        [two_repeated.effect, two_repeated.ci_low, two_repeated.ci_high, two_repeated.p_value],
        rtol=0,
        atol=1e-12,
    )


@pytest.mark.parametrize("counts", [(3, 5, 1, 11), (0, 4, 0, 9), (2, 0, 0, 0), (7, 3, 6, 2)])
def test_newcombe_on_counts_times_k_divided_by_k_is_newcombe_on_the_counts(counts):
    for k in (2, 3, 7):
        scaled = newcombe_paired_interval(*(k * c for c in counts), design_effect=float(k))
        assert np.allclose(scaled, newcombe_paired_interval(*counts), rtol=0, atol=1e-12)


def test_the_tail_at_effective_counts_is_the_binomial_tail_where_they_are_whole():
    for first, second in [(5, 0), (7, 3), (12, 12), (1, 20)]:
        assert one_sided_mcnemar(first * 1.0, second * 1.0) == pytest.approx(
            binom.sf(first - 1, first + second, 0.5), rel=1e-12
        )
    # between whole counts it lies between their tails
    assert one_sided_mcnemar(5, 2) < one_sided_mcnemar(4.5, 2.0) < one_sided_mcnemar(4, 2)


def test_under_no_effect_with_samples_moving_together_the_clustered_test_holds_its_level():
    """300 draws of 40 samples × 4 epochs with no effect: each sample has its own chance of
    moving under the cue and its own on the placebo, both drawn from one distribution (the two
    exchangeable), and its epochs move by those chances — so a sample the cue happens to move
    moves in most of its epochs. At 5% the clustered test rejects at most about 5% of draws;
    the epochs taken as independent items far more."""
    rng = np.random.default_rng(11)
    draws, samples, epochs = 300, 40, 4
    ids = np.repeat(np.arange(samples), epochs)
    base = np.zeros(ids.size, dtype=int)
    rejected = {"clustered": 0, "as items": 0}
    for _ in range(draws):
        on_cue, on_placebo = (rng.beta(0.3, 0.3, samples)[ids] for _ in range(2))
        cue = (rng.uniform(size=ids.size) < on_cue).astype(int)
        again = (rng.uniform(size=ids.size) < on_placebo).astype(int)
        clustered = placebo_effect(base, cue, again, 1, kind="binary", clusters=ids)
        rejected["clustered"] += clustered.p_value <= 0.05
        rejected["as items"] += placebo_effect(base, cue, again, 1, kind="binary").p_value <= 0.05
    rate = {k: v / draws for k, v in rejected.items()}
    assert rate["clustered"] <= 0.05 + 3 * (0.05 * 0.95 / draws) ** 0.5, rate
    assert rate["as items"] > 0.12, rate
