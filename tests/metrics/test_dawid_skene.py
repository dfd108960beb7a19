"""Dawid–Skene: equal to crowd-kit's ``DawidSkene`` on the same table (posteriors, labels,
confusion matrices, priors), known confusion matrices recovered from simulated verdicts within
their intervals, a dependence between judges flagged and independent judges not, the
intervals independent of the rows' order, and bad input in one line."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from crowdkit.aggregation import DawidSkene

from assay.metrics import AnnotationMatrix, dawid_skene

BINARY = [
    np.array([[0.9, 0.1], [0.2, 0.8]]),  # rows: true class; columns: verdict
    np.array([[0.7, 0.3], [0.1, 0.9]]),
    np.array([[0.8, 0.2], [0.3, 0.7]]),
]


def simulate(rng, n, confusions, priors, missing=0.0):
    """Verdicts of judges with the given confusion matrices on ``n`` items (nan: missing)."""
    truth = rng.choice(len(priors), size=n, p=priors)
    columns = []
    for e in confusions:
        cumulative = np.cumsum(e[truth], axis=1)
        columns.append((rng.random(n)[:, None] > cumulative).sum(axis=1))
    verdicts = np.stack(columns, axis=1).astype(float)
    verdicts[rng.random(verdicts.shape) < missing] = np.nan
    return verdicts, truth


def crowdkit_fit(verdicts):
    rows = [
        (i, j, int(verdicts[i, j]))
        for i in range(verdicts.shape[0])
        for j in range(verdicts.shape[1])
        if not np.isnan(verdicts[i, j])
    ]
    return DawidSkene(n_iter=100, tol=1e-5).fit(
        pd.DataFrame(rows, columns=["task", "worker", "label"])
    )


@pytest.mark.parametrize(
    ("confusions", "priors", "missing"),
    [
        (BINARY, [0.7, 0.3], 0.15),
        (
            [
                np.array([[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.1, 0.2, 0.7]]),
                np.array([[0.6, 0.3, 0.1], [0.1, 0.8, 0.1], [0.0, 0.3, 0.7]]),
                np.array([[0.9, 0.05, 0.05], [0.3, 0.5, 0.2], [0.1, 0.1, 0.8]]),
            ],
            [0.5, 0.3, 0.2],
            0.2,
        ),
    ],
    ids=["binary", "three-classes"],
)
def test_equal_to_crowdkit(confusions, priors, missing):
    verdicts, _ = simulate(np.random.default_rng(3), 300, confusions, priors, missing)
    ours = dawid_skene(verdicts)
    theirs = crowdkit_fit(verdicts)

    probas = theirs.probas_[sorted(theirs.probas_.columns)]
    order = [ours.item_ids.index(i) for i in probas.index]
    assert np.abs(probas.to_numpy() - ours.posteriors[order]).max() < 0.01
    assert (theirs.labels_.to_numpy() == ours.labels[order]).all()
    assert np.abs(theirs.priors_.sort_index().to_numpy() - ours.priors).max() < 0.01
    for j, judge in enumerate(ours.judges):
        errors = theirs.errors_.loc[j].sort_index()[sorted(theirs.errors_.columns)]
        # crowd-kit's errors: rows the verdict, columns the true class
        assert np.abs(errors.to_numpy().T - np.array(judge.confusion)).max() < 0.01
    assert ours.iterations == len(theirs.loss_history_)


def test_known_confusion_matrices_are_recovered_within_their_intervals():
    rng = np.random.default_rng(11)
    verdicts, truth = simulate(rng, 600, BINARY, [0.7, 0.3])
    fit = dawid_skene(verdicts, seed=1, positive=1)
    for judge, e in zip(fit.judges, BINARY, strict=True):
        for figure, true in ((judge.sensitivity, e[1, 1]), (judge.specificity, e[0, 0])):
            assert figure.ci_low <= true <= figure.ci_high, (judge.judge, figure, true)
            assert abs(figure.value - true) < 0.08
        assert judge.accuracy.ci_low < judge.accuracy.value < judge.accuracy.ci_high
        assert judge.n == 600
    assert abs(fit.priors[1] - 0.3) < 0.05
    # the labels the true parameters would give (the Bayes rule), nearly all reproduced
    log_post = np.log([0.7, 0.3]) + sum(
        np.log(e[:, verdicts[:, j].astype(int)].T) for j, e in enumerate(BINARY)
    )
    assert (fit.labels == log_post.argmax(axis=1)).mean() > 0.95
    assert abs((fit.labels == truth).mean() - (log_post.argmax(axis=1) == truth).mean()) < 0.03
    assert fit.warning is not None and "cannot show" in fit.warning  # 3 judges, 2 classes


def test_interval_coverage_over_simulated_panels():
    """The 95% intervals of the three judges' sensitivity and specificity hold the truth in
    most of 8 simulated panels (48 intervals; at 95% coverage 8 or more misses happen 0.2%
    of the time)."""
    misses = 0
    for seed in range(8):
        verdicts, _ = simulate(np.random.default_rng(100 + seed), 300, BINARY, [0.6, 0.4], 0.1)
        fit = dawid_skene(verdicts, seed=seed, positive=1)
        for judge, e in zip(fit.judges, BINARY, strict=True):
            misses += not judge.sensitivity.ci_low <= e[1, 1] <= judge.sensitivity.ci_high
            misses += not judge.specificity.ci_low <= e[0, 0] <= judge.specificity.ci_high
    assert misses <= 7


def five_judges(seed, copied):
    """Five binary judges (accuracies .85 .8 .75 .8 .7); judge 1 copies judge 0 on a share
    ``copied`` of the items."""
    rng = np.random.default_rng(seed)
    truth = (rng.random(600) < 0.4).astype(int)
    accuracies = [0.85, 0.8, 0.75, 0.8, 0.7]
    verdicts = np.stack(
        [np.where(rng.random(truth.size) < a, truth, 1 - truth) for a in accuracies], axis=1
    ).astype(float)
    copy = rng.random(truth.size) < copied
    verdicts[copy, 1] = verdicts[copy, 0]
    return verdicts


@pytest.mark.parametrize("seed", [100, 101, 102])
def test_dependent_judges_raise_the_warning(seed):
    fit = dawid_skene(five_judges(seed, copied=0.7))
    assert fit.dependence_checkable
    flagged = [d for d in fit.dependence if d.flagged]
    assert flagged and fit.warning is not None
    assert "not independent given the class" in fit.warning
    for d in flagged:
        assert d.excess.value == pytest.approx(d.observed - d.predicted)
        assert d.p_value < 0.05 and d.excess.value >= 0.03 and d.excess.ci_low > 0


@pytest.mark.parametrize("seed", [100, 101, 102])
def test_independent_judges_do_not(seed):
    fit = dawid_skene(five_judges(seed, copied=0.0))
    assert fit.warning is None and not any(d.flagged for d in fit.dependence)
    assert max(abs(d.excess.value) for d in fit.dependence) < 0.03


def test_observed_agreement_is_the_pairs_raw_agreement():
    verdicts = five_judges(5, copied=0.0)
    fit = dawid_skene(verdicts)
    d = fit.dependence[0]
    assert d.judges == (0, 1)
    assert d.observed == pytest.approx((verdicts[:, 0] == verdicts[:, 1]).mean())


def test_the_same_figures_whatever_the_rows_order_and_names():
    verdicts, _ = simulate(np.random.default_rng(4), 200, BINARY, [0.5, 0.5], 0.1)
    a = dawid_skene(verdicts, seed=3, positive=1)
    perm = np.random.default_rng(0).permutation(200)
    names = tuple(f"item-{i}" for i in perm)
    b = dawid_skene(AnnotationMatrix(verdicts[perm], names, (0, 1, 2)), seed=3, positive=1)
    for x, y in zip(a.judges, b.judges, strict=True):
        assert x.accuracy == y.accuracy and x.sensitivity == y.sensitivity
    assert (a.labels[perm] == b.labels).all()


def test_items_without_a_verdict_are_left_out_and_counted():
    verdicts, _ = simulate(np.random.default_rng(6), 100, BINARY, [0.5, 0.5])
    verdicts[:5] = np.nan
    fit = dawid_skene(verdicts)
    assert fit.n_items_dropped == 5 and len(fit.item_ids) == 95 == fit.labels.size
    assert fit.item_ids[0] == 5


def test_a_judge_that_abstained_on_every_item_has_no_figures():
    """Its confusion matrix is the floors alone: a recall of 0.5 [0.5, 0.5] over n = 0 is no
    figure. Undefined, with the note; the other judges' are crowd-kit's on their own verdicts.
    A judge with 3 verdicts is absent from some resamples: those replicates are dropped."""
    verdicts, _ = simulate(np.random.default_rng(4), 200, BINARY, [0.6, 0.4])
    sparse = np.full(200, np.nan)
    sparse[:3] = verdicts[:3, 0]
    fit = dawid_skene(np.c_[verdicts, np.full(200, np.nan), sparse], positive=1)
    mute = fit.judges[3]
    assert mute.n == 0 and np.isnan(np.array(mute.confusion)).all()
    for figure in (mute.accuracy, mute.sensitivity, mute.specificity, *mute.recall):
        assert math.isnan(figure.value) and figure.ci_low is None and figure.n == 0
        assert figure.note.startswith("undefined: no item judged by this judge")
    dropped = fit.judges[4].sensitivity
    assert "bootstrap replicates were dropped as undefined: no item judged" in dropped.note
    theirs = crowdkit_fit(np.c_[verdicts, sparse])
    for j in range(3):
        errors = theirs.errors_.loc[j].sort_index()[sorted(theirs.errors_.columns)]
        assert np.abs(errors.to_numpy().T - np.array(fit.judges[j].confusion)).max() < 0.01


def test_a_class_nobody_gave_keeps_its_place():
    verdicts, _ = simulate(np.random.default_rng(6), 100, BINARY, [0.5, 0.5])
    fit = dawid_skene(verdicts, k=3)
    assert fit.k == 3 and fit.priors[2] < 1e-4 and fit.judges[0].sensitivity is None
    assert len(fit.judges[0].recall) == 3


def test_sensitivity_and_specificity_only_where_the_positive_class_is_named():
    """Two classes have no positive one unless the caller names it (a binary scale's score
    1): the labels of a nominal scale in either order gave a 'sensitivity' that was the recall
    of whichever was listed second. Named, it is that class's recall, the other's the
    specificity; either way every class's recall is there."""
    verdicts, _ = simulate(np.random.default_rng(6), 200, BINARY, [0.6, 0.4])
    bare = dawid_skene(verdicts)
    for judge in bare.judges:
        assert judge.sensitivity is None and judge.specificity is None
        assert len(judge.recall) == 2
    for positive in (1, 0):
        fit = dawid_skene(verdicts, positive=positive)
        for judge, plain in zip(fit.judges, bare.judges, strict=True):
            assert judge.sensitivity == judge.recall[positive] == plain.recall[positive]
            assert judge.specificity == judge.recall[1 - positive]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: dawid_skene([[0, 1], [1, 1]]), "at least 3 judges"),
        (lambda: dawid_skene([[0, 1, 0.5]]), "0-based class indices, got 0.5 at item 0, judge 2"),
        (lambda: dawid_skene([[0, 1, -1]]), "got -1 at item 0"),
        (lambda: dawid_skene([[0, 1, 3]], k=3), r"must lie in 0..2 \(k=3\), got 3 at item 0"),
        (lambda: dawid_skene([[math.nan] * 3]), "hold no verdict"),
        (lambda: dawid_skene([[0, 0, 0]]), "at least 2 classes"),
        (lambda: dawid_skene([[0, 1, 1]], n_resamples=10), "n_resamples must be at least 1000"),
        (lambda: dawid_skene([[0, 1, 1]], confidence=1.5), "confidence must be strictly"),
        (lambda: dawid_skene([[0, 1, 1]], max_iterations=0), "max_iterations must be at least 1"),
        (lambda: dawid_skene([[0, 1, 1]], tol=0), "tol must be positive"),
        (lambda: dawid_skene([[0, 1, 2]], positive=1), "positive must be class 0 or 1 of two"),
        (lambda: dawid_skene([[0, 1, 1]], positive=2), r"got 2 with k=2"),
    ],
)
def test_bad_input_is_one_line(call, message):
    with pytest.raises(ValueError, match=message) as exc:
        call()
    assert "\n" not in str(exc.value)


def test_a_pair_agreeing_exactly_as_predicted_has_no_small_p_value():
    """Three judges, three items: judges 0 and 2 agree exactly as the model predicts, an excess
    of 1e-10 left by EM's convergence in every replicate — which the p-value counted as above 0
    (p = 0.003, significant, for no excess at all). It is 0 there, so the p-value is 1."""
    fit = dawid_skene(np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]], dtype=float), k=2)
    pair = next(d for d in fit.dependence if d.judges == (0, 2))
    assert abs(pair.excess.value) < 1e-6
    assert pair.p_value == 1.0 and not pair.flagged


@pytest.mark.parametrize("m", [2, 3])
def test_identical_epochs_as_clusters_give_the_items_own_intervals(m):
    """Each item's verdicts written as m identical epochs of one sample, clustered: the fit and
    every interval are the items' own (the clusters drawn from the same generator as the items
    were), the intervals named a cluster bootstrap; taken as independent items, the copies'
    intervals are about √m too narrow."""
    rng = np.random.default_rng(m)
    truth = rng.integers(0, 2, 80)
    table = np.array(
        [[t if rng.random() < acc else 1 - t for acc in (0.9, 0.8, 0.7, 0.6)] for t in truth],
        dtype=float,
    )
    alone = dawid_skene(table, seed=3)
    copies = np.repeat(table, m, axis=0)
    epochs = dawid_skene(copies, seed=3, clusters={k: k // m for k in range(80 * m)})
    assert epochs.resampled_clusters == 80 and alone.resampled_clusters is None
    for a, b in zip(alone.judges, epochs.judges, strict=True):
        assert b.accuracy.value == pytest.approx(a.accuracy.value, abs=1e-9)
        assert (b.accuracy.ci_low, b.accuracy.ci_high) == pytest.approx(
            (a.accuracy.ci_low, a.accuracy.ci_high), abs=1e-9
        )
        assert b.accuracy.ci_method == "cluster bootstrap"
    for a, b in zip(alone.dependence, epochs.dependence, strict=True):
        assert (b.excess.ci_low, b.excess.ci_high) == pytest.approx(
            (a.excess.ci_low, a.excess.ci_high), abs=1e-9
        )
    flat = dawid_skene(copies, seed=3).judges[0].accuracy
    wide = alone.judges[0].accuracy
    assert flat.ci_high - flat.ci_low < 0.85 * (wide.ci_high - wide.ci_low)
    # clusters of one item each: the items' own bootstrap, bit for bit
    same = dawid_skene(table, seed=3, clusters={k: f"s{k}" for k in range(80)})
    assert same.judges == alone.judges and same.dependence == alone.dependence


def one_verdict_judge_table(n: int = 60, seed: int = 21) -> np.ndarray:
    """Five binary judges on ``n`` items: judge 0 says 0 on every item, judges 1–4 are right
    with probability .9, .8, .75, .7. Judge 0's agreement with any judge is that judge's share
    of 0s, and so is the agreement the model predicts (Σ_c π_c E_b[c, 0]): their excess is 0 in
    exact arithmetic."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, n)
    noisy = [np.where(rng.random(n) < a, truth, 1 - truth) for a in (0.9, 0.8, 0.75, 0.7)]
    return np.stack([np.zeros(n), *noisy], axis=1).astype(float)


def crowdkit_excess(verdicts: np.ndarray) -> dict[tuple[int, int], float]:
    """Every pair's observed − predicted agreement under crowd-kit's fit, computed with numpy
    from its posteriors and confusion matrices (a verdict a judge never gave: probability 0)."""
    theirs = crowdkit_fit(verdicts)
    classes = sorted(theirs.probas_.columns)
    posteriors = theirs.probas_.loc[range(verdicts.shape[0]), classes].to_numpy()
    shares = posteriors.sum(axis=0)

    def confusion(j):  # rows: the true class
        errors = theirs.errors_.loc[j].reindex(index=classes, fill_value=0.0)[classes]
        return errors.to_numpy().T

    out = {}
    for a in range(verdicts.shape[1]):
        for b in range(a + 1, verdicts.shape[1]):
            predicted = (shares * (confusion(a) * confusion(b)).sum(axis=1)).sum()
            observed = (verdicts[:, a] == verdicts[:, b]).sum()
            out[a, b] = float((observed - predicted) / verdicts.shape[0])
    return out


def test_a_judge_of_one_verdict_has_an_excess_of_exactly_0_with_the_others():
    """crowd-kit's fit, read with numpy, gives judge 0's pairs an excess of 0 (to 1e-9), the
    other pairs a real one. Ours is 0.0 there — the estimate and both ends of the interval —
    with p = 1: judges 0 and 1 had −6.1e-13 [−2.3e-12, −1.1e-13], an interval below 0, beside
    a p-value that took every replicate as 0."""
    verdicts = one_verdict_judge_table()
    theirs = crowdkit_excess(verdicts)
    fit = dawid_skene(verdicts, seed=2)
    for d in fit.dependence:
        if 0 in d.judges:
            assert abs(theirs[d.judges]) < 1e-9
            assert d.excess.value == 0.0 and (d.excess.ci_low, d.excess.ci_high) == (0.0, 0.0)
            assert d.p_value == 1.0 and not d.flagged
        else:
            assert d.excess.value == pytest.approx(theirs[d.judges], abs=0.01)
            assert d.excess.value != 0.0


@pytest.mark.parametrize("n", [13, 36, 60])
def test_an_excess_of_0_is_the_same_however_the_table_is_written(n):
    """The table written twice, its judges in reverse order, its rows shuffled: the same
    verdicts, the same figures for judge 0's pairs (excess 0 in exact arithmetic). Their
    estimate was the rounding's, and so was its sign: judges 0 and 1 on 60 items +3.1e-13 as
    written, −2.7e-13 with the judges reversed (on 13 items the replicates at or below 0, which
    the p-value would count without a cut-off, were 532 of 1000 as written, 453 written
    twice)."""
    verdicts = one_verdict_judge_table(n, seed=n)
    rows = np.random.default_rng(0).permutation(n)
    tables = {
        "as is": (verdicts, lambda a: a),
        "twice": (np.r_[verdicts, verdicts], lambda a: a),
        "judges reversed": (verdicts[:, ::-1], lambda a: 4 - a),
        "rows shuffled": (verdicts[rows], lambda a: a),
    }
    seen = {}
    for name, (table, judge) in tables.items():
        fit = dawid_skene(table, seed=5)
        seen[name] = {
            tuple(sorted(judge(j) for j in d.judges)): (
                d.excess.value,
                d.excess.ci_low,
                d.excess.ci_high,
                d.excess.note,
                d.p_value,
            )
            for d in fit.dependence
            if judge(d.judges[0]) == 0 or judge(d.judges[1]) == 0
        }
    for name, figures in seen.items():
        for pair, (value, low, high, note, p) in figures.items():
            assert (value, low, high, p) == (0.0, 0.0, 0.0, 1.0), (name, pair)
            assert note == seen["as is"][pair][3], (name, pair)


@pytest.mark.parametrize("k", [2, 3])
def test_judges_that_agree_on_every_item_have_no_excess(k):
    """Three judges giving the same verdict on every item: each pair agrees on every item and
    the model, taking them for right, predicts it — 1 − 4·FLOOR / n under the floors, computed
    8e-12 [8e-12, 8e-12] on 50 items, an interval above 0 beside p = 1. Exactly 0 now."""
    truth = np.random.default_rng(k).integers(0, k, 50)
    fit = dawid_skene(np.stack([truth] * 3, axis=1).astype(float), k=k)
    for d in fit.dependence:
        assert d.observed == 1.0
        assert (d.excess.value, d.excess.ci_low, d.excess.ci_high, d.p_value) == (0, 0, 0, 1)


def test_the_floors_and_the_rounding_are_0_whatever_em_stops_at():
    """EM run to a tolerance of 1e-13 leaves no room for its own residue: what is left of an
    excess of 0 is the floors' and the rounding's (1e-13 to 1e-10 here), which are 0 on their
    own bound."""
    verdicts = one_verdict_judge_table()
    fit = dawid_skene(verdicts, tol=1e-13, max_iterations=500)
    for d in fit.dependence:
        if 0 in d.judges:
            assert (d.excess.value, d.excess.ci_low, d.excess.ci_high, d.p_value) == (0, 0, 0, 1)
        else:
            assert abs(d.excess.value) > 1e-4
