"""Calibration of a judge's probabilities: expected calibration error (ECE), Brier score, log loss
and reliability-diagram data, for a binary judge's P(positive verdict) or an ordinal judge's
expected score rescaled to [0, 1] (:func:`to_unit_interval`).

Outcomes ``y_true`` lie in [0, 1]: 0/1 labels, or reference scores rescaled the same way as the
expected scores. Predictions ``y_prob`` must lie in [0, 1]; nan, None or anything outside raises a
ValueError naming the index. Items without a probability are the caller's to drop and report:
nothing here imputes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from assay.metrics._cluster import (
    _cluster_index,
    _cluster_resamples,
    shared_clusters,
)
from assay.metrics._intervals import (
    _check_confidence,
    _check_resamples,
    _percentile_ci,
    _replicates,
    _resample_indices,
    bootstrap_ci,
    canonical_order,
)
from assay.metrics._validate import _same_length, as_labels, as_probabilities, as_scores
from assay.metrics._value import MetricValue, with_ci

BinStrategy = Literal["equal_mass", "equal_width"]

# Log loss clips probabilities to [EPS, 1 − EPS] (float64 machine epsilon, as scikit-learn does),
# so one confidently wrong verdict costs −log(2.2e-16) ≈ 36 nats instead of infinity.
LOG_LOSS_EPS = float(np.finfo(np.float64).eps)


@dataclass(frozen=True)
class ReliabilityBin:
    """One bin of a reliability diagram: predictions in ``(lower, upper]`` (the first bin also
    holds ``lower``), their mean, the observed outcome frequency (mean of ``y_true``) and count."""

    lower: float
    upper: float
    mean_predicted: float
    observed: float
    count: int


def to_unit_interval(scores: ArrayLike, scale_min: float, scale_max: float) -> NDArray[np.float64]:
    """Rescale scores (or expected scores) on ``scale_min..scale_max`` to [0, 1], so an ordinal
    judge's expected score and the reference score can be compared like a probability and a label.
    """
    if not scale_max > scale_min:
        raise ValueError(f"scale_max must be greater than scale_min, got {scale_min}..{scale_max}")
    arr = as_scores(scores, "scores")
    off = (arr < scale_min) | (arr > scale_max)
    if off.any():
        first = int(np.flatnonzero(off)[0])
        raise ValueError(
            f"scores must lie on the scale {scale_min}..{scale_max}, got {arr[first]} at index {first}"
        )
    return (arr - scale_min) / (scale_max - scale_min)


def _outcomes_and_probs(
    y_true: ArrayLike, y_prob: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    p = as_probabilities(y_prob, "y_prob")
    y = as_scores(y_true, "y_true")
    off = (y < 0) | (y > 1)
    if off.any():
        first = int(np.flatnonzero(off)[0])
        raise ValueError(
            f"y_true must hold outcomes in [0, 1] (0/1 labels, or ordinal scores rescaled with "
            f"to_unit_interval), got {y[first]} at index {first}"
        )
    _same_length(y, p, ("y_true", "y_prob"))
    return y, p


def binary_outcomes(
    y_true: ArrayLike, y_prob: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """0/1 labels (as floats) and probabilities of the same length, validated."""
    p = as_probabilities(y_prob, "y_prob")
    y = as_labels(y_true, "y_true")
    if y.max() > 1:
        first = int(np.flatnonzero(y > 1)[0])
        raise ValueError(f"y_true must hold 0/1 labels, got {y[first]} at index {first}")
    _same_length(y, p, ("y_true", "y_prob"))
    return y.astype(np.float64), p


def _check_bins(n_bins: int, strategy: str) -> int:
    if isinstance(n_bins, bool) or not isinstance(n_bins, int | np.integer) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}")
    if strategy not in ("equal_mass", "equal_width"):
        raise ValueError(f"strategy must be 'equal_mass' or 'equal_width', got {strategy!r}")
    return int(n_bins)


def _edges(y_prob: NDArray[np.float64], n_bins: int, strategy: str) -> NDArray[np.float64]:
    """Bin edges per row of (B, n) predictions, shape (B, n_bins + 1).

    Equal mass: the quantiles of the predictions (so bins hold about n / n_bins items; tied
    predictions always share a bin, so heavy ties leave some bins empty). Equal width: a uniform
    grid on [0, 1]. Both as :func:`sklearn.calibration.calibration_curve` (``quantile``/``uniform``).
    """
    if strategy == "equal_width":
        return np.broadcast_to(np.linspace(0.0, 1.0, n_bins + 1), (y_prob.shape[0], n_bins + 1))
    # linspace(0, 1) * 100, not linspace(0, 100): the same float quantiles as scikit-learn
    return np.percentile(y_prob, np.linspace(0.0, 1.0, n_bins + 1) * 100, axis=1).T


def _bin_sums(
    y_true: NDArray[np.float64], y_prob: NDArray[np.float64], n_bins: int, strategy: str
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Per row and bin: item count, Σ y_prob, Σ y_true (each (B, n_bins)) and the edges.

    A prediction goes to bin ``i`` when ``edge[i] < p <= edge[i+1]`` (the first bin also takes
    ``p == edge[0]``), i.e. ``searchsorted(interior_edges, p, side="left")`` like scikit-learn.
    """
    cells, edges = _cells(y_prob, n_bins, strategy)
    count = _per_bin(cells, None, y_prob.shape, n_bins)
    return (
        count,
        _per_bin(cells, y_prob, y_prob.shape, n_bins),
        _per_bin(cells, y_true, y_prob.shape, n_bins),
        edges,
    )


def _cells(
    y_prob: NDArray[np.float64], n_bins: int, strategy: str
) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Each prediction's cell (row × n_bins + its bin, flattened) and the rows' edges."""
    edges = _edges(y_prob, n_bins, strategy)
    ids = (edges[:, None, 1:-1] < y_prob[:, :, None]).sum(axis=2)
    return (np.arange(y_prob.shape[0])[:, None] * n_bins + ids).ravel(), edges


def _per_bin(
    cells: NDArray[np.intp], values: NDArray[np.float64] | None, shape: tuple, n_bins: int
) -> NDArray[np.float64]:
    """Σ ``values`` (the count when None) per row and bin, (B, n_bins)."""
    weights = None if values is None else values.ravel()
    sums = np.bincount(cells, weights=weights, minlength=shape[0] * n_bins)
    return sums.reshape(shape[0], n_bins).astype(np.float64)


def _ece_batched(
    y_true: NDArray[np.float64], y_prob: NDArray[np.float64], *, n_bins: int, strategy: str
) -> NDArray[np.float64]:
    """ECE of each row of (B, n) arrays: Σ_bins (n_b / n)·|mean y − mean p| = Σ_b |Σ(y − p)| / n."""
    _, sum_p, sum_y, _ = _bin_sums(y_true, y_prob, n_bins, strategy)
    return np.abs(sum_y - sum_p).sum(axis=1) / y_prob.shape[1]


def _debiased_l2_batched(
    y_true: NDArray[np.float64], y_prob: NDArray[np.float64], *, n_bins: int, strategy: str
) -> NDArray[np.float64]:
    """The debiased ℓ2 calibration error of each row of (B, n) arrays (Kumar, Liang and Ma,
    "Verified Uncertainty Calibration", 2019): ``√max(0, Σ_b (n_b / n)·[(ȳ_b − p̄_b)² − s²_b /
    n_b])``, ``s²_b`` the outcomes' sample variance in bin ``b`` — ``ȳ(1 − ȳ)·n_b / (n_b − 1)``
    for 0/1 outcomes, Kumar's ``ȳ(1 − ȳ) / (n_b − 1)`` per item — so each bin's squared gap loses
    the share its outcomes' sampling noise adds on average; a bin of fewer than two items adds
    0 (as in Kumar's ``uncertainty-calibration``)."""
    cells, _ = _cells(y_prob, n_bins, strategy)
    count = _per_bin(cells, None, y_prob.shape, n_bins)
    sum_p = _per_bin(cells, y_prob, y_prob.shape, n_bins)
    sum_y = _per_bin(cells, y_true, y_prob.shape, n_bins)
    sum_y2 = _per_bin(cells, y_true * y_true, y_prob.shape, n_bins)
    with np.errstate(divide="ignore", invalid="ignore"):
        noise = (sum_y2 - sum_y * sum_y / count) / (count - 1) / count
    return _debiased(count, sum_y - sum_p, noise, count >= 2)


def _debiased_l2_clustered(
    y_true: NDArray[np.float64],
    y_prob: NDArray[np.float64],
    codes: NDArray[np.intp],
    *,
    n_bins: int,
    strategy: str,
) -> float:
    """:func:`_debiased_l2_batched` of one row whose items are in clusters (``codes``): each
    bin's noise term is the clustered variance of its outcomes' mean, ``G_b/(G_b − 1) · Σ_c
    (Σ_{i ∈ c} (y_i − ȳ_b))² / n_b²`` over the ``G_b`` clusters in the bin — ``s²_b / n_b`` when
    each cluster holds one item, the samples' own when every sample's epochs are alike; a bin
    with items of one cluster adds 0."""
    shape = (1, y_prob.size)
    cells, _ = _cells(y_prob[None, :], n_bins, strategy)
    count = _per_bin(cells, None, shape, n_bins)[0]
    sum_y = _per_bin(cells, y_true, shape, n_bins)[0]
    sum_p = _per_bin(cells, y_prob, shape, n_bins)[0]
    stride = int(codes.max()) + 1
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_y = sum_y / count
        # each (bin, cluster)'s sum of centred outcomes, and how many clusters each bin holds
        pairs, inverse = np.unique(cells * stride + codes, return_inverse=True)
        centred = np.bincount(inverse, weights=y_true - mean_y[cells])
        bins_of = pairs // stride
        squares = np.bincount(bins_of, weights=centred**2, minlength=n_bins)
        g = np.bincount(bins_of, minlength=n_bins).astype(np.float64)
        noise = g / (g - 1) * squares / count**2
    return float(_debiased(count[None, :], (sum_y - sum_p)[None, :], noise[None, :], g >= 2)[0])


def _debiased(
    count: NDArray[np.float64],
    gap_sum: NDArray[np.float64],
    noise: NDArray[np.float64],
    counted: NDArray[np.bool_],
) -> NDArray[np.float64]:
    """``√max(0, Σ_b (n_b / n)·[(ȳ_b − p̄_b)² − noise_b])`` per row of (B, n_bins) bins
    (``gap_sum``: ``Σ(y − p)`` in each bin); a bin not ``counted`` adds 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = gap_sum / count
        per_bin = np.where(counted, count * (gap * gap - noise), 0.0)
    return np.sqrt(np.maximum(per_bin.sum(axis=1) / count.sum(axis=1), 0.0))


def _debiased_over_clusters(
    y: NDArray[np.float64],
    p: NDArray[np.float64],
    ids: NDArray,
    *,
    n_bins: int,
    strategy: str,
    n_resamples: int,
    seed: int,
) -> tuple[float, NDArray[np.float64]]:
    """The debiased ℓ2 error over clusters and its cluster-bootstrap replicates (the draws of
    :func:`~assay.metrics._cluster.cluster_replicates`, each drawn copy of a cluster a cluster
    of its own)."""
    kw = {"n_bins": n_bins, "strategy": strategy}
    value = _debiased_l2_clustered(y, p, _cluster_index(ids, y.size)[0], **kw)
    out = np.empty(n_resamples, dtype=np.float64)
    resamples = _cluster_resamples([y, p], ids, n_resamples=n_resamples, seed=seed)
    for at, (ys, ps), draws in resamples:
        for k, row in enumerate(at):
            out[row] = _debiased_l2_clustered(ys[k], ps[k], draws[k], **kw)
    return value, out


def _brier_batched(y_true: NDArray[np.float64], y_prob: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.mean((y_prob - y_true) ** 2, axis=1)


def _log_loss_batched(
    y_true: NDArray[np.float64], y_prob: NDArray[np.float64], *, eps: float = LOG_LOSS_EPS
) -> NDArray[np.float64]:
    p = np.clip(y_prob, eps, 1.0 - eps)
    return -np.mean(y_true * np.log(p) + (1.0 - y_true) * np.log1p(-p), axis=1)


def reliability_bins(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 10,
    strategy: BinStrategy = "equal_mass",
) -> list[ReliabilityBin]:
    """The reliability diagram's data: per non-empty bin, the mean prediction, the observed
    frequency and the count (``observed`` vs ``mean_predicted`` equals scikit-learn's
    ``calibration_curve`` with ``strategy='quantile'`` for equal mass, ``'uniform'`` for width)."""
    n_bins = _check_bins(n_bins, strategy)
    y, p = _outcomes_and_probs(y_true, y_prob)
    count, sum_p, sum_y, edges = _bin_sums(y[None, :], p[None, :], n_bins, strategy)
    return [
        ReliabilityBin(
            lower=float(edges[0, i]),
            upper=float(edges[0, i + 1]),
            mean_predicted=float(sum_p[0, i] / count[0, i]),
            observed=float(sum_y[0, i] / count[0, i]),
            count=int(count[0, i]),
        )
        for i in range(n_bins)
        if count[0, i] > 0
    ]


def expected_calibration_error(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 10,
    strategy: BinStrategy = "equal_mass",
) -> float:
    """Expected calibration error ``Σ_b (n_b / n)·|observed_b − mean_predicted_b|`` over
    ``n_bins`` bins of equal mass (default: robust to predictions bunched near 0 and 1, as LLM
    token probabilities are) or equal width on [0, 1]. 0 is perfectly calibrated."""
    n_bins = _check_bins(n_bins, strategy)
    y, p = _outcomes_and_probs(y_true, y_prob)
    return float(_ece_batched(y[None, :], p[None, :], n_bins=n_bins, strategy=strategy)[0])


def debiased_calibration_error(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 10,
    strategy: BinStrategy = "equal_mass",
) -> float:
    """The ℓ2 calibration error with each bin's sampling noise taken out (Kumar et al., 2019):
    ``√max(0, Σ_b (n_b / n)·[(ȳ_b − p̄_b)² − s²_b / n_b])`` over the bins of
    :func:`expected_calibration_error`. The plug-in ECE of a perfectly calibrated judge is not 0
    but about ``√(2 / π) · √(v · bins / n)`` (``v`` the outcomes' variance within a bin: 0.07 for
    200 items of uniform P(yes) in ten bins) — each bin's observed rate is noisy, and ``|noise|``
    averages above 0 —, so it reads as a miscalibration of several points; the square of this
    estimate is, in expectation, the binned squared error itself (before the clip at 0), so a
    calibrated judge reads near 0 and a miscalibrated one its gap."""
    n_bins = _check_bins(n_bins, strategy)
    y, p = _outcomes_and_probs(y_true, y_prob)
    return float(_debiased_l2_batched(y[None, :], p[None, :], n_bins=n_bins, strategy=strategy)[0])


def brier_score(y_true: ArrayLike, y_prob: ArrayLike) -> float:
    """Brier score ``mean((y_prob − y_true)²)``: 0 is perfect, 0.25 is a constant 0.5 on balanced
    labels. On rescaled ordinal scores it is the mean squared error of the expected score."""
    y, p = _outcomes_and_probs(y_true, y_prob)
    return float(_brier_batched(y[None, :], p[None, :])[0])


def log_loss(y_true: ArrayLike, y_prob: ArrayLike, *, eps: float = LOG_LOSS_EPS) -> float:
    """Binary log loss ``−mean(y·log p + (1 − y)·log(1 − p))`` with ``p`` clipped to
    ``[eps, 1 − eps]`` (default: machine epsilon, like scikit-learn), so a prediction of exactly
    0 or 1 that is wrong costs about 36 nats rather than infinity. ``y_true`` must be 0/1."""
    if not 0.0 < eps < 0.5:
        raise ValueError(f"eps must be in (0, 0.5), got {eps!r}")
    y, p = binary_outcomes(y_true, y_prob)
    return float(_log_loss_batched(y[None, :], p[None, :], eps=eps)[0])


def calibration_metrics(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 10,
    strategy: BinStrategy = "equal_mass",
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    clusters: ArrayLike | None = None,
) -> dict[str, MetricValue]:
    """ECE, the debiased ℓ2 calibration error (``l2_ce_debiased``: :func:`debiased_calibration_error`),
    Brier score and (for 0/1 outcomes) log loss, each with a seeded percentile bootstrap CI over
    items (the bins are rebuilt in every replicate, as they would be on new data).

    ``clusters`` (one id per item) groups items that are not independent — the epochs of one
    Inspect sample share its input and reference. Where a cluster holds more than one item,
    every interval resamples the clusters with all their items (the note says how many); the
    values are unchanged but the debiased ℓ2 error's, whose noise term is then the clustered
    variance of each bin's outcomes (a sample's epochs are not that many independent outcomes:
    :func:`_debiased_l2_clustered`)."""
    n_bins = _check_bins(n_bins, strategy)
    y, p = _outcomes_and_probs(y_true, y_prob)
    n_resamples = _check_resamples(n_resamples)
    confidence = _check_confidence(confidence)
    order = canonical_order(y, p)  # the intervals do not depend on the rows' order
    y, p = y[order], p[order]
    ids = shared_clusters(clusters, order)
    indices = _resample_indices(y.shape[0], n_resamples, seed) if ids is None else None

    def ece(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
        return _ece_batched(a, b, n_bins=n_bins, strategy=strategy)

    def l2_debiased(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
        return _debiased_l2_batched(a, b, n_bins=n_bins, strategy=strategy)

    statistics = {"ece": ece, "l2_ce_debiased": l2_debiased, "brier": _brier_batched}
    if np.isin(y, (0.0, 1.0)).all():
        statistics["log_loss"] = _log_loss_batched
    out = {}
    notes = []
    if ids is not None:
        notes.append(
            f"bootstrap resampled {np.unique(ids).size} clusters (the items of one sample, as "
            f"an Inspect log's epochs, together), not the {y.shape[0]} items"
        )
    for name, statistic in statistics.items():
        value = float(statistic(y[None, :], p[None, :])[0])
        if ids is None:
            ci = _percentile_ci(_replicates(statistic, [y, p], indices), confidence)
        elif name == "l2_ce_debiased":  # its noise term is the clusters' own
            value, replicates = _debiased_over_clusters(
                y, p, ids, n_bins=n_bins, strategy=strategy, n_resamples=n_resamples, seed=seed
            )
            ci = _percentile_ci(replicates, confidence, unit="cluster")
        else:
            ci = bootstrap_ci(
                statistic,
                y,
                p,
                n_resamples=n_resamples,
                confidence=confidence,
                seed=seed,
                clusters=ids,
            )
        out[name] = with_ci(value, ci, y.shape[0], why_undefined="no items", notes=notes)
        if name == "ece" and out[name].ci_low is not None and not ci.low <= value <= ci.high:
            out[name] = _without_interval(out[name], ci.low, ci.high)
    return out


def _without_interval(m: MetricValue, low: float, high: float) -> MetricValue:
    """An ECE whose percentile interval does not hold it, without that interval: the ECE of a
    resample is biased upward (a resample repeats items, and the bins, rebuilt on it, hold
    them unevenly), so on few items a bin its replicates can lie wholly above the estimate —
    a range that says nothing about the true ECE, which the estimate itself overstates."""
    note = (
        f"no interval: the resamples' ECE lies above the estimate ({low:.3f} to {high:.3f}: "
        "a resample repeats items, and its bins hold them unevenly), so their percentile "
        "interval says nothing of the true ECE — which the estimate, with few items a bin, "
        "overstates as well"
    )
    return MetricValue(
        value=m.value,
        ci_low=None,
        ci_high=None,
        n=m.n,
        note="; ".join(x for x in (m.note, note) if x),
        count=m.count,
        ci_method=None,
    )


def plot_reliability_diagram(
    bins: list[ReliabilityBin], path: str | Path, *, title: str | None = None
) -> Path:
    """Draw the reliability diagram (observed frequency vs mean prediction per bin, the diagonal
    of perfect calibration, and the bin counts below) to a PNG at ``path``; returns the path.

    Matplotlib is imported here, and only its Agg canvas is used: no global backend is changed.
    """
    if not bins:
        raise ValueError("a reliability diagram needs at least one bin")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5, 6))
    FigureCanvasAgg(fig)
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    pred = [b.mean_predicted for b in bins]
    top.plot([0, 1], [0, 1], linestyle="--", color="grey", label="perfectly calibrated")
    top.plot(pred, [b.observed for b in bins], marker="o", label="judge")
    top.set(xlim=(0, 1), ylim=(0, 1), ylabel="observed frequency", title=title or "Reliability")
    top.legend(loc="upper left")
    widths = [max(b.upper - b.lower, 0.01) for b in bins]
    bottom.bar([b.lower for b in bins], [b.count for b in bins], width=widths, align="edge")
    bottom.set(xlabel="mean predicted probability", ylabel="items")
    out = Path(path)
    fig.savefig(out, format="png", dpi=100, bbox_inches="tight")  # no label cut at the edge
    return out
