import math
from functools import partial

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.metrics import _intervals, bootstrap_ci, cohen_kappa, mae, wilson_interval
from assay.metrics._kappa import _kappa_batched
from assay.metrics._ordinal import _mae_batched


def agreeing_pair(n=200, k=4, agree=0.8, seed=7):
    rng = np.random.default_rng(seed)
    t = rng.integers(0, k, size=n)
    p = np.where(rng.random(n) < agree, t, rng.integers(0, k, size=n))
    return t, p


KAPPA = partial(_kappa_batched, k=4, weights="quadratic")


def test_ci_contains_the_point_estimate():
    t, p = agreeing_pair()
    point = cohen_kappa(t, p, k=4, weights="quadratic")
    ci = bootstrap_ci(KAPPA, t, p)
    assert ci.low <= point <= ci.high
    assert ci.low < ci.high  # 200 noisy items: a real interval, not a point
    assert (ci.n_resamples, ci.n_dropped) == (1000, 0)


def test_same_seed_same_interval_other_seed_other_interval():
    t, p = agreeing_pair()
    first = bootstrap_ci(KAPPA, t, p, seed=11)
    assert bootstrap_ci(KAPPA, t, p, seed=11) == first
    assert bootstrap_ci(KAPPA, t, p, seed=12) != first


def test_equals_a_naive_loop_over_the_same_index_matrix():
    # The vectorised bootstrap resamples rows of one (B, n) index matrix from default_rng(seed)
    # and takes percentiles of the defined replicates.
    t, p = agreeing_pair(n=25)
    idx = np.random.default_rng(5).integers(0, 25, size=(1000, 25))
    loop = np.array([mae(t[row], p[row]) for row in idx])
    expected = np.percentile(loop, [5, 95])
    ci = bootstrap_ci(_mae_batched, t, p, confidence=0.90, seed=5)
    assert (ci.low, ci.high) == pytest.approx(tuple(expected))


def test_nan_replicates_are_dropped_and_counted():
    # 3 items, two in category 0: resamples of a single shared category make κ undefined.
    t, p = np.array([0, 0, 1]), np.array([0, 0, 1])
    idx = np.random.default_rng(0).integers(0, 3, size=(1000, 3))
    single = np.all(t[idx] == t[idx][:, :1], axis=1)
    ci = bootstrap_ci(partial(_kappa_batched, k=2), t, p)
    assert ci.n_dropped == int(single.sum()) > 0
    assert ci.low == ci.high == 1.0  # every defined replicate agrees perfectly


def test_all_replicates_undefined_gives_nan_interval():
    ci = bootstrap_ci(partial(_kappa_batched, k=2), [1, 1], [1, 1])
    assert math.isnan(ci.low) and math.isnan(ci.high)
    assert ci.n_dropped == ci.n_resamples == 1000


def test_slicing_the_replicates_does_not_change_the_result(monkeypatch):
    t, p = agreeing_pair(n=50)
    whole = bootstrap_ci(KAPPA, t, p, n_resamples=1500)
    monkeypatch.setattr(_intervals, "_CHUNK_ELEMENTS", 50 * 7)  # slices of 7 replicates
    assert bootstrap_ci(KAPPA, t, p, n_resamples=1500) == whole


def test_the_interval_is_that_of_the_whole_index_matrix_drawn_once(monkeypatch):
    """The resamples are drawn in slices (one row at a time here, as for a million items) and
    never held whole; the interval is the one the whole (B, n) matrix gives, computed apart
    with sklearn's κ and numpy's percentile."""
    from sklearn.metrics import cohen_kappa_score

    t, p = agreeing_pair(n=60)
    order = np.lexsort((p, t))  # the canonical order the bootstrap resamples in
    t, p = t[order], p[order]
    matrix = np.random.default_rng(5).integers(0, 60, size=(1000, 60), dtype=np.intp)
    reps = [cohen_kappa_score(t[r], p[r], labels=range(4), weights="quadratic") for r in matrix]
    low, high = np.percentile(reps, [2.5, 97.5])
    monkeypatch.setattr(_intervals, "_CHUNK_ELEMENTS", 1)  # one replicate per slice
    ci = bootstrap_ci(KAPPA, t, p, seed=5)
    assert (ci.low, ci.high) == pytest.approx((low, high), abs=1e-12)
    assert _intervals.Resamples(60, 1000, 5).step() == 1


def test_the_resamples_are_never_held_whole(monkeypatch):
    """20,000 items × 1,000 replicates: the whole index matrix would be 160 MB; in slices of
    one row the bootstrap's peak allocation stays at a few rows."""
    import tracemalloc

    t, p = agreeing_pair(n=20_000)
    monkeypatch.setattr(_intervals, "_CHUNK_ELEMENTS", 20_000)
    tracemalloc.start()
    try:
        bootstrap_ci(KAPPA, t, p)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20e6, f"{peak / 1e6:.0f} MB"


def test_a_slice_of_the_resamples_stays_small_at_the_default_size():
    """50,000 items × 1,000 replicates at the default slice (about 1 M indices): the slice and
    the statistic's temporaries, the peak of a run's end, stay under 40 MB of allocations (at
    4 M indices a slice they were ~105 MB)."""
    import tracemalloc

    rng = np.random.default_rng(0)
    t = rng.integers(0, 2, 50_000)
    p = np.where(rng.random(50_000) < 0.8, t, 1 - t)
    tracemalloc.start()
    try:
        bootstrap_ci(lambda a, b: (a == b).mean(axis=1), t, p)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 40e6, f"{peak / 1e6:.0f} MB"


def test_higher_confidence_gives_a_wider_interval():
    t, p = agreeing_pair()
    narrow = bootstrap_ci(KAPPA, t, p, confidence=0.80)
    wide = bootstrap_ci(KAPPA, t, p, confidence=0.99)
    assert wide.low <= narrow.low <= narrow.high <= wide.high


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_resamples": 999}, "at least 1000"),
        ({"n_resamples": 1000.0}, "integer"),
        ({"confidence": 1.0}, "strictly between 0 and 1"),
        ({"confidence": 0}, "strictly between 0 and 1"),
    ],
)
def test_bad_options_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        bootstrap_ci(_mae_batched, [1, 2], [1, 2], **kwargs)


def test_bad_arrays_raise():
    with pytest.raises(ValueError, match="lengths"):
        bootstrap_ci(_mae_batched, [1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="empty"):
        bootstrap_ci(_mae_batched, [], [])
    with pytest.raises(ValueError, match="at least one array"):
        bootstrap_ci(_mae_batched)
    with pytest.raises(ValueError, match="1-D"):
        bootstrap_ci(_mae_batched, [[1, 2]], [[1, 2]])


def test_a_scalar_statistic_is_rejected_with_a_hint():
    def not_batched(a, b):
        return float(np.mean(a == b))

    with pytest.raises(ValueError, match=r"statistic must be batched.*\(B,\)"):
        bootstrap_ci(not_batched, [0, 1], [0, 1])


def test_wilson_known_value():
    # 8 of 10 at 95%: p = 0.8, z = 1.95996, z² = 3.84146, denominator 1 + z²/n = 1.384146
    # centre = (0.8 + 0.192073) / 1.384146 = 0.716740
    # half   = z·sqrt(0.016 + 0.0096037) / 1.384146 = 0.226577  ->  (0.490163, 0.943317)
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.490163, abs=1e-6)
    assert high == pytest.approx(0.943317, abs=1e-6)


def test_wilson_extremes_stay_in_unit_interval():
    assert wilson_interval(0, 20)[0] == 0.0
    assert wilson_interval(20, 20)[1] == 1.0
    low, high = wilson_interval(0, 20)
    assert 0.0 < high < 0.2  # z²/(n + z²) = 3.84/23.84 = 0.161
    assert high == pytest.approx(3.8414588 / 23.8414588, abs=1e-6)
    assert low == 0.0


@settings(max_examples=50, deadline=None)
@given(
    st.integers(1, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
    st.sampled_from([0.8, 0.9, 0.95, 0.99]),
)
def test_wilson_equals_scipy(successes_n, confidence):
    successes, n = successes_n
    expected = scipy.stats.binomtest(successes, n).proportion_ci(
        confidence_level=confidence, method="wilson"
    )
    low, high = wilson_interval(successes, n, confidence)
    assert low == pytest.approx(expected.low, abs=1e-12)
    assert high == pytest.approx(expected.high, abs=1e-12)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((11, 10), "between 0 and n=10"),
        ((-1, 10), "between 0 and n=10"),
        ((0, 0), "at least 1"),
        ((1.0, 10), "successes must be an integer"),
        ((1, 10, 1.5), "strictly between 0 and 1"),
    ],
)
def test_wilson_bad_input_raises(args, message):
    with pytest.raises(ValueError, match=message):
        wilson_interval(*args)


@pytest.mark.parametrize(
    ("successes", "n", "confidence"),
    [(0, 75, 0.95), (75, 75, 0.95), (8, 10, 0.95), (1, 1, 0.9), (37, 150, 0.99), (0, 1, 0.95)],
)
def test_clopper_pearson_equals_scipy_and_statsmodels(successes, n, confidence):
    from statsmodels.stats.proportion import proportion_confint

    from assay.metrics import clopper_pearson_interval

    low, high = clopper_pearson_interval(successes, n, confidence)
    exact = scipy.stats.binomtest(successes, n).proportion_ci(confidence, method="exact")
    assert (low, high) == pytest.approx((exact.low, exact.high), abs=1e-12)
    beta = proportion_confint(successes, n, alpha=1 - confidence, method="beta")
    assert (low, high) == pytest.approx(beta, abs=1e-12)
    assert high - low > 0  # never of no width, at 0 or n of n too


def test_clopper_pearson_is_scipy_beta_quantile_to_the_last_bit():
    """The interval's ends are scipy.special's inverse incomplete beta, the routine
    ``scipy.stats.beta.ppf`` calls: equal, bit for bit, over every count of small n."""
    from assay.metrics import clopper_pearson_interval

    for n in [*range(1, 60), 150, 1000]:
        for successes in range(0, n + 1, max(1, n // 40)):
            for confidence in (0.9, 0.95, 0.99):
                tail = (1 - confidence) / 2
                low = scipy.stats.beta.ppf(tail, successes, n - successes + 1) if successes else 0.0
                high = (
                    scipy.stats.beta.ppf(1 - tail, successes + 1, n - successes)
                    if successes < n
                    else 1.0
                )
                assert clopper_pearson_interval(successes, n, confidence) == (low, high)


def test_rate_is_a_count_of_n_with_its_exact_interval():
    from assay.metrics import CLOPPER_PEARSON, rate

    outcomes = [1, 1, 1, 0, 1, 0, 1, 1, 1, 1]
    m = rate(outcomes, confidence=0.9)
    assert (m.value, m.count, m.n, m.ci_method) == (pytest.approx(0.8), 8, 10, CLOPPER_PEARSON)
    exact = scipy.stats.binomtest(8, 10).proportion_ci(0.9, method="exact")
    assert (m.ci_low, m.ci_high) == pytest.approx((exact.low, exact.high), abs=1e-12)
    # every item the same: a 0-width bootstrap before, the exact interval now
    every = rate([True] * 75)
    assert (every.value, every.ci_high) == (1.0, 1.0)
    assert every.ci_low == pytest.approx(0.025 ** (1 / 75), abs=1e-12)
    assert rate([]) is None
    with pytest.raises(ValueError, match="one boolean"):
        rate([0.5, 1.0])


def test_an_interval_narrower_than_its_printed_digits_is_said_to_be():
    """Dawid–Skene's recall of a judge that is never wrong converges to 1 − 1e-11 in every
    replicate: [1.000, 1.000] on the page, a width of 2e-11, past the rounding a 'no width'
    interval allows. It is said to show (almost) no variation, not certainty; a real width is
    said nothing of."""
    from assay.metrics import NARROWER_THAN_SHOWN, BootstrapCI
    from assay.metrics._value import with_ci

    narrow = with_ci(1.0, BootstrapCI(1 - 3e-11, 1 - 1e-11, 1000, 0), 40, why_undefined="-")
    assert narrow.ci_high - narrow.ci_low < NARROWER_THAN_SHOWN
    assert "differ only past the printed digits" in narrow.note and "not certainty" in narrow.note
    wide = with_ci(0.5, BootstrapCI(0.4, 0.6, 1000, 0), 40, why_undefined="-")
    assert wide.note is None
