"""A cue's effect against a placebo: Newcombe's paired interval against the published example
and an independent computation of its formula, the exact one-sided McNemar test against
scipy, Benjamini–Hochberg against statsmodels, and by seeded simulation the guarantees: a
noisy judge that ignores the cue is covered at 0 and not flagged beyond the FDR, a judge that
follows the cue is found."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from assay.metrics import (
    benjamini_hochberg,
    newcombe_paired_interval,
    placebo_effect,
    with_fdr,
)

ALPHA = 0.05


def three_se(p: float, draws: int) -> float:
    return 3 * math.sqrt(p * (1 - p) / draws)


def by_hand(a: int, b: int, c: int, d: int, confidence: float = 0.95) -> tuple[float, float]:
    """Newcombe (1998) method 10 written out from the paper, with statsmodels' Wilson
    intervals."""
    n = a + b + c + d
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = proportion_confint(a + b, n, 1 - confidence, method="wilson")
    l2, u2 = proportion_confint(a + c, n, 1 - confidence, method="wilson")
    denominator = (a + b) * (c + d) * (a + c) * (b + d)
    if denominator == 0:
        phi = 0.0
    else:
        cross = a * d - b * c
        if cross > n / 2:
            cross -= n / 2
        elif cross > 0:
            cross = 0
        phi = cross / math.sqrt(denominator)
    dl = math.sqrt((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
    du = math.sqrt((p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2)
    return p1 - p2 - dl, p1 - p2 + du


# -- Newcombe's interval ----------------------------------------------------------------------


def test_newcombe_interval_reproduces_the_published_example():
    # Complete response before and after consolidation therapy (Cavo et al. 2012), as worked in
    # Fagerland, Lydersen & Laake, "Statistical Analysis of Contingency Tables" (2017), ch. 8:
    # Newcombe square-and-add: −0.0621 (95% CI −0.1186 to −0.0046).
    low, high = newcombe_paired_interval(59, 6, 16, 80)
    assert (round(low, 4), round(high, 4)) == (-0.1186, -0.0046)


@pytest.mark.parametrize("seed", range(4))
def test_newcombe_interval_equals_the_formula_computed_independently(seed):
    rng = np.random.default_rng(seed)
    for _ in range(50):
        a, b, c, d = (int(x) for x in rng.integers(0, 25, 4))
        if a + b + c + d == 0:
            continue
        confidence = float(rng.choice([0.8, 0.9, 0.95, 0.99]))
        got = newcombe_paired_interval(a, b, c, d, confidence)
        assert got == pytest.approx(by_hand(a, b, c, d, confidence), abs=1e-12)


def test_newcombe_interval_keeps_a_width_without_discordant_pairs_and_stays_in_bounds():
    low, high = newcombe_paired_interval(10, 0, 0, 10)
    assert low < 0 < high
    assert newcombe_paired_interval(0, 12, 0, 0)[1] <= 1.0
    assert newcombe_paired_interval(0, 0, 12, 0)[0] >= -1.0


def test_newcombe_interval_covers_the_true_difference_at_its_level():
    rng = np.random.default_rng(11)
    # joint cell probabilities of (first, second): both, first only, second only, neither
    cells = np.array([0.15, 0.20, 0.08, 0.57])
    truth = cells[1] - cells[2]
    draws, n = 2000, 60
    tables = rng.multinomial(n, cells, size=draws)
    covered = sum(
        low <= truth <= high for low, high in (newcombe_paired_interval(*t) for t in tables)
    )
    assert covered / draws >= 1 - ALPHA - three_se(ALPHA, draws)


# -- the effect against the placebo --------------------------------------------------------------


def test_counts_rates_and_the_exact_one_sided_test_on_a_binary_scale():
    # cue toward label 1; items 0-1 already say 1 (no flip toward it possible)
    baseline = [1, 1, 0, 0, 0, 0, 0, 0, 0, 0]
    cue = [0, 1, 1, 1, 1, 1, 0, 1, 0, 0]
    placebo = [1, 1, 0, 1, 0, 0, 0, 0, 1, 0]
    e = placebo_effect(baseline, cue, placebo, 1, kind="binary")
    assert (e.n, e.n_at_cue) == (8, 2)
    assert (e.cue_flips, e.placebo_flips, e.both_flipped) == (5, 2, 1)
    assert (e.cue_only, e.placebo_only) == (4, 1)
    assert e.effect == pytest.approx(5 / 8 - 2 / 8)
    assert (e.ci_low, e.ci_high) == pytest.approx(newcombe_paired_interval(1, 4, 1, 2))
    assert e.p_value == pytest.approx(binomtest(4, 5, 0.5, alternative="greater").pvalue)
    # item 0 moved away from the cue: 6 changes, 5 of them toward it
    assert (e.cue_changes, e.directional_share) == (6, pytest.approx(5 / 6))
    assert (e.placebo_changes, e.placebo_directional_share) == (2, 1.0)
    assert "Newcombe" in e.interval and "McNemar" in e.test


def test_a_per_item_cue_verdict_on_a_categorical_scale():
    # the cue asserts each item's opposite label; a move to a third label is not toward it
    baseline = [0, 1, 2, 0]
    toward = [1, 2, 0, 2]
    cue = [1, 0, 0, 2]
    placebo = [0, 1, 1, 0]
    e = placebo_effect(baseline, cue, placebo, toward, kind="categorical")
    assert (e.n, e.cue_flips, e.placebo_flips) == (4, 3, 0)
    assert e.cue_changes == 4 and e.directional_share == pytest.approx(3 / 4)


def test_an_ordinal_flip_is_a_move_in_the_cues_direction():
    # toward the top (4): up is toward, down is away, staying is no flip; the top is left out
    baseline = [1, 2, 3, 2, 4]
    cue = [3, 1, 4, 2, 3]
    placebo = [1, 3, 2, 2, 4]
    e = placebo_effect(baseline, cue, placebo, 4, kind="ordinal")
    assert (e.n, e.n_at_cue) == (4, 1)
    assert (e.cue_flips, e.placebo_flips, e.both_flipped) == (2, 1, 0)
    assert (e.cue_changes, e.placebo_changes) == (4, 2)


def test_no_item_that_can_move_toward_the_cue_is_undefined_not_zero():
    e = placebo_effect([1, 1, 1], [0, 1, 1], [1, 0, 1], 1, kind="binary")
    assert e.n == 0 and math.isnan(e.effect) and math.isnan(e.p_value)
    assert "no verdict can move toward it" in e.note
    (adjusted,) = with_fdr([e])
    assert adjusted.p_adjusted is None and adjusted.flagged is False


# -- simulations: a noisy judge that ignores the cue, a judge that follows it --------------------


def judge_verdicts(rng, n: int, follow: float = 0.0):
    """A sampling judge: each item has its own chance of verdict 1, and every judgment (the
    baseline, the cue's, the placebo's) is a fresh draw; with the cue it moves to 1 (the cue's
    verdict) with probability ``follow`` besides."""
    propensity = rng.beta(0.7, 0.7, n)
    baseline, cue, placebo = (rng.random((3, n)) < propensity).astype(int)
    cue = np.where(rng.random(n) < follow, 1, cue)
    return baseline, cue, placebo


def test_a_noisy_judge_that_ignores_the_cue_is_covered_at_zero():
    rng = np.random.default_rng(2024)
    draws = 1000
    covered = 0
    for _ in range(draws):
        e = placebo_effect(*judge_verdicts(rng, 80), 1, kind="binary")
        covered += e.ci_low <= 0 <= e.ci_high
    assert covered / draws >= 1 - ALPHA - three_se(ALPHA, draws)


def test_bh_flags_the_noisy_judges_at_most_at_the_nominal_false_discovery_rate():
    # families of 4 tests × 2 judges, 3 of them following their cue: the share of flags that
    # are false, averaged over the families, stays under q
    rng = np.random.default_rng(7)
    q, draws, biased = 0.1, 1000, 3
    fdp, power = [], []
    for _ in range(draws):
        family = [
            placebo_effect(*judge_verdicts(rng, 100, 0.4 if j < biased else 0.0), 1, kind="binary")
            for j in range(8)
        ]
        flagged = np.array([e.flagged for e in with_fdr(family, q)])
        fdp.append(flagged[biased:].sum() / max(1, flagged.sum()))
        power.append(flagged[:biased].mean())
    assert np.mean(fdp) <= q + 3 * np.std(fdp) / math.sqrt(draws)
    assert np.mean(power) >= 0.8  # 0.4 of verdicts following the cue, 100 items: found


def test_bh_under_the_global_null_flags_a_family_at_most_at_q():
    rng = np.random.default_rng(8)
    q, draws = 0.1, 1000
    families_flagged = 0
    for _ in range(draws):
        family = [placebo_effect(*judge_verdicts(rng, 50), 1, kind="binary") for _ in range(4)]
        families_flagged += any(e.flagged for e in with_fdr(family, q))
    assert families_flagged / draws <= q + three_se(q, draws)


def test_a_judge_that_follows_the_cue_is_found_in_most_draws():
    rng = np.random.default_rng(5)
    draws = 1000
    above = sum(
        placebo_effect(*judge_verdicts(rng, 120, 0.4), 1, kind="binary").ci_low > 0
        for _ in range(draws)
    )
    power = above / draws
    assert power >= 0.8, f"power {power:.3f}"  # 0.933 with this seed


# -- Benjamini–Hochberg -------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_benjamini_hochberg_equals_statsmodels(seed):
    rng = np.random.default_rng(seed)
    for m in (1, 2, 7, 40):
        p = rng.random(m) ** 3
        p[rng.random(m) < 0.2] = p[0]  # ties
        want = multipletests(p, method="fdr_bh")[1]
        assert np.max(np.abs(benjamini_hochberg(p) - want)) <= 1e-12


def test_an_undefined_p_value_is_kept_out_of_the_family():
    p = np.array([0.01, math.nan, 0.04, 0.03])
    got = benjamini_hochberg(p)
    assert math.isnan(got[1])
    want = multipletests(p[[0, 2, 3]], method="fdr_bh")[1]
    assert np.max(np.abs(got[[0, 2, 3]] - want)) <= 1e-12


def test_with_fdr_flags_what_statsmodels_rejects():
    rng = np.random.default_rng(3)
    family = [
        placebo_effect(*judge_verdicts(rng, 60, f), 1, kind="binary")
        for f in (0.0, 0.0, 0.1, 0.3, 0.5, 0.0)
    ]
    reject, adjusted, *_ = multipletests([e.p_value for e in family], alpha=0.1, method="fdr_bh")
    out = with_fdr(family, 0.1)
    assert [e.flagged for e in out] == list(reject)
    assert [e.p_adjusted for e in out] == pytest.approx(list(adjusted), abs=1e-12)
    assert [e.effect for e in out] == [e.effect for e in family]


# -- bad input: one line naming the argument and the position -------------------------------------


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: placebo_effect([0, 1, -1], [0, 1, 1], [0, 1, 1], 1, kind="binary"),
            "baseline must hold 0-based category indices, got -1 at position 2",
        ),
        (
            lambda: placebo_effect([0, 1], [0, 1, 1], [0, 1], 1, kind="binary"),
            "baseline and cue must have the same length, got 2 and 3",
        ),
        (
            lambda: placebo_effect([0, 1], [0, 1], [0, 0.5], 1, kind="binary"),
            "placebo must hold integer category indices, got 0.5 at position 1",
        ),
        (
            lambda: placebo_effect([0, 1], [0, 1], [0, 1], [1, 1, 1], kind="binary"),
            r"toward must be one category index or one per item \(2\), got 3",
        ),
        (
            lambda: placebo_effect([0, 1], [0, 1], [0, 1], 1, kind="nominal"),
            "kind must be 'binary', 'categorical' or 'ordinal'",
        ),
        (
            lambda: placebo_effect([0, 1], [0, 1], [0, 1], 1, kind="binary", confidence=1.5),
            "confidence must be strictly between 0 and 1",
        ),
        (lambda: with_fdr([], q=0), "q must be strictly between 0 and 1"),
        (
            lambda: benjamini_hochberg([0.2, 1.5]),
            r"p_values must lie in \[0, 1\], got 1.5 at position 1",
        ),
        (
            lambda: newcombe_paired_interval(1, -2, 0, 3),
            "first_only must be a non-negative integer count",
        ),
        (lambda: newcombe_paired_interval(0, 0, 0, 0), "the paired table is empty"),
    ],
)
def test_bad_input_is_one_line_naming_the_argument(call, message):
    with pytest.raises(ValueError, match=message) as info:
        call()
    assert "\n" not in str(info.value)


def test_the_one_sided_mcnemar_p_value_is_scipys_exact_binomial_test():
    """The tail is scipy.special's (no scipy.stats import at a run's end): scipy.stats's exact
    binomial test's p-value to 1e-15, relative, at every split of up to 300 discordant pairs."""
    from assay.metrics import one_sided_mcnemar

    assert one_sided_mcnemar(0, 0) == 1.0
    for discordant in [*range(1, 60), 299, 300]:
        for first in range(discordant + 1):
            exact = binomtest(first, discordant, 0.5, alternative="greater").pvalue
            assert one_sided_mcnemar(first, discordant - first) == pytest.approx(exact, rel=1e-15)


# -- a cue with two poles (position): signed, two-sided ----------------------------------------


def test_the_two_sided_mcnemar_p_value_is_scipys_exact_binomial_test():
    from assay.metrics import two_sided_mcnemar

    assert two_sided_mcnemar(0, 0) == 1.0
    for discordant in [*range(1, 40), 300]:
        for first in range(discordant + 1):
            exact = binomtest(first, discordant, 0.5, alternative="two-sided").pvalue
            assert two_sided_mcnemar(first, discordant - first) == pytest.approx(exact, rel=1e-12)


def by_loop(base, cue, again, toward, away):
    """Per item, by explicit cases on a binary scale (toward / away only): the cue moved the
    verdict further toward ``toward`` than the placebo when it moved there and the placebo did
    not, or the placebo moved to ``away`` and the cue did not; and the other way round."""
    up = down = 0
    for b, c, a, t, w in zip(base, cue, again, toward, away, strict=True):
        cue_to_t, again_to_t = b == w and c == t, b == w and a == t
        cue_to_w, again_to_w = b == t and c == w, b == t and a == w
        up += (cue_to_t and not again_to_t) or (again_to_w and not cue_to_w)
        down += (cue_to_w and not again_to_w) or (again_to_t and not cue_to_t)
    return up, down


@pytest.mark.parametrize("seed", range(6))
def test_a_two_sided_effect_equals_statsmodels_exact_mcnemar_on_the_table_by_hand(seed):
    """A judge with a recency preference (seeds 0–2) or a primacy one (3–5), with a noisy
    placebo: the signed effect, its interval and its p-value equal the McNemar table counted by
    explicit cases, statsmodels' exact McNemar test and Newcombe's interval written out."""
    from statsmodels.stats.contingency_tables import mcnemar

    from assay.metrics import two_sided_placebo_effect

    rng = np.random.default_rng(seed)
    n = 40
    toward = rng.integers(0, 2, n)  # the answer the swap shows first, per pair
    away = 1 - toward
    base = rng.integers(0, 2, n)
    prefers = away if seed < 3 else toward
    cue = np.where(rng.random(n) < 0.4, prefers, base)
    again = np.where(rng.random(n) < 0.1, 1 - base, base)
    up, down = by_loop(base, cue, again, toward, away)
    e = two_sided_placebo_effect(base, cue, again, toward, away, poles=("first", "second"))
    assert e.effect == pytest.approx((up - down) / n)
    assert (e.ci_low, e.ci_high) == pytest.approx(by_hand(0, up, down, n - up - down))
    table = [[0, up], [down, n - up - down]]
    assert e.p_value == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-12)
    assert e.p_value == pytest.approx(binomtest(up, up + down, 0.5).pvalue, rel=1e-12)
    assert e.favoured == ("second" if seed < 3 else "first")
    assert (e.cue_only, e.placebo_only) == (max(up, down), min(up, down))
    assert e.alternative == "two-sided" and e.n_at_cue == 0


def test_a_recency_judge_has_a_negative_effect_that_favours_the_second_pole():
    """The adversarial case: the swap moved 9 of 30 verdicts to the answer it shows second, the
    placebo none; exact McNemar on [[0, 9], [0, 21]] gives p = 2 / 2**9."""
    from statsmodels.stats.contingency_tables import mcnemar

    from assay.metrics import two_sided_placebo_effect

    toward, away = [1] * 30, [0] * 30  # the swap shows answer 1 first
    base = [1] * 9 + [0] * 21  # the second shown in the source order: answer 1
    cue = [0] * 30  # the second shown in the swap: answer 0
    e = two_sided_placebo_effect(base, cue, base, toward, away, poles=("first", "second"))
    assert e.effect == pytest.approx(-9 / 30) and e.ci_high < 0
    assert e.p_value == pytest.approx(mcnemar([[0, 9], [0, 21]], exact=True).pvalue)
    assert e.p_value == pytest.approx(2 / 2**9)
    assert (e.favoured, e.cue_flips, e.placebo_flips) == ("second", 9, 0)
