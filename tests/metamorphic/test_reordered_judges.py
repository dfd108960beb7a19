"""Judges combined without labels, and annotators compared pair by pair, give the same figures to
the last digit whatever order the judges come in, whatever they are called and whatever order
the classes are listed in: each judge keeps its Dawid–Skene accuracy, recalls, sensitivity,
specificity and confusion matrix with their intervals, each pair its excess agreement, interval
and p-value, each class its share and each item its posteriors and label; the mean
inter-annotator κ keeps its value and interval.

The items were resampled sorted by their verdicts with the judges' columns in the order given
(their names' order) and the classes by their codes: permuted or renamed, the same seed drew
other items. On these data a Dawid–Skene interval's end moved by up to 0.036 and a pair's
p-value by 0.11 with the judges permuted, an end by up to 0.068 with the classes listed in
another order; the mean κ's ends by up to 0.0025 with the annotators renamed; and the values,
summed in another order, in their last digit.

Drawn from seeded generators: 60 to 80 items, four judges right 60-85% of the time, on two
classes (with a positive class) and three, some verdicts missing; the same as epochs of
Inspect samples (clusters); a categorical scale's no-label report; judges whose verdicts are
each other's mirror image, and judges whose keys tie though they are not; five annotators on a
four-point scale."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from crowdkit.aggregation import DawidSkene
from sklearn.metrics import cohen_kappa_score

from assay.evaluation._no_labels import dawid_skene_report
from assay.metrics import (
    AnnotationMatrix,
    DawidSkeneResult,
    MetricValue,
    dawid_skene,
    inter_annotator_kappa,
)
from assay.scale import Scale

NAMES = ("ann0", "ann1", "ann2", "ann3")
PERMUTATION = [2, 0, 3, 1]  # the judges' columns in another order


def bits(x: object) -> object:
    """A figure as a permutation must keep it (nan as None, so that it equals itself)."""
    if isinstance(x, MetricValue):
        return tuple(bits(v) for v in (x.value, x.ci_low, x.ci_high, x.n, x.note))
    return None if isinstance(x, float) and math.isnan(x) else x


def verdicts(seed: int, k: int, n: int = 60) -> np.ndarray:
    """Four judges' verdicts (items × judges, nan: none), right 85, 75, 70 and 60% of the time
    and otherwise at random; a tenth missing."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, k, n)
    table = np.stack(
        [np.where(rng.random(n) < a, truth, rng.integers(0, k, n)) for a in (0.85, 0.75, 0.7, 0.6)],
        axis=1,
    ).astype(float)
    table[rng.random(table.shape) < 0.1] = np.nan
    return table


def relabelled(table: np.ndarray, codes: list[int]) -> np.ndarray:
    """``table`` with class ``c`` coded ``codes[c]``."""
    out = table.copy()
    given = ~np.isnan(table)
    out[given] = np.asarray(codes)[table[given].astype(int)]
    return out


def described(fit: DawidSkeneResult, classes: list[str]) -> dict[tuple, object]:
    """Every figure of ``fit`` under its judge's name, its pair's names (either order) and its
    class's name (``classes[code]``)."""
    out: dict[tuple, object] = {}
    for judge in fit.judges:
        name = judge.judge
        out[name, "n"] = judge.n
        for figure in ("accuracy", "sensitivity", "specificity"):
            out[name, figure] = bits(getattr(judge, figure))
        for c, recall in enumerate(judge.recall):
            out[name, "recall", classes[c]] = bits(recall)
            for v, p in enumerate(judge.confusion[c]):
                out[name, "confusion", classes[c], classes[v]] = bits(p)
    for pair in fit.dependence:
        out[frozenset(pair.judges)] = tuple(
            bits(x)
            for x in (
                pair.n,
                pair.observed,
                pair.predicted,
                pair.excess,
                pair.p_value,
                pair.flagged,
            )
        )
    for c, share in enumerate(fit.priors):
        out["prior", classes[c]] = share
    for item, label, posterior in zip(fit.item_ids, fit.labels, fit.posteriors, strict=True):
        out[item, "label"] = classes[label]
        out.update({(item, "posterior", classes[c]): p for c, p in enumerate(posterior)})
    for field in ("iterations", "converged", "objective", "k", "n_items_dropped"):
        out[field] = getattr(fit, field)
    out["warned"] = fit.warning is not None
    return out


def fitted(table: np.ndarray, names=NAMES, **options) -> DawidSkeneResult:
    ids = tuple(f"i{i}" for i in range(table.shape[0]))
    return dawid_skene(AnnotationMatrix(table, ids, tuple(names)), seed=1, **options)


def crowdkit_agrees(table: np.ndarray, fit: DawidSkeneResult) -> None:
    """The fit is crowd-kit's on the same table (within 0.01, as in tests/metrics)."""
    rows = [
        (f"i{i}", fit.judges[j].judge, int(table[i, j]))
        for i, j in zip(*np.nonzero(~np.isnan(table)), strict=True)
    ]
    theirs = DawidSkene(n_iter=100, tol=1e-5).fit(
        pd.DataFrame(rows, columns=["task", "worker", "label"])
    )
    for judge in fit.judges:
        errors = theirs.errors_.loc[judge.judge].sort_index()[sorted(theirs.errors_.columns)]
        assert np.abs(errors.to_numpy().T - np.array(judge.confusion)).max() < 0.01


@pytest.mark.parametrize(("k", "seed"), [(2, 0), (2, 1), (3, 2), (3, 3)])
def test_permuted_judges_keep_every_figure_to_the_last_digit(k, seed):
    table = verdicts(seed, k)
    positive = 1 if k == 2 else None
    classes = [f"class {c}" for c in range(k)]
    base = fitted(table, k=k, positive=positive)
    permuted = fitted(
        table[:, PERMUTATION], [NAMES[j] for j in PERMUTATION], k=k, positive=positive
    )
    assert described(permuted, classes) == described(base, classes)
    crowdkit_agrees(table[:, PERMUTATION], permuted)


@pytest.mark.parametrize(("k", "codes"), [(2, [1, 0]), (3, [2, 0, 1])])
def test_classes_listed_in_another_order_keep_every_figure(k, codes):
    """Class ``c`` coded ``codes[c]`` (the positive class with it), the judges permuted too."""
    table = verdicts(4, k)
    classes = [f"class {c}" for c in range(k)]
    base = fitted(table, k=k, positive=1 if k == 2 else None)
    recoded = relabelled(table[:, PERMUTATION], codes)
    other = fitted(
        recoded,
        [NAMES[j] for j in PERMUTATION],
        k=k,
        positive=codes[1] if k == 2 else None,
    )
    named = [classes[codes.index(c)] for c in range(k)]  # each code's class
    assert described(other, named) == described(base, classes)
    crowdkit_agrees(recoded, other)


def test_with_items_in_clusters_too():
    """The items as two epochs of each sample (a cluster bootstrap), judges and classes
    permuted."""
    table = verdicts(5, 3, n=40)
    table = np.repeat(table, 2, axis=0)
    clusters = {f"i{i}": f"sample {i // 2}" for i in range(table.shape[0])}
    classes = ["a", "b", "c"]
    base = fitted(table, k=3, clusters=clusters)
    other = fitted(
        relabelled(table[:, PERMUTATION], [1, 2, 0]),
        [NAMES[j] for j in PERMUTATION],
        k=3,
        clusters=clusters,
    )
    assert base.resampled_clusters == other.resampled_clusters == 40
    assert described(other, ["c", "a", "b"]) == described(base, classes)


def test_the_no_label_report_whatever_the_judges_names_and_the_labels_order():
    """A categorical scale's labels listed in another order, the judges renamed so that their
    names sort otherwise: the report's every figure is the same under each judge and label."""
    table = verdicts(6, 3, n=80)
    labels = ["safe", "unsure", "unsafe"]

    def report(order: list[str], names: dict[str, str]) -> dict:
        scale = Scale(kind="categorical", labels=order)
        rows = [
            (f"i{i}", names[NAMES[j]], scale.label_scores[labels[int(table[i, j])]])
            for i, j in zip(*np.nonzero(~np.isnan(table)), strict=True)
        ]
        fit, verdicts, _ = dawid_skene_report(
            rows, scale, {}, seed=2, n_resamples=1000, confidence=0.95
        )
        assert fit is not None
        back = {new: old for old, new in names.items()}
        return {
            "judges": {back[f.judge]: f.model_dump() | {"judge": None} for f in fit.judges},
            "pairs": {
                frozenset(back[j] for j in p.judges): p.model_dump() | {"judges": None}
                for p in fit.pairs
            },
            "rest": fit.model_dump(exclude={"judges", "pairs"}),
            "verdicts": {i: scale.label_of(v) for i, v in verdicts.items()},
        }

    base = report(labels, {n: n for n in NAMES})
    other = report(
        ["unsafe", "safe", "unsure"], dict(zip(NAMES, ("d", "b", "a", "c"), strict=True))
    )
    assert other == base


@pytest.mark.parametrize("k", [2, 3])
def test_judges_whose_verdicts_are_each_others_mirror_image(k):
    """Every item twice, the second time with judges 0 and 1 exchanged: B's verdicts are A's in
    a mirror, and so is every other judge's pair with them. The table is its own image with A
    and B exchanged, so either judge's figures are as much the other's: each has the value,
    and the interval that holds both intervals, whichever column it is given in."""
    half = verdicts(7, k, n=40)
    table = np.concatenate([half, half[:, [1, 0, 2, 3]]])
    classes = [f"class {c}" for c in range(k)]
    base = fitted(table, k=k)
    for order in ([1, 0, 2, 3], [2, 3, 1, 0]):
        other = fitted(table[:, order], [NAMES[j] for j in order], k=k)
        assert described(other, classes) == described(base, classes)
    a, b = base.judges[:2]
    assert (bits(a.accuracy), a.confusion) == (bits(b.accuracy), b.confusion)
    assert [bits(r) for r in a.recall] == [bits(r) for r in b.recall]
    for c in (2, 3):  # A's pair with another judge is B's
        with_a, with_b = (
            next(d for d in base.dependence if d.judges == (j, NAMES[c])) for j in NAMES[:2]
        )
        assert (bits(with_a.excess), with_a.p_value) == (bits(with_b.excess), with_b.p_value)


def test_judges_whose_keys_tie_in_every_order():
    """Judges 0 and 2 are each in the same rows, their own verdict first and the others'
    sorted, so their keys tie, yet their columns are no mirror images: both orders are tried
    and the one whose rows, sorted, come first kept, whatever order the four come in."""
    table = np.array(
        [[1, 0, 1, 1], [1, 1, 0, 0], [0, 1, 0, 1], [1, 0, 0, 1]]
        + [[1, 0, 1, 0], [0, 0, 1, 1], [0, 0, 1, 1], [1, 0, 1, 1]],
        dtype=float,
    )
    base = described(fitted(table, k=2), ["no", "yes"])
    for order in list(itertools.permutations(range(4)))[::4]:
        other = fitted(table[:, order], [NAMES[j] for j in order], k=2)
        assert described(other, ["no", "yes"]) == base, order
    # and the classes listed the other way round
    assert described(fitted(relabelled(table, [1, 0]), k=2), ["yes", "no"]) == base


def annotations(seed: int, n: int = 60) -> dict[str, dict[str, int]]:
    """Five annotators on a four-point scale, on the truth 60% of the time and a point off
    otherwise, each skipping a fifth of the items."""
    rng = np.random.default_rng(seed)
    table = {}
    for i in range(n):
        truth = int(rng.integers(0, 4))
        table[f"t{i}"] = {
            f"ann{a}": int(np.clip(truth + rng.choice([-1, 0, 0, 0, 1]), 0, 3))
            for a in range(5)
            if rng.random() < 0.8
        }
    return table


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_renamed_annotators_keep_the_mean_kappa_to_the_last_digit(seed):
    table = annotations(seed)
    renaming = dict(zip([f"ann{a}" for a in range(5)], ["e", "c", "a", "d", "b"], strict=True))
    renamed = {t: {renaming[a]: v for a, v in by.items()} for t, by in table.items()}
    base = inter_annotator_kappa(table, k=4, threshold=2)
    other = inter_annotator_kappa(renamed, k=4, threshold=2)
    assert base.mean.keys() == other.mean.keys() and base.mean
    for name in base.mean:
        assert bits(other.mean[name]) == bits(base.mean[name]), name
    pairs = {frozenset(p.annotators): p for p in base.pairs}
    for p in other.pairs:
        first = pairs[frozenset(a for a, new in renaming.items() if new in p.annotators)]
        assert {n: bits(m) for n, m in p.metrics.items()} == {
            n: bits(m) for n, m in first.metrics.items()
        }
    # a pair's κ is scikit-learn's on the items both labelled
    for p in base.pairs:
        a, b = p.annotators
        shared = [t for t, by in table.items() if a in by and b in by]
        expected = cohen_kappa_score([table[t][a] for t in shared], [table[t][b] for t in shared])
        assert p.metrics["kappa_categorical"].value == pytest.approx(expected, abs=1e-12)
